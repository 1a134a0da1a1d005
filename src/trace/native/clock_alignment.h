#pragma once
// Brings the ranks of a multi-host TraceSet onto one clock. Collectives end at nearly the
// same instant on every participant, so for each host the offset to the reference host (the
// host of the lowest rank) is the median, over matched collectives, of
// (end on the reference host - end on this host). Collectives are matched by
// (group_name, op, sequence); when a trace lacks sequence numbers, by the per-(group, op)
// order of the collective events on each rank. Offsets are per host (ranks of one host share
// a clock), added to every event and iteration time of that host's ranks and recorded in
// TraceRank::clock_offset. A set from one host, or without matched collectives, is unchanged.
#include "core/log.h"
#include "trace/event.h"

namespace dpro::trace {

void align_clocks(TraceSet& set, Logger& log);

}  // namespace dpro::trace
