// The compression rewrite's kernels (whatif/comm/compress.h) as CompressCalls.
#include <array>
#include <cmath>
#include <utility>

#include "executor/lowering_internal.h"

namespace dpro::executor::detail {

namespace {

std::optional<CompressMethod> compress_method(std::string_view name) {
  static const std::array<std::pair<const char*, CompressMethod>, 7> kMethods = {{{"topk", CompressMethod::kTopK},
                                                                                  {"dgc", CompressMethod::kTopK},
                                                                                  {"randomk", CompressMethod::kRandomK},
                                                                                  {"efsignsgd", CompressMethod::kSignPack},
                                                                                  {"powersgd", CompressMethod::kPowerSgd},
                                                                                  {"fp16", CompressMethod::kCastF16},
                                                                                  {"bf16", CompressMethod::kCastBF16}}};
  for (const auto& [word, method] : kMethods)
    if (name == word) return method;
  return std::nullopt;
}

// The compression decision's spec for `method` (its ratio or rank); the defaults when the
// decision does not name it.
const comm::CompressionSpec* spec_for(const comm::Compression& c, std::string_view method) {
  if (method == comm::to_string(c.all.method)) return &c.all;
  for (const comm::CompressionSpec& s : c.per_bucket)
    if (method == comm::to_string(s.method)) return &s;
  return nullptr;
}

std::uint64_t payload_bytes(const CompressCall& c) {
  const auto n = static_cast<double>(c.elements);
  const auto k = static_cast<std::uint64_t>(std::max(1.0, std::ceil(c.param * n)));
  switch (c.method) {
    case CompressMethod::kTopK: return 8 * k;
    case CompressMethod::kRandomK: return 4 * k;
    case CompressMethod::kSignPack: return static_cast<std::uint64_t>(c.elements + 7) / 8 + 4;
    case CompressMethod::kPowerSgd: {
      const auto cols = static_cast<std::uint64_t>((c.elements + c.rows - 1) / c.rows);
      return 4 * static_cast<std::uint64_t>(c.param) * (static_cast<std::uint64_t>(c.rows) + cols);
    }
    case CompressMethod::kCastF16: case CompressMethod::kCastBF16: return 2 * static_cast<std::uint64_t>(c.elements);
  }
  return 0;
}

}  // namespace

LoweredLaunch lower_compress(const graph::Dfg& dfg, graph::NodeId node, const LaunchOptions& options, bool decompress,
                             std::string_view method_name) {
  const auto method = compress_method(method_name);
  const auto collective = stream_neighbour(dfg, node, !decompress);
  const graph::OpDesc* op = collective ? dfg.op(*collective) : nullptr;
  if (!method || !op || !op->collective || !op->collective->in_nelems)
    return standin(dfg, node, OpClass::kCompress, "compression kernel beside a collective of unrecorded size");
  CompressCall c;
  c.method = *method;
  c.decompress = decompress;
  c.elements = *op->collective->in_nelems;
  const comm::CompressionSpec* spec = spec_for(options.compression, method_name);
  const comm::CompressionSpec defaults;
  c.param = c.method == CompressMethod::kPowerSgd ? (spec ? spec->rank : defaults.rank) : (spec ? spec->ratio : defaults.ratio);
  c.rows = static_cast<std::int64_t>(std::ceil(std::sqrt(static_cast<double>(c.elements))));
  const std::uint64_t gradient = bytes_of(c.elements, DType::kF32), payload = payload_bytes(c);
  c.src = {0, 0, decompress ? payload : gradient};
  c.dst = {0, 0, decompress ? gradient : payload};
  const bool feedback = c.method != CompressMethod::kCastF16 && c.method != CompressMethod::kCastBF16;
  if (feedback) c.residual = {0, 0, gradient};
  c.seed = static_cast<std::uint64_t>(node.value);
  return {c, OpClass::kCompress, ""};
}

}  // namespace dpro::executor::detail
