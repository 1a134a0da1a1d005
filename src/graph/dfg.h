#pragma once
// The global dataflow graph (DFG): every op instance of every rank that the replay times,
// and the dependencies between them. Nodes and edges live in plain vectors (the source of
// truth, which what-if rewrites edit, directly or through graph::Editor); finalize() builds a
// compressed-sparse-row view of them for traversal (each node's in- and out-edge ids: cycle
// checks, the Editor's index). The op table (op_table.h) describes each node's op without
// the trace, so a graph can be saved, loaded (graph_file.h) and rewritten on its own.
//
// Timing contract (what the replayer computes, in replay nanoseconds):
//   start(n) = max(release(n), max over start-edges e (time(e.src, e.src_point) + e.gap)) + delay(n)
//   end(n)   = max(start(n) + duration(n), max over end-edges e (time(e.src, e.src_point) + e.gap))
// A start-edge has dst_point == kStart; an end-edge has dst_point == kEnd (a blocking sync
// waiting for GPU work, a collective waiting for its last peer).

// No longer used here (the CSR view is Dfg's own since the third round of incremental evaluation,
// docs/optimizer.md); kept because files that include this header rely on the standard headers it
// brings in (tests/graph/builder_test.cpp on <set>, and more not checked without a full build).
#include <boost/graph/compressed_sparse_row_graph.hpp>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/id.h"
#include "core/strings.h"
#include "core/time.h"
#include "graph/op_table.h"
#include "trace/event.h"

namespace dpro::graph {

// Indexes of the graph's tables, each its own type (core/id.h): a node id is not an edge id,
// a track id or an event reference, and none of them is an integer. Each has its own none().
using NodeId = Id<struct NodeTag>;    // into Dfg::nodes
using EdgeId = Id<struct EdgeTag>;    // into Dfg::edges
using TrackId = Id<struct TrackTag>;  // into Dfg::tracks
// One trace event of a node's rank: its index in that rank's TraceRank::events.
using EventRef = Id<struct EventTag>;

// The event `ref` of `rank`; nullptr for none and for an index past the rank's events (a
// loaded graph read against another trace).
inline const trace::Event* event_of(const trace::TraceRank& rank, EventRef ref) {
  return ref.below(rank.events.size()) ? &rank.events[ref.value] : nullptr;
}

enum class NodeKind : std::uint8_t {
  kCpuOp,        // a leaf CPU operator (no children) on a thread
  kRuntimeCall,  // CUDA runtime/driver call on a thread (launch, copy, sync, event ...)
  kKernel,       // GPU compute kernel on a stream
  kCollective,   // NCCL kernel (collective or p2p) on a stream
  kMemcpy,       // GPU copy on a stream
  kMemset,       // GPU memset on a stream
  kBarrier,      // zero-time join: one collective instance across all its ranks
  kUntraced,     // a thread's untraced work (Python, framework code) before its next op: no op, no event
};
const char* to_string(NodeKind kind);
bool on_gpu(NodeKind kind);
// Ops the trace recorded on a CPU thread (not the untraced work between them).
inline bool is_cpu_op(NodeKind kind) { return kind == NodeKind::kCpuOp || kind == NodeKind::kRuntimeCall; }
// Nodes that are ops of the job: not barriers, not untraced work.
inline bool is_op(NodeKind kind) { return kind != NodeKind::kBarrier && kind != NodeKind::kUntraced; }

enum class EdgeKind : std::uint8_t {
  kThreadOrder,   // previous node on the same CPU thread
  kCrossThread,   // fork/join between threads of one process (e.g. autograd engine)
  kLaunch,        // runtime call -> the GPU op it enqueued (by correlation id); gap: how far into a slow
                  // call the op was enqueued (slow launches, builder.h)
  kStreamOrder,   // previous GPU op on the same stream
  kStreamWait,    // cudaEventRecord on stream A -> cudaStreamWaitEvent on stream B (recorded, inferred
                  // from the calls, or from the measured times: builder.h)
  kBlockingSync,  // GPU op -> CPU call that blocked until it finished
  kCollective,    // participant <-> collective barrier
  kLaunchQueue,   // GPU op -> a later launch call that waited for its queue slot (launch_queue.h)
};
inline constexpr int kEdgeKindCount = static_cast<int>(EdgeKind::kLaunchQueue) + 1;  // the last kind + 1
// Edges into a CPU call's end from the GPU work it waited for (a sync, a blocked launch).
inline bool is_blocking(EdgeKind kind) { return kind == EdgeKind::kBlockingSync || kind == EdgeKind::kLaunchQueue; }
const char* to_string(EdgeKind kind);

enum class Point : std::uint8_t { kStart, kEnd };

// A CPU thread or GPU stream of one rank.
struct Track {
  int rank = 0;
  trace::ResourceKind kind = trace::ResourceKind::kCpuThread;
  std::int64_t pid = 0;  // OS pid, or device index for streams
  std::int64_t tid = 0;  // OS tid, or stream id
  std::string name;
};

// `name`, `event` and `parent_op` refer to the TraceSet the graph was built from and mean
// nothing without it (a loaded graph keeps them as they were saved; a fused node has no event).
// What the op is, without the trace, is in the op table: Dfg::op_of / Dfg::op.
struct Node {
  NodeKind kind = NodeKind::kCpuOp;
  int rank = 0;                  // -1 for cross-rank barriers
  TrackId track;                 // none for barriers
  StringId name;                 // in the trace's TraceSet::strings
  Nanos measured_start = 0;      // absolute trace time (0 for barriers)
  Nanos measured_duration = 0;
  Nanos duration = 0;            // replay duration; what-ifs and cost models rewrite it
  Nanos delay = 0;               // time between becoming ready and starting (launch latency, short CPU gaps;
                                 // a longer CPU gap is a kUntraced node before the op instead)
  std::optional<Nanos> release;  // earliest start, replay clock (roots: the measured start)
  EventRef event;                // the node's own event; none for barriers and fused ops
  EventRef parent_op;            // GPU ops: the CPU op event that launched them, if known
};

struct Edge {
  NodeId src;
  NodeId dst;
  EdgeKind kind = EdgeKind::kThreadOrder;
  Point src_point = Point::kEnd;
  Point dst_point = Point::kStart;
  Nanos gap = 0;
};

class Dfg {
 public:
  NodeId add_node(const Node& node);
  EdgeId add_edge(const Edge& edge);
  TrackId add_track(const Track& track);

  // The op table, and each node's entry in it. The per-node index lives beside the nodes, not
  // in Node, so that graphs made without descriptions (synthetic benchmarks, tests that push
  // nodes directly) pay nothing; op_of() is kNoOp for any node without one.
  OpTable& ops() { return ops_; }
  const OpTable& ops() const { return ops_; }
  OpId op_of(NodeId id) const { return node_ops_.contains(id) ? node_ops_[id] : kNoOp; }
  void set_op(NodeId id, OpId op);
  // The node's description; nullptr when it has none.
  const OpDesc* op(NodeId id) const {
    const OpId o = op_of(id);
    return o.valid() ? &ops_.op(o) : nullptr;
  }
  // The node's op name from the op table ("" when it has no description).
  std::string_view op_name(NodeId id) const {
    const OpDesc* d = op(id);
    return d ? ops_.name(d->name) : std::string_view();
  }

  // Builds the CSR view (each node's in- and out-edge ids); call after the last add_* and before
  // traversals.
  void finalize();
  // The same view, made from the current one when the graph has only grown since it was made:
  // the view covered the first `nodes` nodes and `edges` edges, those edges' ends have not
  // changed, and every node and edge past them was appended since (graph::Editor's commit of
  // inserts). An added edge has a larger id than every old one, so it goes at the end of its
  // source's out-list and, in its target's in-list, after the old in-edges from sources up to
  // its own: the lists are moved up in place, O(nodes + edges) in sequential moves plus
  // O(k log k) for the k added edges, against finalize()'s two counting sorts with their
  // scattered writes. The view is finalize()'s, entry for entry.
  void finalize_appended(std::size_t nodes, std::size_t edges);

  // Gives node v the id new_id[v] (a permutation of the node ids): nodes, their ops and the
  // edges' ends follow; the graph is finalized afterwards. What else holds node ids (RankNodes)
  // is the caller's to rewrite.
  void renumber_nodes(const IdVector<NodeId, NodeId>& new_id);
  bool finalized() const { return finalized_; }
  // Bumped by every finalize(): a holder of the CSR view (graph::Editor) can tell it was rebuilt.
  std::uint64_t csr_version() const { return csr_version_; }

  std::size_t node_count() const { return nodes_.size(); }
  // The nodes that are not untraced work (ops and barriers): what reports call the graph's ops.
  std::size_t op_count() const;
  std::size_t edge_count() const { return edges_.size(); }
  // Every id of each table, in order.
  IdRange<NodeId> node_ids() const { return nodes_.ids(); }
  IdRange<EdgeId> edge_ids() const { return edges_.ids(); }
  IdRange<TrackId> track_ids() const { return tracks_.ids(); }
  Node& node(NodeId id) { return nodes_[id]; }
  const Node& node(NodeId id) const { return nodes_[id]; }
  const Edge& edge(EdgeId id) const { return edges_[id]; }
  Edge& edge(EdgeId id) { return edges_[id]; }
  const Track& track(TrackId id) const { return tracks_[id]; }
  IdVector<NodeId, Node>& nodes() { return nodes_; }
  const IdVector<NodeId, Node>& nodes() const { return nodes_; }
  const IdVector<EdgeId, Edge>& edges() const { return edges_; }
  const IdVector<TrackId, Track>& tracks() const { return tracks_; }

  // Origin of the replay clock: replay time = trace time - origin().
  Nanos origin() const { return origin_; }
  void set_origin(Nanos origin) { origin_ = origin; }

  // Edge ids into / out of a node (valid after finalize(), until the next add_edge or finalize):
  // out-edges in id order; in-edges by source, then id (the orders boost's CSR graph, which
  // this view replaced, gave them: its in-edges were its out-edge list grouped by target).
  std::span<const EdgeId> in_edges(NodeId n) const {
    return {in_.data() + in_begin_[n.value], in_.data() + in_begin_[n.value + 1]};
  }
  std::span<const EdgeId> out_edges(NodeId n) const {
    return {out_.data() + out_begin_[n.value], out_.data() + out_begin_[n.value + 1]};
  }
  template <typename F> void for_each_in_edge(NodeId n, F&& f) const {
    for (const EdgeId e : in_edges(n)) f(e);
  }
  template <typename F> void for_each_out_edge(NodeId n, F&& f) const {
    for (const EdgeId e : out_edges(n)) f(e);
  }

 private:
  friend class Editor;  // renumbers nodes and edges when it commits
  IdVector<NodeId, Node> nodes_;
  IdVector<EdgeId, Edge> edges_;
  IdVector<TrackId, Track> tracks_;
  OpTable ops_;
  IdVector<NodeId, OpId> node_ops_;  // parallel to nodes_ where set; shorter means kNoOp for the rest
  // The CSR view: node v's out-edges are out_[out_begin_[v] .. out_begin_[v + 1]), its in-edges
  // likewise. Rebuilt in place by finalize(), so a graph finalized again (a rewrite's commit)
  // keeps the arrays' memory.
  std::vector<std::uint32_t> out_begin_, in_begin_;
  std::vector<EdgeId> out_, in_;
  Nanos origin_ = 0;
  bool finalized_ = false;
  std::uint64_t csr_version_ = 0;
};

}  // namespace dpro::graph
