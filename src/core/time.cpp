#include "core/time.h"

#include <fmt/format.h>

namespace dpro {

std::string format_duration(Nanos t) {
  // Unsigned: -INT64_MIN does not exist as an int64.
  const std::uint64_t magnitude = t < 0 ? 0 - static_cast<std::uint64_t>(t) : static_cast<std::uint64_t>(t);
  if (magnitude >= std::uint64_t{kNanosPerSecond}) return fmt::format("{:.3f} s", static_cast<double>(t) / 1e9);
  if (magnitude >= std::uint64_t{kNanosPerMilli}) return fmt::format("{:.3f} ms", to_millis(t));
  if (magnitude >= std::uint64_t{kNanosPerMicro}) return fmt::format("{:.3f} us", to_micros(t));
  return fmt::format("{} ns", t);
}

}  // namespace dpro
