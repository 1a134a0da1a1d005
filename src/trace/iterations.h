#pragma once
// Iteration detection: ProfilerStep#N spans on a rank's CPU threads become
// TraceRank::iterations, in time order. Duplicates of one step (the same name recorded twice)
// keep the longest span.
#include "core/strings.h"
#include "trace/event.h"

namespace dpro::trace {

void detect_iterations(TraceRank& rank, const StringTable& strings);

// "ProfilerStep#12" -> 12; nullopt for other names.
std::optional<std::int64_t> profiler_step_number(std::string_view name);

}  // namespace dpro::trace
