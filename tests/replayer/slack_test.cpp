// Slack of a replayed schedule (replayer/slack.h): on synthetic graphs whose slack is known by
// hand, and on a real trace, where a node's slack is how much longer it can run without moving
// the replay's end, and a critical node's is 0.
#include <catch2/catch.hpp>

#include <random>

#include "replayer/critical_path.h"
#include "replayer/engine.h"
#include "replayer/replay.h"
#include "replayer/slack.h"
#include "graph_fixtures.h"
#include "id_printing.h"
#include "replay_fixtures.h"
#include "trace_fixtures.h"

using namespace dpro;
using graph::EdgeKind;
using graph::NodeKind;
using graph::Point;

using test::add_node;
using test::link;

TEST_CASE("Slack: a branch beside the critical path has the difference, gaps and delays included") {
  graph::Dfg g;
  const auto a = add_node(g, NodeKind::kCpuOp, 0, 10, 0, 0);
  const auto b = add_node(g, NodeKind::kCpuOp, 0, 10);
  const auto c = add_node(g, NodeKind::kKernel, 0, 4, 1);  // launch latency 1
  const auto d = add_node(g, NodeKind::kCpuOp, 0, 5);
  link(g, a, b);
  link(g, b, d);
  link(g, a, c, EdgeKind::kThreadOrder, Point::kEnd, Point::kStart, 2);  // c starts 2 + 1 after a ends
  link(g, c, d);
  g.finalize();
  const auto sim = replayer::simulate(g);
  REQUIRE(sim.makespan == 25);
  const auto slack = replayer::start_slack(g, sim);
  CHECK(slack[a] == 0);
  CHECK(slack[b] == 0);
  CHECK(slack[d] == 0);
  CHECK(sim.start[c] == 13);
  CHECK(slack[c] == 3);  // c ends at 17, d needs it by 20
  // A later horizon adds to every node's slack.
  CHECK(replayer::start_slack(g, sim, 40)[a] == 15);
}

TEST_CASE("Slack: an end-edge bounds its source, a collective's early arrivals wait for the last") {
  graph::Dfg g;
  // A sync that returns 4 ns after a kernel ends: the kernel can start no later than the sync's
  // latest end less 4 and its duration.
  const auto launch = add_node(g, NodeKind::kRuntimeCall, 0, 5, 0, 0);
  const auto kernel = add_node(g, NodeKind::kKernel, 0, 100, 3);
  const auto sync = add_node(g, NodeKind::kRuntimeCall, 0, 2);
  link(g, launch, kernel, EdgeKind::kLaunch, Point::kStart, Point::kStart);
  link(g, launch, sync);
  link(g, kernel, sync, EdgeKind::kBlockingSync, Point::kEnd, Point::kEnd, 4);
  // Four ranks arriving at a collective at 200, 300, 400, 500 (the barrier joins their starts and
  // holds their ends: the nodes form a cycle, the points do not).
  const auto barrier = add_node(g, NodeKind::kBarrier, -1, 0);
  std::vector<graph::NodeId> coll;
  for (int r = 0; r < 4; ++r) {
    const auto k = add_node(g, NodeKind::kCollective, r, 50, 0, 200 + 100 * r);
    link(g, k, barrier, EdgeKind::kCollective, Point::kStart, Point::kStart);
    link(g, barrier, k, EdgeKind::kCollective, Point::kStart, Point::kEnd, 50);
    coll.push_back(k);
  }
  g.finalize();
  const auto sim = replayer::simulate(g);
  REQUIRE(sim.makespan == 550);
  const auto slack = replayer::start_slack(g, sim);
  CHECK(sim.end[sync] == 107);
  CHECK(slack[kernel] == 550 - 4 - 100 - 3);  // started at 3, latest start 443
  for (int r = 0; r < 4; ++r) CHECK(slack[coll[r]] == 300 - 100 * r);
}

TEST_CASE("Slack on random graphs: a start delayed by its slack moves no end past the replay's, one ns more moves it") {
  // Random graphs full of ties, negative gaps and delays, releases, end-edges (graph_fixtures.h).
  std::mt19937_64 rng(11);
  std::size_t checked = 0, with_slack = 0;
  for (int round = 0; round < 30; ++round) {
    graph::Dfg g = test::random_dag(rng, 2 + static_cast<int>(rng() % 120), 1 + static_cast<int>(rng() % 4));
    const replayer::Simulation sim = replayer::simulate(g, replayer::Record::kTimes);
    const auto slack = replayer::start_slack(g, sim);
    for (const graph::NodeId v : g.node_ids()) {
      REQUIRE(slack[v] >= 0);
      if (rng() % 4 != 0) continue;  // a sample, each a replay
      const Nanos delay = g.node(v).delay;
      g.node(v).delay = delay + slack[v];
      CHECK(replayer::simulate(g, replayer::Record::kTimes).makespan == sim.makespan);
      g.node(v).delay = delay + slack[v] + 1;
      CHECK(replayer::simulate(g, replayer::Record::kTimes).makespan == sim.makespan + 1);
      g.node(v).delay = delay;
      ++checked;
      with_slack += slack[v] > 0 ? 1 : 0;
    }
  }
  CHECK(checked > 200);
  CHECK(with_slack > 50);
}

TEST_CASE("Slack on a real trace: never negative, 0 along the critical path, and what a node can absorb") {
  test::CapturingLog log;
  const auto traces = test::load({"traces/hta/alexnet-a100-single.json.gz"}, log.log, false);
  replayer::Replay replay = replayer::replay_traces(traces, {}, log.log);
  graph::Dfg& g = replay.graph.dfg;
  const replayer::Simulation sim = replayer::simulate(g);
  const auto slack = replayer::start_slack(g, sim);
  graph::NodeId last = graph::NodeId(0);
  for (const graph::NodeId v : g.node_ids()) {
    CHECK(slack[v] >= 0);
    if (sim.end[v] > sim.end[last]) last = v;
  }
  const auto path = replayer::critical_path(g, sim, replayer::execution_categories(g), last, Point::kEnd, 0);
  std::size_t own = 0;
  // (A node whose end waited for something else, a sync, has slack at its start: it was waiting.)
  for (const replayer::PathSegment& s : path)
    if (s.node.valid() && s.part == replayer::Part::kOwn && s.end > s.begin &&
        sim.end[s.node] == sim.start[s.node] + g.node(s.node).duration) {
      CHECK(slack[s.node] == 0);
      ++own;
    }
  CHECK(own > 10);
  // A node with slack runs that much longer without moving the end; a node on the path whose end
  // is its own duration moves the end by all it gains.
  std::size_t with_slack = 0, critical = 0;
  for (const graph::NodeId v : g.node_ids()) {
    const bool own_end = sim.end[v] == sim.start[v] + g.node(v).duration;
    if (!own_end || (slack[v] == 0 ? critical : with_slack) >= 5 || g.node(v).duration < 1000) continue;
    const Nanos before = g.node(v).duration;
    const Nanos extra = slack[v] == 0 ? 777 : std::min<Nanos>(slack[v], 1'000'000);
    g.node(v).duration = before + extra;
    const Nanos makespan = replayer::simulate(g, replayer::Record::kTimes).makespan;
    g.node(v).duration = before;
    if (slack[v] == 0) {
      CHECK(makespan == sim.makespan + extra);
      ++critical;
    } else {
      CHECK(makespan == sim.makespan);
      ++with_slack;
    }
  }
  CHECK(critical == 5);
  CHECK(with_slack == 5);
}
