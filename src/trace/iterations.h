#pragma once
// Iteration detection: ProfilerStep#N spans on a rank's CPU threads become
// TraceRank::iterations, in time order. Duplicates of one step (the same name recorded twice)
// keep the longest span. With a marker (a name, '*' matching any run of characters), the
// marker's occurrences on the rank's CPU threads (annotations, operators) are the
// iterations instead, numbered 1, 2, ... in time order; an occurrence that starts inside the
// previous one belongs to it.
#include "core/strings.h"
#include "trace/event.h"

namespace dpro::trace {

void detect_iterations(TraceRank& rank, const StringTable& strings, std::string_view marker = {});

// `name` matches `pattern`, where '*' stands for any run of characters (none included).
bool glob_match(std::string_view pattern, std::string_view name);

// "ProfilerStep#12" -> 12; nullopt for other names. Inline: the native importer uses it too.
inline std::optional<std::int64_t> profiler_step_number(std::string_view name) {
  constexpr std::string_view kPrefix = "ProfilerStep#";
  if (!name.starts_with(kPrefix)) return std::nullopt;
  return parse_integer(name.substr(kPrefix.size()));
}

}  // namespace dpro::trace
