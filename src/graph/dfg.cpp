#include "graph/dfg.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"

namespace dpro::graph {

const char* to_string(NodeKind kind) {
  switch (kind) {
    case NodeKind::kCpuOp: return "cpu_op";
    case NodeKind::kRuntimeCall: return "runtime";
    case NodeKind::kKernel: return "kernel";
    case NodeKind::kCollective: return "collective";
    case NodeKind::kMemcpy: return "memcpy";
    case NodeKind::kMemset: return "memset";
    case NodeKind::kBarrier: return "barrier";
    case NodeKind::kUntraced: return "untraced";
  }
  return "unknown";
}

bool on_gpu(NodeKind kind) {
  return kind == NodeKind::kKernel || kind == NodeKind::kCollective || kind == NodeKind::kMemcpy ||
         kind == NodeKind::kMemset;
}

const char* to_string(EdgeKind kind) {
  switch (kind) {
    case EdgeKind::kThreadOrder: return "thread_order";
    case EdgeKind::kCrossThread: return "cross_thread";
    case EdgeKind::kLaunch: return "launch";
    case EdgeKind::kStreamOrder: return "stream_order";
    case EdgeKind::kStreamWait: return "stream_wait";
    case EdgeKind::kBlockingSync: return "blocking_sync";
    case EdgeKind::kCollective: return "collective";
    case EdgeKind::kLaunchQueue: return "launch_queue";
  }
  return "unknown";
}

NodeId Dfg::add_node(const Node& node) {
  finalized_ = false;
  const NodeId id = nodes_.next_id();
  nodes_.push_back(node);
  return id;
}

EdgeId Dfg::add_edge(const Edge& edge) {
  DPRO_CHECK(nodes_.contains(edge.src) && nodes_.contains(edge.dst));
  finalized_ = false;
  const EdgeId id = edges_.next_id();
  edges_.push_back(edge);
  return id;
}

std::size_t Dfg::op_count() const {
  return static_cast<std::size_t>(std::count_if(nodes_.begin(), nodes_.end(), [](const Node& n) { return n.kind != NodeKind::kUntraced; }));
}

TrackId Dfg::add_track(const Track& track) {
  const TrackId id = tracks_.next_id();
  tracks_.push_back(track);
  return id;
}

void Dfg::set_op(NodeId id, OpId op) {
  DPRO_CHECK(nodes_.contains(id) && (!op.valid() || op.below(ops_.size())));
  if (!node_ops_.contains(id)) node_ops_.resize(nodes_.size(), kNoOp);
  node_ops_[id] = op;
}

void Dfg::renumber_nodes(const IdVector<NodeId, NodeId>& new_id) {
  DPRO_CHECK(new_id.size() == nodes_.size());
  IdVector<NodeId, Node> nodes(nodes_.size(), Node{});
  IdVector<NodeId, OpId> ops(node_ops_.empty() ? 0 : nodes_.size(), kNoOp);
  for (const NodeId v : nodes_.ids()) {
    nodes[new_id[v]] = nodes_[v];
    if (!ops.empty()) ops[new_id[v]] = op_of(v);
  }
  nodes_ = std::move(nodes);
  node_ops_ = std::move(ops);
  for (Edge& e : edges_) {
    e.src = new_id[e.src];
    e.dst = new_id[e.dst];
  }
  finalize();
}

namespace {

// Counting sort of `count` items into lists by key (key(i) < begin.size() - 1): begin[k] ..
// begin[k + 1] is key k's range of `out`, which holds item(i) in the order i was visited.
template <typename Key, typename Item>
void bucket(std::size_t count, Key key, Item item, std::vector<std::uint32_t>& begin, std::vector<EdgeId>& out) {
  const std::size_t keys = begin.size() - 1;
  std::fill(begin.begin(), begin.end(), 0);
  for (std::size_t i = 0; i < count; ++i) ++begin[key(i) + 1];
  for (std::size_t k = 0; k < keys; ++k) begin[k + 1] += begin[k];
  out.resize(count);
  // begin[k] serves as key k's cursor; afterwards it holds where k + 1 begins, shifted back below.
  for (std::size_t i = 0; i < count; ++i) out[begin[key(i)]++] = item(i);
  for (std::size_t k = keys; k > 0; --k) begin[k] = begin[k - 1];
  begin[0] = 0;
}

}  // namespace

void Dfg::finalize() {
  const std::size_t n = nodes_.size(), m = edges_.size();
  for (const Edge& e : edges_) DPRO_CHECK(e.src.value < n && e.dst.value < n);
  out_begin_.resize(n + 1);
  in_begin_.resize(n + 1);
  // Out-edges by source, in id order; in-edges by target, in out-edge order (by source, then id).
  bucket(m, [&](std::size_t i) { return edges_[EdgeId::at(i)].src.value; }, [](std::size_t i) { return EdgeId::at(i); },
         out_begin_, out_);
  bucket(m, [&](std::size_t i) { return edges_[out_[i]].dst.value; }, [&](std::size_t i) { return out_[i]; }, in_begin_,
         in_);
  finalized_ = true;
  ++csr_version_;
}

void Dfg::finalize_appended(std::size_t n0, std::size_t m0) {
  const std::size_t n = nodes_.size(), m = edges_.size(), k = m - m0;
  DPRO_CHECK(n0 <= n && m0 <= m && out_begin_.size() == n0 + 1 && in_begin_.size() == n0 + 1 && out_.size() == m0 &&
             in_.size() == m0 && m < (std::size_t{1} << 32));
  std::vector<EdgeId> added;
  added.reserve(k);
  for (std::size_t i = m0; i < m; ++i) {
    const Edge& e = edges_[EdgeId::at(i)];
    DPRO_CHECK(e.src.value < n && e.dst.value < n);
    added.push_back(EdgeId::at(i));
  }
  const auto src = [&](EdgeId e) { return edges_[e].src.value; };
  const auto dst = [&](EdgeId e) { return edges_[e].dst.value; };
  // A node past the old ones begins, in the old view, where the old lists end.
  out_begin_.resize(n + 1, static_cast<std::uint32_t>(m0));
  in_begin_.resize(n + 1, static_cast<std::uint32_t>(m0));
  // New begin of node u: its old begin plus the added edges keyed below u (`key`: src or dst).
  const auto shift_begins = [&](std::vector<std::uint32_t>& begin, auto key) {
    std::size_t a = 0;
    for (std::size_t u = 0; u <= n; ++u) {
      while (a < k && key(added[a]) < u) ++a;
      begin[u] += static_cast<std::uint32_t>(a);
    }
  };
  // Out-lists, from the back: the old entries above the last unplaced added edge's source move up
  // in one block by the number of added edges not yet placed (j), then that source's added
  // edges go right below them, after its own old entries.
  std::stable_sort(added.begin(), added.end(), [&](EdgeId a, EdgeId b) { return src(a) < src(b); });
  out_.resize(m);
  std::size_t j = k, hi = m0;  // old entries [hi, m0) are placed
  while (j > 0) {
    const std::uint32_t v = src(added[j - 1]);
    const std::size_t lo = out_begin_[v + 1];
    std::memmove(out_.data() + lo + j, out_.data() + lo, (hi - lo) * sizeof(EdgeId));
    for (; j > 0 && src(added[j - 1]) == v; --j) out_[lo + j - 1] = added[j - 1];
    hi = lo;
  }
  shift_begins(out_begin_, src);
  // In-lists are in (source, id) order: an added edge goes after its target's old in-edges whose
  // source is not above its own (their ids are all smaller), before the others; a target's list
  // is merged from the back, and what is left of it moves with the block below.
  std::stable_sort(added.begin(), added.end(),
                   [&](EdgeId a, EdgeId b) { return std::pair(dst(a), src(a)) < std::pair(dst(b), src(b)); });
  in_.resize(m);
  j = k;
  hi = m0;
  while (j > 0) {
    const std::uint32_t v = dst(added[j - 1]);
    const std::size_t next = in_begin_[v + 1], lo = in_begin_[v];
    std::memmove(in_.data() + next + j, in_.data() + next, (hi - next) * sizeof(EdgeId));
    std::size_t write = next + j, i = next;  // v's old list [lo, i) is merged from the back
    for (; j > 0 && dst(added[j - 1]) == v; --j) {
      const EdgeId e = added[j - 1];
      while (i > lo && src(in_[i - 1]) > src(e)) in_[--write] = in_[--i];
      in_[--write] = e;
    }
    hi = i;
  }
  shift_begins(in_begin_, dst);
  finalized_ = true;
  ++csr_version_;
}

}  // namespace dpro::graph
