// The engine's times-only run (replayer::Record::kTimes) against its ordered run: every node's
// start and end, the makespan and the event count equal to the ns, on random graphs full of ties
// (equal candidate times, where only the order could tell them apart) and on the bundled traces'
// graphs; no causes are recorded; and a report with the analysis off reads the same either way.
#include <catch2/catch.hpp>

#include <random>

#include "core/error.h"
#include "replayer/engine.h"
#include "replayer/report.h"
#include "graph_fixtures.h"
#include "replay_fixtures.h"
#include "trace_fixtures.h"
#include "id_printing.h"

using namespace dpro;
using graph::NodeKind;
using graph::Point;

namespace {

void check_same_times(const replayer::Simulation& ordered, const replayer::Simulation& times) {
  CHECK(ordered.causes);
  CHECK_FALSE(times.causes);
  CHECK(times.start_cause.empty());
  CHECK(times.end_cause.empty());
  REQUIRE(times.start.size() == ordered.start.size());
  CHECK(times.start == ordered.start);
  CHECK(times.end == ordered.end);
  CHECK(times.makespan == ordered.makespan);
  CHECK(times.events_processed == ordered.events_processed);
}

}  // namespace

TEST_CASE("A times-only run gives the ordered run's times on random graphs with ties") {
  std::mt19937_64 rng(7);
  replayer::Simulator ordered, times, both;  // `both` alternates the modes on one engine
  std::size_t tied = 0;  // nodes whose start had more than one best candidate, over all graphs
  for (int round = 0; round < 200; ++round) {
    INFO("round " << round);
    const graph::Dfg g = test::random_dag(rng, 2 + static_cast<int>(rng() % 300), 1 + static_cast<int>(rng() % 4));
    const replayer::Simulation& a = ordered.run(g);
    const replayer::Simulation& b = times.run(g, replayer::Record::kTimes);
    check_same_times(a, b);
    const replayer::Simulation& c = both.run(g, round % 2 ? replayer::Record::kTimes : replayer::Record::kTimesAndCauses);
    CHECK(c.start == a.start);
    CHECK(c.end == a.end);
    if (round % 2 == 0) {
      CHECK(c.start_cause == a.start_cause);
      CHECK(c.end_cause == a.end_cause);
    }
    for (const graph::NodeId v : g.node_ids()) {
      int best = 0;
      for (const graph::EdgeId e : g.in_edges(v)) {
        const graph::Edge& edge = g.edge(e);
        if (edge.dst_point != Point::kStart) continue;
        const Nanos t = (edge.src_point == Point::kStart ? a.start[edge.src] : a.end[edge.src]) + edge.gap;
        if (t + g.node(v).delay == a.start[v]) ++best;
      }
      tied += best > 1 ? 1 : 0;
    }
  }
  CHECK(tied > 500);  // the graphs do exercise ties (635 nodes with this seed)
}

TEST_CASE("A times-only run refuses a cycle and an out-of-reach clock as the ordered run does") {
  graph::Dfg g;
  graph::Node n;
  n.kind = NodeKind::kCpuOp;
  n.duration = 1;
  const auto a = g.add_node(n);
  const auto b = g.add_node(n);
  const auto c = g.add_node(n);
  g.add_edge(graph::Edge{a, b, graph::EdgeKind::kThreadOrder, Point::kEnd, Point::kStart, 0});
  g.add_edge(graph::Edge{b, c, graph::EdgeKind::kThreadOrder, Point::kEnd, Point::kStart, 0});
  g.add_edge(graph::Edge{c, b, graph::EdgeKind::kThreadOrder, Point::kEnd, Point::kStart, 0});
  g.finalize();
  replayer::Simulator simulator;
  CHECK_THROWS_WITH(simulator.run(g, replayer::Record::kTimes), Catch::Contains("2 ops never ran (dependency cycle)"));
  graph::Dfg far;
  n.duration = kMaxReplayNanos;
  n.release = 0;
  const auto x = far.add_node(n);
  n.release.reset();
  n.duration = 1;
  const auto y = far.add_node(n);
  far.add_edge(graph::Edge{x, y, graph::EdgeKind::kThreadOrder, Point::kEnd, Point::kStart, 0});
  far.finalize();
  CHECK_THROWS_WITH(simulator.run(far, replayer::Record::kTimes), Catch::Contains("beyond the replay clock's bound"));
}

TEST_CASE("On the bundled traces' graphs a times-only run gives every time, and the same report") {
  const char* traces[] = {"traces/hta/a100-ws2-rank0-nccl.json.gz", "traces/hta/amd-mi250-toy.json.gz",
                          "traces/hta/cpu-only.json.gz",            "traces/hta/cuda-event-sync.json.gz",
                          "traces/hta/cuda-event-sync-multistream.json.gz",
                          "traces/hta/no-distributed-info.json.gz", "traces/hta/triton.json.gz",
                          "traces/hta/sampled-ws128-rank0.json.gz", "traces/hta/simple-add-kineto.json.gz"};
  auto check = [](const trace::TraceSet& set, const replayer::Replay& r) {
    replayer::Simulator simulator;
    const replayer::Simulation times = simulator.run(r.graph.dfg, replayer::Record::kTimes);
    check_same_times(r.simulation, times);
    replayer::ReportOptions options;
    options.top_ops = 0;
    options.analysis = false;
    const replayer::Report x = replayer::make_report(set, r.graph, r.simulation, options);
    const replayer::Report y = replayer::make_report(set, r.graph, times, options);
    CHECK(to_json(x).dump() == to_json(y).dump());
    REQUIRE_FALSE(x.iterations.empty());
  };
  for (const char* t : traces) {
    INFO(t);
    test::CapturingLog log;
    const trace::TraceSet set = test::load({test::source_path(t)}, log.log);
    const replayer::Replay r = replayer::replay_traces(set, {}, log.log);
    check(set, r);
  }
  INFO("traces/dlrm-8xV100");
  check(test::dlrm_replayed().set, test::dlrm_replayed().replay);
}
