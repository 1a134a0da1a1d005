#pragma once
// Builds the global dataflow graph of a TraceSet: one node per op instance that the replay
// times (leaf CPU ops and runtime calls on threads, GPU ops on streams, one barrier per
// matched collective instance), the dependency edges between them, and each node's measured
// residual delay, so that replaying with measured durations reproduces the trace.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/log.h"
#include "graph/dfg.h"
#include "trace/event.h"

namespace dpro::graph {

// A GPU op that started more than this after its launch call, with no other dependency to
// explain it, waited for something: the builder looks for what (late starts, below), and what
// it does not find the report calls an unresolved wait (replayer::is_unresolved_wait). Launch
// latency is 2-10 us on current GPUs; 50 us leaves room for a busy driver without hiding real
// waits.
inline constexpr Nanos kUnresolvedWaitThreshold = 50'000;

// Untraced work at least this long between two recorded ops of a CPU thread is a node of its
// own (NodeKind::kUntraced); shorter gaps stay the next op's delay. Both replay the same, and
// the critical path and the host what-if treat both as untraced work; the node makes it the
// thread's, not the next op's, for rewrites, at the cost of a node and an edge each. Its
// replay speed decides the threshold (docs/replay.md): at 100 us, GPT-2's replay on the H100
// capture has 2,055 such nodes and runs at 0.98x the speed without them; at 50 us, 8,791 and
// 0.89x; at 20 us, 25,567 and 0.78x.
inline constexpr Nanos kDefaultUntracedMin = 100'000;

struct BuildOptions {
  // A thread that was idle at least this long and then resumes right after another thread
  // of the same process finished something is taken to have waited for it (fork/join).
  Nanos cross_thread_min_idle = 20 * kNanosPerMicro;
  // Timestamps are rounded (often to 1 us): dependency violations up to this size are
  // measurement noise, not evidence against the dependency.
  Nanos tolerance = 2 * kNanosPerMicro;
  // Depth of each GPU's launch queue (launch_queue.h); none: estimated from the trace where
  // launches blocked on a full queue, kDefaultLaunchQueueDepth otherwise.
  std::optional<std::uint32_t> launch_queue_depth;
  // See kDefaultUntracedMin; INT64_MAX: no untraced nodes (every gap stays a delay).
  Nanos untraced_min = kDefaultUntracedMin;
};

// Where each trace event of one rank ended up in the graph.
struct RankNodes {
  IdVector<EventRef, NodeId> node_of_event;  // none for events that are not nodes
  // CPU events that enclose nodes (ProfilerStep, aten::linear, ...): the first and last node
  // inside them on their thread, none when they contain none.
  IdVector<EventRef, NodeId> first_inside;
  IdVector<EventRef, NodeId> last_inside;
};

struct BuildStats {
  std::size_t edges_by_kind[kEdgeKindCount] = {};
  std::size_t collectives_matched = 0;    // instances with a barrier
  std::size_t collectives_unmatched = 0;  // kept with measured duration (absent ranks)
  std::size_t blocking_calls = 0;
  std::size_t syncs_unresolved = 0;       // blocking syncs whose awaited GPU op was not found
  std::size_t violations = 0;             // dependencies the measured times break by > tolerance
  Nanos violation_total = 0;
  std::size_t dropped_edges = 0;          // inferred edges contradicted by measured times
  // The launch queue (launch_queue.h): the largest depth used (0: no launches), whether it
  // was estimated from launches that blocked, how many did, and how many launches the
  // measured times show returning before the op whose slot they would take finished.
  std::uint32_t launch_queue_depth = 0;
  bool launch_queue_estimated = false;
  std::size_t launches_blocked = 0;
  std::size_t launch_queue_contradicted = 0;
  // Untraced work (kUntraced nodes) and its time.
  std::size_t untraced_nodes = 0;
  Nanos untraced_total = 0;
  // GPU ops that started more than kUnresolvedWaitThreshold after their launch call and what
  // explained it: the call itself was still enqueueing them (a slow launch: CUDA loading the
  // kernel's module, a pageable copy staged by its call), or another stream's op, ended just
  // before, that a cudaStreamWaitEvent issued between the two launches waited for.
  std::size_t slow_launches = 0;
  std::size_t stream_waits_by_timing = 0;
};

struct BuiltGraph {
  Dfg dfg;
  std::vector<RankNodes> ranks;  // parallel to TraceSet::ranks
  BuildStats stats;
};

// Throws InputError for collectives that cannot be matched across ranks and for dependency
// cycles (naming the ops on the cycle).
BuiltGraph build_graph(const trace::TraceSet& traces, const BuildOptions& options, Logger& log);

// Fills dfg.ops() and each node's entry from the trace the nodes refer to (Node::name, event,
// parent_op; barriers: their collective's op). build_graph does it; a graph whose nodes were
// added by hand calls it to describe them.
void describe_ops(const trace::TraceSet& traces, Dfg& dfg);

// Recomputes every node's delay, release and end-edge gaps from its measured times and the
// current edges (build_graph calls it; rewrites that add edges may call it again).
void compute_measured_delays(Dfg& dfg, const BuildOptions& options, BuildStats& stats);

// The collective metadata of a collective kernel node of `rank`: the kernel's own, or, where
// it has neither a process group name nor ranks (older traces put the metadata on the
// launching record_param_comms op only), that of the CPU op that launched it. nullptr when
// neither has any.
const trace::CollectiveInfo* collective_info(const trace::TraceRank& rank, const Node& kernel);

// Throws InputError naming the ops on a cycle if the graph has one. Needs a finalized graph.
void check_acyclic(const Dfg& dfg, const trace::TraceSet& traces);

}  // namespace dpro::graph
