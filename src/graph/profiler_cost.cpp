#include "graph/profiler_cost.h"

#include <algorithm>
#include <array>
#include <unordered_map>

namespace dpro::graph {
namespace {

using trace::Event;
using trace::EventKind;
using trace::RecordClass;
using RecordCounts = std::array<std::uint32_t, trace::kRecordClassCount>;

std::optional<RecordClass> cpu_record_class(EventKind k) {
  switch (k) {
    case EventKind::kRuntimeCall: return RecordClass::kRuntime;
    case EventKind::kDriverCall: return RecordClass::kDriver;
    case EventKind::kCpuOp: return RecordClass::kCpuOp;
    default: return std::nullopt;
  }
}

std::optional<RecordClass> gpu_record_class(EventKind k) {
  switch (k) {
    case EventKind::kKernel:
    case EventKind::kCollective: return RecordClass::kKernel;
    case EventKind::kMemcpy: return RecordClass::kMemcpy;
    case EventKind::kMemset: return RecordClass::kMemset;
    case EventKind::kSync: return RecordClass::kSync;
    default: return std::nullopt;
  }
}

IdRange<EventRef> events(const trace::TraceRank& tr) { return IdRange<EventRef>(tr.events.size()); }

bool is_call(EventKind k) { return k == EventKind::kRuntimeCall || k == EventKind::kDriverCall; }

// The node that paid for each CPU-side event's record (none where no node did), walking each
// thread's events in time order with the stack of those still open.
IdVector<EventRef, NodeId> record_owners(const trace::TraceRank& tr, const RankNodes& rn, const Dfg& dfg) {
  IdVector<EventRef, NodeId> owner;
  owner.assign(tr.events.size(), NodeId::none());
  struct Open { Nanos end; NodeId call_node; };  // call_node: the event is a runtime-call node
  std::unordered_map<trace::ResourceId, std::vector<Open>> open;
  for (const EventRef ref : events(tr)) {
    const Event& e = tr.events[ref.value];
    if (!trace::is_cpu_side(e.kind)) continue;
    std::vector<Open>& stack = open[e.resource];
    while (!stack.empty() && stack.back().end <= e.start) stack.pop_back();
    NodeId paid_by = rn.node_of_event.contains(ref) ? rn.node_of_event[ref] : NodeId::none();
    NodeId call_node;
    if (paid_by.valid()) {
      if (dfg.node(paid_by).kind == NodeKind::kRuntimeCall) call_node = paid_by;
    } else {
      const auto enclosing_call = std::find_if(stack.rbegin(), stack.rend(), [](const Open& o) { return o.call_node.valid(); });
      if (enclosing_call != stack.rend()) paid_by = enclosing_call->call_node;
      else if (rn.first_inside.contains(ref)) paid_by = rn.first_inside[ref];
    }
    owner[ref] = paid_by;
    stack.push_back(Open{e.end(), call_node});
  }
  return owner;
}

// Records each CPU node of the rank paid for, by class.
std::unordered_map<std::uint32_t, RecordCounts> records_by_node(const trace::TraceRank& tr, const RankNodes& rn,
                                                                const Dfg& dfg) {
  const IdVector<EventRef, NodeId> owner = record_owners(tr, rn, dfg);
  std::unordered_map<std::int64_t, NodeId> call_of_correlation;
  for (const EventRef ref : events(tr)) {
    const Event& e = tr.events[ref.value];
    if (is_call(e.kind) && e.correlation) call_of_correlation.emplace(*e.correlation, owner[ref]);
  }
  std::unordered_map<std::uint32_t, RecordCounts> counts;
  auto add = [&](NodeId n, RecordClass c) {
    if (!n.valid()) return;
    const NodeKind k = dfg.node(n).kind;
    if (k != NodeKind::kRuntimeCall && k != NodeKind::kCpuOp) return;
    ++counts.try_emplace(n.value, RecordCounts{}).first->second[static_cast<int>(c)];
  };
  for (const EventRef ref : events(tr)) {
    const Event& e = tr.events[ref.value];
    if (const auto c = cpu_record_class(e.kind)) {
      add(owner[ref], *c);
    } else if (const auto g = gpu_record_class(e.kind); g && e.correlation) {
      if (const auto it = call_of_correlation.find(*e.correlation); it != call_of_correlation.end()) add(it->second, *g);
    }
  }
  return counts;
}

bool inside_iteration(const std::vector<trace::Iteration>& iterations, Nanos t) {
  auto it = std::upper_bound(iterations.begin(), iterations.end(), t,
                             [](Nanos x, const trace::Iteration& i) { return x < i.start; });
  return it != iterations.begin() && t < std::prev(it)->end;
}

}  // namespace

Nanos ProfilerCostRemoval::removed_per_step() const {
  return rank_steps == 0 ? 0 : removed_in_steps / static_cast<Nanos>(rank_steps);
}

Nanos ProfilerCostRemoval::cost_per_step(const ClassRemoval& c) const {
  return rank_steps == 0 ? 0 : c.cost_in_steps / static_cast<Nanos>(rank_steps);
}

std::optional<ProfilerCostRemoval> remove_profiler_cost(const trace::TraceSet& traces, BuiltGraph& built,
                                                        const ProfilerCostOptions& options) {
  ProfilerCostRemoval out;
  out.kept = options.keep;
  out.ranks = traces.ranks.size();
  bool calibrated = false;
  std::array<std::optional<ClassRemoval>, trace::kRecordClassCount> classes;
  Dfg& dfg = built.dfg;
  for (std::size_t ri = 0; ri < traces.ranks.size() && ri < built.ranks.size(); ++ri) {
    const trace::TraceRank& tr = traces.ranks[ri];
    const trace::RecordCosts costs =
        tr.record_costs.value_or(trace::RecordCosts{}).overridden_by(options.given.value_or(trace::RecordCosts{}));
    if (costs.empty()) continue;
    calibrated = calibrated || tr.record_costs.has_value();
    ++out.ranks_with_costs;
    // Each rank's trace is one window when it has no iterations (as the report reads it).
    out.rank_steps += std::max<std::size_t>(tr.iterations.size(), 1);
    for (const auto& [node_value, counts] : records_by_node(tr, built.ranks[ri], dfg)) {
      Node& n = dfg.node(NodeId(node_value));
      const bool in_step = tr.iterations.empty() || inside_iteration(tr.iterations, n.measured_start);
      Nanos cost = 0;
      for (int c = 0; c < trace::kRecordClassCount; ++c) {
        const auto ns = costs.ns[c];
        if (!ns || counts[c] == 0) continue;
        auto& cls = classes[c];
        if (!cls) cls = ClassRemoval{static_cast<RecordClass>(c), 0, *ns, *ns, 0, 0};
        cls->records += counts[c];
        cls->ns_min = std::min(cls->ns_min, *ns);
        cls->ns_max = std::max(cls->ns_max, *ns);
        const Nanos class_cost = static_cast<Nanos>(counts[c]) * *ns;
        cls->cost += class_cost;
        if (in_step) cls->cost_in_steps += class_cost;
        cost += class_cost;
      }
      const Nanos taken = std::min(cost, std::max<Nanos>(n.duration, 0));
      out.clamped += cost - taken;
      out.removed += taken;
      if (in_step) out.removed_in_steps += taken;
      if (taken > 0) ++out.nodes_changed;
      if (!options.keep) n.duration -= taken;
    }
  }
  if (out.ranks_with_costs == 0) return std::nullopt;
  out.source = !options.given ? ProfilerCostRemoval::Source::kCalibration
               : calibrated   ? ProfilerCostRemoval::Source::kCalibrationAndGiven
                              : ProfilerCostRemoval::Source::kGiven;
  for (const auto& c : classes)
    if (c) out.classes.push_back(*c);
  return out;
}

}  // namespace dpro::graph
