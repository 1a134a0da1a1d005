#include "costmodel/op_desc_from_graph.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>


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

std::string_view short_name(std::string_view name) {
  auto p = name.rfind("::");
  return p == std::string_view::npos ? name : name.substr(p + 2);
}

// Whether the trace recorded the inputs' types ("Input type"): torch.profiler's record_shapes
// does; PyTorch's emit_nvtx ranges give shapes only.
bool types_recorded(const std::vector<graph::TensorDesc>& inputs) {
  return std::any_of(inputs.begin(), inputs.end(), [](const graph::TensorDesc& t) { return !t.dtype.empty(); });
}

}  // namespace

OpDesc op_desc_from_cpu_op(std::string_view name, const std::vector<graph::TensorDesc>& inputs,
                           const graph::OpTable& table) {
  OpDesc op;
  op.name = std::string(name);
  op.family = resolve_family(op.name, &op.like_op);
  std::vector<Shape> shapes;
  for (const graph::TensorDesc& t : inputs) shapes.push_back(t.shape);
  if (!inputs.empty() && !inputs[0].dtype.empty())
    if (auto d = parse_dtype(std::string(table.name(inputs[0].dtype)))) op.dtype = *d;
  const std::string_view base = short_name(name);
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

OpDesc op_desc_of_kernel(const graph::OpTable& table, const graph::OpDesc& kernel, const graph::OpDesc& launch) {
  OpDesc op;
  const bool recorded = types_recorded(launch.inputs);
  if (!launch.launcher.empty()) op = op_desc_from_cpu_op(table.name(launch.launcher), launch.inputs, table);
  op.kernel_name = std::string(table.name(kernel.name));
  if (op.name.empty()) op.name = op.kernel_name;
  op.grid = kernel.grid;
  op.block = kernel.block;
  // Without recorded types the kernel's template arguments say the tensors' type.
  if (!recorded && op.describable())
    if (const auto d = kernel_tensor_dtype(op.kernel_name)) op.dtype = *d;
  op.take_kernel_math(recorded);
  return op;
}

LikeStepLaunchers launchers_from_like_steps(const trace::TraceSet& traces, const graph::Dfg& dfg) {
  LikeStepLaunchers out;
  out.launch.assign(dfg.node_count(), graph::kNoOp);
  out.fused.assign(dfg.node_count(), graph::kNoOp);
  out.lender.assign(dfg.node_count(), graph::NodeId{});
  // Kernels on a stream that the op table describes; launched: by a CPU op the trace recorded.
  auto kernel = [&](graph::NodeId id) {
    const graph::Node& n = dfg.node(id);
    return n.kind == graph::NodeKind::kKernel && n.track.valid() && dfg.op(id);
  };
  // A fused node: by one of its parts' launching ops.
  auto launched = [&](graph::NodeId id) {
    const graph::OpDesc& op = *dfg.op(id);
    return !op.launcher.empty() || std::any_of(op.parts.begin(), op.parts.end(), [&](graph::OpId p) {
             return p.valid() && !dfg.ops().op(p).launcher.empty();
           });
  };
  bool unlaunched = false;
  for (graph::NodeId id : dfg.node_ids()) {
    if (kernel(id) && !launched(id)) {
      unlaunched = true;
      break;
    }
  }
  if (!unlaunched) return out;  // every kernel has its launching op (a torch.profiler trace)
  // The kernels of each (rank, stream, iteration index).
  using Group = std::tuple<int, std::uint32_t, std::size_t>;
  std::map<Group, std::vector<graph::NodeId>> groups;
  const trace::TraceRank* rank = nullptr;  // the last node's (nodes come rank by rank)
  for (graph::NodeId id : dfg.node_ids()) {
    if (!kernel(id)) continue;
    const graph::Node& n = dfg.node(id);
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
    std::vector<std::uint32_t> names;  // the op table's NameId values
    for (graph::NodeId id : e.second) names.push_back(dfg.op(id)->name.value);
    return std::tuple(std::get<0>(e.first), std::get<1>(e.first), std::move(names));
  };
  // Per key, the first iteration that has launchers; the iterations that have none.
  std::map<std::tuple<int, std::uint32_t, std::vector<std::uint32_t>>, const Entry*> lenders;
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
      if (!launched(lender.second[i])) continue;
      const graph::OpId lent = dfg.op_of(lender.second[i]);
      if (dfg.ops().op(lent).parts.empty()) {
        out.launch[borrower->second[i]] = lent;
        out.lender[borrower->second[i]] = lender.second[i];
        ++out.kernels;
      } else if (dfg.ops().op(lent).parts.size() == dfg.op(borrower->second[i])->parts.size()) {
        out.fused[borrower->second[i]] = lent;
        ++out.fused_nodes;
      }
    }
    const auto [r, track, index] = lender.first;
    lender_names.insert(traces.find_rank(r)->iterations[index].name);
  }
  out.lenders.assign(lender_names.begin(), lender_names.end());
  return out;
}

IdVector<graph::NodeId, std::optional<KernelType>> kernel_types(const trace::TraceSet& traces, const graph::Dfg& dfg) {
  IdVector<graph::NodeId, std::optional<KernelType>> out(dfg.node_count());
  const LikeStepLaunchers lent = launchers_from_like_steps(traces, dfg);
  const graph::OpTable& table = dfg.ops();
  // A kernel's type by its op (its name) and the op whose launcher describes it.
  auto of = [&](const graph::OpDesc& own, const graph::OpDesc& launch) {
    return kernel_type(table.name(launch.launcher), table.name(own.name));
  };
  for (const graph::NodeId id : dfg.node_ids()) {
    const graph::Node& n = dfg.node(id);
    if (!n.track.valid()) continue;
    switch (n.kind) {
      case graph::NodeKind::kMemcpy:
      case graph::NodeKind::kMemset: out[id] = KernelType::kCopy; continue;
      case graph::NodeKind::kCollective: out[id] = KernelType::kCommunication; continue;
      case graph::NodeKind::kKernel: break;
      default: continue;
    }
    const graph::OpDesc* own = dfg.op(id);
    if (!own) {  // no op table entry: its trace name only
      out[id] = kernel_type("", traces.strings.view(n.name));
      continue;
    }
    if (!own->parts.empty()) {  // a fused node: its first part, launched as recorded or as a like step's
      const graph::OpDesc& first = table.op(own->parts.front());
      const graph::OpDesc& launch =
          first.launcher.empty() && lent.fused[id].valid() && !table.op(lent.fused[id]).parts.empty()
              ? table.op(table.op(lent.fused[id]).parts.front())
              : first;
      out[id] = of(first, launch);
      continue;
    }
    const bool lent_launch = own->launcher.empty() && lent.launch[id].valid();
    out[id] = of(*own, lent_launch ? table.op(lent.launch[id]) : *own);
  }
  return out;
}

}  // namespace dpro::costmodel
