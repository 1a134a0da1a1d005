// A small C API for the traced process (and tests): flush now, finish the trace, where is it.
// Exported from the injection library next to InitializeInjection and ncclProfiler_v5.
#include "profiler/session.h"

extern "C" {

// Writes everything recorded so far; returns 0, or -1 when this process is not tracing.
__attribute__((visibility("default"))) int dproProfilerFlush(void) {
  auto* s = dpro::profiler::ProfilerSession::process();
  if (!s || !s->active()) return -1;
  s->flush();
  return 0;
}

// Final flush and end record (what the exit handler does); later records are discarded.
__attribute__((visibility("default"))) int dproProfilerShutdown(void) {
  auto* s = dpro::profiler::ProfilerSession::process();
  if (!s || !s->active()) return -1;
  s->shutdown();
  return 0;
}

// Path of this process's trace file, or null when it is not tracing. Owned by the library.
__attribute__((visibility("default"))) const char* dproProfilerTracePath(void) {
  auto* s = dpro::profiler::ProfilerSession::process();
  return s ? s->path().c_str() : nullptr;
}

}
