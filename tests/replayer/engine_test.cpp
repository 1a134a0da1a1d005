#include <catch2/catch.hpp>

#include "core/error.h"
#include "replayer/critical_path.h"
#include "replayer/engine.h"
#include "graph_fixtures.h"
#include "id_printing.h"

using namespace dpro;
using graph::Edge;
using graph::EdgeKind;
using graph::Node;
using graph::NodeKind;
using graph::Point;

using test::add_node;
using test::link;

TEST_CASE("Engine: chains, releases, delays and gaps") {
  graph::Dfg g;
  const auto a = add_node(g, NodeKind::kCpuOp, 0, 10, 0, 5);
  const auto b = add_node(g, NodeKind::kRuntimeCall, 0, 4, 3);
  const auto k = add_node(g, NodeKind::kKernel, 0, 100, 2);
  const auto c = add_node(g, NodeKind::kCpuOp, 0, 7, 1);
  link(g, a, b);
  link(g, b, k, EdgeKind::kLaunch, Point::kStart, Point::kStart);
  link(g, b, c);
  g.finalize();
  const auto sim = replayer::simulate(g);
  CHECK(sim.start[a] == 5);
  CHECK(sim.end[a] == 15);
  CHECK(sim.start[b] == 18);  // a ends at 15, + delay 3
  CHECK(sim.start[k] == 20);  // launched at 18, + launch latency 2
  CHECK(sim.end[k] == 120);
  CHECK(sim.start[c] == 23);
  CHECK(sim.makespan == 120);
  CHECK(sim.start_cause[k] != graph::EdgeId::none());
  CHECK(g.edge(sim.start_cause[k]).kind == EdgeKind::kLaunch);
}

TEST_CASE("Engine: a blocking sync ends when the GPU work it waits for ends, plus its wake-up time") {
  graph::Dfg g;
  const auto launch = add_node(g, NodeKind::kRuntimeCall, 0, 5, 0, 0);
  const auto kernel = add_node(g, NodeKind::kKernel, 0, 1000, 3);
  const auto sync = add_node(g, NodeKind::kRuntimeCall, 0, 4);
  link(g, launch, kernel, EdgeKind::kLaunch, Point::kStart, Point::kStart);
  link(g, launch, sync);
  link(g, kernel, sync, EdgeKind::kBlockingSync, Point::kEnd, Point::kEnd, 4);
  g.finalize();
  auto sim = replayer::simulate(g);
  CHECK(sim.start[sync] == 5);
  CHECK(sim.end[sync] == 1007);  // kernel ends at 1003, +4 wake-up
  CHECK(g.edge(sim.end_cause[sync]).kind == EdgeKind::kBlockingSync);
  SECTION("a shorter kernel lets the sync return sooner") {
    g.node(kernel).duration = 1;
    sim = replayer::simulate(g);
    CHECK(sim.end[sync] == 9);  // own duration (4) after its start at 5 and after kernel end (4) + 4
  }
}

TEST_CASE("Engine: a collective transfers only after its last participant arrives") {
  graph::Dfg g;
  std::vector<graph::NodeId> kernels;
  const auto barrier = add_node(g, NodeKind::kBarrier, -1, 0);
  for (int r = 0; r < 4; ++r) {
    const auto k = add_node(g, NodeKind::kCollective, r, 50, 0, 100 * r);  // rank r arrives at 100 r
    link(g, k, barrier, EdgeKind::kCollective, Point::kStart, Point::kStart);
    link(g, barrier, k, EdgeKind::kCollective, Point::kStart, Point::kEnd, 50);
    kernels.push_back(k);
  }
  g.finalize();
  const auto sim = replayer::simulate(g);
  for (int r = 0; r < 4; ++r) {
    CHECK(sim.start[kernels[r]] == 100 * r);
    CHECK(sim.end[kernels[r]] == 350);  // last arrival 300 + transfer 50
  }
  // Rank 0's kernel spent 300 ns waiting: the critical path jumps to rank 3, the last to arrive.
  const auto path = replayer::critical_path(g, sim, replayer::execution_categories(g), kernels[0], Point::kEnd, 0);
  const auto b = replayer::breakdown_of(path);
  CHECK(b[replayer::Category::kCommunication] == 50);
  CHECK(b.total() == 350);
  // Rank 0's own view: the 300 ns on rank 3's op are waiting for that peer.
  const auto own = replayer::breakdown_of(path, 0);
  CHECK(own[replayer::Category::kPeerWait] == 300);
  CHECK(own.main_peer() == 3);
  CHECK(own[replayer::Category::kCommunication] == 50);
}

TEST_CASE("Engine: identical inputs give identical runs, ties broken by insertion order") {
  graph::Dfg g;
  for (int i = 0; i < 200; ++i) add_node(g, NodeKind::kKernel, 0, (i * 37) % 11, 0, (i * 13) % 7);
  for (std::uint32_t i = 1; i < 200; ++i) link(g, graph::NodeId{(i * 7) % i}, graph::NodeId{i});
  g.finalize();
  const auto first = replayer::simulate(g);
  const auto second = replayer::simulate(g);
  CHECK(first.start == second.start);
  CHECK(first.end == second.end);
  CHECK(first.start_cause == second.start_cause);
}

TEST_CASE("Engine: a graph whose times could add up beyond the replay clock is refused, before any sum overflows") {
  // Issue 37: three ops of 1.5e18 ns on one thread end at 4.5e18 (fits int64), a fourth at 6e18
  // and a sixth past INT64_MAX; the engine's start + delay and end + gap sums would overflow.
  // Every such graph is refused with one message, whatever its shape.
  for (const int ops : {3, 7}) {
    INFO(ops);
    graph::Dfg g;
    graph::NodeId prev = add_node(g, NodeKind::kCpuOp, 0, 1'500'000'000'000'000'000, 0, 0);
    for (int i = 1; i < ops; ++i) {
      const graph::NodeId n = add_node(g, NodeKind::kCpuOp, 0, 1'500'000'000'000'000'000);
      link(g, prev, n);
      prev = n;
    }
    g.finalize();
    replayer::Simulator simulator;
    CHECK_THROWS_AS(simulator.run(g), InputError);
    CHECK_THROWS_WITH(simulator.run(g), Catch::Contains("replay: ") && Catch::Contains("beyond the replay clock's bound"));
  }
  // Negative gaps and delays count by their magnitude, and so does a release time.
  graph::Dfg g;
  const auto a = add_node(g, NodeKind::kCpuOp, 0, 10, 0, -2'000'000'000'000'000'000);
  const auto b = add_node(g, NodeKind::kCpuOp, 0, 10, -1'500'000'000'000'000'000);
  link(g, a, b);
  g.finalize();
  CHECK_THROWS_AS(replayer::simulate(g), InputError);
  // At the bound itself the graph replays, and its times are exact.
  graph::Dfg ok;
  const auto c = add_node(ok, NodeKind::kCpuOp, 0, kMaxReplayNanos - 1'000, 0, 0);
  const auto d = add_node(ok, NodeKind::kCpuOp, 0, 1'000);
  link(ok, c, d);
  ok.finalize();
  const auto sim = replayer::simulate(ok);
  CHECK(sim.end[d] == kMaxReplayNanos);
}
