#pragma once
// The memory plan: every tensor a schedule's launches touch gets an offset in one arena (one
// device allocation), tensors whose lifetimes do not overlap sharing storage, instead of one
// allocation per tensor (the out-of-memory PARAM's et_replay users report).
//
// Lifetimes are in schedule positions (the index of a launch in Schedule::launches, a
// topological order of the rank's GPU ops): a tensor is live from its first to its last
// position, both included. Placement is greedy by size with best fit (the largest tensor first,
// each into the smallest gap between the tensors already placed that overlap it in time), the
// offline rule TFLite's arena planner uses; sizes are rounded up to kTensorAlignment.
#include <cstdint>
#include <vector>

namespace dpro::executor {

inline constexpr std::uint64_t kTensorAlignment = 256;  // bytes; cuBLASLt and vector loads want 16+, 256 is CUDA's malloc

struct TensorLife {
  std::uint64_t bytes = 0;  // as the launch needs them (rounded up when placed)
  std::uint32_t first = 0;  // schedule positions, first <= last
  std::uint32_t last = 0;
};

struct MemoryPlan {
  std::vector<std::uint64_t> offsets;  // parallel to the tensors planned, bytes into the arena
  std::uint64_t arena_bytes = 0;       // the one allocation the plan needs
  // The largest sum of (aligned) bytes of the tensors live at one position: no plan needs less.
  std::uint64_t live_peak_bytes = 0;
};

std::uint64_t aligned_bytes(std::uint64_t bytes);
// The most bytes live at once over `tensors` (aligned sizes).
std::uint64_t live_peak(const std::vector<TensorLife>& tensors);
// Offsets for `tensors` such that no two that are live at one position overlap in bytes.
MemoryPlan plan_memory(const std::vector<TensorLife>& tensors);

}  // namespace dpro::executor
