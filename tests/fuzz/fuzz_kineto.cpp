// Fuzz target: a torch.profiler (Kineto) JSON trace through the loader, as `dpro-replay replay
// TRACE` reads it (importer, event checks, iterations, clock alignment). Oracle: the loaded
// set obeys the importers' contract (fuzz_support.h); bad input is an InputError, never
// another exception, a crash or a hang.
#include <cstdint>

#include "core/error.h"
#include "fuzz_support.h"
#include "trace/loader.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static dpro::fuzz::ScratchFile scratch("kineto-input.json");
  dpro::Logger log = dpro::fuzz::quiet_logger();
  const std::string& path = scratch.write(data, size);
  try {
    const dpro::trace::TraceSet set = dpro::trace::load_traces({path}, dpro::trace::LoadOptions{}, log);
    dpro::fuzz::check_trace_set(set);
    dpro::fuzz::note("accepted");
  } catch (const dpro::InputError& e) {
    dpro::fuzz::note(e.what());
  }
  return 0;
}
