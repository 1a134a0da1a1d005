#pragma once
// The pieces of the Chrome trace-event JSON format (what ui.perfetto.dev and chrome://tracing
// open) that dpro's two writers share: `convert`'s Kineto-style export of a native trace
// (trace/native/chrome_export.h) and the replay's simulated timeline (replayer/timeline.h).
// Event categories are trace::to_string(EventKind) in both.
#include <ostream>
#include <string>
#include <string_view>

#include "core/time.h"

namespace dpro::trace {

// A JSON string literal: quoted and escaped, invalid UTF-8 replaced (dump_output_json's rules).
std::string chrome_string(std::string_view text);

// Nanoseconds as the format's microseconds with three decimals: 1234 -> "1.234", -75 -> "-0.075".
std::string chrome_micros(Nanos t);

// The "traceEvents" array's entries, written one by one, `separator` before each but the first.
class ChromeEventList {
 public:
  ChromeEventList(std::ostream& out, std::string first_prefix, std::string separator)
      : out_(out), first_prefix_(std::move(first_prefix)), separator_(std::move(separator)) {}
  void add(const std::string& event) {
    out_ << (first_ ? first_prefix_ : separator_) << event;
    first_ = false;
  }

 private:
  std::ostream& out_;
  std::string first_prefix_, separator_;
  bool first_ = true;
};

}  // namespace dpro::trace
