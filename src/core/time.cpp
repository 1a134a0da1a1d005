#include "core/time.h"

#include <fmt/format.h>

namespace dpro {

std::string format_duration(Nanos t) {
  const std::uint64_t m = magnitude(t);
  if (m >= std::uint64_t{kNanosPerSecond}) return fmt::format("{:.3f} s", static_cast<double>(t) / 1e9);
  if (m >= std::uint64_t{kNanosPerMilli}) return fmt::format("{:.3f} ms", to_millis(t));
  if (m >= std::uint64_t{kNanosPerMicro}) return fmt::format("{:.3f} us", to_micros(t));
  return fmt::format("{} ns", t);
}

}  // namespace dpro
