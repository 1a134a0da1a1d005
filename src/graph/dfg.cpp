#include "graph/dfg.h"

#include <algorithm>
#include <utility>

#include <boost/iterator/counting_iterator.hpp>
#include <boost/iterator/transform_iterator.hpp>

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

// An edge as the CSR constructor reads it: (source, target).
struct EdgeEnds {
  std::pair<std::uint32_t, std::uint32_t> operator()(const Edge& e) const { return {e.src.value, e.dst.value}; }
};

}  // namespace

void Dfg::finalize() {
  // The constructor reads the edges twice (count, then place), straight from the table: each
  // edge's property is its id, the edges' positions 0, 1, ... in order. Building the list of
  // pairs and of ids first (as before) gave it the same sequences, at two more arrays a call.
  const auto ends_begin = boost::make_transform_iterator(edges_.begin(), EdgeEnds{});
  const auto ends_end = boost::make_transform_iterator(edges_.end(), EdgeEnds{});
  csr_ = CsrGraph(boost::edges_are_unsorted_multi_pass, ends_begin, ends_end, boost::counting_iterator<std::uint32_t>(0),
                  nodes_.size());
  finalized_ = true;
  ++csr_version_;
}

}  // namespace dpro::graph
