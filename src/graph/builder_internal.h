#pragma once
// Pieces shared by the graph builder's files; not part of the public interface.
#include <optional>
#include <string>
#include <vector>

#include "graph/builder.h"

namespace dpro::graph::detail {

// One NCCL kernel of one rank, waiting to be matched with its peers.
struct CollectiveRef {
  NodeId node;
  EventRef event;
  Nanos order_time = 0;              // launch time (or GPU start): per-group issue order
  std::string group;                 // process group key
  std::string op;                    // normalised operation
  std::vector<int> group_ranks;      // participants; empty = every rank of the job, unless group_size says fewer
  std::optional<int> group_size;     // as the trace recorded it
  std::optional<std::int64_t> sequence;
};

// Builds the nodes and intra-rank edges of one rank; returns its collectives.
std::vector<CollectiveRef> build_rank(const trace::TraceSet& traces, std::size_t rank_index,
                                      const BuildOptions& options, Dfg& dfg, RankNodes& out,
                                      BuildStats& stats, Logger& log);

// Matches collectives across ranks (process group, operation, per-group sequence) and adds
// one barrier per instance. Throws InputError when a participant lacks its counterpart.
void match_collectives(const trace::TraceSet& traces,
                       std::vector<std::vector<CollectiveRef>>& per_rank, Dfg& dfg,
                       BuildStats& stats, Logger& log);

EdgeId add_counted_edge(Dfg& dfg, BuildStats& stats, const Edge& edge);

// Adds the launch queue's edges (launch_queue.h) between the launches and GPU ops already in
// the graph.
void add_launch_queue_edges(Dfg& dfg, const BuildOptions& options, BuildStats& stats);

// Makes the untraced work before CPU ops (their measured delays, at least
// options.untraced_min) nodes of their own, kUntraced, renumbers the nodes (the ranks' event
// maps with them) and finalizes the graph (untraced_work.cpp).
void add_untraced_nodes(BuiltGraph& built, const BuildOptions& options);

}  // namespace dpro::graph::detail
