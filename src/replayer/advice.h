#pragma once
// Advice: what to try first, from what a report already measured. Each rule looks at one kind of
// evidence (the steady steps' critical path by category, their verdicts, the overlap of
// communication and computation, the GPU's idle time by cause, the kernels' sizes) and fires only
// when that evidence is present and above its threshold; each line names the evidence with its
// figure and one concrete action. Rules, not a model: they point at where to look, the what-ifs
// and `optimize` say how much a change would give.
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "replayer/report.h"
#include "replayer/step_stats.h"
#include "replayer/tables.h"

namespace dpro::replayer {

struct Advice {
  std::string rule;      // "launch_overhead", "untraced_cpu", "exposed_communication", "straggler",
                         // "host_starved_gpu", "gpu_bound", "blocked_on_gpu", "copies"
  std::string evidence;  // "launch overhead 63.0% of the critical path; 4,120 kernels per step under 10 us"
  std::string action;    // "capture the step in CUDA graphs or torch.compile(mode=\"reduce-overhead\")"
};

// Thresholds: a category's share of the steady steps' mean job critical path (kPathShare), or of
// the replayed step (kStepShare for exposed communication and host-starved GPU idle).
inline constexpr double kLaunchShare = 0.15, kUntracedShare = 0.20, kComputeShare = 0.60, kBlockedShare = 0.15,
                        kCopiesShare = 0.10, kExposedShare = 0.10, kHostStarvedShare = 0.30, kStragglerSteps = 0.5;
inline constexpr Nanos kSmallKernel = 10'000;  // a kernel whose mean measured time is under 10 us

// The tables advise reads (make_tables' `only`).
const std::vector<std::string>& advice_tables();

// Empty for a report that is not analysed or has no iterations. `tables` from make_tables over the
// same replay (their overlap, idle and gpu_ops rows).
std::vector<Advice> advise(const Report& report, const StepStats& stats, const Tables& tables);

// "advice:\n  - EVIDENCE -> ACTION\n" per line; "" when there is none.
std::string render_advice(const std::vector<Advice>& advice);
nlohmann::json to_json(const std::vector<Advice>& advice);

}  // namespace dpro::replayer
