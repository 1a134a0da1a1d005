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

}  // namespace dpro::whatif
