#pragma once
// Helpers the lowering's source files share (launch_lowering.cpp, compress_lowering.cpp).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "executor/launch_lowering.h"
#include "hw/device_spec.h"

namespace dpro::executor::detail {

std::int64_t elements_of(const std::vector<std::int64_t>& shape);  // negative extents count as 0
std::optional<DType> executor_dtype(hw::DType d);                  // none for fp8
DType recorded_dtype(const graph::OpTable& table, const graph::TensorDesc& t);  // fp32 when unrecorded
std::uint64_t bytes_of(std::int64_t elements, DType t);
// The op whose launching CPU op describes `node` (its own, or a like step's).
const graph::OpDesc& launch_op(const graph::Dfg& dfg, graph::NodeId node, const LaunchOptions& options);
// The op whose launching CPU op describes the k-th part of fused node `node`: the part's own, or,
// when it has none, the k-th part of the like step's fused node (LikeStepLaunchers::fused).
const graph::OpDesc& part_launch_op(const graph::Dfg& dfg, graph::NodeId node, std::size_t k, const LaunchOptions& options);
// A stand-in of the node's replay duration, recorded grid and block.
LoweredLaunch standin(const graph::Dfg& dfg, graph::NodeId node, OpClass c, std::string reason);
// The node after `node` on its stream (the op a cast or compression kernel serves), or before it.
std::optional<graph::NodeId> stream_neighbour(const graph::Dfg& dfg, graph::NodeId node, bool after);
// A compression rewrite's kernel of method `method_name` ("topk", "powersgd", ...).
LoweredLaunch lower_compress(const graph::Dfg& dfg, graph::NodeId node, const LaunchOptions& options, bool decompress,
                             std::string_view method_name);

}  // namespace dpro::executor::detail
