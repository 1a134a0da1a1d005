#pragma once
// PyTorch's `torch.autograd.profiler.emit_nvtx(record_shapes=True)` pushes one NVTX range per
// operator, named (torch/csrc/profiler/util.cpp, getNvtxStr)
//
//   aten::addmm, seq = 12, op_id = 345, sizes = [[1024], [64, 512], [512, 1024], [], []], input_op_ids = [(340,0)]
//
// "seq" only for ops autograd records, "op_id" when the profiler asks for ids, "sizes" only with
// record_shapes=True, "input_op_ids" when the inputs came from recorded ops. Such a range is the
// operator itself: the native importer makes it the CPU op torch.profiler would have recorded,
// with its Input Dims, so that a dpro-profile capture gives the cost models op shapes.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dpro::trace {

struct NvtxOpRange {
  std::string op;                   // "aten::addmm"
  std::optional<std::int64_t> seq;  // autograd sequence number
  std::string input_dims;           // "[[1024], [64, 512], [512, 1024], [], []]"; empty without sizes
};

// The operator a range name stands for, or nullopt for any other range (a user's "forward",
// "ProfilerStep#3"): a name followed by at least one of the fields above, in that form, or a
// bare "aten::" name (emit_nvtx names an op without sequence number, id or shapes by its name
// alone). A "sizes" list that is not a list of integer lists makes the name not an op range.
std::optional<NvtxOpRange> parse_nvtx_op_range(std::string_view name);

}  // namespace dpro::trace
