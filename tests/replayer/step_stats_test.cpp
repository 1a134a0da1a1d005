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

namespace {
replayer::Report steps_report(const std::vector<Nanos>& times) {
  replayer::Report r;
  for (std::size_t i = 0; i < times.size(); ++i) {
    replayer::IterationReport it;
    it.number = static_cast<std::int64_t>(i);
    it.name = "ProfilerStep#" + std::to_string(i);
    it.job_predicted_ns = it.job_measured_ns = times[i];
    r.iterations.push_back(it);
  }
  return r;
}
}  // namespace

TEST_CASE("A what-if's steady median is taken over the baseline's steady steps, not its own") {
  // Baseline: step 0 is warm-up (3x), steps 1-8 steady at 100..107. The what-if speeds up every
  // step by 20 except step 8, which it makes 200: in the what-if alone step 8 is an outlier, and
  // its own steady median would leave it out.
  const replayer::Report base = steps_report({300, 100, 101, 102, 103, 104, 105, 106, 107});
  const replayer::Report whatif = steps_report({280, 80, 81, 82, 83, 84, 85, 86, 200});
  const replayer::StepStats b = replayer::step_stats(base);
  REQUIRE(b.steady == std::vector<std::size_t>{1, 2, 3, 4, 5, 6, 7, 8});
  REQUIRE(replayer::step_stats(whatif).outliers == std::vector<std::size_t>{8});
  const replayer::SteadyChange c = replayer::steady_change(base, b, whatif);
  CHECK(c.steps == 8);
  CHECK(c.baseline_median == 103);  // (103 + 104) / 2 rounded down
  CHECK(c.whatif_median == 83);     // of 80..86 and 200: (83 + 84) / 2 rounded down
  CHECK(c.whatif_steps == std::vector<std::size_t>{1, 2, 3, 4, 5, 6, 7, 8});
  // A what-if without some of the baseline's steps compares the steps both have.
  const replayer::Report shorter = steps_report({280, 80, 81});
  const replayer::SteadyChange s = replayer::steady_change(base, b, shorter);
  CHECK(s.steps == 2);
  CHECK(s.baseline_median == 100);
  CHECK(s.whatif_median == 80);
  CHECK(s.whatif_steps == std::vector<std::size_t>{1, 2});
}
