#include "executor/lowering_internal.h"

#include <algorithm>

namespace dpro::executor::detail {

std::int64_t elements_of(const std::vector<std::int64_t>& shape) {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= std::max<std::int64_t>(d, 0);
  return n;
}

std::optional<DType> executor_dtype(hw::DType d) {
  switch (d) {
    case hw::DType::kFloat32: case hw::DType::kTensorFloat32: return DType::kF32;
    case hw::DType::kFloat16: return DType::kF16;
    case hw::DType::kBFloat16: return DType::kBF16;
    case hw::DType::kFloat64: return DType::kF64;
    case hw::DType::kInt8: return DType::kU8;
    case hw::DType::kFloat8: return std::nullopt;
  }
  return std::nullopt;
}

DType recorded_dtype(const graph::OpTable& table, const graph::TensorDesc& t) {
  if (t.dtype.empty()) return DType::kF32;
  const auto d = hw::parse_dtype(std::string(table.name(t.dtype)));
  const auto e = d ? executor_dtype(*d) : std::nullopt;
  return e.value_or(DType::kF32);
}

// The op whose launching CPU op describes `node` (its own, or a like step's).
const graph::OpDesc& launch_op(const graph::Dfg& dfg, graph::NodeId node, const LaunchOptions& options) {
  if (options.like_steps && node.below(options.like_steps->launch.size())) {
    const graph::OpId lent = options.like_steps->launch[node];
    if (lent.valid()) return dfg.ops().op(lent);
  }
  return *dfg.op(node);
}

const graph::OpDesc& part_launch_op(const graph::Dfg& dfg, graph::NodeId node, std::size_t k, const LaunchOptions& options) {
  const graph::OpTable& table = dfg.ops();
  const graph::OpDesc& own = table.op(dfg.op(node)->parts[k]);
  if (!own.launcher.empty() || !options.like_steps || !node.below(options.like_steps->fused.size())) return own;
  const graph::OpId lent = options.like_steps->fused[node];
  if (!lent.valid() || k >= table.op(lent).parts.size()) return own;
  const graph::OpDesc& like = table.op(table.op(lent).parts[k]);
  return like.name == own.name ? like : own;  // the same kernel at the same place of the chain
}

LoweredLaunch standin(const graph::Dfg& dfg, graph::NodeId node, OpClass c, std::string reason) {
  StandinKernel k;
  if (const graph::OpDesc* op = dfg.op(node)) {
    if (op->grid) for (int i = 0; i < 3; ++i) k.grid[i] = static_cast<std::uint32_t>(std::max(1, (*op->grid)[i]));
    if (op->block) for (int i = 0; i < 3; ++i) k.block[i] = static_cast<std::uint32_t>(std::max(1, (*op->block)[i]));
  }
  k.duration = dfg.node(node).duration;
  return {k, c, std::move(reason)};
}

std::uint64_t bytes_of(std::int64_t elements, DType t) { return static_cast<std::uint64_t>(elements) * dtype_bytes(t); }

// The node after `node` on its stream (the op a cast or compression kernel serves), or before it.
std::optional<graph::NodeId> stream_neighbour(const graph::Dfg& dfg, graph::NodeId node, bool after) {
  std::optional<graph::NodeId> out;
  auto take = [&](graph::EdgeId e) {
    const graph::Edge& edge = dfg.edge(e);
    if (edge.kind == graph::EdgeKind::kStreamOrder) out = after ? edge.dst : edge.src;
  };
  if (after) dfg.for_each_out_edge(node, take);
  else dfg.for_each_in_edge(node, take);
  return out;
}

}  // namespace dpro::executor::detail
