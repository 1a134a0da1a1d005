#pragma once
// OpDesc of a GPU op of the dataflow graph: the kernel's name and launch geometry from its
// trace event, the family, shapes and dtype from the CPU op that launched it (its name,
// "Input Dims" and "Input type", when the trace recorded shapes). Ops whose launching CPU op
// is unknown or has no usable shapes come back with family kUnknown (callers fall back).
#include "costmodel/op_desc.h"
#include "graph/dfg.h"
#include "trace/event.h"

namespace dpro::costmodel {

OpDesc op_desc_from_trace(const trace::TraceSet& traces, const graph::Node& node);

// Family/dims/dtype from a CPU op name and its raw "Input Dims" / "Input type" JSON text.
// Convolution stride and padding are not in Input Dims: stride 1 and "same" padding are
// assumed. Exposed for tests.
OpDesc op_desc_from_cpu_op(const std::string& name, const std::string& input_dims,
                           const std::string& input_types);

}  // namespace dpro::costmodel
