#include "costmodel/op_desc_from_trace.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include <nlohmann/json.hpp>

#include "graph/op_table.h"

namespace dpro::costmodel {

namespace {

using Shape = std::vector<std::int64_t>;

std::int64_t product(const Shape& s, size_t from, size_t to) {
  std::int64_t p = 1;
  for (size_t i = from; i < to && i < s.size(); ++i) p *= s[i];
  return p;
}

// Rows x last-dimension view of a tensor.
std::vector<std::int64_t> rows_by_last(const Shape& s) {
  if (s.empty()) return {};
  return {product(s, 0, s.size() - 1), s.back()};
}

bool is_scalar(const std::vector<Shape>& shapes, size_t i) {
  return i >= shapes.size() || shapes[i].empty();
}

OpFamily scalar_variant(OpFamily f) {
  switch (f) {
    case OpFamily::kAdd: return OpFamily::kAddScalar;
    case OpFamily::kMul: return OpFamily::kMulScalar;
    case OpFamily::kDiv: return OpFamily::kDivScalar;
    case OpFamily::kPow: return OpFamily::kPowScalar;
    default: return f;
  }
}

std::string short_name(const std::string& name) {
  auto p = name.rfind("::");
  return p == std::string::npos ? name : name.substr(p + 2);
}

}  // namespace

OpDesc op_desc_from_cpu_op(const std::string& name, const std::string& input_dims,
                           const std::string& input_types) {
  OpDesc op;
  op.name = name;
  op.family = resolve_family(name, &op.like_op);
  const auto shapes = graph::parse_input_dims(input_dims);
  const auto types = nlohmann::json::parse(input_types.empty() ? "[]" : input_types, nullptr, false);
  if (types.is_array() && !types.empty() && types[0].is_string())
    if (auto d = parse_dtype(types[0].get<std::string>())) op.dtype = *d;
  const std::string base = short_name(name);
  switch (op.family) {
    case OpFamily::kBmm:
    case OpFamily::kLinear: {
      // bmm/baddbmm/matmul: [B,M,K] x [B,K,N]; mm: [M,K] x [K,N]; addmm: bias, [M,K], [K,N];
      // linear: [..., K] x weight [N,K].
      size_t a = (base == "addmm" || base == "baddbmm") ? 1 : 0;
      if (shapes.size() < a + 2) break;
      const Shape& x = shapes[a];
      const Shape& w = shapes[a + 1];
      if (base == "linear") {
        if (x.empty() || w.size() != 2) break;
        op.dims = {1, product(x, 0, x.size() - 1), w[0], x.back()};
      } else if (x.size() == 3 && w.size() == 3) {
        op.dims = {x[0], x[1], w[2], x[2]};
      } else if (x.size() == 2 && w.size() == 2) {
        op.dims = {1, x[0], w[1], x[1]};
      }
      break;
    }
    case OpFamily::kConv2d: {
      if (shapes.size() < 2 || shapes[0].size() != 4 || shapes[1].size() != 4) break;
      const Shape& x = shapes[0];
      const Shape& w = shapes[1];
      const auto size = static_cast<std::int64_t>(std::llround(std::sqrt(double(x[2]) * double(x[3]))));
      op.dims = {x[0], x[1], w[0], w[2], size, 1, w[2] / 2};
      break;
    }
    case OpFamily::kAdd: case OpFamily::kMul: case OpFamily::kDiv: case OpFamily::kPow:
      if (shapes.empty() || shapes[0].empty()) break;
      if (is_scalar(shapes, 1)) op.family = scalar_variant(op.family);
      op.dims = rows_by_last(shapes[0]);
      break;
    default:
      if (!shapes.empty()) op.dims = rows_by_last(shapes[0]);
  }
  if (!op.describable()) {
    op.family = OpFamily::kUnknown;
    op.like_op = false;
  }
  return op;
}

OpDesc op_desc_from_trace(const trace::TraceSet& traces, const graph::Node& node) {
  return op_desc_from_trace(traces, node, node.parent_op.value);
}

OpDesc op_desc_from_trace(const trace::TraceSet& traces, const graph::Node& node, std::uint32_t launcher) {
  OpDesc op;
  const trace::TraceRank* rank = traces.find_rank(node.rank);
  if (!rank) return op;
  bool types_recorded = false;
  if (launcher != graph::EventRef::kNoneValue && launcher < rank->events.size()) {
    const trace::Event& parent = rank->events[launcher];
    const trace::EventAttrs* pa = rank->attrs_of(parent);
    op = op_desc_from_cpu_op(std::string(traces.name(parent)), pa ? pa->input_dims : "",
                             pa ? pa->input_types : "");
    types_recorded = pa && !pa->input_types.empty();
  }
  if (node.event.valid() && node.event.below(rank->events.size())) {
    const trace::Event& e = rank->events[node.event.value];
    op.kernel_name = std::string(traces.name(e));
    if (op.name.empty()) op.name = op.kernel_name;
    if (const trace::EventAttrs* a = rank->attrs_of(e)) {
      op.grid = a->grid;
      op.block = a->block;
    }
    // torch.profiler records types with shapes (record_shapes); emit_nvtx ranges give shapes
    // only, and then the kernel's template arguments say the tensors' type.
    if (!types_recorded && op.describable())
      if (const auto d = kernel_tensor_dtype(op.kernel_name)) op.dtype = *d;
    op.take_kernel_math(types_recorded);
  }
  return op;
}

LikeStepLaunchers launchers_from_like_steps(const trace::TraceSet& traces, const graph::Dfg& dfg) {
  LikeStepLaunchers out;
  out.launcher.assign(dfg.node_count(), graph::EventRef::kNoneValue);
  auto kernel = [&](const graph::Node& n) { return n.kind == graph::NodeKind::kKernel && n.track.valid(); };
  // Nothing to lend when every kernel has its launching op (a torch.profiler trace).
  if (std::none_of(dfg.nodes().begin(), dfg.nodes().end(),
                   [&](const graph::Node& n) { return kernel(n) && !n.parent_op.valid(); }))
    return out;
  // The kernels of each (rank, stream, iteration index).
  using Group = std::tuple<int, std::uint32_t, std::size_t>;
  std::map<Group, std::vector<graph::NodeId>> groups;
  const trace::TraceRank* rank = nullptr;  // the last node's (nodes come rank by rank)
  for (const graph::NodeId id : dfg.node_ids()) {
    const graph::Node& n = dfg.node(id);
    if (!kernel(n)) continue;
    if (!rank || rank->rank != n.rank) rank = traces.find_rank(n.rank);
    if (!rank || rank->iterations.size() < 2) continue;
    // The step a kernel belongs to is the one that launched it: a job that does not wait for
    // its GPU runs a step's kernels while the host is in the next step.
    Nanos issued = n.measured_start;
    if (dfg.finalized())
      dfg.for_each_in_edge(id, [&](graph::EdgeId e) {
        if (dfg.edge(e).kind == graph::EdgeKind::kLaunch) issued = dfg.node(dfg.edge(e).src).measured_start;
      });
    const auto& its = rank->iterations;
    auto next = std::upper_bound(its.begin(), its.end(), issued,
                                 [](Nanos t, const trace::Iteration& it) { return t < it.start; });
    if (next == its.begin()) continue;  // before the first iteration
    groups[{n.rank, n.track.value, static_cast<std::size_t>(next - its.begin()) - 1}].push_back(id);
  }
  using Entry = std::pair<const Group, std::vector<graph::NodeId>>;
  auto key_of = [&](const Entry& e) {  // (rank, stream, sequence of kernel names)
    std::vector<StringId> names;
    for (graph::NodeId id : e.second) names.push_back(dfg.node(id).name);
    return std::tuple(std::get<0>(e.first), std::get<1>(e.first), std::move(names));
  };
  auto launched = [&](graph::NodeId id) { return dfg.node(id).parent_op.valid(); };
  // Per key, the first iteration that has launchers; the iterations that have none.
  std::map<std::tuple<int, std::uint32_t, std::vector<StringId>>, const Entry*> lenders;
  std::vector<const Entry*> borrowers;
  for (auto& entry : groups) {
    auto& ids = entry.second;
    std::sort(ids.begin(), ids.end(), [&](graph::NodeId a, graph::NodeId b) {
      return std::pair(dfg.node(a).measured_start, a) < std::pair(dfg.node(b).measured_start, b);
    });
    if (std::none_of(ids.begin(), ids.end(), launched)) borrowers.push_back(&entry);
    else lenders.emplace(key_of(entry), &entry);
  }
  std::set<std::string> lender_names;
  for (const Entry* borrower : borrowers) {
    auto it = lenders.find(key_of(*borrower));
    if (it == lenders.end()) continue;
    const Entry& lender = *it->second;
    for (std::size_t i = 0; i < borrower->second.size(); ++i) {
      const std::uint32_t op = dfg.node(lender.second[i]).parent_op.value;
      if (op == graph::EventRef::kNoneValue) continue;
      out.launcher[borrower->second[i].value] = op;
      ++out.kernels;
    }
    const auto [r, track, index] = lender.first;
    lender_names.insert(traces.find_rank(r)->iterations[index].name);
  }
  out.lenders.assign(lender_names.begin(), lender_names.end());
  return out;
}

}  // namespace dpro::costmodel
