#pragma once
// A plan's rewrites applied to the workload the executor runs, and what the lowering needs to
// know of them that the graph does not record: the precision rewrite's target dtype (its casts'
// destination) and the compression decision's parameters (top-k density, PowerSGD rank). The
// caller turns a plan file into rewrites (optimizer::decision_rewrites): the executor does not
// depend on the optimizer.
#include <string>
#include <vector>

#include "executor/launch_lowering.h"
#include "whatif/evaluate.h"

namespace dpro::executor {

struct AppliedRewrites {
  std::vector<whatif::Change> changes;  // one per rewrite, in order
  LaunchOptions launch;                 // for ScheduleOptions::launch (buckets: LaunchOptions::buckets)
  std::vector<std::string> notes;       // what a reader should know (a bucket decision not matched to calls)
};

// Applies `rewrites` in order to `workload` (in place) and finalizes its graph. Throws what the
// rewrites throw (OptionError, InputError). A bucket decision's buckets are found again in the
// graph: each rank's all-reduces of recorded size in recorded order, cut where the rewrite cut
// them (comm::BucketStats::bucket_end); where a rank's count differs from the rewrite's (sizes it
// took from elsewhere), its all-reduces keep their own calls and a note says so.
AppliedRewrites apply_rewrites(whatif::Workload& workload, const std::vector<whatif::Rewrite>& rewrites);

}  // namespace dpro::executor
