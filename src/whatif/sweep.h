#pragma once
// A sweep: the same what-if at every point of a grid of settings (another GPU, another job size,
// another network), each point summarised against the baseline over the same steps, so that one
// table answers "which of these?" (`dpro-replay sweep`).
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "replayer/report.h"
#include "replayer/step_stats.h"

namespace dpro::whatif {

// One swept setting and its values, in the order given: "device" (GPU names), "ranks" (job
// sizes), or a `--set` key ("network.inter_node_gbps", "host.cpu_speed", ...).
struct SweepAxis {
  std::string name;
  std::vector<std::string> values;
};

// One point of the grid: a value of every axis, in axis order.
using SweepPoint = std::vector<std::pair<std::string, std::string>>;

// Every combination of the axes' values (the first axis varies slowest). Throws OptionError
// (option "sweep") for an axis without values, an axis named twice, or more than `max_points`
// points.
std::vector<SweepPoint> sweep_grid(const std::vector<SweepAxis>& axes, std::size_t max_points);

// A point's what-if against the baseline: the median step over the baseline's steady steps
// (replayer::steady_change), the verdict most of those steps had in the what-if, and the
// what-if's mean critical path per category over them.
struct SweepRow {
  SweepPoint point;
  std::size_t steps = 0;  // steps compared
  Nanos baseline_ns = 0, predicted_ns = 0;
  double change = 0;    // predicted / baseline - 1
  std::string verdict;  // the most frequent headline ("" when the report has no verdicts)
  Nanos critical_path[replayer::kCategoryCount] = {};  // mean per compared step
};
SweepRow sweep_row(SweepPoint point, const replayer::Report& baseline, const replayer::StepStats& baseline_stats,
                   const replayer::Report& whatif);

}  // namespace dpro::whatif
