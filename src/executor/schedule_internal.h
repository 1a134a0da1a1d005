#pragma once
// Shared between the schedule's source files: which nodes the window holds and where each GPU op
// sits in the schedule.
#include <optional>
#include <vector>

#include "executor/schedule.h"

namespace dpro::executor::detail {

inline constexpr std::uint32_t kNoIndex = UINT32_MAX;

struct WindowNodes {
  std::vector<char> in;                   // per node: scheduled
  std::vector<std::uint32_t> position;    // per node: index into Schedule::launches (GPU ops), else kNoIndex
};

bool on_thread(const graph::Dfg& dfg, graph::NodeId n);  // a node on a CPU thread
bool on_stream(const graph::Dfg& dfg, graph::NodeId n);  // a GPU op on a stream
// The launch call of a GPU op, if the graph has one.
std::optional<graph::NodeId> launcher_of(const graph::Dfg& dfg, graph::NodeId gpu);

// Fills Schedule::threads (and each launch's issuing thread), events and flags.
void build_host_programs(const graph::Dfg& dfg, const WindowNodes& window, Schedule& schedule);

// Gives every launch its tensors (Schedule::tensors), places them (Schedule::memory) and writes
// each span's offset.
void plan_schedule_memory(const graph::Dfg& dfg, const WindowNodes& window, Schedule& schedule);

}  // namespace dpro::executor::detail
