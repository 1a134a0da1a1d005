#pragma once
// One GPU node of the graph as the Launch the device runs (docs/executor.md, "What runs"):
//   - a GEMM kernel whose launching op gives its shapes (costmodel::op_desc_of_kernel: matmul,
//     linear, bmm at B x M x N x K) -> GemmCall at that shape, dtype and math mode;
//   - a fused node of the op-fusion rewrite (graph::OpDesc::parts) whose parts are all
//     elementwise ops ElementwiseOp names -> one ElementwiseChain; an unfused recognisable
//     elementwise kernel -> a one-step chain;
//   - a fused node that is a GEMM with its epilogue (whatif/op_fusion.h), classified by
//     whatif::epilogue_op_of -> one GemmCall with that GemmEpilogue (the recorded C[M,N] as
//     cuBLASLt's column-major N x M product: the bias is the N output features' vector); a
//     stand-in where the chain is no cuBLASLt epilogue or the GEMM records no shapes; a fused
//     part whose launching op records no shapes takes the like step's fused node's part's
//     (LaunchOptions::like_steps, costmodel::LikeStepLaunchers::fused);
//   - the precision rewrite's "autocast cast" kernel -> CastCall of the weight it casts;
//   - a compression rewrite's "dpro::compress(m)" / "dpro::decompress(m)" -> CompressCall;
//   - copies and memsets -> themselves; NCCL kernels -> CollectiveCall (the device runs a
//     stand-in of standin_duration on one GPU);
//   - everything else (convolutions, ops taking indices, ops without recorded shapes, kernels
//     no ElementwiseOp names) -> StandinKernel of the node's grid, block and replay duration.
// Spans carry the bytes each operand needs; their buffer and offset are the memory plan's.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "costmodel/op_desc_from_graph.h"
#include "executor/device.h"
#include "executor/op_names.h"
#include "graph/dfg.h"
#include "whatif/comm/compress.h"

namespace dpro::executor {

// What a launch stands for in the job, for counts and reports.
enum class OpClass : std::uint8_t { kGemm, kConv, kElementwise, kFused, kCast, kCompress, kCopy, kMemset, kCollective, kOther };
inline constexpr int kOpClassCount = static_cast<int>(OpClass::kOther) + 1;
const char* to_string(OpClass c);  // "gemm", "conv", "elementwise", "fused", "cast", "compress", "copy", ...

// A gradient bucket's part in the plan (the buckets decision): its all-reduces run as one call of
// the bucket's elements where its last member ran; the earlier members issue no call (an empty
// stand-in keeps their place on the stream), as the replay gives them no time.
struct BucketMember {
  std::int64_t bucket_elements = 0;  // the whole bucket's (of the last member's dtype)
  bool last = false;
};

struct LaunchOptions {
  DType cast_to = DType::kBF16;  // the precision rewrite's target dtype (its casts' destination)
  comm::Compression compression; // the compression decision (method parameters of its kernels)
  // Launching ops lent by a like step (a capture with shapes in one step only); nullptr: none.
  const costmodel::LikeStepLaunchers* like_steps = nullptr;
  std::map<graph::NodeId, BucketMember> buckets;  // by all-reduce node (plan_rewrites.h)
};

struct LoweredLaunch {
  LoweredLaunch() = default;
  LoweredLaunch(Launch l, OpClass c, std::string reason)
      : launch(std::move(l)), op_class(c), standin_reason(std::move(reason)) {}
  Launch launch;
  OpClass op_class = OpClass::kOther;
  std::string standin_reason;  // empty unless the launch is a StandinKernel
  // A fused chain with a part no ElementwiseOp stands for: those parts' launching ops, each once
  // ("aten::sum", "aten::native_dropout_backward"), in chain order; empty otherwise.
  std::vector<std::string> blocking_ops;
  bool is_standin() const { return std::holds_alternative<StandinKernel>(launch); }
};

// Needs a finalized graph (a cast and a compression kernel are sized by their stream neighbour).
LoweredLaunch lower_launch(const graph::Dfg& dfg, graph::NodeId node, const LaunchOptions& options);

// An operand of a launch, in the order slots_of gives them.
enum class SlotRole : std::uint8_t { kInput, kOutput, kPersistent };
struct Slot {
  Span* span = nullptr;
  SlotRole role = SlotRole::kInput;
};
// The device memory a launch touches (none for stand-ins and the host side of host copies).
std::vector<Slot> slots_of(Launch& launch);

}  // namespace dpro::executor
