#include "costmodel/roofline.h"

#include <algorithm>

namespace dpro::costmodel {

double roofline_ms(const OpDesc& op, const DeviceSpec& device) {
  if (!op.describable()) return 0;
  const double compute_s = op.flops() / device.peak_flops(op.dtype);
  const double memory_s = op.bytes() / device.bandwidth_bytes_per_s();
  return std::max(compute_s, memory_s) * 1e3 + kRooflineOverheadMs;
}

double arithmetic_intensity(const OpDesc& op) {
  const double b = op.bytes();
  return b > 0 ? op.flops() / b : 0;
}

double ridge_point(const DeviceSpec& device, DType dtype) {
  return device.peak_flops(dtype) / device.bandwidth_bytes_per_s();
}

std::optional<Nanos> RooflineModel::predict(const OpDesc& op, const DeviceSpec& device) const {
  if (!op.describable()) return std::nullopt;
  return millis_to_nanos(roofline_ms(op, device));
}

}  // namespace dpro::costmodel
