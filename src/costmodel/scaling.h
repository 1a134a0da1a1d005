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
#include <optional>

#include "core/time.h"
#include "costmodel/hw.h"
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

// The range a kernel-time factor target/origin can physically take. Between two GPUs of the
// same chip (architecture, SMs, fp32 cores per SM and L2 alike: the same kernels run, with the
// same cache): from the smallest to the largest of the origin/target ratios of the resources
// a kernel is bound by (memory bandwidth, the peak of the op's arithmetic, the fp32 peak, SMs x
// clock, clock); a time that is any mix of parts each bound by one of them scales by a factor in
// between. So an H200 (an H100's chip with more bandwidth) never makes a kernel slower. Across
// chips kernels, caches, libraries' choices and sustained clocks differ and measured factors
// leave that range (clamping table (d) of docs/costmodel.md to it, an experiment not kept, took it
// from 9.9 to 23.3 % MAPE); what holds is that a GPU behind the origin in every one of these
// resources by more than kDominanceMargin does not run the op's kernel faster (a factor of 1 at
// least; above that, no bound). Without it a kernel near its op's floor took the ratio of the two
// measuring machines' host floors, and a V100 trace re-timed for a P4 (a third of its fp32 peak, a
// fifth of its bandwidth, 0.69 of its clock) ran its small GEMMs faster (docs/costmodel.md,
// "--device what-if").
//
// How far behind in every resource a GPU must be for the bound above: datasheet boost clocks
// overstate what a power-capped card sustains, and between GPUs closer than this the measured
// data go both ways (V100 PCIe against the A100 PCIe, 1,380 against 1,410 MHz and behind in
// everything else: 683 of the 2,837 fp32 bmms of 1 ms or more on the A100 ran faster on the V100);
// the P4, behind the P100, V100 and A100 by 1.23 or more, ran 22 of 26,491 such ops faster (the
// shared data's rows, latency less each GPU's overhead, `kernel_time.h`).
inline constexpr double kDominanceMargin = 1.15;
struct RatioRange {
  double low = 1, high = 1;
  double clamp(double ratio) const { return ratio < low ? low : ratio > high ? high : ratio; }
};
RatioRange physical_ratio_range(const OpDesc& op, const DeviceSpec& origin, const DeviceSpec& target);

// Whether two GPUs have one chip: architecture, SMs, fp32 cores per SM and L2 alike (H100 SXM and
// H200; A100 40 and 80 GB). The same kernels run on both, with the same cache; bandwidth and
// clocks may differ.
bool same_chip(const DeviceSpec& a, const DeviceSpec& b);

// Share of the L2 a working set is taken to be served from (no DRAM traffic): a quarter, chosen on
// the H100/H200 operator rows (docs/costmodel.md, "Same chip"; none, a quarter, half, all of it:
// 10.9 / 7.3 / 7.7 / 9.6 % H100 -> H200 with `costmodel retime`).
inline constexpr double kSameChipL2Share = 0.25;
// The DRAM share of the time of a kernel whose op is not described (no bytes): halfway, chosen on
// four H100 jobs predicted against their H200 captures (docs/costmodel.md, "Same chip").
inline constexpr double kSameChipUnknownShare = 0.5;

// The kernel-time factor target/origin between GPUs of one chip, from what the kernel moves, not
// from a model of either GPU (docs/costmodel.md, "Same chip"). An op at or above the ridge point
// of its arithmetic (flops / peak >= bytes / bandwidth on the origin), or a GEMM/convolution
// kernel of an undescribed op, scales by the ratio of that arithmetic's peaks (1 between an H100
// and an H200: measured 0.99-1.01 on 11,358 fp32 GEMMs and convolutions). Any other described op
// has a DRAM part of its time, the share its bytes beyond kSameChipL2Share of the L2 take at the
// origin's datasheet bandwidth (at most all of it), which scales by the bandwidth ratio; the rest
// (latency, L2, SMs) by the clock ratio. Other kernels of undescribed ops, and a GEMM or
// convolution op's kernels that are not its GEMM (cuDNN's layout transforms: none of its
// arithmetic, and bytes its shapes do not say): kSameChipUnknownShare of the time by the bandwidth
// ratio, the rest by the clock ratio. nullopt: the GPUs are not of one chip, or a ratio is not
// positive.
std::optional<double> same_chip_factor(const OpDesc& op, const DeviceSpec& origin, const DeviceSpec& target,
                                       double origin_kernel_ms);

}  // namespace dpro::costmodel
