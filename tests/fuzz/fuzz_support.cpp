#include "fuzz_support.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <filesystem>
#include <limits>

#include <fcntl.h>
#include <unistd.h>

#include "trace/chrome_json.h"

namespace dpro::fuzz {

namespace fs = std::filesystem;

ScratchFile::ScratchFile(const std::string& name) {
  const fs::path base = fs::is_directory("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
  std::string dir = (base / "dpro-fuzz-XXXXXX").string();
  if (!::mkdtemp(dir.data())) oracle_failed("mkdtemp", __FILE__, __LINE__, dir);
  dir_ = dir;
  path_ = (fs::path(dir_) / name).string();
}

ScratchFile::~ScratchFile() {
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

const std::string& ScratchFile::write(const std::uint8_t* data, std::size_t size) {
  // POSIX calls, not an ofstream: no stream buffer and locale set up for every input.
  const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) oracle_failed("opening the scratch file", __FILE__, __LINE__, path_);
  std::size_t done = 0;
  while (done < size) {
    const ::ssize_t n = ::write(fd, data + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) oracle_failed("writing the scratch file", __FILE__, __LINE__, path_);
    done += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0) oracle_failed("closing the scratch file", __FILE__, __LINE__, path_);
  return path_;
}

bool valid_utf8(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    const auto b = static_cast<unsigned char>(text[i]);
    std::size_t n;
    std::uint32_t cp;
    if (b < 0x80) { ++i; continue; }
    if (b >= 0xc2 && b <= 0xdf) { n = 1; cp = b & 0x1f; }
    else if (b >= 0xe0 && b <= 0xef) { n = 2; cp = b & 0x0f; }
    else if (b >= 0xf0 && b <= 0xf4) { n = 3; cp = b & 0x07; }
    else return false;
    if (i + n >= text.size()) return false;  // the sequence runs past the end
    for (std::size_t k = 1; k <= n; ++k) {
      const auto c = static_cast<unsigned char>(text[i + k]);
      if ((c & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (c & 0x3f);
    }
    if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
      return false;
    i += n + 1;
  }
  return true;
}

void check_trace_rank(const trace::TraceRank& rank, const StringTable& strings) {
  using trace::kMaxTraceNanos;
  const auto within = [](Nanos t) { return t >= -kMaxTraceNanos && t <= kMaxTraceNanos; };
  Nanos first = std::numeric_limits<Nanos>::max(), last = std::numeric_limits<Nanos>::min();
  Nanos previous_start = std::numeric_limits<Nanos>::min();
  for (std::size_t i = 0; i < rank.events.size(); ++i) {
    const trace::Event& e = rank.events[i];
    // Built only when a check fails, not for every event of every input.
    const auto where = [&] { return rank.file + " event " + std::to_string(i); };
    DPRO_FUZZ_CHECK(e.dur >= 0, where());
    DPRO_FUZZ_CHECK(within(e.start), where());
    DPRO_FUZZ_CHECK(within(e.start + e.dur), where());  // both terms are bounded: no overflow
    DPRO_FUZZ_CHECK(e.start >= previous_start, where());
    previous_start = e.start;
    first = std::min(first, e.start);
    last = std::max(last, e.end());
    DPRO_FUZZ_CHECK(e.resource < rank.resources.size(), where());
    DPRO_FUZZ_CHECK(e.attrs == trace::kNoAttrs || e.attrs < rank.attrs.size(), where());
    DPRO_FUZZ_CHECK(e.name.value < strings.size(), where());
  }
  if (!rank.events.empty()) DPRO_FUZZ_CHECK(last - first <= trace::kMaxTraceSpanNanos, rank.file);
  for (std::size_t i = 0; i < strings.size(); ++i) {
    // What every JSON writer makes of a name: a string literal that is valid JSON and UTF-8.
    const std::string literal = trace::chrome_string(strings.view(StringId{static_cast<std::uint32_t>(i)}));
    DPRO_FUZZ_CHECK(valid_utf8(literal), literal);
    DPRO_FUZZ_CHECK(nlohmann::json::accept(literal), literal);
  }
  for (std::size_t i = 0; i < rank.iterations.size(); ++i) {
    const trace::Iteration& it = rank.iterations[i];
    const auto where = [&] { return rank.file + " iteration " + std::to_string(i); };
    DPRO_FUZZ_CHECK(it.start <= it.end, where());
    DPRO_FUZZ_CHECK(within(it.start) && within(it.end), where());
    DPRO_FUZZ_CHECK(it.event < rank.events.size(), where());
    if (i > 0) DPRO_FUZZ_CHECK(rank.iterations[i - 1].start <= it.start, where());
  }
  if (rank.world_size) DPRO_FUZZ_CHECK(*rank.world_size >= 0 && *rank.world_size <= trace::kMaxRank, rank.file);
  DPRO_FUZZ_CHECK(rank.rank >= 0 && rank.rank <= trace::kMaxRank, rank.file);
}

void check_trace_set(const trace::TraceSet& set) {
  for (const auto& rank : set.ranks) check_trace_rank(rank, set.strings);
}

}  // namespace dpro::fuzz
