#pragma once
// Text and JSON of what the what-if rewrites did (whatif/evaluate.h's change records): the
// summary sentence each adds to the report's notes, its warnings, and its entry in
// `replay --json`'s "whatif" -> "changes" (counts and integer nanoseconds, so that scripts need not
// parse the summary).
#include <nlohmann/json.hpp>

#include <string>

#include "core/log.h"
#include "trace/event.h"
#include "whatif/evaluate.h"

namespace dpro::cli {

std::string summary(const whatif::Change& change);
// "host", "device" or "communication".
const char* key(const whatif::Change& change);
nlohmann::json details(const whatif::Change& change);
// The warnings a change carries (an overridden origin GPU, no NCCL ops to re-time, ...), logged.
void log_warnings(const whatif::Change& change, Logger& log);

// One sentence on why a what-if left the step where it was (whatif::why_unmoved), and its JSON.
std::string unmoved_note(const whatif::Unmoved& u);
nlohmann::json to_json(const whatif::Unmoved& u);

// The warning of whatif::gpu_work_after_steps, or "" when there are no cases.
std::string gpu_work_warning(const whatif::GpuWorkAfterSteps& checks);
// Its JSON: an array of {iteration, rank, step_ns, gpu_end_after_step_ns}.
nlohmann::json to_json(const whatif::GpuWorkAfterSteps& checks);

}  // namespace dpro::cli
