#pragma once
// Checks every importer's output goes through (the loader runs them on each rank as it is
// read), so that no format's quirks reach a report unannounced:
// - times beyond the bounds of event.h are an InputError naming the file and the event;
// - an event recorded twice (the same kind, name, track, times and ids) is dropped, with one
//   warning per file: a trace holding every event twice would otherwise double its GPU time;
// - GPU ops that overlap the previous op of their stream (a stream runs its ops one after
//   another) are counted and named in a warning: the replay runs them in order.
#include "core/log.h"
#include "trace/event.h"

namespace dpro::trace {

// Throws InputError if an event of `rank` lies outside kMaxTraceNanos or the rank's events
// span more than kMaxTraceSpanNanos.
void check_time_bounds(const TraceRank& rank);

// Removes exact repeats of events that carry an id (correlation or external id: two real
// events never share both with the same times); returns how many were removed. Call before
// anything indexes rank.events.
std::size_t drop_repeated_events(TraceRank& rank);

// GPU ops (kernels, collectives, copies, memsets) starting more than `tolerance` before the
// previous op of their stream ended.
struct StreamOverlaps {
  std::size_t count = 0;
  Nanos worst = 0;              // the largest overlap
  std::string first;            // "kernel 'x' on stream 7 at 1.234 ms"
};
StreamOverlaps stream_overlaps(const TraceRank& rank, const StringTable& strings, Nanos tolerance);

// All three, warnings to `log` naming rank.file.
void check_events(TraceRank& rank, const StringTable& strings, Logger& log);

}  // namespace dpro::trace
