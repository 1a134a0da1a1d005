#pragma once
// Cross-device scaling of a duration measured on an origin GPU (after Habitat's wave
// scaling): the memory-bound share of the time scales with memory bandwidth, the
// compute-bound share with peak FLOP/s (SMs x cores x clock), split by
//   gamma = 1 - 0.5 I/R  (I <= R)   or   0.5 R/I  (I > R)
// where I is the op's arithmetic intensity and R the target's ridge point:
//   T_d = T_o (BW_o/BW_d)^gamma (P_o/P_d)^(1-gamma).
// Ops without a description scale by the bandwidth ratio (gamma = 1), Habitat's fallback.
#include "core/time.h"
#include "costmodel/device_spec.h"
#include "costmodel/op_desc.h"

namespace dpro::costmodel {

double scaling_gamma(const OpDesc& op, const DeviceSpec& target);
double scale_ms(const OpDesc& op, const DeviceSpec& origin, double origin_ms, const DeviceSpec& target);

}  // namespace dpro::costmodel
