#pragma once
// Iteration detection: ProfilerStep#N spans on a rank's CPU threads become
// TraceRank::iterations, in time order. Duplicates of one step (the same name recorded twice)
// keep the longest span; a step that begins before the previous one ended cuts that one short
// (steps are consecutive windows, never counted twice). With a marker (a name, '*' matching any run of characters), the
// marker's occurrences on the rank's CPU threads (annotations, operators) are the
// iterations instead, numbered 1, 2, ... in time order; an occurrence that starts inside the
// previous one belongs to it.
#include "core/strings.h"
#include "trace/event.h"

namespace dpro::trace {

// What detect_iterations had to mend in ProfilerStep spans, for a warning.
struct IterationRepairs {
  int duplicates = 0;  // further spans of a step number already seen (the longest is kept)
  int overlaps = 0;    // steps that began before the previous one ended (it is cut there)
  int dropped = 0;     // steps left with no time by such a cut
  std::string first_duplicate, first_overlap;  // the first of each, named
  bool any() const { return duplicates + overlaps > 0; }
};

IterationRepairs detect_iterations(TraceRank& rank, const StringTable& strings, std::string_view marker = {});

// Index in rank.iterations of the iteration an op starting at `start` belongs to: the last one
// starting at or before it; -1 before the first (or with none).
int iteration_index_at(const TraceRank& rank, Nanos start);

// `name` matches `pattern`, where '*' stands for any run of characters (none included).
bool glob_match(std::string_view pattern, std::string_view name);

// "ProfilerStep#12" -> 12; nullopt for other names. Inline: the native importer uses it too.
inline std::optional<std::int64_t> profiler_step_number(std::string_view name) {
  constexpr std::string_view kPrefix = "ProfilerStep#";
  if (!name.starts_with(kPrefix)) return std::nullopt;
  return parse_integer(name.substr(kPrefix.size()));
}

}  // namespace dpro::trace
