#include "executor/device.h"

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

}  // namespace dpro::executor
