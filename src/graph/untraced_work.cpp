// A CPU thread's untraced work as nodes of its own (builder.h, kDefaultUntracedMin).
#include "core/error.h"
#include "graph/builder_internal.h"

namespace dpro::graph::detail {

// A CPU op's delay is the time between its last dependency and its start: work of its thread
// that nothing recorded (Python, framework code). Where that is at least `untraced_min`, a
// kUntraced node of that duration takes it over: it waits for what the op waited for (the op's
// start-edges move to it), and the op starts when it ends (a thread-order edge, gap 0, and the
// op's delay 0). Replay times are unchanged: start(op) = ready + delay before, end(untraced)
// = ready + duration now. The graph must have its measured delays (compute_measured_delays).
// Each untraced node is numbered just before its op, so that the replay finds the two (their
// states, their edges) in neighbouring memory.
void add_untraced_nodes(BuiltGraph& built, const BuildOptions& options) {
  Dfg& dfg = built.dfg;
  BuildStats& stats = built.stats;
  const std::size_t ops = dfg.node_count();
  const std::size_t edges = dfg.edge_count();
  IdVector<NodeId, NodeId> untraced_before(ops, NodeId::none());
  for (const NodeId id : IdRange<NodeId>(ops)) {
    const Node op = dfg.node(id);  // a copy: add_node may move the nodes
    if (!is_cpu_op(op.kind) || op.delay < options.untraced_min || op.delay <= 0) continue;
    Node work;
    work.kind = NodeKind::kUntraced;
    work.rank = op.rank;
    work.track = op.track;
    work.measured_start = op.measured_start - op.delay;
    work.measured_duration = work.duration = op.delay;
    untraced_before[id] = dfg.add_node(work);
    dfg.node(id).delay = 0;
    ++stats.untraced_nodes;
    stats.untraced_total += op.delay;
  }
  if (stats.untraced_nodes == 0) return;
  for (const EdgeId e : IdRange<EdgeId>(edges)) {
    Edge& edge = dfg.edge(e);
    if (edge.dst_point == Point::kStart && untraced_before[edge.dst].valid()) edge.dst = untraced_before[edge.dst];
  }
  for (const NodeId id : IdRange<NodeId>(ops)) {
    if (untraced_before[id].valid()) add_counted_edge(dfg, stats, Edge{untraced_before[id], id, EdgeKind::kThreadOrder});
  }
  IdVector<NodeId, NodeId> new_id(dfg.node_count(), NodeId::none());
  std::uint32_t next = 0;
  for (const NodeId id : IdRange<NodeId>(ops)) {
    if (untraced_before[id].valid()) new_id[untraced_before[id]] = NodeId(next++);
    new_id[id] = NodeId(next++);
  }
  dfg.renumber_nodes(new_id);
  for (RankNodes& r : built.ranks) {
    for (auto* map : {&r.node_of_event, &r.first_inside, &r.last_inside}) {
      for (NodeId& v : *map) {
        if (v.valid()) v = new_id[v];
      }
    }
  }
}

}  // namespace dpro::graph::detail
