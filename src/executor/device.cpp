#include "executor/device.h"

#include <array>

namespace dpro::executor {

std::size_t dtype_bytes(DType t) {
  switch (t) {
    case DType::kF32: return 4;
    case DType::kF16: return 2;
    case DType::kBF16: return 2;
    case DType::kF64: return 8;
    case DType::kI32: return 4;
    case DType::kI64: return 8;
    case DType::kU8: return 1;
  }
  return 0;
}

const char* to_string(DType t) {
  switch (t) {
    case DType::kF32: return "fp32";
    case DType::kF16: return "fp16";
    case DType::kBF16: return "bf16";
    case DType::kF64: return "fp64";
    case DType::kI32: return "int32";
    case DType::kI64: return "int64";
    case DType::kU8: return "uint8";
  }
  return "?";
}

const char* to_string(GemmEpilogue e) {
  static constexpr std::array<const char*, 10> kNames = {"none",     "bias",  "relu",  "gelu",        "bias_relu",
                                                        "bias_gelu", "drelu", "dgelu", "drelu_bgrad", "dgelu_bgrad"};
  const auto i = static_cast<std::size_t>(e);
  return i < kNames.size() ? kNames[i] : "?";
}

bool epilogue_reads_bias(GemmEpilogue e) {
  return e == GemmEpilogue::kBias || e == GemmEpilogue::kBiasRelu || e == GemmEpilogue::kBiasGelu;
}
bool epilogue_writes_bias(GemmEpilogue e) { return e == GemmEpilogue::kDReluBGrad || e == GemmEpilogue::kDGeluBGrad; }
bool epilogue_reads_aux(GemmEpilogue e) {
  return e == GemmEpilogue::kDRelu || e == GemmEpilogue::kDGelu || epilogue_writes_bias(e);
}

namespace {
bool relu_mask(GemmEpilogue e) { return e == GemmEpilogue::kDRelu || e == GemmEpilogue::kDReluBGrad; }
std::int64_t round_up(std::int64_t v, std::int64_t to) { return (v + to - 1) / to * to; }
}  // namespace

std::int64_t gemm_aux_ld(GemmEpilogue e, std::int64_t m) {
  if (!epilogue_reads_aux(e)) return 0;
  return relu_mask(e) ? round_up(m, 128) : round_up(m, 8);
}

std::uint64_t gemm_aux_bytes(GemmEpilogue e, std::int64_t m, std::int64_t n, std::int64_t batch, DType t) {
  if (!epilogue_reads_aux(e) || m <= 0 || n <= 0 || batch <= 0) return 0;
  const auto cells = static_cast<std::uint64_t>(gemm_aux_ld(e, m)) * static_cast<std::uint64_t>(n) *
                     static_cast<std::uint64_t>(batch);
  return relu_mask(e) ? cells / 8 : cells * dtype_bytes(t);
}

}  // namespace dpro::executor
