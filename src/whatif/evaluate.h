#pragma once
// The what-if pipeline: copy the base workload -> apply each rewrite in order -> finalize the
// graph -> check it (acyclic) -> simulate -> report -> post-replay checks. The CLI
// (`dpro-replay replay --device ... --ranks ...`) and the optimizer both call it; it returns data
// (typed change records, the replay, the checks), never prose: rendering is the caller's.
#include <functional>
#include <variant>
#include <vector>

#include "replayer/engine.h"
#include "replayer/replay.h"
#include "whatif/checks.h"
#include "whatif/comm_retime.h"
#include "whatif/device_retime.h"
#include "whatif/host_retime.h"
#include "whatif/op_fusion.h"
#include "whatif/precision.h"
#include "whatif/workload.h"

namespace dpro::whatif {

using Rewrite = std::variant<HostRetime, DeviceRetime, CommRetime, OpFusion, Precision>;
using Change = std::variant<HostChange, DeviceChange, CommChange, OpFusionChange, PrecisionChange>;

struct Evaluation {
  Workload workload;            // the rewritten workload (graph) that was replayed
  replayer::Simulation simulation;
  replayer::Report report;
  std::vector<Change> changes;  // one per rewrite, in order
  GpuWorkAfterSteps gpu_work_after_steps;
};

struct EvaluateOptions {
  replayer::ReportOptions report;
  // Called after each rewrite with its change record, before the next one runs (a CLI prints
  // the warnings of a rewrite before a later one fails).
  std::function<void(const Change&)> on_applied;
};

// Applies one rewrite to `workload` in place and returns what it did.
Change apply(Workload& workload, const Rewrite& rewrite);

// Applies `rewrites` to a copy of `base` and replays it with `simulator` (its working memory is
// reused across calls). Throws what the rewrites throw (OptionError, InputError) and InputError
// for a rewrite that made a dependency cycle.
Evaluation evaluate(const Workload& base, const std::vector<Rewrite>& rewrites, replayer::Simulator& simulator,
                    const EvaluateOptions& options);

}  // namespace dpro::whatif
