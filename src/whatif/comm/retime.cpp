#include "whatif/comm/retime.h"

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

BucketStats fuse_allreduce_buckets(graph::Dfg& dfg, std::vector<CommOp>& ops, const trace::TraceSet& traces,
                                   const CollectiveModel& target, std::int64_t bucket_bytes,
                                   std::optional<int> ranks) {
  if (bucket_bytes <= 0) throw OptionError("bucket_mb", "", "must be positive");
  BucketStats stats;
  // Per rank, its all-reduces in order, keyed for consistency across ranks.
  std::map<std::size_t, std::vector<CommOp*>> per_rank;
  for (CommOp& op : ops)
    if (op.op == CollectiveOp::kAllReduce && op.bytes) per_rank[op.rank_index].push_back(&op);
  if (per_rank.empty()) return stats;
  // Bucket boundaries from the first rank, checked against every other rank.
  const auto& first = per_rank.begin()->second;
  const trace::TraceRank& first_rank = traces.ranks[per_rank.begin()->first];
  std::vector<std::size_t> bucket_end;  // exclusive end index of each bucket
  std::int64_t size = 0;
  for (std::size_t k = 0; k < first.size(); ++k) {
    const bool new_iteration = k > 0 && trace::iteration_index_at(first_rank, first[k]->measured_start) !=
                                            trace::iteration_index_at(first_rank, first[k - 1]->measured_start);
    const bool other_group = k > 0 && first[k]->group_size != first[k - 1]->group_size;
    if (k > 0 && (new_iteration || other_group || size + *first[k]->bytes > bucket_bytes)) {
      bucket_end.push_back(k);
      size = 0;
    }
    size += *first[k]->bytes;
  }
  bucket_end.push_back(first.size());
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
