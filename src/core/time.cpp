#include "core/time.h"

#include <fmt/format.h>

namespace dpro {

std::string format_duration(Nanos t) {
  const Nanos magnitude = t < 0 ? -t : t;
  if (magnitude >= kNanosPerSecond) return fmt::format("{:.3f} s", static_cast<double>(t) / 1e9);
  if (magnitude >= kNanosPerMilli) return fmt::format("{:.3f} ms", to_millis(t));
  if (magnitude >= kNanosPerMicro) return fmt::format("{:.3f} us", to_micros(t));
  return fmt::format("{} ns", t);
}

}  // namespace dpro
