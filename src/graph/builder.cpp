#include "graph/builder.h"

#include <algorithm>

#include "core/error.h"
#include "graph/builder_internal.h"

namespace dpro::graph {
namespace {

Nanos point_time(const Node& n, Point p) {
  return p == Point::kStart ? n.measured_start : n.measured_start + n.measured_duration;
}

}  // namespace

void compute_measured_delays(Dfg& dfg, const BuildOptions& options, BuildStats& stats) {
  DPRO_CHECK(dfg.finalized());
  Nanos origin = INT64_MAX;
  for (const Node& n : dfg.nodes()) {
    if (n.kind != NodeKind::kBarrier) origin = std::min(origin, n.measured_start);
  }
  if (origin == INT64_MAX) origin = 0;
  dfg.set_origin(origin);
  stats.violations = 0;
  stats.violation_total = 0;
  for (const NodeId id : dfg.node_ids()) {
    Node& n = dfg.node(id);
    std::optional<Nanos> ready;
    Nanos awaited_end = INT64_MIN;  // latest GPU completion a blocking call waited for
    bool has_blocking = false;
    dfg.for_each_in_edge(id, [&](EdgeId e) {
      const Edge& edge = dfg.edge(e);
      const Nanos t = point_time(dfg.node(edge.src), edge.src_point);
      if (edge.dst_point == Point::kStart) {
        ready = std::max(ready.value_or(INT64_MIN), t + edge.gap);
      } else if (is_blocking(edge.kind)) {
        has_blocking = true;
        awaited_end = std::max(awaited_end, t);
      }
    });
    if (!ready) {
      n.release = n.measured_start - origin;
      n.delay = 0;
    } else {
      n.release.reset();
      const Nanos slack = n.measured_start - *ready;
      if (slack < -options.tolerance) {
        ++stats.violations;
        stats.violation_total += -slack;
      }
      // Rounding-sized violations are kept (negative delay) so they do not accumulate.
      n.delay = std::max(slack, -options.tolerance);
    }
    if (has_blocking) {
      // A call that waited returns `wake` after the GPU work it waited for, and costs that
      // much; its waiting is the edge. The wake-up may be slightly negative: the builder accepts
      // waits that the measured times break by up to the tolerance (rounding), and the gap keeps
      // them exact. A call that did not wait (the work had finished before it began) cost its
      // measured duration, and returns no sooner than the work ends (gap 0): were the work later
      // in a what-if, it would wait for it then, and only then.
      const Nanos end = n.measured_start + n.measured_duration;
      const bool waited = awaited_end > n.measured_start;
      const Nanos wake = std::max(end - awaited_end, -options.tolerance);
      n.duration = waited ? std::clamp<Nanos>(wake, 0, n.measured_duration) : n.measured_duration;
      dfg.for_each_in_edge(id, [&](EdgeId e) {
        if (is_blocking(dfg.edge(e).kind)) dfg.edge(e).gap = waited ? wake : 0;
      });
    }
  }
}

void check_acyclic(const Dfg& dfg, const trace::TraceSet& traces) {
  DPRO_CHECK(dfg.finalized());
  // Cycles are looked for among points (a node's start and end), not nodes: a blocking copy
  // launches its GPU op (call start -> copy start) and waits for it (copy end -> call end).
  const std::size_t n = dfg.node_count();
  auto point_of = [](NodeId v, Point p) { return 2 * static_cast<std::size_t>(v.value) + (p == Point::kEnd ? 1 : 0); };
  std::vector<std::uint32_t> indegree(2 * n, 0);
  for (const NodeId v : dfg.node_ids()) indegree[point_of(v, Point::kEnd)] = 1;  // start -> end of the same node
  for (const Edge& e : dfg.edges()) ++indegree[point_of(e.dst, e.dst_point)];
  std::vector<std::size_t> queue;
  for (std::size_t p = 0; p < 2 * n; ++p) {
    if (indegree[p] == 0) queue.push_back(p);
  }
  for (std::size_t done = 0; done < queue.size(); ++done) {
    const std::size_t p = queue[done];
    const Point here = (p % 2) ? Point::kEnd : Point::kStart;
    if (here == Point::kStart && --indegree[p + 1] == 0) queue.push_back(p + 1);
    dfg.for_each_out_edge(NodeId::at(p / 2), [&](EdgeId id) {
      const Edge& e = dfg.edge(id);
      if (e.src_point != here) return;
      const std::size_t q = point_of(e.dst, e.dst_point);
      if (--indegree[q] == 0) queue.push_back(q);
    });
  }
  if (queue.size() == 2 * n) return;
  // Every point left over has a predecessor left over: walk back until a node repeats.
  std::size_t p = 0;
  while (indegree[p] == 0) ++p;
  std::vector<char> seen(2 * n, 0);
  std::vector<NodeId> walk;
  while (!seen[p]) {
    seen[p] = 1;
    const NodeId v = NodeId::at(p / 2);
    if (walk.empty() || walk.back() != v) walk.push_back(v);
    std::size_t next = p;
    if (p % 2 == 1 && indegree[p - 1] > 0) next = p - 1;
    for (const EdgeId id : dfg.in_edges(v)) {
      if (next != p) break;
      const Edge& e = dfg.edge(id);
      const std::size_t q = point_of(e.src, e.src_point);
      if (point_of(e.dst, e.dst_point) == p && indegree[q] > 0) next = q;
    }
    if (next == p) break;  // cannot happen for a leftover point; guards the walk
    p = next;
  }
  const NodeId repeated = NodeId::at(p / 2);
  auto from = std::find(walk.begin(), walk.end(), repeated);
  std::vector<NodeId> cycle(from, walk.end());
  std::reverse(cycle.begin(), cycle.end());
  // Long cycles: the first 6 and the last 5 ops.
  std::string text;
  for (std::size_t i = 0; i < cycle.size(); ++i) {
    if (cycle.size() > 12 && i == 6) {
      text += "... -> ";
      i = cycle.size() - 5;
    }
    const Node& node = dfg.node(cycle[i]);
    text += std::string(traces.strings.view(node.name).substr(0, 48));
    text += node.rank >= 0 ? " (rank " + std::to_string(node.rank) + ")" : " (collective barrier)";
    text += " -> ";
  }
  text += std::string(traces.strings.view(dfg.node(cycle.front()).name).substr(0, 48));
  const trace::TraceRank* owner = dfg.node(cycle.front()).rank >= 0 ? traces.find_rank(dfg.node(cycle.front()).rank) : nullptr;
  throw InputError(owner ? owner->file : std::string(), "dependency cycle of " + std::to_string(cycle.size()) + " ops",
                   text);
}

BuiltGraph build_graph(const trace::TraceSet& traces, const BuildOptions& options, Logger& log) {
  BuiltGraph built;
  built.ranks.resize(traces.ranks.size());
  std::vector<std::vector<detail::CollectiveRef>> collectives(traces.ranks.size());
  for (std::size_t r = 0; r < traces.ranks.size(); ++r) {
    collectives[r] = detail::build_rank(traces, r, options, built.dfg, built.ranks[r], built.stats, log);
  }
  detail::match_collectives(traces, collectives, built.dfg, built.stats, log);
  detail::add_launch_queue_edges(built.dfg, options, built.stats);
  describe_ops(traces, built.dfg);
  built.dfg.finalize();
  check_acyclic(built.dfg, traces);
  compute_measured_delays(built.dfg, options, built.stats);
  detail::add_untraced_nodes(built, options);
  if (built.stats.violations > 0) {
    log.info(std::to_string(built.stats.violations) + " dependencies are broken by the measured times by more than " +
             format_duration(options.tolerance) + " (" + format_duration(built.stats.violation_total) + " in all)");
  }
  return built;
}

}  // namespace dpro::graph
