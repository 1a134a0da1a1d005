#pragma once
// The collective cost model: time of one NCCL operation for a message size, a group size and
// its placement on a cluster. It follows the structure of NCCL's own tuning model
// (src/graph/tuning.cc): for every algorithm (ring, tree, NVLS) and protocol (LL, LL128,
// Simple) a latency (base + per-hop latency x hops) and a bus bandwidth (link bandwidth x
// protocol efficiency, converted to algorithm bandwidth by the algorithm's traffic ratio);
// the time is latency + bytes / algorithm bandwidth, and the fastest pair is chosen, as NCCL
// does. AllToAll, Gather, Scatter and Send/Recv (NCCL has no tuning model for them; PyTorch
// runs gather and scatter as grouped sends and receives with the root) use one peer-to-peer
// latency plus the bytes the busiest GPU moves over its intra- and inter-node links.
//
// A Calibration scales the latency and the byte time of each operation; fit_calibration
// (calibration.h) fits it to a trace.
#include <cstdint>
#include <string>

#include "core/time.h"
#include "hw/cluster.h"

namespace dpro::comm {

enum class CollectiveOp {
  kAllReduce, kAllGather, kReduceScatter, kBroadcast, kReduce, kAllToAll, kSendRecv, kGather, kScatter
};
constexpr int kCollectiveOpCount = 9;
const char* to_string(CollectiveOp op);
// Accepts the trace's normalised names ("allreduce", "all_reduce", "alltoall", "send", ...).
// Throws InputError(file, item, ...) naming the operation when it is not one of the above.
CollectiveOp parse_collective_op(const std::string& name, const std::string& file = "", const std::string& item = "");
bool is_point_to_point(CollectiveOp op);  // alltoall, sendrecv, gather, scatter

enum class Algorithm { kRing, kTree, kNvls, kPointToPoint };
enum class Protocol { kLL, kLL128, kSimple };
const char* to_string(Algorithm a);
const char* to_string(Protocol p);

// Message size convention (as nccl-tests' "size"): allreduce, broadcast, reduce: the buffer;
// allgather: the gathered output (group size x each rank's input); reducescatter: the input;
// alltoall: each rank's send buffer; sendrecv: the bytes sent to the peer; gather: the root's
// gathered output (group size x each rank's input), scatter: the root's input (group size x
// each rank's output), as PyTorch records them ("In msg nelems" x group size for gather).
struct CollectiveCall {
  CollectiveOp op = CollectiveOp::kAllReduce;
  std::int64_t bytes = 0;
  Placement placement;
};

struct Scales {
  double latency = 1.0;
  double byte_time = 1.0;
};

struct Calibration {
  Scales op[kCollectiveOpCount];  // indexed by CollectiveOp
  Scales& of(CollectiveOp o) { return op[static_cast<int>(o)]; }
  const Scales& of(CollectiveOp o) const { return op[static_cast<int>(o)]; }
  // The same scales for every reduction/gather and for every point-to-point operation.
  static Calibration per_family(Scales collectives, Scales point_to_point);
};

struct CollectiveEstimate {
  double time_us = 0;
  double latency_us = 0;       // after calibration
  double byte_time_us = 0;     // after calibration
  double raw_latency_us = 0;   // before calibration
  double raw_byte_time_us = 0;
  double algorithm_gbps = 0;   // bytes / byte time, before calibration
  Algorithm algorithm = Algorithm::kRing;
  Protocol protocol = Protocol::kSimple;
  Nanos time_ns() const { return static_cast<Nanos>(time_us * 1000.0 + 0.5); }
};

class CollectiveModel {
 public:
  explicit CollectiveModel(ClusterSpec cluster, Calibration calibration = {});

  // The algorithm/protocol pair the uncalibrated model finds fastest (NCCL chooses with its
  // own, uncalibrated tuning model), its time scaled by the calibration of the operation. A
  // group of one rank costs 0.
  CollectiveEstimate estimate(const CollectiveCall& call) const;
  // Same pair, without calibration (what the fit uses as its regressors).
  CollectiveEstimate estimate_uncalibrated(const CollectiveCall& call) const;
  // nccl-tests bus bandwidth of the estimate: algbw x its correction factor (2(n-1)/n for
  // allreduce, (n-1)/n for allgather/reducescatter/alltoall/gather/scatter, 1 otherwise).
  static double bus_bandwidth_gbps(const CollectiveCall& call, double time_us);

  const ClusterSpec& cluster() const { return cluster_; }
  const Calibration& calibration() const { return calibration_; }

 private:
  CollectiveEstimate best(const CollectiveCall& call, bool calibrated) const;
  ClusterSpec cluster_;
  Calibration calibration_;
};

}  // namespace dpro::comm
