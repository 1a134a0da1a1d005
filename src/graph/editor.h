#pragma once
// Edits a built graph in place: fuse ops of one track, insert, remove, redirect edges, set
// durations, keeping the graph replayable (no self-loops, no duplicate edges, no cycles from a
// fusion) and the builder's event -> node maps (RankNodes) honest.
//
// Ids. Edits tombstone what they drop: while an Editor is open, every node and edge id stays
// what it was (a fused node keeps its first part's id; an inserted node or edge gets the next
// id), and a dropped one must not be passed again (refused). commit() then compacts: it drops
// the tombstones, renumbers the rest in their old order, rebuilds the CSR view, rewrites
// RankNodes, and returns the old -> new maps (when nothing was dropped, every id stays: it
// rebuilds the CSR view only and returns identity maps). Consumers (replayer, reports) never see a
// tombstone: they read the graph after commit(). The destructor commits pending edits.
// Batching the compaction keeps a sequence of edits linear in the graph's size, not
// quadratic.
//
// Index. The Editor's adjacency lists are made per node, the first time an edit or a query
// reaches the node, from the CSR view the graph had when the index was opened (the graph is
// finalized then if it was not); a node no edit reached costs nothing but a few bytes of
// flags. So opening an Editor allocates nothing per node, and a rewrite that edits k nodes
// builds k lists, not one per node of the graph (the optimizer evaluates thousands of plans,
// each a few rewrites of a large graph: docs/optimizer.md, "Incremental evaluation"). Nothing
// else may rebuild the CSR view while the Editor is open (checked: Dfg::csr_version).
//
// Costs: opening an Editor is O(nodes + edges) in flags (memset), no allocation per node;
// commit() is O(nodes + edges) when an edit dropped a node or an edge (the compaction), and
// O(nodes) plus the CSR update when edits only added or re-timed (no renumbering); the view is
// extended in place (Dfg::finalize_appended), not rebuilt, when no node was dropped, no edge
// moved and every dropped edge was one added since the index opened (an insert's edge merged
// into a parallel one); after a
// commit the index is reopened on the next edit, not at once; remove and
// set_duration and remove_edge are O(degree); fuse, insert and redirect also search for the
// cycle they could make, up to O(nodes + edges) each (the part of the graph downstream of the
// edit), except a fuse of a run that meets the graph at its ends only (no edge into a part but
// the first, none out of a part but the last, besides those along the run), and an insert whose
// every pair of an in-edge u -> new and an out-edge new -> w has an edge u -> w already (a node
// put beside another with that one's edges), which cannot make one in an acyclic graph and are
// O(degree) and O(degree^2).
//
// Timing. An edit keeps each node's delay (measured residual wait) and release; it does not
// recompute them from measured times (compute_measured_delays would undo a what-if). A fused
// node waits, before it starts, for what its parts waited for between one another (their
// delays and the gaps of the track-order edges between them), so a fused op that costs the
// sum of its parts replays every other op as before; a what-if that saves the launch gaps
// inside a fused kernel lowers that delay (set_delay).
//
// BuiltGraph::stats stay what the builder counted.
//
// Errors: a request that would break the graph (unknown or dropped id, fusing ops of
// different tracks or ops that are not consecutive on their track, a fusion that would make a
// cycle, a self-loop) throws InputError naming the edit and the nodes; the graph is then
// unchanged.
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <span>
#include <vector>

#include <boost/container/small_vector.hpp>

#include "graph/builder.h"
#include "graph/dfg.h"

namespace dpro::graph {

// Old -> new ids from Editor::commit(); none for what was dropped (a fused-away part maps to
// its fused node).
struct Renumbering {
  IdVector<NodeId, NodeId> node;
  IdVector<EdgeId, EdgeId> edge;
};

class Editor {
 public:
  // `dfg` (and `ranks`, the builder's event maps for it, when given) must outlive the Editor
  // and must not be edited by anything else while it is open.
  explicit Editor(Dfg& dfg, std::vector<RankNodes>* ranks = nullptr);
  explicit Editor(BuiltGraph& built) : Editor(built.dfg, &built.ranks) {}
  ~Editor();
  Editor(const Editor&) = delete;
  Editor& operator=(const Editor&) = delete;

  // Fuses consecutive ops of one track (given in any order; the untraced work between two of
  // them on a CPU thread, kUntraced nodes, goes with them and is waited for, not summed, as
  // their delays are) into one node, which keeps the
  // first part's id, start-side in-edges and release, and takes the last part's end-side
  // out-edges; every other edge to or from a part is redirected to the fused node, edges
  // between parts are dropped, and parallel edges merge (the larger gap wins). The fused node's
  // duration is the sum of its parts' durations, its delay as said above; its measured span is
  // from the first part's measured start to the last's measured end; it has no trace event. It gets a new op table entry that lists the
  // parts' ops. Needs at least two nodes.
  NodeId fuse(std::span<const NodeId> nodes);

  // Adds `node` (its op description `op`, if any) and `edges`; in each edge, src or dst equal
  // to NodeId::none() stands for the new node.
  NodeId insert(const Node& node, std::span<const Edge> edges, OpId op = kNoOp);

  // Drops `node` and its edges. Its dependencies are kept across it: each predecessor gets an
  // edge to each successor (the gaps add up; the node counts as taking no time). A successor
  // left with no start-side dependency keeps its own release or else gets the removed node's
  // (its measured start on the replay clock when it had none).
  void remove(NodeId node);

  // Drops `edge` and the dependency it carried; nothing is bridged across it (a launch edge
  // whose GPU op another call now launches). Refused for a track-order edge (remove the node
  // instead): the track's order is what fuse and remove follow.
  void remove_edge(EdgeId edge);

  // Moves one end of `edge`: src, dst or both (nullopt keeps that end). If it then parallels
  // another edge (same nodes and points), the two merge into that one, with the larger gap.
  void redirect(EdgeId edge, std::optional<NodeId> src, std::optional<NodeId> dst);

  // Sets a node's replay duration (ns, >= 0) / delay (ns; may be slightly negative, see
  // compute_measured_delays).
  void set_duration(NodeId node, Nanos duration);
  void set_delay(NodeId node, Nanos delay);

  // Applies the pending edits; see above. The graph is finalized afterwards.
  Renumbering commit();

  bool alive(NodeId node) const;
  bool edge_alive(EdgeId edge) const;
  // Live edge ids into / out of a node, as of the pending edits, in id order as far as no edit
  // moved an edge. The view stays valid until the next edit (or commit()).
  std::span<const EdgeId> in_edges(NodeId node) const {
    const auto& in = adjacency(node).in;
    return {in.data(), in.size()};
  }
  std::span<const EdgeId> out_edges(NodeId node) const {
    const auto& out = adjacency(node).out;
    return {out.data(), out.size()};
  }

 private:
  void check_node(NodeId node, const char* edit) const;
  Renumbering commit_additions();
  void renumber_ranks(const Renumbering& map);
  void compact(const Renumbering& map);
  void compact_nodes();  // the live nodes and their ops down over the dropped ones
  void close_index();
  void touched();
  EdgeId add_edge(const Edge& edge, bool merge = true);
  void move_edge(EdgeId edge, NodeId src, NodeId dst);
  void drop_edge(EdgeId edge);
  void unlink(EdgeId edge);
  // Opens the index on the graph as it stands (all alive), unless it is open.
  void index_graph() const;
  // Most nodes have a few edges each way: kept inline, a node's lists cost no allocation (making
  // and freeing them was most of the Editor's malloc and free in an optimizer evaluation).
  using EdgeList = boost::container::small_vector<EdgeId, 6>;
  struct Adjacency {
    EdgeList in, out;  // live edges
  };
  // The node's lists, made from the CSR view on first use.
  Adjacency& adjacency(NodeId node) const;
  // Calls f(edge) for each live edge out of `node`, making no list (read-only walks).
  template <typename F> void for_each_out(NodeId node, F&& f) const;
  void link(EdgeId edge);
  // Merges `edge` into an existing live parallel edge (same endpoints and points), if any.
  bool merge_parallel(EdgeId edge);
  std::vector<NodeId> track_order(std::span<const NodeId> nodes) const;
  std::vector<NodeId> with_untraced_between(std::span<const NodeId> nodes) const;
  std::vector<NodeId> fusable_parts(std::span<const NodeId> nodes) const;
  OpId fused_op(const std::vector<NodeId>& parts);
  NameId fused_name(const std::vector<OpId>& ops, bool untraced_first);
  bool meets_graph_at_ends(const std::vector<NodeId>& parts) const;
  bool shortcut_edges_exist(NodeId node) const;
  // Whether `nodes`, taken as one node, would lie on a cycle.
  bool makes_cycle(const std::vector<NodeId>& nodes) const;
  // Walks the points (a node's start and its end, index 2 x node + end) reachable from `from`
  // along live edges, and from each start to its own end, each point once. visit(node, point)
  // says whether to go on from a point, not to, or to stop; true when a visit stopped the walk.
  enum class Walk { kGo, kSkip, kStop };
  template <typename Visit> bool walk_points(std::vector<std::size_t> from, Visit visit) const;

  Dfg& dfg_;
  std::vector<RankNodes>* ranks_;
  // The index (mutable: made on first use, also by const queries).
  mutable IdVector<NodeId, std::int32_t> slot_;  // into lists_; -1: not made, the CSR view holds
  mutable std::deque<Adjacency> lists_;          // a deque: references stay valid as it grows
  mutable IdVector<NodeId, char> node_alive_;
  mutable IdVector<EdgeId, char> edge_alive_;
  mutable IdVector<NodeId, NodeId> fused_into_;  // a fused-away part -> its fused node (none otherwise)
  mutable IdVector<NodeId, NodeId> prev_on_track_;  // a removed node -> its track predecessor (none if none)
  mutable IdVector<NodeId, NodeId> next_on_track_;
  mutable std::size_t csr_nodes_ = 0;  // nodes the CSR view had when the index opened
  mutable std::size_t csr_edges_ = 0;  // and edges
  mutable std::uint64_t csr_version_ = 0;
  mutable bool indexed_ = false;
  std::map<std::vector<std::uint32_t>, NameId> fused_names_;  // fused_name's, by the ops' ids
  bool pending_ = false;
  bool dropped_ = false;  // an edit dropped a node or an edge: commit() compacts
  bool nodes_dropped_ = false;  // an edit dropped a node: commit() renumbers nodes too
  bool moved_ = false;  // an edit moved an edge's end: commit() rebuilds the CSR view whole
};

}  // namespace dpro::graph
