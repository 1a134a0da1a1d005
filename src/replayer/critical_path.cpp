#include "replayer/critical_path.h"

#include <algorithm>

namespace dpro::replayer {

using graph::EdgeKind;
using graph::NodeKind;
using graph::Point;

const char* to_string(Category c) {
  switch (c) {
    case Category::kCompute: return "compute";
    case Category::kCommunication: return "communication";
    case Category::kCopies: return "copies";
    case Category::kCpu: return "cpu_launch";
    case Category::kIdle: return "idle";
  }
  return "unknown";
}

Nanos Breakdown::total() const {
  Nanos t = 0;
  for (Nanos v : by_category) t += v;
  return t;
}

namespace {

// Category of the time a node spends executing.
Category execution_category(NodeKind kind) {
  switch (kind) {
    case NodeKind::kKernel: return Category::kCompute;
    case NodeKind::kCollective: return Category::kCommunication;
    case NodeKind::kMemcpy:
    case NodeKind::kMemset: return Category::kCopies;
    case NodeKind::kCpuOp:
    case NodeKind::kRuntimeCall: return Category::kCpu;
    case NodeKind::kBarrier: return Category::kIdle;
  }
  return Category::kIdle;
}

// Category of the wait between a dependency being satisfied and a node starting: CPU gaps
// between ops and launch latency are CPU/launch time; a GPU op held back by its own stream
// or another stream is GPU idle time.
Category waiting_category(NodeKind node, EdgeKind edge) {
  if (!graph::on_gpu(node)) return Category::kCpu;
  return edge == EdgeKind::kLaunch ? Category::kCpu : Category::kIdle;
}

}  // namespace

std::vector<PathSegment> critical_path(const graph::Dfg& dfg, const Simulation& sim, graph::NodeId from,
                                       Point point, Nanos stop_at) {
  std::vector<PathSegment> path;
  // An edge with a negative gap (a kernel that started before its launch call returned, by the
  // measured times) makes a cause end after the node it caused started: walking back, the path
  // steps forward in time there. Each segment is cut at the earliest time already covered, so
  // that the segments never overlap and add up to the time from stop_at to the start point.
  Nanos covered_from = point == Point::kStart ? sim.start[from] : sim.end[from];
  auto add = [&](graph::NodeId node, Category c, Nanos begin, Nanos end) {
    begin = std::max(begin, stop_at);
    end = std::min(end, covered_from);
    if (end > begin) {
      path.push_back(PathSegment{node, c, begin, end});
      covered_from = begin;
    }
  };
  graph::NodeId node = from;
  Nanos t = point == Point::kStart ? sim.start[node] : sim.end[node];
  // Each step moves to an earlier point or from a node's end to its own start, so it ends.
  for (std::size_t guard = 0; guard < 4 * dfg.node_count() + 4 && t > stop_at; ++guard) {
    const graph::Node& n = dfg.node(node);
    if (point == Point::kEnd) {
      const graph::EdgeId cause = sim.end_cause[node];
      if (!cause.valid()) {
        add(node, execution_category(n.kind), sim.start[node], t);
        t = sim.start[node];
        point = Point::kStart;
        continue;
      }
      const graph::Edge& e = dfg.edge(cause);
      const Nanos src_time = e.src_point == Point::kStart ? sim.start[e.src] : sim.end[e.src];
      // Collective transfer after the last peer arrived; a sync returning after the GPU work.
      add(node, e.kind == EdgeKind::kCollective ? Category::kCommunication : Category::kCpu, src_time, t);
      node = e.src;
      point = e.src_point;
      t = src_time;
      continue;
    }
    const graph::EdgeId cause = sim.start_cause[node];
    if (!cause.valid()) {
      add(graph::NodeId::none(), Category::kIdle, stop_at, t);
      break;
    }
    const graph::Edge& e = dfg.edge(cause);
    const Nanos src_time = e.src_point == Point::kStart ? sim.start[e.src] : sim.end[e.src];
    add(node, waiting_category(n.kind, e.kind), src_time, t);
    node = e.src;
    point = e.src_point;
    t = src_time;
  }
  std::reverse(path.begin(), path.end());
  return path;
}

Breakdown breakdown_of(const std::vector<PathSegment>& path) {
  Breakdown b;
  for (const PathSegment& s : path) b[s.category] += s.end - s.begin;
  return b;
}

}  // namespace dpro::replayer
