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

// Where gradient buckets begin. A step's all-reduces (one rank's, in the order the trace runs
// them: backward order, the last layers' gradients first; "position" 0 first) are the units a
// bucket is made of, and a bucket is contiguous: it runs where its last member ran (DDP: its
// all-reduce starts when its last gradient is ready). A boundary exists before position p
// (1 <= p < the step's all-reduces) unless one of the rules below merges it away; both rules
// given: a boundary only where both keep one. A step's first all-reduce always begins a bucket,
// and so does one of another group than its predecessor's (nothing can merge them).
struct BucketLayout {
  // Buckets of at most this many bytes, filled greedily in order (an all-reduce larger than it
  // stays alone); none: no size rule.
  std::optional<std::int64_t> max_bytes;
  // Partition: the positions where a bucket begins, strictly increasing, each from 1 to the
  // largest step's all-reduces - 1; every other boundary is merged. None: no partition rule.
  std::optional<std::vector<std::size_t>> boundaries;
};

// The all-reduces of the first rank that has some, per step: the most any step holds (the bound
// of BucketLayout::boundaries) and, per position p, whether the boundary before it can merge at
// all (index p: the all-reduce there has the same group as the one before it in every step that
// reaches p; index 0 is false). Sized or not: the optimizer asks before the sizes are known.
struct StepAllreduces {
  std::size_t most = 0;
  std::vector<bool> mergeable;
};
StepAllreduces step_allreduces(const std::vector<CommOp>& ops, const trace::TraceSet& traces);

// Fuses consecutive all-reduces of each rank (same group, same iteration) into the buckets
// `layout` places; each bucket runs where its last member ran, the earlier members take no
// time. Needs `ops` sized. Throws OptionError("bucket_mb", ...) when ranks disagree on their
// all-reduce sequence or the size is not positive, OptionError("partition", position, why) for
// a boundary out of range or out of order.
BucketStats fuse_allreduce_buckets(graph::Dfg& dfg, std::vector<CommOp>& ops, const trace::TraceSet& traces,
                                   const CollectiveModel& target, const BucketLayout& layout,
                                   std::optional<int> ranks = std::nullopt);
// The size rule alone (BucketLayout::max_bytes = bucket_bytes).
BucketStats fuse_allreduce_buckets(graph::Dfg& dfg, std::vector<CommOp>& ops, const trace::TraceSet& traces,
                                   const CollectiveModel& target, std::int64_t bucket_bytes,
                                   std::optional<int> ranks = std::nullopt);

}  // namespace dpro::comm
