#include "replayer/slack.h"

#include <algorithm>
#include <vector>

#include "core/error.h"

namespace dpro::replayer {

using graph::EdgeId;
using graph::NodeId;
using graph::Point;

IdVector<NodeId, Nanos> start_slack(const graph::Dfg& dfg, const Simulation& sim, Nanos horizon) {
  DPRO_CHECK(dfg.finalized());
  const std::size_t n = dfg.node_count();
  DPRO_CHECK(sim.start.size() == n && sim.end.size() == n);
  // The order is one of points, not nodes: a node's start and its end are two points (the end
  // after the start), and an edge joins a point of one node to a point of another. A collective's
  // barrier sits between its participants' starts and ends, so the nodes alone can form a cycle
  // where the points do not. Point 2v is v's start, 2v + 1 its end.
  const auto point = [](NodeId v, Point p) { return 2 * v.value + (p == Point::kEnd ? 1u : 0u); };
  std::vector<std::uint32_t> indegree(2 * n, 0), order;
  order.reserve(2 * n);
  for (const NodeId v : dfg.node_ids()) {
    indegree[point(v, Point::kEnd)] = 1;  // its own start
    for (const EdgeId e : dfg.in_edges(v)) ++indegree[point(v, dfg.edge(e).dst_point)];
  }
  for (std::uint32_t p = 0; p < 2 * n; ++p)
    if (indegree[p] == 0) order.push_back(p);
  for (std::size_t i = 0; i < order.size(); ++i) {
    const NodeId v(order[i] / 2);
    const Point at = order[i] % 2 ? Point::kEnd : Point::kStart;
    if (at == Point::kStart && --indegree[point(v, Point::kEnd)] == 0) order.push_back(point(v, Point::kEnd));
    for (const EdgeId e : dfg.out_edges(v)) {
      const graph::Edge& edge = dfg.edge(e);
      if (edge.src_point != at) continue;
      if (const std::uint32_t q = point(edge.dst, edge.dst_point); --indegree[q] == 0) order.push_back(q);
    }
  }
  DPRO_CHECK(order.size() == 2 * n);
  // Latest times, successors first: an edge into a start bounds its source point by the target's
  // latest start less the target's delay and the gap; an edge into an end by the target's latest
  // end less the gap; a start is also bounded by its own node's latest end less the duration.
  std::vector<Nanos> late(2 * n, horizon);
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const NodeId v(*it / 2);
    const Point at = *it % 2 ? Point::kEnd : Point::kStart;
    Nanos t = at == Point::kEnd ? horizon : late[point(v, Point::kEnd)] - dfg.node(v).duration;
    for (const EdgeId e : dfg.out_edges(v)) {
      const graph::Edge& edge = dfg.edge(e);
      if (edge.src_point != at) continue;
      const Nanos target = edge.dst_point == Point::kStart ? late[point(edge.dst, Point::kStart)] - dfg.node(edge.dst).delay
                                                           : late[point(edge.dst, Point::kEnd)];
      t = std::min(t, target - edge.gap);
    }
    late[*it] = t;
  }
  IdVector<NodeId, Nanos> slack(n, 0);
  for (const NodeId v : dfg.node_ids()) slack[v] = late[point(v, Point::kStart)] - sim.start[v];
  return slack;
}

}  // namespace dpro::replayer
