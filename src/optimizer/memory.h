#pragma once
// Memory per rank of the recorded job, so that `optimize --memory-budget GiB` can refuse a budget
// the job itself does not fit and plans that would not fit (issue 30: "memory per rank estimated
// from the trace's memory events where recorded, else from tensor sizes").
//
// Where the traces record memory events (Kineto's "[memory]", profile_memory=True), the job's
// memory per rank is the largest peak they record (trace::TraceRank::peak_gpu_memory_bytes).
// The bundled traces record none, so the estimate then comes from what the graph knows:
// the gradient bytes a rank all-reduces in one step (the largest step's, the largest rank's) are
// the model's parameters at the gradient's width, and training keeps kTrainingStateFactor times
// that: weights, gradients and the two moments of Adam at the same width. Activations, workspace
// and the allocator's cache are not counted: the estimate is a lower bound, so a budget refused
// for being below it is certainly too small.
#include <cstdint>
#include <optional>
#include <string>

#include "whatif/workload.h"

namespace dpro::optimizer {

inline constexpr std::int64_t kTrainingStateFactor = 4;  // weights + gradients + 2 Adam moments
inline constexpr double kBytesPerGiB = 1024.0 * 1024.0 * 1024.0;

struct MemoryEstimate {
  std::int64_t bytes = 0;       // per rank
  std::int64_t gradient_bytes = 0;  // 0 when recorded
  std::string source;           // how it was estimated, for messages
};

// nullopt when the job gives nothing to estimate from (no memory event, no gradient all-reduce).
std::optional<MemoryEstimate> estimate_memory_per_rank(const whatif::Workload& job);

// The memory per rank a plan may add under a total budget of `budget_gib` per rank. Throws
// OptionError("memory_budget", ...) when the job's own estimate is unknown or above the budget.
std::int64_t headroom_under_budget(double budget_gib, const std::optional<MemoryEstimate>& job);

}  // namespace dpro::optimizer
