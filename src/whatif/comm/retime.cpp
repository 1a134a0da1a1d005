#include "whatif/comm/retime.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "core/error.h"
#include "trace/iterations.h"

namespace dpro::comm {

namespace {

int new_group_size(const CommOp& op, std::optional<int> ranks) {
  return ranks && op.world_group ? *ranks : op.group_size;
}

Nanos scaled(Nanos measured, double numerator_us, double denominator_us) {
  if (!(denominator_us > 0)) return measured;
  return nanos_from_double(static_cast<double>(measured) * numerator_us / denominator_us);
}

}  // namespace

RetimeStats retime_collectives(graph::Dfg& dfg, std::vector<CommOp>& ops, const CollectiveModel& origin,
                               const CollectiveModel& target, std::optional<int> ranks) {
  RetimeStats stats;
  for (CommOp& op : ops) {
    if (!op.bytes) continue;
    const int n_new = new_group_size(op, ranks);
    const CollectiveCall before{op.op, *op.bytes, place(origin.cluster(), op.group_size)};
    const CollectiveCall after{op.op, *op.bytes, place(target.cluster(), n_new)};
    stats.before = saturating_add(stats.before, op.transfer);
    const Nanos t = op.group_size < 2 ? op.transfer
                                      : scaled(op.transfer, target.estimate(after).time_us, origin.estimate(before).time_us);
    const int k = static_cast<int>(op.op);
    stats.before_by_op[k] = saturating_add(stats.before_by_op[k], op.transfer);
    set_transfer(dfg, op, t);
    stats.after = saturating_add(stats.after, t);
    stats.after_by_op[static_cast<int>(op.op)] = saturating_add(stats.after_by_op[static_cast<int>(op.op)], t);
    ++stats.ops;
    if (n_new != op.group_size) ++stats.resized_groups;
  }
  return stats;
}

namespace {

// Each all-reduce's position within its step, in one rank's list.
std::vector<std::size_t> positions_in_steps(const std::vector<const CommOp*>& list, const trace::TraceRank& rank) {
  std::vector<std::size_t> out(list.size(), 0);
  for (std::size_t k = 1; k < list.size(); ++k) {
    const bool same_step = trace::iteration_index_at(rank, list[k]->measured_start) ==
                           trace::iteration_index_at(rank, list[k - 1]->measured_start);
    out[k] = same_step ? out[k - 1] + 1 : 0;
  }
  return out;
}

// The partition's boundaries checked against the steps' all-reduces (at most `most`), as one
// flag per position: whether a bucket may begin there.
std::vector<bool> partition_keeps(const std::vector<std::size_t>& boundaries, std::size_t most) {
  std::vector<bool> keep(std::max<std::size_t>(most, 1), false);
  for (std::size_t i = 0; i < boundaries.size(); ++i) {
    const std::size_t p = boundaries[i];
    if (p == 0 || p >= most)
      throw OptionError("partition", std::to_string(p),
                        most < 2 ? std::string("no boundary to place: no step has more than one all-reduce")
                                 : fmt::format("boundary out of range: a step has at most {} all-reduces, so a "
                                               "boundary is a position from 1 to {}", most, most - 1));
    if (i > 0 && p <= boundaries[i - 1])
      throw OptionError("partition", std::to_string(p), "boundaries must be strictly increasing");
    keep[p] = true;
  }
  return keep;
}

// Exclusive end of each bucket in the first rank's list.
std::vector<std::size_t> bucket_ends(const std::vector<const CommOp*>& first, const trace::TraceRank& rank,
                                     const BucketLayout& layout) {
  const std::vector<std::size_t> position = positions_in_steps(first, rank);
  std::size_t most = 0;
  for (std::size_t p : position) most = std::max(most, p + 1);
  const std::vector<bool> keep = layout.boundaries ? partition_keeps(*layout.boundaries, most) : std::vector<bool>{};
  std::vector<std::size_t> ends;
  std::int64_t size = 0;  // of the bucket the size rule is filling
  for (std::size_t k = 0; k < first.size(); ++k) {
    const bool forced = k > 0 && (position[k] == 0 || first[k]->group_size != first[k - 1]->group_size);
    const bool by_size = layout.max_bytes && size + *first[k]->bytes > *layout.max_bytes;
    if (forced || by_size) size = 0;
    const bool by_partition = !layout.boundaries || keep[position[k]];
    if (k > 0 && (forced || ((by_size || !layout.max_bytes) && by_partition))) ends.push_back(k);
    size += *first[k]->bytes;
  }
  ends.push_back(first.size());
  return ends;
}

}  // namespace

StepAllreduces step_allreduces(const std::vector<CommOp>& ops, const trace::TraceSet& traces) {
  std::map<std::size_t, std::vector<const CommOp*>> per_rank;
  for (const CommOp& op : ops)
    if (op.op == CollectiveOp::kAllReduce) per_rank[op.rank_index].push_back(&op);
  StepAllreduces out;
  if (per_rank.empty()) return out;
  const auto& first = per_rank.begin()->second;
  const std::vector<std::size_t> position = positions_in_steps(first, traces.ranks[per_rank.begin()->first]);
  for (std::size_t p : position) out.most = std::max(out.most, p + 1);
  out.mergeable.assign(out.most, true);
  out.mergeable[0] = false;
  for (std::size_t k = 1; k < first.size(); ++k)
    if (position[k] > 0 && first[k]->group_size != first[k - 1]->group_size) out.mergeable[position[k]] = false;
  return out;
}

BucketStats fuse_allreduce_buckets(graph::Dfg& dfg, std::vector<CommOp>& ops, const trace::TraceSet& traces,
                                   const CollectiveModel& target, std::int64_t bucket_bytes, std::optional<int> ranks) {
  if (bucket_bytes <= 0) throw OptionError("bucket_mb", "", "must be positive");
  BucketLayout layout;
  layout.max_bytes = bucket_bytes;
  return fuse_allreduce_buckets(dfg, ops, traces, target, layout, ranks);
}

BucketStats fuse_allreduce_buckets(graph::Dfg& dfg, std::vector<CommOp>& ops, const trace::TraceSet& traces,
                                   const CollectiveModel& target, const BucketLayout& layout,
                                   std::optional<int> ranks) {
  if (layout.max_bytes && *layout.max_bytes <= 0) throw OptionError("bucket_mb", "", "must be positive");
  BucketStats stats;
  // Per rank, its all-reduces in order, keyed for consistency across ranks.
  std::map<std::size_t, std::vector<CommOp*>> per_rank;
  for (CommOp& op : ops)
    if (op.op == CollectiveOp::kAllReduce && op.bytes) per_rank[op.rank_index].push_back(&op);
  if (per_rank.empty()) return stats;
  // Bucket boundaries from the first rank, checked against every other rank.
  const auto& first = per_rank.begin()->second;
  const trace::TraceRank& first_rank = traces.ranks[per_rank.begin()->first];
  const std::vector<std::size_t> bucket_end =
      bucket_ends(std::vector<const CommOp*>(first.begin(), first.end()), first_rank, layout);
  stats.allreduces = first.size();
  stats.buckets = bucket_end.size();
  stats.bucket_end = bucket_end;
  for (auto& [ri, list] : per_rank) {
    if (list.size() != first.size())
      throw OptionError("bucket_mb", "",
                        "rank " + std::to_string(traces.ranks[ri].rank) + " has " + std::to_string(list.size()) +
                            " all-reduces, rank " + std::to_string(first_rank.rank) + " has " +
                            std::to_string(first.size()) + ": cannot fuse them into common buckets",
                        traces.ranks[ri].file);
    std::size_t begin = 0;
    for (std::size_t end : bucket_end) {
      std::int64_t bytes = 0;
      Nanos measured = 0;
      double modelled = 0;
      const int n = new_group_size(*list[begin], ranks);
      const Placement p = place(target.cluster(), n);
      for (std::size_t k = begin; k < end; ++k) {
        bytes += *list[k]->bytes;
        measured = saturating_add(measured, list[k]->transfer);
        modelled += target.estimate({CollectiveOp::kAllReduce, *list[k]->bytes, p}).time_us;
      }
      stats.before = saturating_add(stats.before, measured);
      const double fused = target.estimate({CollectiveOp::kAllReduce, bytes, p}).time_us;
      const Nanos t = end - begin == 1 ? measured : scaled(measured, fused, modelled);
      for (std::size_t k = begin; k + 1 < end; ++k) set_transfer(dfg, *list[k], 0);
      set_transfer(dfg, *list[end - 1], t);
      stats.after = saturating_add(stats.after, t);
      begin = end;
    }
  }
  return stats;
}

}  // namespace dpro::comm
