#pragma once
// A cost model's OpDesc of a GPU op of the dataflow graph, read from the graph's op table (no
// trace needed): the kernel's name and launch geometry from its own op, the family, shapes and
// dtype from the CPU op that launched it (its name and recorded inputs, when the trace recorded
// shapes). Ops whose launching CPU op is unknown or has no usable shapes come back with family
// kUnknown (callers fall back).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "costmodel/op_desc.h"
#include "graph/dfg.h"
#include "trace/event.h"

namespace dpro::costmodel {

// `kernel`: the kernel's op; `launch`: the op whose launching CPU op (launcher name and its
// inputs) describes it: the kernel's own, or a like step's (launchers_from_like_steps).
OpDesc op_desc_of_kernel(const graph::OpTable& table, const graph::OpDesc& kernel, const graph::OpDesc& launch);

// Launching CPU ops lent by a like step. A dpro-profile capture has CPU ops, and their shapes,
// only inside emit_nvtx ranges, which cost the job host time (GPT-2 on an H100: 46 -> 110 ms a
// step); a job can run one step inside emit_nvtx and the others as usual (docs/profiler.md).
// Per rank and stream, the kernels of each iteration (those launched from its start to the
// next one's; by their own start when the launch is unknown), in start order, form a sequence
// of kernel names. An iteration whose kernels on a stream have no launching CPU op borrows,
// kernel by kernel, the launching ops of an iteration with the same sequence on that stream
// that has them. A sequence differing in one name or in length lends nothing, and kernels
// outside iterations are left alone. Iterations are the trace's (TraceRank::iterations).
// A fused node of the op-fusion rewrite (graph::OpDesc::parts) is one kernel of the sequence,
// named by its parts' names (op fusion fuses a chain at every occurrence, so a like step has
// the same fused node); it lends when one of its parts has a launching op.
struct LikeStepLaunchers {
  // Per node: the op of the like step's kernel whose launching CPU op describes it (pass it
  // as op_desc_of_kernel's `launch`); kNoOp: none lent.
  IdVector<graph::NodeId, graph::OpId> launch;
  // Per node given a launch: the like step's kernel it borrowed from (kNoNode: none).
  IdVector<graph::NodeId, graph::NodeId> lender;
  // Per fused node: the like step's fused op, whose k-th part's launching op describes this
  // node's k-th part (same kernel, same place in the chain); kNoOp: none lent.
  IdVector<graph::NodeId, graph::OpId> fused;
  std::size_t kernels = 0;           // kernels given a launcher (fused nodes not counted)
  std::size_t fused_nodes = 0;       // fused nodes given a like step's fused op
  std::vector<std::string> lenders;  // names of the iterations lent from, sorted, each once
};
LikeStepLaunchers launchers_from_like_steps(const trace::TraceSet& traces, const graph::Dfg& dfg);

// Per node of the graph, the type of each GPU op on a stream (kernel_type): a kernel's by its
// launching CPU op (its own, else a like step's: launchers_from_like_steps) and its name; a
// fused node's by its first part's; DMA copies and memsets are kCopy, NCCL kernels
// kCommunication; nullopt for every other node (CPU ops, barriers).
IdVector<graph::NodeId, std::optional<KernelType>> kernel_types(const trace::TraceSet& traces, const graph::Dfg& dfg);

// Family/dims/dtype from a CPU op's name and its recorded inputs (dtype: the first input's).
// Convolution stride and padding are not in Input Dims: stride 1 and "same" padding are
// assumed. Exposed for tests.
OpDesc op_desc_from_cpu_op(std::string_view name, const std::vector<graph::TensorDesc>& inputs,
                           const graph::OpTable& table);

}  // namespace dpro::costmodel
