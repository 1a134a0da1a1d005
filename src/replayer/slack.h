#pragma once
// Slack: how much later each node of a replayed schedule could start without any node ending
// after a horizon (the replay's end, by default), under the timing contract of graph/dfg.h
// (every edge's gap, each node's delay and duration as the graph has them). A node with slack 0
// is on a critical path to the horizon: shortening it can shorten the schedule. A node with
// slack s gains the schedule nothing until what it runs beside has been shortened by s; a change
// that saves it x can gain at most max(0, x - s) (its near-criticality: dPRO and Daydream pick
// their candidates from the critical path and near it).
#include "graph/dfg.h"
#include "replayer/engine.h"

namespace dpro::replayer {

// Per node: its latest start (the latest time at which it could start with every successor
// still meeting its own latest time, the horizon bounding every node's end) less its replayed
// start; >= 0 when `horizon` >= sim.makespan. `sim` must be a replay of `dfg`, which must be
// finalized (acyclic, as every replayed graph is). One pass over the nodes and edges in reverse
// topological order.
IdVector<graph::NodeId, Nanos> start_slack(const graph::Dfg& dfg, const Simulation& sim, Nanos horizon);
inline IdVector<graph::NodeId, Nanos> start_slack(const graph::Dfg& dfg, const Simulation& sim) {
  return start_slack(dfg, sim, sim.makespan);
}

}  // namespace dpro::replayer
