#pragma once
// PyTorch's ProcessGroupNCCL runs each collective inside a record_function range named
// "nccl:<op>" ("nccl:all_to_all", "nccl:all_reduce", "nccl:_all_gather_base") whose
// "Input Dims" and "Input type" are the tensors it was called with. Traces older than
// record_param_comms' "Collective name" and "In msg nelems" record nothing else about the
// collective: the NCCL kernel's name says which kernel ran, not what PyTorch asked for, and an
// all_to_all runs as grouped sends and receives to every peer, a SendRecv kernel.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/strings.h"
#include "trace/event.h"

namespace dpro::trace {

// A collective's message as a "nccl:<op>" range records it: the elements of its tensor inputs
// (a 0-d tensor is one element) and their common type. None when the range records no tensor,
// a tensor list, or tensors of different types. Throws InputError(file, item) naming the range
// when the elements exceed 2^40.
struct RangeMessage {
  std::int64_t nelems = 0;
  std::string dtype;
};
std::optional<RangeMessage> range_message(std::string_view input_dims, std::string_view input_types,
                                          const std::string& file, const std::string& item);

struct NcclRangeStats {
  std::size_t alltoalls = 0;  // SendRecv (or unnamed) kernels an all_to_all launched, relabelled
  std::size_t sized = 0;      // kernels that took their message from the range
};

// Gives each collective kernel launched inside a "nccl:<op>" range on its CPU thread (the
// kernel's runtime call, by correlation, lies within the range) what the range says, where the
// kernel's own metadata does not: a SendRecv or unnamed kernel under nccl:all_to_all becomes
// "alltoall"; a kernel of the range's operation takes the range's message as "In msg nelems"
// and dtype, split evenly when the range launched several kernels (grouped sends and receives
// on more than one kernel). A kernel that carries "In msg nelems" keeps its metadata, and a
// kernel whose operation contradicts the range's (a SendRecv kernel under nccl:all_reduce) is
// left as its name says. `rank.events` must be sorted by start.
NcclRangeStats apply_nccl_ranges(TraceRank& rank, const StringTable& strings);

}  // namespace dpro::trace
