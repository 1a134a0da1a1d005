// Tensors of a schedule's launches (docs/executor.md, "Memory"). The trace records shapes, not
// tensor identities, so a tensor is defined by the launches:
//   - each operand of a launch is a tensor of the bytes its recorded shape and dtype give;
//   - a launch's output lives from the launch to the last GPU op that depends on it (its stream
//     successor, ops on other streams that wait for it);
//   - a launch's first input is the output of the latest GPU op it depends on when that is large
//     enough (a chain reads what its predecessor wrote); other inputs live for the launch only;
//   - an error-feedback residual lives for the whole schedule and is shared by a compression
//     kernel and the decompression kernel of the same collective.
#include <algorithm>

#include "executor/schedule_internal.h"

namespace dpro::executor::detail {

namespace {

struct MemoryPass {
  const graph::Dfg& dfg;
  const WindowNodes& window;
  Schedule& schedule;
  std::vector<std::uint32_t> output_of;    // per launch: its first output tensor, or kNoIndex
  std::vector<std::uint32_t> residual_of;  // per launch: its residual tensor, or kNoIndex
  std::vector<std::vector<std::uint32_t>> slot_tensor;  // per launch, per slot

  std::uint32_t add(std::uint64_t bytes, std::uint32_t first, std::uint32_t last) {
    schedule.tensors.push_back({bytes, first, last});
    return static_cast<std::uint32_t>(schedule.tensors.size() - 1);
  }

  // Positions of the scheduled GPU ops that `node` depends on (in) or that depend on it (out).
  std::vector<std::uint32_t> gpu_neighbours(graph::NodeId node, bool out) const {
    std::vector<std::uint32_t> positions;
    auto take = [&](graph::EdgeId e) {
      const graph::NodeId other = out ? dfg.edge(e).dst : dfg.edge(e).src;
      if (window.position[other.value] != kNoIndex) positions.push_back(window.position[other.value]);
    };
    if (out) dfg.for_each_out_edge(node, take);
    else dfg.for_each_in_edge(node, take);
    return positions;
  }

  // The producer whose output the first input reads: the latest dependency with a large enough output.
  std::uint32_t producer_output(std::uint32_t i, std::uint64_t bytes) const {
    std::uint32_t best = kNoIndex;
    for (std::uint32_t p : gpu_neighbours(schedule.launches[i].node, false)) {
      if (p >= i || output_of[p] == kNoIndex || schedule.tensors[output_of[p]].bytes < bytes) continue;
      if (best == kNoIndex || p > best) best = p;
    }
    return best == kNoIndex ? kNoIndex : output_of[best];
  }

  // A decompression kernel's residual: its compression kernel's, found across the collective
  // between them (same method and size); kNoIndex for a compression kernel.
  std::uint32_t shared_residual(std::uint32_t i) const {
    const auto* self = std::get_if<CompressCall>(&schedule.launches[i].lowered.launch);
    if (!self || !self->decompress) return kNoIndex;
    for (std::uint32_t collective : gpu_neighbours(schedule.launches[i].node, false)) {
      if (!std::holds_alternative<CollectiveCall>(schedule.launches[collective].lowered.launch)) continue;
      for (std::uint32_t p : gpu_neighbours(schedule.launches[collective].node, false)) {
        const auto* other = std::get_if<CompressCall>(&schedule.launches[p].lowered.launch);
        if (p < i && other && !other->decompress && other->method == self->method && other->elements == self->elements &&
            residual_of[p] != kNoIndex)
          return residual_of[p];
      }
    }
    return kNoIndex;
  }

  void tensors_of(std::uint32_t i) {
    std::vector<Slot> slots = slots_of(schedule.launches[i].lowered.launch);
    const std::vector<std::uint32_t> consumers = gpu_neighbours(schedule.launches[i].node, true);
    const std::uint32_t last_use = std::max(i, consumers.empty() ? i : *std::max_element(consumers.begin(), consumers.end()));
    const auto end = static_cast<std::uint32_t>(schedule.launches.size() - 1);
    bool first_input = true;
    for (const Slot& s : slots) {
      std::uint32_t t = kNoIndex;
      if (s.role == SlotRole::kInput && first_input) {
        t = producer_output(i, s.span->bytes);
        if (t != kNoIndex) schedule.tensors[t].last = std::max(schedule.tensors[t].last, i);
      }
      if (s.role == SlotRole::kInput) first_input = false;
      if (s.role == SlotRole::kPersistent) t = residual_of[i] = shared_residual(i);
      if (t == kNoIndex) {
        if (s.role == SlotRole::kInput) t = add(s.span->bytes, i, i);
        else if (s.role == SlotRole::kOutput) t = add(s.span->bytes, i, last_use);
        else t = residual_of[i] = add(s.span->bytes, 0, end);
      }
      if (s.role == SlotRole::kOutput && output_of[i] == kNoIndex) output_of[i] = t;
      slot_tensor[i].push_back(t);
    }
  }

  void run() {
    const std::size_t n = schedule.launches.size();
    output_of.assign(n, kNoIndex);
    residual_of.assign(n, kNoIndex);
    slot_tensor.assign(n, {});
    for (std::uint32_t i = 0; i < n; ++i) tensors_of(i);
    schedule.memory = plan_memory(schedule.tensors);
    for (std::uint32_t i = 0; i < n; ++i) {
      std::vector<Slot> slots = slots_of(schedule.launches[i].lowered.launch);
      for (std::size_t k = 0; k < slots.size(); ++k) slots[k].span->offset = schedule.memory.offsets[slot_tensor[i][k]];
    }
  }
};

}  // namespace

void plan_schedule_memory(const graph::Dfg& dfg, const WindowNodes& window, Schedule& schedule) {
  MemoryPass{dfg, window, schedule, {}, {}, {}}.run();
}

}  // namespace dpro::executor::detail
