#pragma once
// Importer for torch.profiler / Kineto Chrome-trace JSON (.json or .json.gz).
#include <memory>

#include "trace/importer.h"

namespace dpro::trace {

std::unique_ptr<Importer> make_kineto_importer();

// Exact conversion of a JSON number of microseconds ("1694128201426674", "4458676416788.066",
// "1.5e3") to nanoseconds. Returns false if the text is not a number or is beyond
// kMaxTraceNanos in magnitude.
bool parse_micros_as_nanos(std::string_view text, Nanos* out);

// Normalised collective operation from a NCCL/RCCL kernel name or a "Collective name" value:
// "ncclKernel_AllReduce_RING_LL_Sum_float(...)" -> "allreduce",
// "ncclDevKernel_SendRecv(...)" -> "sendrecv", "allreduce" -> "allreduce". Empty if unknown.
std::string collective_op_from_name(std::string_view name);

}  // namespace dpro::trace
