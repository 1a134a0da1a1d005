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
  std::string op;                   // "aten::addmm", without the fields
  std::optional<std::int64_t> seq;  // autograd sequence number
  std::string input_dims;           // "[[1024], [64, 512], [512, 1024], [], []]"; empty without sizes
  // An operator ("aten::addmm", "autograd::engine::evaluate_function: AddmmBackward0",
  // "AddmmBackward0"), not a user scope that emit_nvtx also names this way
  // (torch.profiler.record_function("ProfilerStep#3") -> "ProfilerStep#3, op_id = 12"), which
  // torch.profiler records as a user annotation.
  bool is_operator = false;
};

// The range a name written by emit_nvtx stands for, or nullopt for any other range (a user's
// own "forward", "ProfilerStep#3"): a name followed by at least one of the fields above, in that
// form, or a bare "aten::" name (emit_nvtx names an op without sequence number, id or shapes by
// its name alone). A "sizes" list that is not a list of integer lists makes the name not one.
std::optional<NvtxOpRange> parse_nvtx_op_range(std::string_view name);

}  // namespace dpro::trace
