#include "trace/native/nvtx_op_range.h"

#include <algorithm>
#include <array>

#include "core/strings.h"

namespace dpro::trace {
namespace {

// The fields getNvtxStr appends to an operator's name, in its order.
constexpr std::string_view kSeq = ", seq = ", kOpId = ", op_id = ", kSizes = ", sizes = ",
                           kInputOpIds = ", input_op_ids = ";
constexpr std::array<std::string_view, 4> kFields = {kSeq, kOpId, kSizes, kInputOpIds};

// Where the first field starts, or npos.
std::size_t first_field(std::string_view name) {
  std::size_t best = std::string_view::npos;
  for (std::string_view field : kFields) best = std::min(best, name.find(field));
  return best;
}

// Length of the decimal integer at the start of `s` (optional '-', digits); 0 if there is none.
std::size_t integer(std::string_view s) {
  std::size_t i = s.starts_with('-') ? 1 : 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
  return parse_integer(s.substr(0, i)) ? i : 0;
}

// Length of "[E, E, ...]" or "[]" at the start of `s`, `element` giving each E's length (0: not
// one); 0 if there is no such list.
template <class Element>
std::size_t list_of(std::string_view s, Element element) {
  if (!s.starts_with('[')) return 0;
  std::size_t i = 1;
  if (s.substr(i, 1) == "]") return i + 1;
  while (true) {
    const std::size_t n = element(s.substr(i));
    if (n == 0) return 0;
    i += n;
    if (s.substr(i, 1) == "]") return i + 1;
    if (s.substr(i, 2) != ", ") return 0;
    i += 2;
  }
}

// Length of shapesToStr's list of integer lists ("[[64, 3, 224, 224], [], [3]]") at the start of
// `s`; 0 if there is none.
std::size_t shape_list(std::string_view s) {
  return list_of(s, [](std::string_view e) { return list_of(e, integer); });
}

// "aten::addmm", "c10d::allreduce_", "autograd::engine::evaluate_function: MmBackward0", or an
// autograd node's own name ("AddmmBackward0", "torch::autograd::AccumulateGrad").
bool is_operator_name(std::string_view name) {
  if (name.find("::") != std::string_view::npos) return true;
  std::size_t end = name.size();
  while (end > 0 && name[end - 1] >= '0' && name[end - 1] <= '9') --end;
  return name.substr(0, end).ends_with("Backward");
}

}  // namespace

std::optional<NvtxOpRange> parse_nvtx_op_range(std::string_view name) {
  const std::size_t fields = first_field(name);
  NvtxOpRange out;
  if (fields == std::string_view::npos) {
    if (!name.starts_with("aten::") || name.size() == 6 || name.find_first_of(" ,") != std::string_view::npos)
      return std::nullopt;
    out.op = std::string(name);
    out.is_operator = true;
    return out;
  }
  if (fields == 0) return std::nullopt;
  out.op = std::string(name.substr(0, fields));
  out.is_operator = is_operator_name(out.op);
  std::string_view rest = name.substr(fields);
  while (!rest.empty()) {  // rest starts with a field, or the name is not emit_nvtx's
    const auto field = std::find_if(kFields.begin(), kFields.end(), [&](std::string_view f) { return rest.starts_with(f); });
    if (field == kFields.end()) return std::nullopt;
    const std::string_view value = rest.substr(field->size());
    if (*field == kSizes) {
      const std::size_t n = shape_list(value);
      if (n == 0) return std::nullopt;
      out.input_dims = std::string(value.substr(0, n));
      rest = value.substr(n);
    } else if (*field == kInputOpIds) {  // the last field: "[(op_id,output_nr), ...]"
      if (!value.starts_with('[') || !value.ends_with(']')) return std::nullopt;
      rest = {};
    } else {  // seq or op_id
      const auto end = value.find(", ");
      const auto number = parse_integer(value.substr(0, end));
      if (!number) return std::nullopt;
      if (*field == kSeq) out.seq = *number;
      rest = end == std::string_view::npos ? std::string_view{} : value.substr(end);
    }
  }
  return out;
}

}  // namespace dpro::trace
