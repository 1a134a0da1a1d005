#pragma once
// Kineto-style Chrome trace JSON for one rank, so a capture opens in Perfetto /
// chrome://tracing and in tools that read torch.profiler traces: ph "X" events with Kineto's
// categories and args, ph "s"/"f" ac2g flows from launch calls to GPU work, process/thread
// name metadata, ts/dur in microseconds relative to baseTimeNanoseconds.
#include <ostream>

#include "trace/event.h"

namespace dpro::trace {

void write_chrome_json(const TraceRank& rank, const StringTable& strings, std::ostream& out);

}  // namespace dpro::trace
