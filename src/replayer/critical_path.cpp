#include "replayer/critical_path.h"

#include <algorithm>
#include <array>

#include "core/strings.h"

namespace dpro::replayer {

using graph::EdgeKind;
using graph::NodeKind;
using graph::Point;

namespace {
constexpr std::array<const char*, kCategoryCount> kNames = {
    "compute", "communication", "peer_wait",  "copies",          "cpu_op",
    "cpu_untraced", "launch",   "blocked_on_gpu", "unresolved_wait", "idle"};
}  // namespace

const char* to_string(Category c) { return kNames[static_cast<int>(c)]; }

bool category_from_string(std::string_view name, Category& out) {
  for (int c = 0; c < kCategoryCount; ++c) {
    if (name == kNames[c]) {
      out = static_cast<Category>(c);
      return true;
    }
  }
  return false;
}

bool is_communication_kernel(std::string_view name) {
  // Lower-cased substrings of public kernel names:
  //   DeepEP (deepseek-ai/DeepEP): deep_ep::intranode::dispatch, deep_ep::internode_ll::combine ...
  //   NVSHMEM: nvshmemi_*, nvshmem_* device kernels (and libraries built on it)
  //   vLLM / SGLang custom all-reduce: vllm::cross_device_reduce_1stage, cross_device_reduce_2stage
  //   TensorRT-LLM: tensorrt_llm::kernels::oneShotAllReduceKernel, twoShotAllReduceKernel,
  //     allreduce_fusion_kernel, lamport all-reduce; MoE all-to-all / all-gather kernels
  // NCCL and RCCL kernels never reach here: the importer makes them collectives.
  static constexpr std::array<std::string_view, 12> kPatterns = {
      "deep_ep", "deepep",        "nvshmem",        "cross_device_reduce", "allreduce",  "all_reduce",
      "allgather", "all_gather", "reducescatter", "reduce_scatter",      "alltoall",   "all_to_all"};
  const std::string lower = ascii_lower(name);
  return std::any_of(kPatterns.begin(), kPatterns.end(),
                     [&](std::string_view p) { return lower.find(p) != std::string::npos; });
}

Nanos Breakdown::total() const {
  Nanos t = 0;
  for (Nanos v : by_category) t += v;
  return t;
}

int Breakdown::main_peer() const {
  int best = -1;
  Nanos most = 0;
  for (const auto& [rank, ns] : peer_wait_by_rank) {
    if (ns > most) {
      most = ns;
      best = rank;
    }
  }
  return best;
}

namespace {

bool launches_gpu_work(const graph::Dfg& dfg, graph::NodeId id) {
  bool launches = false;
  dfg.for_each_out_edge(id, [&](graph::EdgeId e) { launches = launches || dfg.edge(e).kind == EdgeKind::kLaunch; });
  return launches;
}

// Category of the wait between a dependency being satisfied (the cause edge `e`, its gap
// included) and node `n` starting, `wait` ns long. A CPU op's wait is its untraced time (its
// delay below BuildOptions::untraced_min; longer untraced work is a node of its own). A GPU op
// started by its launch waited for the launch latency (and a slow launch call, the edge's gap),
// or, far above it, for something no edge explains. A GPU op held by another GPU op (its
// stream, an event) beyond that dependency is GPU idle time.
Category waiting_category(NodeKind node, EdgeKind edge, Nanos wait) {
  if (node == NodeKind::kBarrier) return Category::kIdle;
  if (!graph::on_gpu(node)) return Category::kCpuUntraced;
  if (edge != EdgeKind::kLaunch) return Category::kIdle;
  return is_unresolved_wait(node, edge, wait) ? Category::kUnresolvedWait : Category::kLaunch;
}

// Category of a node's end decided by end-edge `edge`: a collective's transfer after its last
// peer arrived, or a CPU call returning after the GPU work it blocked on.
Category end_wait_category(EdgeKind edge) {
  if (edge == EdgeKind::kCollective) return Category::kCommunication;
  if (graph::is_blocking(edge)) return Category::kBlockedOnGpu;
  return Category::kCpuOp;
}

}  // namespace

bool is_unresolved_wait(NodeKind node, EdgeKind cause, Nanos wait) {
  return graph::on_gpu(node) && cause == EdgeKind::kLaunch && wait > kUnresolvedWaitThreshold;
}

ExecutionCategories execution_categories(const graph::Dfg& dfg) {
  enum : std::uint8_t { kUnread, kCompute, kCommunication };
  std::vector<std::uint8_t> kernel_of_op(dfg.ops().size(), kUnread);  // by OpId: what its name says
  auto kernel_category = [&](graph::NodeId id) {
    const graph::OpId op = dfg.op_of(id);
    if (!op.valid()) return Category::kCompute;  // no description, no name to read
    std::uint8_t& known = kernel_of_op[op.value];
    if (known == kUnread) known = is_communication_kernel(dfg.op_name(id)) ? kCommunication : kCompute;
    return known == kCommunication ? Category::kCommunication : Category::kCompute;
  };
  ExecutionCategories out(dfg.node_count(), Category::kIdle);
  for (const graph::NodeId id : dfg.node_ids()) {
    switch (dfg.node(id).kind) {
      case NodeKind::kKernel: out[id] = kernel_category(id); break;
      case NodeKind::kCollective: out[id] = Category::kCommunication; break;
      case NodeKind::kMemcpy:
      case NodeKind::kMemset: out[id] = Category::kCopies; break;
      case NodeKind::kCpuOp: out[id] = Category::kCpuOp; break;
      case NodeKind::kRuntimeCall: out[id] = launches_gpu_work(dfg, id) ? Category::kLaunch : Category::kCpuOp; break;
      case NodeKind::kBarrier: out[id] = Category::kIdle; break;
      case NodeKind::kUntraced: out[id] = Category::kCpuUntraced; break;
    }
  }
  return out;
}

std::vector<PathSegment> critical_path(const graph::Dfg& dfg, const Simulation& sim,
                                       const ExecutionCategories& categories, graph::NodeId from, Point point,
                                       Nanos stop_at) {
  std::vector<PathSegment> path;
  // An edge with a negative gap (a kernel that started before its launch call returned, by the
  // measured times) makes a cause end after the node it caused started: walking back, the path
  // steps forward in time there. Each segment is cut at the earliest time already covered, so
  // that the segments never overlap and add up to the time from stop_at to the start point.
  Nanos covered_from = point == Point::kStart ? sim.start[from] : sim.end[from];
  // `rank_of` is the node whose rank the time is on (for the time before the first op, that op).
  auto add_on = [&](graph::NodeId node, graph::NodeId rank_of, Category c, Part part, Nanos begin, Nanos end) {
    begin = std::max(begin, stop_at);
    end = std::min(end, covered_from);
    if (end > begin) {
      path.push_back(PathSegment{node, c, part, dfg.node(rank_of).rank, begin, end});
      covered_from = begin;
    }
  };
  auto add = [&](graph::NodeId node, Category c, Part part, Nanos begin, Nanos end) {
    add_on(node, node, c, part, begin, end);
  };
  graph::NodeId node = from;
  Nanos t = point == Point::kStart ? sim.start[node] : sim.end[node];
  // Each step moves to an earlier point or from a node's end to its own start, so it ends.
  for (std::size_t guard = 0; guard < 4 * dfg.node_count() + 4 && t > stop_at; ++guard) {
    const graph::Node& n = dfg.node(node);
    const bool at_end = point == Point::kEnd;
    const graph::EdgeId cause = at_end ? sim.end_cause[node] : sim.start_cause[node];
    if (!cause.valid()) {
      if (!at_end) {
        add_on(graph::NodeId::none(), node, Category::kIdle, Part::kBeforeStart, stop_at, t);
        break;
      }
      add(node, categories[node], Part::kOwn, sim.start[node], t);
      t = sim.start[node];
      point = Point::kStart;
      continue;
    }
    const graph::Edge& e = dfg.edge(cause);
    const Nanos src_time = e.src_point == Point::kStart ? sim.start[e.src] : sim.end[e.src];
    if (at_end) {
      add(node, end_wait_category(e.kind), Part::kOwn, src_time, t);
    } else {
      add(node, waiting_category(n.kind, e.kind, t - src_time - std::max<Nanos>(e.gap, 0)), Part::kBeforeStart, src_time, t);
    }
    node = e.src;
    point = e.src_point;
    t = src_time;
  }
  std::reverse(path.begin(), path.end());
  return path;
}

Breakdown breakdown_of(const std::vector<PathSegment>& path) {
  Breakdown b;
  for (const PathSegment& s : path) b[s.category] += s.end - s.begin;
  return b;
}

Breakdown breakdown_of(const std::vector<PathSegment>& path, int rank) {
  Breakdown b;
  for (const PathSegment& s : path) {
    const int owner = s.rank;
    if (owner >= 0 && owner != rank) {
      b[Category::kPeerWait] += s.end - s.begin;
      b.peer_wait_by_rank[owner] += s.end - s.begin;
    } else {
      b[s.category] += s.end - s.begin;
    }
  }
  return b;
}

}  // namespace dpro::replayer
