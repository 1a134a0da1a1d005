// Graphs built by hand or at random for the engine's and the slack's tests.
#pragma once

#include <optional>
#include <random>

#include "graph/dfg.h"

namespace dpro::test {

inline graph::NodeId add_node(graph::Dfg& g, graph::NodeKind kind, int rank, Nanos duration, Nanos delay = 0,
                              std::optional<Nanos> release = {}) {
  graph::Node n;
  n.kind = kind;
  n.rank = rank;
  n.duration = duration;
  n.measured_duration = duration;
  n.delay = delay;
  n.release = release;
  return g.add_node(n);
}

inline void link(graph::Dfg& g, graph::NodeId a, graph::NodeId b, graph::EdgeKind kind = graph::EdgeKind::kThreadOrder,
                 graph::Point sp = graph::Point::kEnd, graph::Point dp = graph::Point::kStart, Nanos gap = 0) {
  g.add_edge(graph::Edge{a, b, kind, sp, dp, gap});
}

// A random acyclic graph on `nodes` nodes (edges go from a lower id to a higher one, between any
// two points), with small integer durations, delays, gaps and release times, so that many nodes
// see several predecessors offering the same time. Some nodes are untraced work (the engine sends
// such a node's end with its start when nothing else observes it). Finalized.
inline graph::Dfg random_dag(std::mt19937_64& rng, int nodes, int edges_per_node) {
  using graph::NodeKind;
  using graph::Point;
  graph::Dfg g;
  const NodeKind kinds[] = {NodeKind::kCpuOp, NodeKind::kKernel, NodeKind::kUntraced, NodeKind::kUntraced,
                            NodeKind::kRuntimeCall};
  for (int i = 0; i < nodes; ++i) {
    graph::Node n;
    n.kind = kinds[rng() % 5];
    n.duration = static_cast<Nanos>(rng() % 4);
    n.measured_duration = n.duration;
    n.delay = static_cast<Nanos>(rng() % 3) - 1;
    if (rng() % 4 == 0) n.release = static_cast<Nanos>(rng() % 5);
    g.add_node(n);
  }
  for (int i = 1; i < nodes; ++i) {
    const int count = static_cast<int>(rng() % (edges_per_node + 1));
    for (int k = 0; k < count; ++k) {
      graph::Edge e;
      e.src = graph::NodeId(static_cast<std::uint32_t>(rng() % i));
      e.dst = graph::NodeId(static_cast<std::uint32_t>(i));
      e.kind = graph::EdgeKind::kThreadOrder;
      e.src_point = rng() % 3 == 0 ? Point::kStart : Point::kEnd;
      e.dst_point = rng() % 4 == 0 ? Point::kEnd : Point::kStart;
      e.gap = static_cast<Nanos>(rng() % 3) - 1;
      g.add_edge(e);
    }
  }
  g.finalize();
  return g;
}

}  // namespace dpro::test
