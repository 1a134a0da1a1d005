#pragma once
// Statistics across a report's iterations, for the summary a user reads first: the step time's
// distribution, which steps are warm-up or outliers, and, over the steady steps, the mean
// critical path, the verdicts and the ops that took the most time on the path.
//
// Warm-up: the leading steps whose job time is more than kWarmupFactor x the median of all steps
// (cuDNN autotuning, allocator growth, compilation), stopping at the first that is not; at least
// one step is left. Outliers: later steps whose job time lies further from the median of the
// non-warm-up steps than max(3 x 1.4826 x MAD, 10 % of that median) (MAD: median absolute
// deviation; 1.4826 x MAD estimates a normal spread's sigma). The rest are the steady steps.
#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "replayer/report.h"

namespace dpro::replayer {

inline constexpr double kWarmupFactor = 1.5;

// Of a set of times: p90 is the nearest-rank 90th percentile; the median of an even count is the
// mean of the middle two, rounded down. All 0 for an empty set.
struct Distribution {
  std::size_t count = 0;
  Nanos median = 0, mean = 0, p90 = 0, min = 0, max = 0;
};
Distribution distribution_of(std::vector<Nanos> values);

struct StepStats {
  std::size_t iterations = 0;
  std::vector<std::size_t> warmup, outliers, steady;  // indices into Report::iterations
  // Job time per step: measured, and predicted (the replay's; a what-if's prediction in its report).
  Distribution measured, predicted;                  // over every step
  Distribution steady_measured, steady_predicted;    // over the steady steps
  // Over the steady steps: the job's critical path per category (mean per step), how many steps had
  // each verdict (headline -> count), and the path's ops (by name, rank) with their mean time per
  // step, most first.
  Nanos critical_path[kCategoryCount] = {};
  std::map<std::string, std::size_t> verdicts;
  std::vector<PathOp> path_ops;
};

StepStats step_stats(const Report& report);

// A what-if's median step against its baseline's, over the same steps: the baseline's steady
// steps (its warm-up and outliers left out), matched in the what-if by iteration number. Taking
// each report's own steady set would compare medians over different steps whenever the what-if
// moves a step across the warm-up or outlier line. `steps` is how many steps both have;
// `whatif_steps` are those steps' indices into the what-if's iterations (in the baseline's steady
// order), so that a caller summarising more of them need not match the steps again.
struct SteadyChange {
  std::size_t steps = 0;
  Nanos baseline_median = 0, whatif_median = 0;
  std::vector<std::size_t> whatif_steps;
};
SteadyChange steady_change(const Report& baseline, const StepStats& baseline_stats, const Report& whatif);

// The summary block of the text report (for a report of more than one iteration), `top` path ops.
std::string render_summary(const Report& report, const StepStats& stats, std::size_t top);
nlohmann::json to_json(const Report& report, const StepStats& stats);

}  // namespace dpro::replayer
