// The --steps window's logic: which NVTX pushes and pops open and close it.
#include <catch2/catch.hpp>

#include <thread>

#include "profiler/step_window.h"

using namespace dpro::profiler;
using Action = StepWindow::Action;

TEST_CASE("step ranges are parsed as dpro-profile validated them", "[steps]") {
  CHECK(parse_step_range("10:20") == std::make_pair(std::int64_t{10}, std::int64_t{20}));
  CHECK(parse_step_range("3:3") == std::make_pair(std::int64_t{3}, std::int64_t{3}));
  CHECK_FALSE(parse_step_range(""));
  CHECK(parse_step_range("5:4") == std::make_pair(std::int64_t{5}, std::int64_t{4}));  // order: the caller's
  CHECK_FALSE(parse_step_range("-1:4"));
  CHECK_FALSE(parse_step_range("-0:4"));
  CHECK_FALSE(parse_step_range("1:2147483648"));
  CHECK_FALSE(parse_step_range("1:x"));
}

TEST_CASE("the window opens at step A and closes at the end of step B", "[steps]") {
  StepWindow w(10, 11);
  CHECK_FALSE(w.any_range());
  CHECK(w.on_push("ProfilerStep#9") == Action::kNone);
  CHECK(w.any_range());
  CHECK(w.on_pop() == Action::kNone);
  CHECK(w.on_push("ProfilerStep#10") == Action::kStart);
  CHECK(w.recording());
  CHECK(w.on_push("aten::mm") == Action::kNone);
  CHECK(w.on_pop() == Action::kNone);
  CHECK(w.on_pop() == Action::kNone);  // end of step 10
  CHECK(w.on_push("ProfilerStep#11") == Action::kNone);
  CHECK(w.on_pop() == Action::kStop);
  CHECK_FALSE(w.recording());
  CHECK(w.started());
  CHECK(w.on_push("ProfilerStep#10") == Action::kNone);  // one window per run
}

TEST_CASE("a window whose first step is skipped opens at the next one inside it", "[steps]") {
  StepWindow w(5, 8);
  CHECK(w.on_push("ProfilerStep#7") == Action::kStart);
  CHECK(w.on_pop() == Action::kNone);
}

TEST_CASE("a step range that is never popped is closed by the next step", "[steps]") {
  StepWindow w(0, 0);
  CHECK(w.on_push("ProfilerStep#0") == Action::kStart);
  CHECK(w.on_push("ProfilerStep#1") == Action::kStop);
}

TEST_CASE("a step name numbers its ranges in push order", "[steps]") {
  StepWindow w(1, 1, "train_step");
  CHECK(w.on_push("train_step") == Action::kNone);  // step 0
  CHECK(w.on_pop() == Action::kNone);
  CHECK(w.on_push("ProfilerStep#1") == Action::kNone);  // not a step under this name
  CHECK(w.on_pop() == Action::kNone);
  CHECK(w.on_push("train_step") == Action::kStart);  // step 1
  CHECK(w.on_pop() == Action::kStop);
}

TEST_CASE("pops on another thread do not close the window", "[steps]") {
  StepWindow w(0, 0);
  CHECK(w.on_push("ProfilerStep#0") == Action::kStart);
  std::thread other([&] {
    CHECK(w.on_push("ProfilerStep#0x") == Action::kNone);
    CHECK(w.on_pop() == Action::kNone);
    CHECK(w.on_pop() == Action::kNone);  // nothing pushed here any more
  });
  other.join();
  CHECK(w.recording());
  CHECK(w.on_pop() == Action::kStop);
}
