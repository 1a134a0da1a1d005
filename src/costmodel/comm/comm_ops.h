#pragma once
// The NCCL operations of a replay graph, with what the collective model needs about each:
// operation, message size (and where the size came from), group size, and the transfer time
// the graph gives it. For a collective matched across ranks the transfer time is the kernel's
// duration after its last peer arrived, carried both by the kernel node and by the
// barrier->kernel end-edge (graph/collectives.cpp); for an unmatched one (peers outside the
// trace) it is the measured kernel duration, which includes waiting for those peers.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "graph/dfg.h"
#include "costmodel/comm/collective_model.h"
#include "trace/event.h"
#include "trace/host_et/host_et_reader.h"

namespace dpro::comm {

enum class SizeSource { kTrace, kHostEt, kInferred, kUnknown };

// Largest message (2^40 bytes, a tebibyte) and group (2^20 ranks) a trace may give a
// collective: beyond any GPU's memory and any job, so larger is a corrupt trace, not a size to model.
inline constexpr std::int64_t kMaxMessageBytes = trace::kMaxHostEtMessageBytes;
inline constexpr std::int64_t kMaxGroupSize = std::int64_t{1} << 20;

struct CommOp {
  graph::NodeId node;
  graph::NodeId barrier;                 // none: unmatched
  graph::EdgeId end_edge;                // barrier -> kernel end-edge carrying the transfer time
  std::size_t rank_index = 0;            // into TraceSet::ranks
  int rank = 0;
  CollectiveOp op = CollectiveOp::kAllReduce;
  std::string trace_op;                  // the trace's own name for it ("sendrecv")
  std::optional<std::int64_t> bytes;     // model convention (collective_model.h)
  SizeSource size_source = SizeSource::kUnknown;
  int group_size = 1;
  bool world_group = true;               // the group is every rank of the job
  Nanos measured_start = 0;
  Nanos transfer = 0;                    // the node's replay duration when found, less `waiting`
  // An unmatched op's wait for its peers outside the trace (split_peer_waiting): part of its
  // node's duration that no network change moves. 0 for a matched op (its barrier waits).
  Nanos waiting = 0;

  bool matched() const { return barrier.valid(); }
};

// World size of the job: the largest declared world size, or the number of ranks.
int world_size(const trace::TraceSet& traces);

// Every collective kernel node of a finalized graph, ordered by rank then measured start.
// Throws InputError naming the kernel when its operation is not one the model knows, or its
// message size or group size is out of range (above).
std::vector<CommOp> find_comm_ops(const graph::Dfg& dfg, const trace::TraceSet& traces);

// Sets an op's transfer time in the graph (node duration, its waiting kept, and, when matched,
// its end-edge gap).
void set_transfer(graph::Dfg& dfg, CommOp& op, Nanos transfer);

// Gives sizes to the ops that lack them from per-rank host-ET comms (files[i] = trace rank i):
// the k-th NCCL kernel of a rank is the k-th comm op of its host trace. Throws InputError when
// the counts or the operations disagree. Returns how many ops got a size.
std::size_t attach_host_et_sizes(std::vector<CommOp>& ops, const trace::TraceSet& traces,
                                 const std::vector<std::string>& files);

// An unmatched op (peers outside the trace) measured its transfer and its wait for those
// peers as one: with a size known (trace or host execution trace, not inferred), the transfer
// is what `origin` prices it at (at most the measured time) and the rest is waiting. Returns
// how many ops were split; their waiting summed into *waiting.
std::size_t split_peer_waiting(std::vector<CommOp>& ops, const CollectiveModel& origin, Nanos* waiting);

// Gives the remaining unsized ops the size at which the model's time equals their transfer
// time (0 when it is below the model's latency). Returns how many were inferred.
std::size_t infer_sizes(std::vector<CommOp>& ops, const CollectiveModel& model, const ClusterSpec& origin);

}  // namespace dpro::comm
