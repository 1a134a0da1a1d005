// The replay must respond to changes the way the job would: the dependencies it found are
// exercised by re-timing ops in the graph and checking who waits for whom.
#include <catch2/catch.hpp>

#include "core/error.h"
#include "replayer/replay.h"
#include "trace_fixtures.h"

using namespace dpro;

namespace {

struct Fixture {
  test::CapturingLog log;
  trace::TraceSet set;
  replayer::Replay base;
  explicit Fixture(const std::vector<std::string>& paths) : set(test::load(paths, log.log)) {
    base = replayer::replay_traces(set, {}, log.log);
  }
  // Replays a copy of the graph after `change` rewrote it.
  template <typename F>
  replayer::Report replay_changed(F&& change) {
    graph::BuiltGraph g = base.graph;
    change(g.dfg);
    const auto sim = replayer::simulate(g.dfg);
    return replayer::make_report(set, g, sim, {});
  }
};

}  // namespace

TEST_CASE("Slower GPU kernels on one rank delay its peers through the collectives") {
  Fixture f({test::dlrm_dir()});
  const auto slow = f.replay_changed([](graph::Dfg& dfg) {
    for (auto& n : dfg.nodes()) {
      if (n.rank == 2 && n.kind == graph::NodeKind::kKernel) n.duration *= 20;
    }
  });
  const auto& before = f.base.report.iterations[0];
  const auto& after = slow.iterations[0];
  CHECK(after.ranks[2].predicted_ns > before.ranks[2].predicted_ns);
  // Ranks that are not slowed still wait for rank 2 in the all-to-all / all-reduce.
  int delayed_peers = 0;
  for (int r = 0; r < 8; ++r) {
    if (r != 2 && after.ranks[r].predicted_ns > before.ranks[r].predicted_ns + 100000) ++delayed_peers;
  }
  CHECK(delayed_peers >= 5);
  CHECK(after.job_predicted_ns > before.job_predicted_ns);
}

TEST_CASE("A kernel awaited by a blocking sync lengthens the step by its extra time") {
  Fixture f({test::source_path("traces/hta/cuda-event-sync.json.gz")});
  // The longest kernel of the step, which the CPU later synchronises on.
  graph::NodeId longest;
  for (const graph::NodeId id : f.base.graph.dfg.node_ids()) {
    const auto& n = f.base.graph.dfg.node(id);
    if (n.kind == graph::NodeKind::kKernel && (!longest.valid() || n.duration > f.base.graph.dfg.node(longest).duration)) longest = id;
  }
  REQUIRE(longest.valid());
  const Nanos extra = 1000000;  // 1 ms
  const auto slower = f.replay_changed([&](graph::Dfg& dfg) { dfg.node(longest).duration += extra; });
  const Nanos before = f.base.report.iterations[0].ranks[0].predicted_ns;
  const Nanos after = slower.iterations[0].ranks[0].predicted_ns;
  CHECK(after - before == extra);
}

TEST_CASE("Faster CPU launches shorten a launch-bound step") {
  Fixture f({test::dlrm_dir()});
  const auto faster = f.replay_changed([](graph::Dfg& dfg) {
    for (auto& n : dfg.nodes()) {
      if (n.kind == graph::NodeKind::kCpuOp || n.kind == graph::NodeKind::kRuntimeCall) {
        n.duration /= 2;
        n.delay /= 2;
      }
    }
  });
  CHECK(faster.iterations[0].job_predicted_ns < f.base.report.iterations[0].job_predicted_ns * 9 / 10);
}

TEST_CASE("A trace without ProfilerStep is reported as one window over the whole trace") {
  // torch.profiler used without a schedule: no ProfilerStep#N, yet the replay and every what-if
  // need a time to compare.
  Fixture f({test::source_path("traces/hta/cuda-event-sync-multistream.json.gz")});
  REQUIRE(f.set.ranks[0].iterations.empty());
  REQUIRE(f.base.report.iterations.size() == 1);
  const auto& whole = f.base.report.iterations[0];
  CHECK(whole.whole_trace);
  Nanos first = INT64_MAX, last = INT64_MIN;
  for (const auto& e : f.set.ranks[0].events) {
    if (!trace::is_cpu_side(e.kind) && !trace::is_gpu_work(e.kind)) continue;
    first = std::min(first, e.start);
    last = std::max(last, e.end());
  }
  CHECK(whole.job_measured_ns == last - first);
  CHECK(whole.ranks.at(0).measured_ns == last - first);
  CHECK(std::abs(whole.job_predicted_ns - whole.job_measured_ns) <= whole.job_measured_ns / 100);
  CHECK(replayer::to_json(f.base.report).at("iterations").at(0).at("number").is_null());

  // Every GPU op 20 ms longer: the GPU work ends later, and so does the window.
  const Nanos extra = 20000000;
  std::size_t gpu_ops = 0;
  const auto slower = f.replay_changed([&](graph::Dfg& dfg) {
    for (auto& n : dfg.nodes())
      if (graph::on_gpu(n.kind)) n.duration += extra, ++gpu_ops;
  });
  REQUIRE(gpu_ops > 0);
  REQUIRE(slower.iterations.size() == 1);
  CHECK(slower.iterations[0].whole_trace);
  CHECK(slower.iterations[0].job_predicted_ns >= whole.job_predicted_ns + extra);

  replayer::ReportOptions step;
  step.iteration = 1;
  CHECK_THROWS_AS(replayer::make_report(f.set, f.base.graph, f.base.simulation, step), InputError);
}
