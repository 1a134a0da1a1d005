#pragma once
// Time in dpro is always integer nanoseconds (int64). Absolute trace times are nanoseconds
// since the Unix epoch in the trace's clock domain; replay times are nanoseconds since the
// replay origin. No floating-point seconds, no -1 sentinels: use std::optional<Nanos>.
#include <cmath>
#include <cstdint>
#include <string>

namespace dpro {

using Nanos = std::int64_t;

constexpr Nanos kNanosPerMicro = 1000;
constexpr Nanos kNanosPerMilli = 1000 * 1000;
constexpr Nanos kNanosPerSecond = 1000 * 1000 * 1000;

// The replay clock's bound: every time a replay computes (a start, an end, a wait) lies within
// this in magnitude, about 95 years (the same figure as the importers' bound on trace times,
// trace::kMaxTraceNanos). The engine refuses a graph whose durations, delays, gaps and release
// times could add up to more (replayer/engine.h), so sums of two such times never overflow.
inline constexpr Nanos kMaxReplayNanos = 3'000'000'000'000'000'000;

// |t| as an unsigned number: defined for every t, INT64_MIN included (whose negation is no int64).
inline std::uint64_t magnitude(Nanos t) {
  return t < 0 ? 0 - static_cast<std::uint64_t>(t) : static_cast<std::uint64_t>(t);
}

// a + b, held at the int64 limits instead of overflowing (totals over many ops: waits, counts
// of time that may overlap).
inline Nanos saturating_add(Nanos a, Nanos b) {
  Nanos sum = 0;
  if (!__builtin_add_overflow(a, b, &sum)) return sum;
  return b > 0 ? INT64_MAX : INT64_MIN;
}

// A time computed in floating point (a duration scaled by a what-if), rounded to nanoseconds and
// held within +-2 kMaxReplayNanos (NaN: 0), never an out-of-range conversion: a what-if that
// makes an op last longer than any replay can hold then fails the engine's bound with its message.
inline Nanos nanos_from_double(double ns) {
  constexpr double kLimit = 2.0 * static_cast<double>(kMaxReplayNanos);
  if (!(ns == ns)) return 0;
  if (ns >= kLimit) return 2 * kMaxReplayNanos;
  if (ns <= -kLimit) return -2 * kMaxReplayNanos;
  return static_cast<Nanos>(std::llround(ns));
}

inline double to_millis(Nanos t) { return static_cast<double>(t) / 1e6; }
inline double to_micros(Nanos t) { return static_cast<double>(t) / 1e3; }

// "12.345 ms" style text for people; machine outputs keep integer nanoseconds.
std::string format_duration(Nanos t);

}  // namespace dpro
