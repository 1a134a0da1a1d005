#pragma once
// The hardware the cost models price ops on: the catalog's GPU specs and dtypes (hw/device_spec.h),
// named in this namespace as the cost models have always named them.
#include "hw/device_spec.h"

namespace dpro::costmodel {

using hw::DeviceCatalog;
using hw::DeviceSpec;
using hw::DType;
using hw::dtype_bytes;
using hw::kKnownDtypes;
using hw::parse_device_spec;
using hw::parse_dtype;
using hw::to_string;

}  // namespace dpro::costmodel
