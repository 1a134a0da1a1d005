#pragma once
// Checks of a what-if's replay that its report alone does not show.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "replayer/replay.h"
#include "trace/event.h"

namespace dpro::whatif {

// GPU work that a what-if made outlive its step: a reported (step, rank) whose re-timed GPU ops
// (those the trace started inside the step) end after the step's predicted end by more than the
// step's predicted length. The step time leaves that work out: the trace's CPU never waited for it
// inside the step, so the replay does not either (a slower network, a slower GPU).
struct GpuWorkAfterStep {
  std::string iteration_name;
  std::optional<std::int64_t> iteration;  // none: the whole trace
  int rank = 0;
  Nanos step_ns = 0;
  Nanos gpu_end_after_step_ns = 0;
};
struct GpuWorkAfterSteps {
  std::vector<GpuWorkAfterStep> cases;
  std::size_t steps = 0;  // (step, rank) pairs reported
  // The case whose work ends latest after its step (index into cases), when there are any.
  std::optional<std::size_t> worst;
};
GpuWorkAfterSteps gpu_work_after_steps(const trace::TraceSet& traces, const graph::Dfg& dfg,
                                       const replayer::Simulation& sim, const replayer::Report& report);


// Why a what-if left the step where it was: when the job's step time (median over the
// iterations) moved by less than kUnmovedStep while the rewrites changed the graph's op time
// by more than kChangedWork, what changed and how much of the baseline's critical path was
// GPU work (compute, communication, copies) rather than host work and idle time.
inline constexpr double kUnmovedStep = 0.01;
inline constexpr double kChangedWork = 0.02;
struct Unmoved {
  double step_change = 0;               // median over iterations of what-if / baseline - 1
  Nanos gpu_before = 0, gpu_after = 0;  // GPU ops' durations, summed over the graph
  Nanos cpu_before = 0, cpu_after = 0;  // CPU ops' durations and the untraced time before them
  Nanos path = 0, path_gpu = 0;         // the baseline's job critical paths, summed; their GPU part
};
std::optional<Unmoved> why_unmoved(const graph::Dfg& base, const replayer::Report& base_report,
                                   const graph::Dfg& after, const replayer::Report& after_report);

}  // namespace dpro::whatif
