#pragma once
// Roofline: time = max(flops / peak FLOP/s(dtype), bytes / memory bandwidth) + a fixed
// launch overhead. No fitted constants: a baseline and the last fallback.
#include "costmodel/cost_model.h"

namespace dpro::costmodel {

// Fixed per-kernel overhead added to the roofline bound (kernel launch + ramp), in ms.
constexpr double kRooflineOverheadMs = 0.005;

// The roofline time in milliseconds; 0 when the op is not describable.
double roofline_ms(const OpDesc& op, const DeviceSpec& device);
// Arithmetic intensity (flops per DRAM byte) and the device's ridge point for the op's dtype.
double arithmetic_intensity(const OpDesc& op);
double ridge_point(const DeviceSpec& device, DType dtype);

class RooflineModel : public CostModel {
 public:
  std::string name() const override { return "roofline"; }
  std::optional<Nanos> predict(const OpDesc& op, const DeviceSpec& device) const override;
};

}  // namespace dpro::costmodel
