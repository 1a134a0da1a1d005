#include "graph/dfg.h"

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
  }
  return "unknown";
}

NodeId Dfg::add_node(const Node& node) {
  finalized_ = false;
  nodes_.push_back(node);
  return static_cast<NodeId>(nodes_.size() - 1);
}

EdgeId Dfg::add_edge(const Edge& edge) {
  DPRO_CHECK(edge.src < nodes_.size() && edge.dst < nodes_.size());
  finalized_ = false;
  edges_.push_back(edge);
  return static_cast<EdgeId>(edges_.size() - 1);
}

std::uint32_t Dfg::add_track(const Track& track) {
  tracks_.push_back(track);
  return static_cast<std::uint32_t>(tracks_.size() - 1);
}

void Dfg::set_op(NodeId id, OpId op) {
  DPRO_CHECK(id < nodes_.size() && (!op.valid() || op.value < ops_.size()));
  if (node_ops_.size() <= id) node_ops_.resize(nodes_.size(), kNoOp);
  node_ops_[id] = op;
}

void Dfg::finalize() {
  std::vector<std::pair<NodeId, NodeId>> pairs;
  std::vector<EdgeId> ids;
  pairs.reserve(edges_.size());
  ids.reserve(edges_.size());
  for (EdgeId i = 0; i < edges_.size(); ++i) {
    pairs.emplace_back(edges_[i].src, edges_[i].dst);
    ids.push_back(i);
  }
  csr_ = CsrGraph(boost::edges_are_unsorted_multi_pass, pairs.begin(), pairs.end(), ids.begin(),
                  nodes_.size());
  finalized_ = true;
}

}  // namespace dpro::graph
