#pragma once
// OpDesc of a GPU op of the dataflow graph: the kernel's name and launch geometry from its
// trace event, the family, shapes and dtype from the CPU op that launched it (its name,
// "Input Dims" and "Input type", when the trace recorded shapes). Ops whose launching CPU op
// is unknown or has no usable shapes come back with family kUnknown (callers fall back).
#include <string>
#include <vector>

#include "costmodel/op_desc.h"
#include "graph/dfg.h"
#include "trace/event.h"

namespace dpro::costmodel {

OpDesc op_desc_from_trace(const trace::TraceSet& traces, const graph::Node& node);
// The same, described by the CPU op `launcher` (an event index of the node's rank;
// graph::EventRef::kNoneValue: none) instead of the one that launched it (see launchers_from_like_steps).
OpDesc op_desc_from_trace(const trace::TraceSet& traces, const graph::Node& node, std::uint32_t launcher);

// Launching CPU ops lent by a like step. A dpro-profile capture has CPU ops, and their shapes,
// only inside emit_nvtx ranges, which cost the job host time (GPT-2 on an H100: 46 -> 110 ms a
// step); a job can run one step inside emit_nvtx and the others as usual (docs/profiler.md).
// Per rank and stream, the kernels of each iteration (those launched from its start to the
// next one's; by their own start when the launch is unknown), in start order, form a sequence
// of kernel names. An iteration whose kernels on a stream have no launching CPU op borrows,
// kernel by kernel, the launching ops of an iteration with the same sequence on that stream
// that has them. A sequence differing in one name or in
// length lends nothing, and kernels outside iterations are left alone.
struct LikeStepLaunchers {
  std::vector<std::uint32_t> launcher;  // per node: event index of the borrowed CPU op, or EventRef::kNoneValue
  std::size_t kernels = 0;              // kernels given a launcher
  std::vector<std::string> lenders;     // names of the iterations lent from, sorted, each once
};
LikeStepLaunchers launchers_from_like_steps(const trace::TraceSet& traces, const graph::Dfg& dfg);

// Family/dims/dtype from a CPU op name and its raw "Input Dims" / "Input type" JSON text.
// Convolution stride and padding are not in Input Dims: stride 1 and "same" padding are
// assumed. Exposed for tests.
OpDesc op_desc_from_cpu_op(const std::string& name, const std::string& input_dims,
                           const std::string& input_types);

}  // namespace dpro::costmodel
