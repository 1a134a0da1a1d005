// Fuzz target: a dpro native trace (dpro-profile's format) at record level, decoded in memory
// and built into one rank's events as the native importer does, then the loader's event checks.
// Oracles: decoding the same bytes in small chunks (as a file arrives) gives the same records
// as decoding them at once; the rank obeys the importers' contract (fuzz_support.h); bad input
// is an InputError, never another exception, a crash or a hang.
#include <cstdint>
#include <string>
#include <string_view>

#include "core/error.h"
#include "fuzz_support.h"
#include "trace/event_checks.h"
#include "trace/native/native_importer.h"
#include "trace/native/native_reader.h"

namespace {

using dpro::native::NativeCapture;

std::string shape(const NativeCapture& c) {
  return std::to_string(c.record_count) + " records, truncated " + std::to_string(c.truncated) + ", footer " +
         std::to_string(c.has_footer) + ", " + std::to_string(c.apis.size()) + " apis, " +
         std::to_string(c.kernels.size()) + " kernels, " + std::to_string(c.copies.size()) + " copies, " +
         std::to_string(c.markers.size()) + " markers, " + std::to_string(c.nccl_colls.size()) + " nccl colls, " +
         std::to_string(c.strings.size()) + "+" + std::to_string(c.sparse_strings.size()) + " strings, " +
         std::to_string(c.metadata.size()) + " metadata";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const std::string path = "fuzz-input.dpro";
  dpro::Logger log = dpro::fuzz::quiet_logger();
  std::string whole_error;
  NativeCapture capture;
  try {
    capture = dpro::native::parse_native_capture(bytes, path, log);
  } catch (const dpro::InputError& e) {
    whole_error = e.what();
  }
  // The same bytes in chunks of 1 to 16 bytes (the size from the input's last byte).
  const std::size_t chunk = size == 0 ? 1 : 1 + (data[size - 1] & 15);
  try {
    const NativeCapture chunked = dpro::native::parse_native_capture(bytes, path, log, chunk);
    DPRO_FUZZ_CHECK(whole_error.empty(), "chunked read accepted what the whole read refused: " + whole_error);
    DPRO_FUZZ_CHECK(shape(chunked) == shape(capture), shape(chunked) + " vs " + shape(capture));
  } catch (const dpro::InputError& e) {
    DPRO_FUZZ_CHECK(whole_error == e.what(), "chunked: " + std::string(e.what()) + " vs whole: " + whole_error);
  }
  if (!whole_error.empty()) {
    dpro::fuzz::note(whole_error);
    return 0;
  }
  try {
    dpro::StringTable strings;
    dpro::trace::TraceRank rank = dpro::trace::build_native_rank(capture, strings, log);
    dpro::trace::check_events(rank, strings, log);
    dpro::fuzz::check_trace_rank(rank, strings);
    dpro::fuzz::note("accepted");
  } catch (const dpro::InputError& e) {
    dpro::fuzz::note(e.what());
  }
  return 0;
}
