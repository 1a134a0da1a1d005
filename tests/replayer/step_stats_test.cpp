// Statistics across iterations: the summary a report of many steps opens with.
#include <catch2/catch.hpp>

#include <algorithm>

#include "replayer/replay.h"
#include "replayer/step_stats.h"
#include "trace_fixtures.h"

using namespace dpro;

TEST_CASE("distribution_of: median of an even count is the mean of the middle two, p90 the nearest rank") {
  const auto d = replayer::distribution_of({40, 10, 30, 20});
  CHECK(d.count == 4);
  CHECK(d.median == 25);
  CHECK(d.mean == 25);
  CHECK(d.p90 == 40);
  CHECK(d.min == 10);
  CHECK(d.max == 40);
  std::vector<Nanos> ten;
  for (Nanos v = 1; v <= 10; ++v) ten.push_back(v * 100);
  CHECK(replayer::distribution_of(ten).p90 == 900);
  CHECK(replayer::distribution_of({}).count == 0);
}

TEST_CASE("The summary of a 40-step GPT-2 trace flags its first step as warm-up and agrees with its steps") {
  test::CapturingLog log;
  const auto traces = test::load({test::source_path("traces/h100/gpt2")}, log.log);
  const auto replay = replayer::replay_traces(traces, {}, log.log);
  const replayer::Report& report = replay.report;
  REQUIRE(report.iterations.size() == 40);
  const replayer::StepStats s = replayer::step_stats(report);
  CHECK(s.warmup == std::vector<std::size_t>{0});  // 568.6 ms: cuDNN/cuBLAS set-up; the rest ~46-68 ms
  CHECK(s.warmup.size() + s.outliers.size() + s.steady.size() == 40);
  // Independently: the median and p90 of the steps' own job times.
  std::vector<Nanos> all;
  for (const auto& it : report.iterations) all.push_back(it.job_predicted_ns);
  std::sort(all.begin(), all.end());
  CHECK(s.predicted.median == all[19] + (all[20] - all[19]) / 2);
  CHECK(s.predicted.p90 == all[35]);
  CHECK(s.predicted.max == report.iterations[0].job_predicted_ns);
  // The steady steps' mean critical path adds up to their mean step (every path category counted).
  Nanos path = 0, steps = 0;
  for (Nanos v : s.critical_path) path += v;
  for (std::size_t i : s.steady) steps += report.iterations[i].job_predicted_ns;
  CHECK(std::abs(path - steps / static_cast<Nanos>(s.steady.size())) <= static_cast<Nanos>(replayer::kCategoryCount));
  std::size_t verdicts = 0;
  for (const auto& [name, n] : s.verdicts) verdicts += n;
  CHECK(verdicts == s.steady.size());
  REQUIRE_FALSE(s.path_ops.empty());
  for (std::size_t k = 1; k < s.path_ops.size(); ++k) CHECK(s.path_ops[k - 1].time() >= s.path_ops[k].time());
  // The text report: the summary, not 40 blocks; all 40 with per_step.
  const std::string text = replayer::render_text(report);
  CHECK(std::count(text.begin(), text.end(), '\n') < 40);
  CHECK_THAT(text, Catch::Contains("summary of 40 iterations") && Catch::Contains("warm-up") &&
                       Catch::Contains("ProfilerStep#0 (568.607 ms)") && !Catch::Contains("ProfilerStep#39\n"));
  replayer::ReplayOptions options;
  options.report.per_step = true;
  const auto every = replayer::replay_traces(traces, options, log.log);
  CHECK_THAT(replayer::render_text(every.report), Catch::Contains("ProfilerStep#39\n"));
  const auto j = replayer::to_json(report).at("summary");
  CHECK(j.at("warmup") == nlohmann::json::array({"ProfilerStep#0"}));
  CHECK(j.at("steady").at("count") == s.steady.size());
}
