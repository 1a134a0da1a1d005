#pragma once
// Graph rewrites of the communication what-ifs. Every NCCL op keeps its measured transfer time
// as calibration and is re-timed by the ratio of two model estimates:
//   T_new = T_measured x model(target cluster, new group) / model(origin cluster, old group)
// so that an unchanged cluster and group size reproduce the measured replay exactly, and the
// model only has to be right about relative changes. Gradient-bucket fusion gives a bucket
// of all-reduces the model's time of their summed size, scaled by the same measured/model
// ratio over the bucket's members.
#include <optional>
#include <vector>

#include "graph/dfg.h"
#include "costmodel/comm/collective_model.h"
#include "costmodel/comm/comm_ops.h"
#include "trace/event.h"

namespace dpro::comm {

struct RetimeStats {
  std::size_t ops = 0;             // re-timed kernels
  std::size_t resized_groups = 0;  // kernels whose group size changed (--ranks)
  Nanos before = 0;                // summed transfer time, all ranks
  Nanos after = 0;
  // The same sums per operation (indexed by CollectiveOp), after any change of operation the
  // sizes made (a SendRecv kernel that host execution traces call an all-to-all is one).
  Nanos before_by_op[kCollectiveOpCount] = {};
  Nanos after_by_op[kCollectiveOpCount] = {};
};

// Re-times every op with a size. `ranks`: new size of world-spanning groups (data-parallel
// scale-out/in); other groups keep their size. The models carry their calibrations.
RetimeStats retime_collectives(graph::Dfg& dfg, std::vector<CommOp>& ops, const CollectiveModel& origin,
                               const CollectiveModel& target, std::optional<int> ranks = std::nullopt);

struct BucketStats {
  std::size_t allreduces = 0;  // per rank
  std::size_t buckets = 0;     // per rank
  Nanos before = 0;            // summed all-reduce transfer time, all ranks
  Nanos after = 0;
  // Exclusive end of each bucket in a rank's sized all-reduces (the same for every rank).
  std::vector<std::size_t> bucket_end;
};

// Fuses consecutive all-reduces of each rank (same group, same iteration) into buckets of at
// most `bucket_bytes` (an all-reduce larger than that stays alone); each bucket runs where
// its last member ran, the earlier members take no time. Needs `ops` sized. Throws
// InputError when ranks disagree on their all-reduce sequence.
BucketStats fuse_allreduce_buckets(graph::Dfg& dfg, std::vector<CommOp>& ops, const trace::TraceSet& traces,
                                   const CollectiveModel& target, std::int64_t bucket_bytes,
                                   std::optional<int> ranks = std::nullopt);

}  // namespace dpro::comm
