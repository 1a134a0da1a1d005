#pragma once
// Data-parallel scale-out/in replay: a job of N ranks in which rank g runs what trace rank
// g mod W ran (W = ranks in the trace) and every collective instance spans all of them.
// Collectives must already be re-timed for N ranks (retime.h).
//
// Symmetric mode simulates only the W trace ranks: a replica joins the same barriers with
// the same durations as its original, so it starts and ends every op at the same times, and
// the W-rank replay gives the N-rank job exactly (N >= W). Expanded mode builds the full
// N-rank graph (nodes and edges copied per replica, one barrier per collective instance for
// all copies); it is the check of the symmetric mode and the only mode for N < W.
#include <cstdint>
#include <vector>

#include "graph/builder.h"
#include "graph/dfg.h"
#include "trace/event.h"

namespace dpro::comm {

struct ScaledIteration {
  std::int64_t number = 0;    // ProfilerStep number
  Nanos job_predicted_ns = 0;  // first step start to last step end over all N ranks
  bool whole_trace = false;    // no ProfilerStep#N in the traces: the whole trace of every rank
};

struct ScaleOutResult {
  int ranks = 0;
  bool expanded = false;
  std::size_t nodes = 0, edges = 0;  // of the simulated graph (nodes: Dfg::op_count)
  std::vector<ScaledIteration> iterations;
  double simulate_seconds = 0;
};

// The N-rank graph. block_maps[j][old node] = node of replica block j (ranks j*W .. j*W+W-1),
// none for nodes of ranks >= N; barriers are shared by all blocks.
graph::Dfg replicate_ranks(const graph::Dfg& dfg, const trace::TraceSet& traces, int ranks,
                           std::vector<IdVector<graph::NodeId, graph::NodeId>>& block_maps);

// Scale-in (N < W): the graph of the first N trace ranks, as replicate_ranks builds it (their
// nodes and edges, every barrier; the other ranks and their edges dropped), with `built`'s
// per-rank node ranges mapped onto it: the ranks past N have none, so a report made from it
// (replayer::make_report) lists ranks 0..N-1 and its job row is the N-rank job.
graph::BuiltGraph scale_in(const graph::BuiltGraph& built, const trace::TraceSet& traces, int ranks);

// Replays `dfg` (the trace's graph with collectives re-timed for `ranks`) as an N-rank job.
// `rank_nodes` comes from the build of that graph (graph::BuiltGraph::ranks).
ScaleOutResult simulate_scaled_job(const trace::TraceSet& traces, const std::vector<graph::RankNodes>& rank_nodes,
                                   const graph::Dfg& dfg, int ranks, bool expand);

}  // namespace dpro::comm
