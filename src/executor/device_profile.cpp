#include "executor/device_profile.h"

namespace dpro::executor {

hw::CopyDirection profile_direction(CopyKind kind) {
  switch (kind) {
    case CopyKind::kHostToDevice: return hw::CopyDirection::kHostToDevice;
    case CopyKind::kDeviceToHost: return hw::CopyDirection::kDeviceToHost;
    case CopyKind::kDeviceToDevice: return hw::CopyDirection::kDeviceToDevice;
  }
  return hw::CopyDirection::kDeviceToDevice;
}

hw::GemmMath profile_math(MathMode math) { return math == MathMode::kTF32 ? hw::GemmMath::kTF32 : hw::GemmMath::kDefault; }

hw::DType profile_dtype(DType dtype) {
  switch (dtype) {
    case DType::kF16: return hw::DType::kFloat16;
    case DType::kBF16: return hw::DType::kBFloat16;
    case DType::kF64: return hw::DType::kFloat64;
    default: return hw::DType::kFloat32;
  }
}

const char* copy_kind_name(CopyKind kind) { return hw::to_string(profile_direction(kind)); }
const char* math_mode_name(MathMode math) { return hw::to_string(profile_math(math)); }

}  // namespace dpro::executor
