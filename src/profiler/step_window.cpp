#include "profiler/step_window.h"

#include "core/strings.h"

namespace dpro::profiler {

StepWindow::StepWindow(std::int64_t first, std::int64_t last, std::string step_name)
    : first_(first), last_(last), step_name_(std::move(step_name)) {}

std::optional<std::int64_t> StepWindow::step_number(std::string_view name) {
  if (!step_name_.empty()) {
    if (name != step_name_) return std::nullopt;
    return named_count_++;
  }
  constexpr std::string_view kPrefix = "ProfilerStep#";
  if (name.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  const auto n = parse_integer(name.substr(kPrefix.size()));
  if (!n || *n < 0) return std::nullopt;
  return n;
}

StepWindow::Action StepWindow::on_push(std::string_view range_name) {
  std::lock_guard lock(mutex_);
  const auto n = step_number(range_name);
  stacks_[std::this_thread::get_id()].push_back(n.value_or(-1));
  any_range_ = true;
  if (!n || finished_) return Action::kNone;
  if (!recording_ && *n >= first_ && *n <= last_) {
    recording_ = started_ = true;
    return Action::kStart;
  }
  if (recording_ && *n > last_) {  // the range of the last step was never popped
    recording_ = false;
    finished_ = true;
    return Action::kStop;
  }
  return Action::kNone;
}

StepWindow::Action StepWindow::on_pop() {
  std::lock_guard lock(mutex_);
  auto it = stacks_.find(std::this_thread::get_id());
  if (it == stacks_.end() || it->second.empty()) return Action::kNone;  // pushed before tracing began
  const std::int64_t n = it->second.back();
  it->second.pop_back();
  if (recording_ && n >= last_) {
    recording_ = false;
    finished_ = true;
    return Action::kStop;
  }
  return Action::kNone;
}

bool StepWindow::recording() const {
  std::lock_guard lock(mutex_);
  return recording_;
}

bool StepWindow::any_range() const {
  std::lock_guard lock(mutex_);
  return any_range_;
}

bool StepWindow::started() const {
  std::lock_guard lock(mutex_);
  return started_;
}

}  // namespace dpro::profiler
