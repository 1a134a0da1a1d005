#pragma once
// Byte classes of JSON text, looked up instead of compared: one test per byte instead of four to
// seven (each comparison is also a callback in a fuzzing build, which made the scanning loops of
// json_stream and kineto_event_scan most of an input's time). Internal to the Kineto reader.
#include <array>

namespace dpro::trace::json_bytes {

enum : unsigned char { kSpace = 1, kNumber = 2 };  // white space; a byte a JSON number may hold

constexpr std::array<unsigned char, 256> make_classes() {
  std::array<unsigned char, 256> t{};
  for (unsigned char c : {' ', '\n', '\r', '\t'}) t[c] = kSpace;
  for (unsigned char c = '0'; c <= '9'; ++c) t[c] = kNumber;
  for (unsigned char c : {'-', '.', '+', 'e', 'E'}) t[c] = kNumber;
  return t;
}
inline constexpr std::array<unsigned char, 256> kClasses = make_classes();

inline bool is(char c, unsigned char cls) { return (kClasses[static_cast<unsigned char>(c)] & cls) != 0; }

}  // namespace dpro::trace::json_bytes
