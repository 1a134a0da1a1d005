#pragma once
// Time in dpro is always integer nanoseconds (int64). Absolute trace times are nanoseconds
// since the Unix epoch in the trace's clock domain; replay times are nanoseconds since the
// replay origin. No floating-point seconds, no -1 sentinels: use std::optional<Nanos>.
#include <cstdint>
#include <string>

namespace dpro {

using Nanos = std::int64_t;

constexpr Nanos kNanosPerMicro = 1000;
constexpr Nanos kNanosPerMilli = 1000 * 1000;
constexpr Nanos kNanosPerSecond = 1000 * 1000 * 1000;

inline double to_millis(Nanos t) { return static_cast<double>(t) / 1e6; }
inline double to_micros(Nanos t) { return static_cast<double>(t) / 1e3; }

// "12.345 ms" style text for people; machine outputs keep integer nanoseconds.
std::string format_duration(Nanos t);

}  // namespace dpro
