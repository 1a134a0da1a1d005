#include "graph/editor.h"

#include <algorithm>
#include <string>

#include "core/error.h"

namespace dpro::graph {
namespace {

std::string node_list(std::span<const NodeId> nodes) {
  std::string text;
  for (NodeId n : nodes) text += (text.empty() ? "" : ", ") + to_string(n);
  return text;
}

bool is_track_order(EdgeKind kind) { return kind == EdgeKind::kStreamOrder || kind == EdgeKind::kThreadOrder; }

std::size_t point_of(NodeId v, Point p) { return 2 * static_cast<std::size_t>(v.value) + (p == Point::kEnd ? 1 : 0); }

}  // namespace

Editor::Editor(Dfg& dfg, std::vector<RankNodes>* ranks) : dfg_(dfg), ranks_(ranks) { index_graph(); }

void Editor::index_graph() const {
  if (indexed_) return;
  if (!dfg_.finalized()) dfg_.finalize();
  const std::size_t n = dfg_.node_count();
  slot_.assign(n, -1);
  lists_.clear();
  node_alive_.assign(n, 1);
  edge_alive_.assign(dfg_.edge_count(), 1);
  fused_into_.assign(n, NodeId::none());
  prev_on_track_.assign(n, NodeId::none());
  next_on_track_.assign(n, NodeId::none());
  csr_nodes_ = n;
  csr_edges_ = dfg_.edge_count();
  csr_version_ = dfg_.csr_version();
  indexed_ = true;
}

// A node no edit reached has the live edges the CSR view lists (every edit that drops or moves
// an edge first makes the lists of both its ends), in id order, as an index of the whole graph
// made by linking every edge in id order would hold them.
Editor::Adjacency& Editor::adjacency(NodeId node) const {
  index_graph();
  std::int32_t& slot = slot_[node];
  if (slot >= 0) return lists_[static_cast<std::size_t>(slot)];
  DPRO_CHECK(dfg_.csr_version() == csr_version_ && node.value < csr_nodes_);
  Adjacency& a = lists_.emplace_back();
  slot = static_cast<std::int32_t>(lists_.size() - 1);
  for (const EdgeId e : dfg_.in_edges(node)) a.in.push_back(e);
  for (const EdgeId e : dfg_.out_edges(node)) a.out.push_back(e);
  std::sort(a.in.begin(), a.in.end());
  std::sort(a.out.begin(), a.out.end());
  return a;
}

template <typename F>
void Editor::for_each_out(NodeId node, F&& f) const {
  const std::int32_t slot = slot_[node];
  if (slot >= 0) {
    for (const EdgeId e : lists_[static_cast<std::size_t>(slot)].out) f(e);
    return;
  }
  DPRO_CHECK(dfg_.csr_version() == csr_version_ && node.value < csr_nodes_);
  for (const EdgeId e : dfg_.out_edges(node)) f(e);
}

bool Editor::alive(NodeId node) const {
  index_graph();
  return node_alive_.contains(node) && node_alive_[node];
}

bool Editor::edge_alive(EdgeId edge) const {
  index_graph();
  return edge_alive_.contains(edge) && edge_alive_[edge];
}

Editor::~Editor() {
  if (pending_) commit();
}

void Editor::check_node(NodeId node, const char* edit) const {
  if (!alive(node)) {
    throw InputError("", edit, "node " + to_string(node) + " is not in the graph (never added, removed or fused away)");
  }
}

void Editor::link(EdgeId e) {
  const Edge& edge = dfg_.edges_[e];
  adjacency(edge.src).out.push_back(e);
  adjacency(edge.dst).in.push_back(e);
}

void Editor::unlink(EdgeId e) {
  const Edge& edge = dfg_.edges_[e];
  auto erase = [e](EdgeList& list) { list.erase(std::find(list.begin(), list.end(), e)); };
  erase(adjacency(edge.src).out);
  erase(adjacency(edge.dst).in);
}

void Editor::drop_edge(EdgeId e) {
  unlink(e);
  edge_alive_[e] = 0;
  dropped_ = true;
}

bool Editor::merge_parallel(EdgeId e) {
  const Edge& edge = dfg_.edges_[e];
  for (EdgeId other : adjacency(edge.src).out) {
    Edge& o = dfg_.edges_[other];
    if (other == e || o.dst != edge.dst || o.src_point != edge.src_point || o.dst_point != edge.dst_point) continue;
    o.gap = std::max(o.gap, edge.gap);
    drop_edge(e);
    return true;
  }
  return false;
}

EdgeId Editor::add_edge(const Edge& edge, bool merge) {
  const EdgeId id = dfg_.edges_.next_id();
  dfg_.edges_.push_back(edge);
  edge_alive_.push_back(1);
  link(id);
  if (merge) merge_parallel(id);
  return id;
}

void Editor::move_edge(EdgeId e, NodeId src, NodeId dst) {
  moved_ = true;
  unlink(e);
  dfg_.edges_[e].src = src;
  dfg_.edges_[e].dst = dst;
  link(e);
}

void Editor::touched() {
  pending_ = true;
  dfg_.finalized_ = false;
}

// The parts in track order, following the track-order edges between them; throws unless they
// form one unbroken run of one track.
std::vector<NodeId> Editor::track_order(std::span<const NodeId> nodes) const {
  auto is_part = [&](NodeId n) { return std::find(nodes.begin(), nodes.end(), n) != nodes.end(); };
  std::vector<NodeId> order;
  NodeId head;
  std::size_t heads = 0;
  for (NodeId n : nodes) {
    const bool has_part_before = std::any_of(adjacency(n).in.begin(), adjacency(n).in.end(), [&](EdgeId e) {
      return is_track_order(dfg_.edges_[e].kind) && is_part(dfg_.edges_[e].src);
    });
    if (!has_part_before) {
      head = n;
      ++heads;
    }
  }
  if (heads != 1) head = NodeId::none();
  for (NodeId at = head; at.valid() && order.size() < nodes.size();) {
    order.push_back(at);
    NodeId next;
    for (EdgeId e : adjacency(at).out) {
      if (is_track_order(dfg_.edges_[e].kind) && is_part(dfg_.edges_[e].dst)) next = dfg_.edges_[e].dst;
    }
    at = next;
  }
  if (order.size() != nodes.size()) {
    throw InputError("", "fuse of nodes " + node_list(nodes),
                     "the nodes are not consecutive on their track (each must follow the previous one in stream or "
                     "thread order)");
  }
  return order;
}

template <typename Visit>
bool Editor::walk_points(std::vector<std::size_t> stack, Visit visit) const {
  std::vector<char> seen(2 * dfg_.node_count(), 0);
  while (!stack.empty()) {
    const std::size_t at = stack.back();
    stack.pop_back();
    if (seen[at]) continue;
    seen[at] = 1;
    const NodeId v = NodeId::at(at / 2);
    const Point here = at % 2 ? Point::kEnd : Point::kStart;
    const Walk next = visit(v, here);
    if (next == Walk::kStop) return true;
    if (next == Walk::kSkip) continue;
    if (here == Point::kStart) stack.push_back(at + 1);
    for_each_out(v, [&](EdgeId e) {
      const Edge& edge = dfg_.edges_[e];
      if (edge.src_point == here) stack.push_back(point_of(edge.dst, edge.dst_point));
    });
  }
  return false;
}

// True if, after fusing `parts` into one node, a path would lead from it back to itself: from
// its end to anything of it, or from its start to its start (start -> ... -> end is the
// blocking-copy pattern, not a cycle). The search walks points (a node's start and end), as
// check_acyclic does; it costs up to the part of the graph downstream of the parts.
bool Editor::makes_cycle(const std::vector<NodeId>& parts) const {
  IdVector<NodeId, char> part(dfg_.node_count(), 0);
  for (NodeId p : parts) part[p] = 1;
  for (const Point from : {Point::kEnd, Point::kStart}) {
    std::vector<std::size_t> stack;
    for (NodeId p : parts) {
      for (EdgeId e : adjacency(p).out) {
        const Edge& edge = dfg_.edges_[e];
        if (edge.src_point == from && !part[edge.dst]) stack.push_back(point_of(edge.dst, edge.dst_point));
      }
    }
    const bool back_to_parts = walk_points(std::move(stack), [&](NodeId v, Point here) {
      if (!part[v]) return Walk::kGo;
      return from == Point::kEnd || here == Point::kStart ? Walk::kStop : Walk::kSkip;
    });
    if (back_to_parts) return true;
  }
  return false;
}

// `nodes` and the untraced work between two of them on their thread (a kUntraced node whose
// track-order neighbours are both among them): fusing ops keeps the thread's work between them.
std::vector<NodeId> Editor::with_untraced_between(std::span<const NodeId> nodes) const {
  std::vector<NodeId> out(nodes.begin(), nodes.end());
  auto is_given = [&](NodeId n) { return std::find(nodes.begin(), nodes.end(), n) != nodes.end(); };
  for (NodeId n : nodes) {
    for (EdgeId e : adjacency(n).in) {
      const Edge& edge = dfg_.edges_[e];
      if (!is_track_order(edge.kind) || dfg_.nodes_[edge.src].kind != NodeKind::kUntraced) continue;
      const bool after_part = std::any_of(adjacency(edge.src).in.begin(), adjacency(edge.src).in.end(), [&](EdgeId b) {
        return is_track_order(dfg_.edges_[b].kind) && is_given(dfg_.edges_[b].src);
      });
      if (after_part) out.push_back(edge.src);
    }
  }
  return out;
}

// Whether nothing but the track-order run itself touches the inner ends of `parts` (in track
// order): no edge into a part but the first, none out of a part but the last, besides those
// from each part to the next. Fusing such a run contracts a path, and a cycle through the
// fused node would have been one before: no walk is needed (op fusion's legal chains).
bool Editor::meets_graph_at_ends(const std::vector<NodeId>& parts) const {
  for (std::size_t i = 0; i < parts.size(); ++i) {
    for (EdgeId e : adjacency(parts[i]).in)
      if (i > 0 && dfg_.edges_[e].src != parts[i - 1]) return false;
    for (EdgeId e : adjacency(parts[i]).out)
      if (i + 1 < parts.size() && dfg_.edges_[e].dst != parts[i + 1]) return false;
  }
  return true;
}

// Whether, for every edge u.a -> new node and every edge new node -> w.b, the graph already has
// the edge u.a -> w.b (points as given). A cycle through the new node would then run from w.b
// back to u.a without it, and close with that edge: a cycle before the insert, which the graph
// (acyclic, as every edit keeps it) has not. So no walk is needed: a node put beside another,
// with that node's own edges (a compression kernel before its collective, copying the
// collective's start-side in-edges), is O(degree^2), not O(what lies downstream).
bool Editor::shortcut_edges_exist(NodeId node) const {
  const Adjacency& a = adjacency(node);
  for (const EdgeId i : a.in) {
    const Edge& in = dfg_.edges_[i];
    for (const EdgeId o : a.out) {
      const Edge& out = dfg_.edges_[o];
      const EdgeList& from_u = adjacency(in.src).out;
      const bool exists = std::any_of(from_u.begin(), from_u.end(), [&](EdgeId e) {
        const Edge& x = dfg_.edges_[e];
        return x.dst == out.dst && x.src_point == in.src_point && x.dst_point == out.dst_point;
      });
      if (!exists) return false;
    }
  }
  return true;
}

// The parts in track order; throws unless they can be fused.
std::vector<NodeId> Editor::fusable_parts(std::span<const NodeId> nodes) const {
  // The edit named for an error only (most edits succeed: no string for them).
  const auto what = [&] { return "fuse of nodes " + node_list(nodes); };
  if (nodes.size() < 2) throw InputError("", what(), "fusing needs at least two nodes");
  for (NodeId n : nodes) check_node(n, "fuse");
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (std::find(nodes.begin() + static_cast<std::ptrdiff_t>(i) + 1, nodes.end(), nodes[i]) != nodes.end()) {
      throw InputError("", what(), "node " + to_string(nodes[i]) + " is given twice");
    }
  }
  const Node& first = dfg_.nodes_[nodes[0]];
  for (NodeId n : nodes) {
    const Node& node = dfg_.nodes_[n];
    if (!node.track.valid()) throw InputError("", what(), "node " + to_string(n) + " is a " + to_string(node.kind) + " on no track");
    if (node.track != first.track) {
      const Track& a = dfg_.tracks_[first.track];
      const Track& b = dfg_.tracks_[node.track];
      throw InputError("", what(),
                       "nodes of different tracks cannot be fused: node " + to_string(nodes[0]) + " is on " + a.name +
                           " of rank " + std::to_string(a.rank) + ", node " + to_string(n) + " on " + b.name +
                           " of rank " + std::to_string(b.rank));
    }
  }
  std::vector<NodeId> parts = track_order(with_untraced_between(nodes));
  if (!meets_graph_at_ends(parts) && makes_cycle(parts)) {
    throw InputError("", what(), "the fused op would depend on itself: another op waits for one of them and is waited for by another");
  }
  return parts;
}

// The fused op's description: named after its parts, listing their ops; bytes and flops add
// up where every part has them.
OpId Editor::fused_op(const std::vector<NodeId>& parts) {
  OpDesc desc;
  desc.kind = dfg_.nodes_[parts.front()].kind;
  bool all_bytes = true, all_flops = true;
  std::int64_t bytes = 0, flops = 0;
  for (NodeId p : parts) {
    if (dfg_.nodes_[p].kind == NodeKind::kUntraced) continue;  // no op
    const OpDesc* part = dfg_.op(p);
    desc.parts.push_back(dfg_.op_of(p));
    all_bytes = all_bytes && part && part->bytes;
    all_flops = all_flops && part && part->flops;
    if (all_bytes) bytes += *part->bytes;
    if (all_flops) flops += *part->flops;
  }
  desc.name = fused_name(desc.parts, dfg_.nodes_[parts.front()].kind == NodeKind::kUntraced);
  if (all_bytes) desc.bytes = bytes;
  if (all_flops) desc.flops = flops;
  return dfg_.ops_.add(std::move(desc));
}

// "fused(a + b + c)" from the parts' op names ("?" for a part without one), interned; made once
// per sequence of ops (a chain fused at every occurrence: the kernel names are long).
NameId Editor::fused_name(const std::vector<OpId>& ops, bool untraced_first) {
  std::vector<std::uint32_t> key{untraced_first ? 1u : 0u};
  for (const OpId op : ops) key.push_back(op.value);
  const auto known = fused_names_.find(key);
  if (known != fused_names_.end()) return known->second;
  std::string name = "fused(";
  for (std::size_t i = 0; i < ops.size(); ++i) {
    name += i == 0 && !untraced_first ? "" : " + ";
    name += ops[i].valid() ? std::string(dfg_.ops_.name(dfg_.ops_.op(ops[i]).name)) : std::string("?");
  }
  const NameId id = dfg_.ops_.intern(name + ")");
  fused_names_.emplace(std::move(key), id);
  return id;
}

NodeId Editor::fuse(std::span<const NodeId> nodes) {
  index_graph();
  const std::vector<NodeId> parts = fusable_parts(nodes);
  const NodeId fused = parts.front();
  // What the parts waited for between one another (their delays, the gaps of the track-order
  // edges between them) waits in front of the fused op: if it costs what its parts cost, it
  // ends when the last part did and nothing after it moves.
  // Untraced work between the parts is such a wait too (the parts' own time is what a what-if
  // re-prices).
  Nanos delay = dfg_.nodes_[fused].delay;
  Nanos duration = dfg_.nodes_[fused].duration;
  for (std::size_t i = 1; i < parts.size(); ++i) {
    const Node& part = dfg_.nodes_[parts[i]];
    delay += part.delay;
    (part.kind == NodeKind::kUntraced ? delay : duration) += part.duration;
    for (EdgeId e : adjacency(parts[i]).in) {
      const Edge& edge = dfg_.edges_[e];
      if (edge.src == parts[i - 1] && is_track_order(edge.kind)) delay += edge.gap;
    }
  }
  auto is_part = [&](NodeId n) { return std::find(parts.begin(), parts.end(), n) != parts.end(); };
  for (NodeId p : parts) {
    for (EdgeId e : EdgeList(adjacency(p).in)) {
      if (!edge_alive_[e]) continue;
      if (is_part(dfg_.edges_[e].src)) {
        drop_edge(e);
      } else if (p != fused) {
        move_edge(e, dfg_.edges_[e].src, fused);
        merge_parallel(e);
      }
    }
    for (EdgeId e : EdgeList(adjacency(p).out)) {
      if (!edge_alive_[e]) continue;
      if (is_part(dfg_.edges_[e].dst)) {
        drop_edge(e);
      } else if (p != fused) {
        move_edge(e, fused, dfg_.edges_[e].dst);
        merge_parallel(e);
      }
    }
  }
  dfg_.set_op(fused, fused_op(parts));
  Node& f = dfg_.nodes_[fused];
  const Node& last = dfg_.nodes_[parts.back()];
  f.duration = duration;
  f.delay = delay;
  f.measured_duration = last.measured_start + last.measured_duration - f.measured_start;
  f.event = EventRef::none();  // no trace event is this op
  f.parent_op = EventRef::none();
  for (NodeId p : parts) {
    if (p == fused) continue;
    node_alive_[p] = 0;
    fused_into_[p] = fused;
  }
  dropped_ = nodes_dropped_ = true;
  touched();
  return fused;
}

NodeId Editor::insert(const Node& node, std::span<const Edge> edges, OpId op) {
  index_graph();
  if (op.valid() && !op.below(dfg_.ops_.size())) {
    throw InputError("", "insert", "op " + to_string(op) + " is not in the op table");
  }
  if (node.track.valid() && !dfg_.tracks_.contains(node.track)) {
    throw InputError("", "insert", "track " + to_string(node.track) + " does not exist");
  }
  const NodeId id = dfg_.nodes_.next_id();
  for (const Edge& e : edges) {
    const NodeId src = e.src.valid() ? e.src : id;
    const NodeId dst = e.dst.valid() ? e.dst : id;
    if (src == dst) throw InputError("", "insert", "an edge from the new node to itself");
    if (src != id) check_node(src, "insert");
    if (dst != id) check_node(dst, "insert");
  }
  dfg_.nodes_.push_back(node);
  lists_.emplace_back();
  slot_.push_back(static_cast<std::int32_t>(lists_.size() - 1));
  node_alive_.push_back(1);
  fused_into_.push_back(NodeId::none());
  prev_on_track_.push_back(NodeId::none());
  next_on_track_.push_back(NodeId::none());
  if (op.valid()) dfg_.set_op(id, op);
  const std::uint32_t first_edge = dfg_.edges_.next_id().value;
  for (Edge e : edges) {
    if (!e.src.valid()) e.src = id;
    if (!e.dst.valid()) e.dst = id;
    add_edge(e, /*merge=*/false);
  }
  touched();
  if (!shortcut_edges_exist(id) && makes_cycle({id})) {
    // Undo: the graph must be unchanged after a refused edit. Nothing merged yet.
    for (std::uint32_t e = first_edge; e < dfg_.edges_.size(); ++e) drop_edge(EdgeId(e));
    node_alive_[id] = 0;
    dropped_ = nodes_dropped_ = true;
    throw InputError("", "insert", "the new node's edges make a dependency cycle");
  }
  for (std::uint32_t e = first_edge; e < dfg_.edges_.size(); ++e) {
    if (edge_alive_[EdgeId(e)]) merge_parallel(EdgeId(e));
  }
  return id;
}

void Editor::remove(NodeId node) {
  check_node(node, "remove");
  Node& gone = dfg_.nodes_[node];
  const EdgeList ins = adjacency(node).in;
  const EdgeList outs = adjacency(node).out;
  for (EdgeId e : ins) {
    const Edge& in = dfg_.edges_[e];
    if (is_track_order(in.kind) && dfg_.nodes_[in.src].track == gone.track) prev_on_track_[node] = in.src;
  }
  for (EdgeId e : outs) {
    const Edge& out = dfg_.edges_[e];
    if (is_track_order(out.kind) && dfg_.nodes_[out.dst].track == gone.track) next_on_track_[node] = out.dst;
  }
  for (EdgeId e : ins) drop_edge(e);
  for (EdgeId e : outs) drop_edge(e);
  node_alive_[node] = 0;
  dropped_ = nodes_dropped_ = true;
  // Keep each dependency that ran through the node. An in-edge to its end and an out-edge
  // from its start had no path between them (a blocking copy's launch and wait): not bridged.
  for (EdgeId i : ins) {
    const Edge in = dfg_.edges_[i];
    for (EdgeId o : outs) {
      const Edge& out = dfg_.edges_[o];
      if (in.src == out.dst || (in.dst_point == Point::kEnd && out.src_point == Point::kStart)) continue;
      add_edge(Edge{in.src, out.dst, out.kind, in.src_point, out.dst_point, in.gap + out.gap});
    }
  }
  for (EdgeId o : outs) {
    const NodeId succ = dfg_.edges_[o].dst;
    Node& s = dfg_.nodes_[succ];
    const bool has_start_dependency = std::any_of(adjacency(succ).in.begin(), adjacency(succ).in.end(), [&](EdgeId e) {
      return dfg_.edges_[e].dst_point == Point::kStart;
    });
    if (!has_start_dependency && !s.release) s.release = gone.release ? *gone.release : gone.measured_start - dfg_.origin();
  }
  touched();
}

void Editor::remove_edge(EdgeId edge) {
  const auto what = [&] { return "remove of edge " + to_string(edge); };
  if (!edge_alive(edge)) throw InputError("", what(), "edge " + to_string(edge) + " is not in the graph");
  if (is_track_order(dfg_.edges_[edge].kind)) throw InputError("", what(), "a track-order edge goes with its node (remove)");
  drop_edge(edge);
  touched();
}

void Editor::redirect(EdgeId edge, std::optional<NodeId> src, std::optional<NodeId> dst) {
  const auto what = [&] { return "redirect of edge " + to_string(edge); };
  if (!edge_alive(edge)) throw InputError("", what(), "edge " + to_string(edge) + " is not in the graph");
  const Edge old = dfg_.edges_[edge];
  const NodeId s = src.value_or(old.src);
  const NodeId d = dst.value_or(old.dst);
  check_node(s, "redirect");
  check_node(d, "redirect");
  if (s == d) throw InputError("", what(), "an edge from node " + to_string(s) + " to itself");
  move_edge(edge, s, d);
  // A cycle through the moved edge: its destination reaches its source.
  const bool cycle = walk_points({point_of(d, old.dst_point)}, [&](NodeId v, Point here) {
    return v == s && (here == Point::kStart || old.src_point == Point::kEnd) ? Walk::kStop : Walk::kGo;
  });
  if (cycle) {
    move_edge(edge, old.src, old.dst);
    throw InputError("", what(), "node " + to_string(d) + " already leads to node " + to_string(s) + ": a dependency cycle");
  }
  merge_parallel(edge);
  touched();
}

void Editor::set_delay(NodeId node, Nanos delay) {
  check_node(node, "set_delay");
  dfg_.nodes_[node].delay = delay;
}

void Editor::set_duration(NodeId node, Nanos duration) {
  check_node(node, "set_duration");
  if (duration < 0) throw InputError("", "set_duration of node " + to_string(node), "negative duration " + std::to_string(duration));
  dfg_.nodes_[node].duration = duration;
}

Renumbering Editor::commit() {
  if (!dropped_) return commit_additions();
  Renumbering map;
  const std::size_t n = dfg_.nodes_.size();
  map.node.assign(n, NodeId::none());
  std::uint32_t next = 0;
  for (const NodeId v : dfg_.node_ids()) {
    if (node_alive_[v]) map.node[v] = NodeId(next++);
  }
  for (const NodeId v : dfg_.node_ids()) {
    NodeId into = fused_into_[v];
    while (into.valid() && !node_alive_[into]) into = fused_into_[into];
    if (into.valid()) map.node[v] = map.node[into];
  }
  map.edge.assign(dfg_.edges_.size(), EdgeId::none());
  std::uint32_t next_edge = 0;
  for (const EdgeId e : dfg_.edge_ids()) {
    if (edge_alive_[e]) map.edge[e] = EdgeId(next_edge++);
  }
  // Only edges dropped: every node keeps its id, so the rank maps hold as they are.
  if (ranks_ && nodes_dropped_) renumber_ranks(map);
  // No node dropped, no edge moved, and every edge the view had still alive (the dropped ones
  // were added since and merged into parallel ones, as an insert beside a node does): the old
  // edges keep their ids and ends, so the view is extended, not rebuilt.
  bool extend = indexed_ && !nodes_dropped_ && !moved_ && dfg_.csr_version() == csr_version_;
  for (std::uint32_t e = 0; extend && e < csr_edges_; ++e) extend = edge_alive_[EdgeId(e)] != 0;
  compact(map);
  if (extend) dfg_.finalize_appended(csr_nodes_, csr_edges_);
  else dfg_.finalize();
  close_index();
  return map;
}

// Nothing was dropped: every id stays, the added nodes and edges are already at the ends of the
// tables, and the builder's maps hold.
Renumbering Editor::commit_additions() {
  Renumbering map;
  map.node.resize(dfg_.nodes_.size());
  for (const NodeId v : dfg_.node_ids()) map.node[v] = v;
  map.edge.resize(dfg_.edges_.size());
  for (const EdgeId e : dfg_.edge_ids()) map.edge[e] = e;
  // The view the index opened on still holds for the nodes and edges it had (none moved), and
  // the rest was appended since: it is extended, not rebuilt.
  if (indexed_ && !moved_ && dfg_.csr_version() == csr_version_) dfg_.finalize_appended(csr_nodes_, csr_edges_);
  else dfg_.finalize();
  close_index();
  return map;
}

void Editor::close_index() {
  indexed_ = false;  // reopened on the compacted graph by the next edit
  lists_.clear();
  pending_ = false;
  dropped_ = nodes_dropped_ = moved_ = false;
}

void Editor::renumber_ranks(const Renumbering& map) {
  // A removed node's place in an enclosing event's [first, last] range passes to its live
  // neighbours on the track; `stop` is the other end of the range, past which it is empty.
  auto live = [&](NodeId v, const IdVector<NodeId, NodeId>& step, NodeId stop) {
    while (v.valid() && !map.node[v].valid()) {
      if (v == stop) return NodeId::none();
      v = step[v];
    }
    return v.valid() ? map.node[v] : NodeId::none();
  };
  // Every node below the first dropped one keeps its id (the renumbering keeps the order), so
  // entries that name only such nodes stay as they are.
  std::uint32_t kept = 0;
  while (kept < node_alive_.size() && node_alive_[NodeId(kept)]) ++kept;
  for (RankNodes& r : *ranks_) {
    for (NodeId& v : r.node_of_event) {
      if (v.valid() && v.value >= kept) v = map.node[v];
    }
    for (const EventRef e : r.first_inside.ids()) {
      const NodeId first = r.first_inside[e], last = r.last_inside[e];
      if (!first.valid() || (first.value < kept && last.valid() && last.value < kept)) continue;
      const NodeId f = live(first, next_on_track_, last);
      const NodeId l = live(last, prev_on_track_, first);
      const bool empty = !f.valid() || !l.valid();
      r.first_inside[e] = empty ? NodeId::none() : f;
      r.last_inside[e] = empty ? NodeId::none() : l;
    }
  }
}

// Moves the live nodes, their ops and the live edges down over the dropped ones, in place (a
// node's or edge's new id is never above its old one). With no node dropped, only edges move.
void Editor::compact(const Renumbering& map) {
  if (nodes_dropped_) compact_nodes();
  std::uint32_t next_edge = 0;
  // With every node id kept, the edges before the first dropped one stay as they are.
  if (!nodes_dropped_)
    while (next_edge < dfg_.edges_.size() && edge_alive_[EdgeId(next_edge)]) ++next_edge;
  for (std::uint32_t e = next_edge; e < dfg_.edges_.size(); ++e) {
    if (!edge_alive_[EdgeId(e)]) continue;
    Edge& to = dfg_.edges_[EdgeId(next_edge++)];
    to = dfg_.edges_[EdgeId(e)];
    to.src = map.node[to.src];
    to.dst = map.node[to.dst];
  }
  dfg_.edges_.resize(next_edge);
}

void Editor::compact_nodes() {
  const bool has_ops = !dfg_.node_ops_.empty();
  if (has_ops) dfg_.node_ops_.resize(dfg_.nodes_.size(), kNoOp);  // shorter meant kNoOp for the rest
  std::uint32_t next = 0;
  for (const NodeId v : dfg_.node_ids()) {
    if (!node_alive_[v]) continue;
    const NodeId to(next++);
    if (to != v) dfg_.nodes_[to] = std::move(dfg_.nodes_[v]);
    if (has_ops) dfg_.node_ops_[to] = dfg_.node_ops_[v];
  }
  dfg_.nodes_.resize(next);
  if (has_ops) dfg_.node_ops_.resize(next);
}

}  // namespace dpro::graph
