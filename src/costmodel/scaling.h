#pragma once
// Cross-device scaling of a duration measured on an origin GPU (after Habitat's wave
// scaling): the memory-bound share of the time scales with memory bandwidth, the
// compute-bound share with peak FLOP/s (SMs x cores x clock), split by
//   gamma = 1 - 0.5 I/R  (I <= R)   or   0.5 R/I  (I > R)
// where I is the op's arithmetic intensity and R the target's ridge point:
//   T_d = T_o (BW_o/BW_d)^gamma (P_o/P_d)^(1-gamma).
// Ops without a description scale by the bandwidth ratio (gamma = 1), Habitat's fallback,
// unless their kernel's name says GEMM or convolution (is_gemm_or_conv_kernel): their
// intensity is not known but they are rarely memory-bound, so gamma = kGemmKernelGamma, half
// each (table (d) of docs/costmodel.md measures both on the data's GEMM and conv rows).
// Unlike Habitat, a fixed per-op overhead (launch and timing, which does not depend on the
// GPU) is kept out of the scaling: T_d = o + (T_o - o) * ratio with o = min(T_o, overhead).
// Without it, tiny ops measured at the ~24 us floor on a slow GPU are predicted at a few us
// on a fast one (and 8x too slow the other way). The --device what-if scales a trace's kernel
// times (no host overhead in them) by the same rule: there the fixed part keeps short kernels
// from following the full bandwidth or FLOP/s ratio, which table (d) of docs/costmodel.md
// measures as the better choice (a stand-in for Habitat's small-kernel rule).
#include "core/time.h"
#include "costmodel/device_spec.h"
#include "costmodel/op_desc.h"

namespace dpro::costmodel {

// The latency floor of the shared measurements: the smallest op on every one of the five
// GPUs takes 0.024 ms; a kernel launch + event timing costs about this much on any GPU.
constexpr double kFixedOverheadMs = 0.02;
// gamma of an op without a description whose kernel is a GEMM or a convolution.
constexpr double kGemmKernelGamma = 0.5;

double scaling_gamma(const OpDesc& op, const DeviceSpec& target);
// (BW_o/BW_d)^gamma (P_o/P_d)^(1-gamma): the factor of the part that scales.
double scaling_ratio(const OpDesc& op, const DeviceSpec& origin, const DeviceSpec& target);
double scale_ms(const OpDesc& op, const DeviceSpec& origin, double origin_ms, const DeviceSpec& target);

// The range a kernel-time factor target/origin can physically take between two GPUs of the
// same chip (architecture, SMs, fp32 cores per SM and L2 alike: the same kernels run, with the
// same cache): from the smallest to the largest of the origin/target ratios of the resources
// a kernel is bound by (memory bandwidth, the peak of the op's arithmetic, the fp32 peak, SMs x
// clock); a time that is any mix of parts each bound by one of them scales by a factor in
// between. So an H200 (an H100's chip with more bandwidth) never makes a kernel slower. Across
// chips kernels, caches and libraries' choices differ and measured factors leave that range
// (clamping table (d) of docs/costmodel.md to it, an experiment not kept, took it from 9.9 to
// 23.3 % MAPE): no bound.
struct RatioRange {
  double low = 1, high = 1;
  double clamp(double ratio) const { return ratio < low ? low : ratio > high ? high : ratio; }
};
RatioRange physical_ratio_range(const OpDesc& op, const DeviceSpec& origin, const DeviceSpec& target);

}  // namespace dpro::costmodel
