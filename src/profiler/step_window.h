#pragma once
// Which part of a job to record when `--steps A:B` is given: recording starts when the NVTX
// range of step A (or the first step after it) is pushed and stops when the range of step B is
// popped (or a later step's range is pushed). Steps are ranges named ProfilerStep#N (N taken
// from the name) or, with a step name, ranges of that name (numbered 0, 1, ... in push order).
// NVTX ranges nest per thread, so each thread's pushes are tracked on their own stack; other
// ranges (NCCL's, the user's) are ignored. Thread-safe; no CUDA or CUPTI here.
#include <cstdint>
#include <limits>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/strings.h"

namespace dpro::profiler {

// "A:B": two whole numbers 0 <= A, B < 2^31 (not checked: A <= B); nullopt for anything else
// ("-0", "+1", " 1", "1:2:3"). Inline: dpro-profile's option check uses it too.
inline std::optional<std::pair<std::int64_t, std::int64_t>> parse_step_range(std::string_view steps) {
  const auto colon = steps.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  auto step = [](std::string_view text) -> std::optional<std::int64_t> {
    const auto n = text.starts_with('-') ? std::nullopt : parse_integer(text);
    return n && *n <= std::numeric_limits<std::int32_t>::max() ? n : std::nullopt;
  };
  const auto a = step(steps.substr(0, colon)), b = step(steps.substr(colon + 1));
  if (!a || !b) return std::nullopt;
  return std::make_pair(*a, *b);
}

class StepWindow {
 public:
  enum class Action { kNone, kStart, kStop };
  StepWindow(std::int64_t first, std::int64_t last, std::string step_name = "");

  Action on_push(std::string_view range_name);  // an NVTX range pushed on the calling thread
  Action on_pop();                              // the calling thread's innermost range popped

  bool recording() const;
  bool started() const;  // recording began at some point
  bool any_range() const;  // some NVTX range was pushed (a process that marks no steps: none)

 private:
  std::optional<std::int64_t> step_number(std::string_view name);

  const std::int64_t first_, last_;
  const std::string step_name_;
  mutable std::mutex mutex_;
  std::unordered_map<std::thread::id, std::vector<std::int64_t>> stacks_;  // -1: not a step
  std::int64_t named_count_ = 0;
  bool recording_ = false, started_ = false, finished_ = false, any_range_ = false;
};

}  // namespace dpro::profiler
