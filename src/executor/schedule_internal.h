#pragma once
// Shared between the schedule's source files: which nodes the window holds and where each GPU op
// sits in the schedule.
#include <vector>

#include "executor/schedule.h"

namespace dpro::executor::detail {

inline constexpr std::uint32_t kNoIndex = UINT32_MAX;

struct WindowNodes {
  std::vector<char> in;                   // per node: scheduled
  std::vector<std::uint32_t> position;    // per node: index into Schedule::launches (GPU ops), else kNoIndex
};

// Gives every launch its tensors (Schedule::tensors), places them (Schedule::memory) and writes
// each span's offset.
void plan_schedule_memory(const graph::Dfg& dfg, const WindowNodes& window, Schedule& schedule);

}  // namespace dpro::executor::detail
