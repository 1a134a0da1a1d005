#include "optimizer/memory.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "core/error.h"
#include "costmodel/comm/comm_ops.h"
#include "trace/iterations.h"

namespace dpro::optimizer {

std::optional<MemoryEstimate> estimate_memory_per_rank(const whatif::Workload& job) {
  std::optional<MemoryEstimate> recorded;
  for (const trace::TraceRank& r : job.traces->ranks)
    if (r.peak_gpu_memory_bytes && (!recorded || *r.peak_gpu_memory_bytes > recorded->bytes))
      recorded = MemoryEstimate{*r.peak_gpu_memory_bytes, 0, fmt::format("the peak the trace's memory events record, rank {}", r.rank)};
  if (recorded) return recorded;
  const std::vector<comm::CommOp> ops = comm::find_comm_ops(job.graph.dfg, *job.traces);
  std::map<std::pair<std::size_t, int>, std::int64_t> per_step;  // (rank index, iteration) -> gradient bytes
  for (const comm::CommOp& op : ops) {
    if (op.op != comm::CollectiveOp::kAllReduce || !op.bytes || !op.world_group || op.group_size < 2) continue;
    const int it = trace::iteration_index_at(job.traces->ranks[op.rank_index], op.measured_start);
    per_step[{op.rank_index, it}] += *op.bytes;
  }
  if (per_step.empty()) return std::nullopt;
  MemoryEstimate e;
  for (const auto& [key, bytes] : per_step) e.gradient_bytes = std::max(e.gradient_bytes, bytes);
  e.bytes = e.gradient_bytes * kTrainingStateFactor;
  e.source = fmt::format("{} x the {:.3f} GiB of gradients a rank all-reduces in a step: weights, gradients and "
                         "Adam's two moments; activations not counted",
                         kTrainingStateFactor, static_cast<double>(e.gradient_bytes) / kBytesPerGiB);
  return e;
}

std::int64_t headroom_under_budget(double budget_gib, const std::optional<MemoryEstimate>& job) {
  const std::string value = fmt::format("{:g}", budget_gib);
  if (!job)
    throw OptionError("memory_budget", value,
                      "cannot tell the job's own memory per rank: the traces record no memory events and no gradient "
                      "all-reduce to estimate it from (use --memory-headroom for memory beyond the job's)");
  const auto budget = static_cast<std::int64_t>(budget_gib * kBytesPerGiB);
  if (budget < job->bytes)
    throw OptionError("memory_budget", value,
                      fmt::format("below the job's own memory per rank, at least {:.3f} GiB ({}): no plan fits",
                                  static_cast<double>(job->bytes) / kBytesPerGiB, job->source));
  return budget - job->bytes;
}

}  // namespace dpro::optimizer
