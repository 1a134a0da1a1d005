#pragma once
// What the fuzz targets share: the oracle's check (a broken property is a finding: it aborts,
// as a crash does, so libFuzzer and the standalone driver both keep the input), a logger that
// drops warnings, a scratch file for parsers that read paths, and the invariants every
// imported trace must obey (issue 37, part 2).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/log.h"
#include "trace/event.h"

namespace dpro::fuzz {

[[noreturn]] inline void oracle_failed(const char* what, const char* file, int line, const std::string& detail) {
  std::fprintf(stderr, "fuzz oracle: %s (%s:%d) %s\n", what, file, line, detail.c_str());
  std::abort();
}
#define DPRO_FUZZ_CHECK(cond, detail) \
  ((cond) ? static_cast<void>(0) : ::dpro::fuzz::oracle_failed(#cond, __FILE__, __LINE__, (detail)))

// With DPRO_FUZZ_VERBOSE set, each input's outcome on stderr: "accepted", or the InputError that
// refused it (to see that seeds get past the first checks).
inline void note(const std::string& outcome) {
  static const bool verbose = std::getenv("DPRO_FUZZ_VERBOSE") != nullptr;
  if (verbose) std::fprintf(stderr, "fuzz input: %s\n", outcome.c_str());
}

inline Logger quiet_logger() {
  return Logger(LogLevel::kWarning, [](LogLevel, const std::string&) {});
}

// A file holding one input, for parsers whose entry point is a path (the Kineto importer reads
// through ByteSource). It lives in /dev/shm when there is one (no disk I/O per input), in a folder
// of its own per process, and is rewritten for each input.
class ScratchFile {
 public:
  explicit ScratchFile(const std::string& name);
  ~ScratchFile();
  const std::string& write(const std::uint8_t* data, std::size_t size);
  const std::string& path() const { return path_; }

 private:
  std::string dir_, path_;
};

// Whether `text` is valid UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF).
bool valid_utf8(std::string_view text);

// The importer's contract for one rank after the loader's checks: every event's start and end
// within kMaxTraceNanos, a duration of 0 or more, the rank's events within kMaxTraceSpanNanos
// of each other, events sorted by start, ids of resources, attributes and names that resolve,
// names that the Chrome/JSON writers turn into valid UTF-8 JSON strings, iterations in order
// with start <= end. Aborts on the first broken one.
void check_trace_rank(const trace::TraceRank& rank, const StringTable& strings);
void check_trace_set(const trace::TraceSet& set);

}  // namespace dpro::fuzz
