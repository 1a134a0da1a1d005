// Advice (replayer/advice.h) on bundled traces: the rules whose evidence a trace holds fire, with
// its figures, and the others stay silent.
#include <catch2/catch.hpp>

#include <algorithm>

#include "replayer/advice.h"
#include "replayer/replay.h"
#include "trace_fixtures.h"

using namespace dpro;

namespace {

std::vector<replayer::Advice> advice_of(const std::string& trace) {
  test::CapturingLog log;
  const auto traces = test::load({test::source_path(trace)}, log.log, true);
  const auto replay = replayer::replay_traces(traces, {}, log.log);
  const replayer::Tables t = replayer::make_tables(traces, replay.graph, replay.simulation, replay.report);
  return replayer::advise(replay.report, replayer::step_stats(replay.report), t);
}

const replayer::Advice* find(const std::vector<replayer::Advice>& advice, const std::string& rule) {
  const auto it = std::find_if(advice.begin(), advice.end(), [&](const replayer::Advice& a) { return a.rule == rule; });
  return it == advice.end() ? nullptr : &*it;
}

}  // namespace

TEST_CASE("advice: the CPU-bound ResNet-50 (one H100) is told about its host, not about communication") {
  const auto advice = advice_of("traces/h100/resnet50");
  const replayer::Advice* host = find(advice, "untraced_cpu");
  REQUIRE(host != nullptr);
  CHECK_THAT(host->evidence, Catch::StartsWith("CPU-bound: untraced host work") && Catch::Contains("% of the critical path"));
  CHECK_THAT(host->action, Catch::Contains("DataLoader"));
  // Its GPU waits for a launch 1-30 % of each steady step (the idle table per step); only the
  // warm-up step (4.3 s, cuDNN's autotuning: GPU idle 92 %) starves it, and the rules read the
  // steady steps (once, they summed every step and told this job its GPU starved 69 % of the time).
  for (const char* silent : {"host_starved_gpu", "exposed_communication", "straggler", "gpu_bound", "copies", "blocked_on_gpu"})
    CHECK(find(advice, silent) == nullptr);
}

TEST_CASE("advice: the 8-rank DLRM is told about exposed all-to-all and its straggler, not GPU-bound") {
  const auto advice = advice_of("traces/dlrm-8xV100");
  const replayer::Advice* exposed = find(advice, "exposed_communication");
  REQUIRE(exposed != nullptr);
  CHECK_THAT(exposed->evidence, Catch::StartsWith("exposed communication 36.6% of the step"));
  CHECK_THAT(exposed->action, Catch::Contains("--strategies buckets,compression"));
  const replayer::Advice* straggler = find(advice, "straggler");
  REQUIRE(straggler != nullptr);
  CHECK(straggler->evidence == "1 of 1 steady step(s) wait for rank 7");
  for (const char* silent : {"gpu_bound", "copies", "launch_overhead", "blocked_on_gpu"}) CHECK(find(advice, silent) == nullptr);
}

TEST_CASE("advice: BERT DDP's launch overhead names its small kernels and CUDA graphs") {
  const auto advice = advice_of("traces/h100/bert-ddp");
  const replayer::Advice* launch = find(advice, "launch_overhead");
  REQUIRE(launch != nullptr);
  CHECK_THAT(launch->evidence, Catch::Contains("launch overhead") && Catch::Contains("kernel launches per step under 10 us"));
  CHECK_THAT(launch->action, Catch::Contains("CUDA graphs"));
  CHECK(find(advice, "gpu_bound") == nullptr);
  // Its GPU does wait for the host in its steady steps.
  const replayer::Advice* starved = find(advice, "host_starved_gpu");
  REQUIRE(starved != nullptr);
  CHECK_THAT(starved->evidence, Catch::StartsWith("GPU idle waiting for the host to launch 61.0% of the step"));
}

TEST_CASE("advice: rendered one line per rule, nothing when there is none") {
  CHECK(replayer::render_advice({}).empty());
  const std::string text = replayer::render_advice({{"copies", "copies 12.0% of the critical path", "pin host memory"}});
  CHECK(text == "advice (from the steady steps; rules, see docs/replay.md):\n  - copies 12.0% of the critical path -> pin host memory\n");
  CHECK(replayer::to_json({{"copies", "e", "a"}}).dump() == R"([{"action":"a","evidence":"e","rule":"copies"}])");
}

TEST_CASE("advice: built from advice_tables() alone it says what it says with every table, and the rest stay empty") {
  for (const char* trace : {"traces/h100/resnet50", "traces/dlrm-8xV100", "traces/h100/bert-ddp"}) {
    INFO(trace);
    test::CapturingLog log;
    const auto traces = test::load({test::source_path(trace)}, log.log, true);
    const auto replay = replayer::replay_traces(traces, {}, log.log);
    const replayer::StepStats stats = replayer::step_stats(replay.report);
    const replayer::Tables all = replayer::make_tables(traces, replay.graph, replay.simulation, replay.report);
    const replayer::Tables some =
        replayer::make_tables(traces, replay.graph, replay.simulation, replay.report, replayer::advice_tables());
    CHECK(some.operators.empty());
    CHECK(some.phases.empty());
    CHECK(some.memory.empty());
    if (std::string(trace) == "traces/dlrm-8xV100") CHECK_FALSE(all.operators.empty());  // the Kineto trace has CPU ops
    CHECK(some.gpu_ops.size() == all.gpu_ops.size());
    CHECK(some.idle.size() == all.idle.size());
    CHECK(replayer::to_json(replayer::advise(replay.report, stats, some)) == replayer::to_json(replayer::advise(replay.report, stats, all)));
  }
}
