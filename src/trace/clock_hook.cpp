#include "trace/loader.h"
#include "trace/native/clock_alignment.h"

namespace dpro::trace {

void align_trace_clocks(TraceSet& set, Logger& log) { align_clocks(set, log); }

}  // namespace dpro::trace
