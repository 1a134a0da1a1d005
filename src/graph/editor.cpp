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

void Editor::index_graph() {
  const std::size_t n = dfg_.node_count();
  in_.assign(n, {});
  out_.assign(n, {});
  node_alive_.assign(n, 1);
  edge_alive_.assign(dfg_.edge_count(), 1);
  fused_into_.assign(n, NodeId::none());
  prev_on_track_.assign(n, NodeId::none());
  next_on_track_.assign(n, NodeId::none());
  for (const EdgeId e : dfg_.edge_ids()) link(e);
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
  out_[edge.src].push_back(e);
  in_[edge.dst].push_back(e);
}

void Editor::unlink(EdgeId e) {
  const Edge& edge = dfg_.edges_[e];
  auto erase = [e](std::vector<EdgeId>& list) { list.erase(std::find(list.begin(), list.end(), e)); };
  erase(out_[edge.src]);
  erase(in_[edge.dst]);
}

void Editor::drop_edge(EdgeId e) {
  unlink(e);
  edge_alive_[e] = 0;
}

bool Editor::merge_parallel(EdgeId e) {
  const Edge& edge = dfg_.edges_[e];
  for (EdgeId other : out_[edge.src]) {
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
    const bool has_part_before = std::any_of(in_[n].begin(), in_[n].end(), [&](EdgeId e) {
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
    for (EdgeId e : out_[at]) {
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
    for (EdgeId e : out_[v]) {
      const Edge& edge = dfg_.edges_[e];
      if (edge.src_point == here) stack.push_back(point_of(edge.dst, edge.dst_point));
    }
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
      for (EdgeId e : out_[p]) {
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
    for (EdgeId e : in_[n]) {
      const Edge& edge = dfg_.edges_[e];
      if (!is_track_order(edge.kind) || dfg_.nodes_[edge.src].kind != NodeKind::kUntraced) continue;
      const bool after_part = std::any_of(in_[edge.src].begin(), in_[edge.src].end(), [&](EdgeId b) {
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
    for (EdgeId e : in_[parts[i]])
      if (i > 0 && dfg_.edges_[e].src != parts[i - 1]) return false;
    for (EdgeId e : out_[parts[i]])
      if (i + 1 < parts.size() && dfg_.edges_[e].dst != parts[i + 1]) return false;
  }
  return true;
}

// The parts in track order; throws unless they can be fused.
std::vector<NodeId> Editor::fusable_parts(std::span<const NodeId> nodes) const {
  const std::string what = "fuse of nodes " + node_list(nodes);
  if (nodes.size() < 2) throw InputError("", what, "fusing needs at least two nodes");
  for (NodeId n : nodes) check_node(n, "fuse");
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (std::find(nodes.begin() + static_cast<std::ptrdiff_t>(i) + 1, nodes.end(), nodes[i]) != nodes.end()) {
      throw InputError("", what, "node " + to_string(nodes[i]) + " is given twice");
    }
  }
  const Node& first = dfg_.nodes_[nodes[0]];
  for (NodeId n : nodes) {
    const Node& node = dfg_.nodes_[n];
    if (!node.track.valid()) throw InputError("", what, "node " + to_string(n) + " is a " + to_string(node.kind) + " on no track");
    if (node.track != first.track) {
      const Track& a = dfg_.tracks_[first.track];
      const Track& b = dfg_.tracks_[node.track];
      throw InputError("", what,
                       "nodes of different tracks cannot be fused: node " + to_string(nodes[0]) + " is on " + a.name +
                           " of rank " + std::to_string(a.rank) + ", node " + to_string(n) + " on " + b.name +
                           " of rank " + std::to_string(b.rank));
    }
  }
  std::vector<NodeId> parts = track_order(with_untraced_between(nodes));
  if (!meets_graph_at_ends(parts) && makes_cycle(parts)) {
    throw InputError("", what, "the fused op would depend on itself: another op waits for one of them and is waited for by another");
  }
  return parts;
}

// The fused op's description: named after its parts, listing their ops; bytes and flops add
// up where every part has them.
OpId Editor::fused_op(const std::vector<NodeId>& parts) {
  OpDesc desc;
  desc.kind = dfg_.nodes_[parts.front()].kind;
  std::string name = "fused(";
  bool all_bytes = true, all_flops = true;
  std::int64_t bytes = 0, flops = 0;
  for (NodeId p : parts) {
    if (dfg_.nodes_[p].kind == NodeKind::kUntraced) continue;  // no op
    const OpDesc* part = dfg_.op(p);
    name += std::string(p == parts.front() ? "" : " + ") + std::string(part ? dfg_.ops_.name(part->name) : "?");
    desc.parts.push_back(dfg_.op_of(p));
    all_bytes = all_bytes && part && part->bytes;
    all_flops = all_flops && part && part->flops;
    if (all_bytes) bytes += *part->bytes;
    if (all_flops) flops += *part->flops;
  }
  desc.name = dfg_.ops_.intern(name + ")");
  if (all_bytes) desc.bytes = bytes;
  if (all_flops) desc.flops = flops;
  return dfg_.ops_.add(std::move(desc));
}

NodeId Editor::fuse(std::span<const NodeId> nodes) {
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
    for (EdgeId e : in_[parts[i]]) {
      const Edge& edge = dfg_.edges_[e];
      if (edge.src == parts[i - 1] && is_track_order(edge.kind)) delay += edge.gap;
    }
  }
  auto is_part = [&](NodeId n) { return std::find(parts.begin(), parts.end(), n) != parts.end(); };
  for (NodeId p : parts) {
    for (EdgeId e : std::vector<EdgeId>(in_[p])) {
      if (!edge_alive_[e]) continue;
      if (is_part(dfg_.edges_[e].src)) {
        drop_edge(e);
      } else if (p != fused) {
        move_edge(e, dfg_.edges_[e].src, fused);
        merge_parallel(e);
      }
    }
    for (EdgeId e : std::vector<EdgeId>(out_[p])) {
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
  touched();
  return fused;
}

NodeId Editor::insert(const Node& node, std::span<const Edge> edges, OpId op) {
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
  in_.emplace_back();
  out_.emplace_back();
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
  if (makes_cycle({id})) {
    // Undo: the graph must be unchanged after a refused edit. Nothing merged yet.
    for (std::uint32_t e = first_edge; e < dfg_.edges_.size(); ++e) drop_edge(EdgeId(e));
    node_alive_[id] = 0;
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
  const std::vector<EdgeId> ins = in_[node];
  const std::vector<EdgeId> outs = out_[node];
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
    const bool has_start_dependency = std::any_of(in_[succ].begin(), in_[succ].end(), [&](EdgeId e) {
      return dfg_.edges_[e].dst_point == Point::kStart;
    });
    if (!has_start_dependency && !s.release) s.release = gone.release ? *gone.release : gone.measured_start - dfg_.origin();
  }
  touched();
}

void Editor::remove_edge(EdgeId edge) {
  const std::string what = "remove of edge " + to_string(edge);
  if (!edge_alive(edge)) throw InputError("", what, "edge " + to_string(edge) + " is not in the graph");
  if (is_track_order(dfg_.edges_[edge].kind)) throw InputError("", what, "a track-order edge goes with its node (remove)");
  drop_edge(edge);
  touched();
}

void Editor::redirect(EdgeId edge, std::optional<NodeId> src, std::optional<NodeId> dst) {
  const std::string what = "redirect of edge " + to_string(edge);
  if (!edge_alive(edge)) throw InputError("", what, "edge " + to_string(edge) + " is not in the graph");
  const Edge old = dfg_.edges_[edge];
  const NodeId s = src.value_or(old.src);
  const NodeId d = dst.value_or(old.dst);
  check_node(s, "redirect");
  check_node(d, "redirect");
  if (s == d) throw InputError("", what, "an edge from node " + to_string(s) + " to itself");
  move_edge(edge, s, d);
  // A cycle through the moved edge: its destination reaches its source.
  const bool cycle = walk_points({point_of(d, old.dst_point)}, [&](NodeId v, Point here) {
    return v == s && (here == Point::kStart || old.src_point == Point::kEnd) ? Walk::kStop : Walk::kGo;
  });
  if (cycle) {
    move_edge(edge, old.src, old.dst);
    throw InputError("", what, "node " + to_string(d) + " already leads to node " + to_string(s) + ": a dependency cycle");
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

  if (ranks_) {
    // A removed node's place in an enclosing event's [first, last] range passes to its live
    // neighbours on the track; `stop` is the other end of the range, past which it is empty.
    auto live = [&](NodeId v, const IdVector<NodeId, NodeId>& step, NodeId stop) {
      while (v.valid() && !map.node[v].valid()) {
        if (v == stop) return NodeId::none();
        v = step[v];
      }
      return v.valid() ? map.node[v] : NodeId::none();
    };
    for (RankNodes& r : *ranks_) {
      for (NodeId& v : r.node_of_event) {
        if (v.valid()) v = map.node[v];
      }
      for (const EventRef e : r.first_inside.ids()) {
        const NodeId first = r.first_inside[e], last = r.last_inside[e];
        if (!first.valid()) continue;
        const NodeId f = live(first, next_on_track_, last);
        const NodeId l = live(last, prev_on_track_, first);
        const bool empty = !f.valid() || !l.valid();
        r.first_inside[e] = empty ? NodeId::none() : f;
        r.last_inside[e] = empty ? NodeId::none() : l;
      }
    }
  }

  IdVector<NodeId, Node> nodes;
  nodes.reserve(next);
  IdVector<NodeId, OpId> ops;
  for (const NodeId v : dfg_.node_ids()) {
    if (!node_alive_[v]) continue;
    nodes.push_back(dfg_.nodes_[v]);
    if (!dfg_.node_ops_.empty()) ops.push_back(dfg_.op_of(v));
  }
  IdVector<EdgeId, Edge> edges;
  edges.reserve(next_edge);
  for (const EdgeId e : dfg_.edge_ids()) {
    if (!edge_alive_[e]) continue;
    Edge edge = dfg_.edges_[e];
    edge.src = map.node[edge.src];
    edge.dst = map.node[edge.dst];
    edges.push_back(edge);
  }
  dfg_.nodes_ = std::move(nodes);
  dfg_.node_ops_ = std::move(ops);
  dfg_.edges_ = std::move(edges);
  dfg_.finalize();

  index_graph();  // start afresh on the compacted graph
  pending_ = false;
  return map;
}

}  // namespace dpro::graph
