#pragma once
// The device profile calibrate() (calibration.h) measures: its format, file reading and writing
// live in hw/device_profile.h (the cost models read it too); here, the executor's names for it and
// the conversions from the executor's launch types to the profile's.
#include "executor/device.h"
#include "hw/device_profile.h"

namespace dpro::executor {

using hw::CopyCurve;
using hw::CopySample;
using hw::DeviceProfile;
using hw::device_profile_json;
using hw::GemmSample;
using hw::KernelCurve;
using hw::KernelSample;
using hw::LaunchCost;
using hw::LinearFit;
using hw::parse_device_profile;
using hw::read_device_profile;
using hw::StandinError;
using hw::write_device_profile;

hw::CopyDirection profile_direction(CopyKind kind);
hw::GemmMath profile_math(MathMode math);
// fp32, fp16, bf16, fp64 -> the hw dtype; other types (integers) have no GEMM in the profile.
hw::DType profile_dtype(DType dtype);

const char* copy_kind_name(CopyKind kind);  // "h2d", "d2h", "d2d"
const char* math_mode_name(MathMode math);  // "default", "tf32"

}  // namespace dpro::executor
