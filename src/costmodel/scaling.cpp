#include "costmodel/scaling.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "costmodel/roofline.h"

namespace dpro::costmodel {

double scaling_gamma(const OpDesc& op, const DeviceSpec& target) {
  if (!op.describable()) return is_gemm_or_conv_kernel(op.kernel_name) ? kGemmKernelGamma : 1.0;
  if (op.flops() <= 0) return 1.0;
  if (op.bytes() <= 0) return 0.0;
  const double i = arithmetic_intensity(op);
  const double r = ridge_point(target, op.dtype);
  return i <= r ? 1.0 - 0.5 * i / r : 0.5 * r / i;
}

double scaling_ratio(const OpDesc& op, const DeviceSpec& origin, const DeviceSpec& target) {
  const double gamma = scaling_gamma(op, target);
  const double bw = origin.memory_bandwidth_gbs / target.memory_bandwidth_gbs;
  const double peak = origin.peak_flops(op.dtype) / target.peak_flops(op.dtype);
  return std::pow(bw, gamma) * std::pow(peak, 1.0 - gamma);
}

double scale_ms(const OpDesc& op, const DeviceSpec& origin, double origin_ms, const DeviceSpec& target) {
  const double fixed = std::min(origin_ms, kFixedOverheadMs);
  return fixed + (origin_ms - fixed) * scaling_ratio(op, origin, target);
}

RatioRange physical_ratio_range(const OpDesc& op, const DeviceSpec& origin, const DeviceSpec& target) {
  const RatioRange unbounded{0, std::numeric_limits<double>::infinity()};
  const double ratios[] = {origin.memory_bandwidth_gbs / target.memory_bandwidth_gbs,
                           origin.peak_flops(op.dtype) / target.peak_flops(op.dtype),
                           origin.peak_flops(DType::kFloat32) / target.peak_flops(DType::kFloat32),
                           (origin.sms * origin.boost_clock_mhz) / (target.sms * target.boost_clock_mhz),
                           origin.boost_clock_mhz / target.boost_clock_mhz};
  RatioRange range{ratios[0], ratios[0]};
  for (double r : ratios) {
    if (!(r > 0) || !std::isfinite(r)) return unbounded;
    range.low = std::min(range.low, r);
    range.high = std::max(range.high, r);
  }
  if (!same_chip(origin, target)) {
    range.high = unbounded.high;
    range.low = range.low >= kDominanceMargin ? 1.0 : 0.0;
  }
  return range;
}

bool same_chip(const DeviceSpec& a, const DeviceSpec& b) {
  return a.architecture == b.architecture && a.sms == b.sms && a.fp32_cores_per_sm == b.fp32_cores_per_sm &&
         a.l2_cache_mb == b.l2_cache_mb;
}

std::optional<double> same_chip_factor(const OpDesc& op, const DeviceSpec& origin, const DeviceSpec& target,
                                       double origin_kernel_ms) {
  if (!same_chip(origin, target) || !(origin_kernel_ms > 0)) return std::nullopt;
  const double peak = origin.peak_flops(op.dtype) / target.peak_flops(op.dtype);
  const double clock = origin.boost_clock_mhz / target.boost_clock_mhz;
  const double bandwidth = origin.memory_bandwidth_gbs / target.memory_bandwidth_gbs;
  if (!(peak > 0) || !(clock > 0) || !(bandwidth > 0)) return std::nullopt;
  const double halfway = kSameChipUnknownShare * bandwidth + (1 - kSameChipUnknownShare) * clock;
  const bool gemm_kernel = is_gemm_or_conv_kernel(op.kernel_name);
  if (!op.describable()) return gemm_kernel ? peak : halfway;
  // A GEMM or convolution op's other kernels (cuDNN's layout transforms, a split-K reduction)
  // move data its shapes do not say, and do none of its arithmetic: as undescribed kernels.
  const bool gemm_op =
      op.family == OpFamily::kBmm || op.family == OpFamily::kLinear || op.family == OpFamily::kConv2d;
  if (gemm_op && !op.kernel_name.empty() && !gemm_kernel) return halfway;
  const double bytes = op.bytes(), flops = op.flops();
  if (flops > 0 && flops / origin.peak_flops(op.dtype) >= bytes / origin.bandwidth_bytes_per_s()) return peak;
  const double dram = std::max(0.0, bytes - kSameChipL2Share * origin.l2_cache_mb * 1e6);
  const double m = std::min(1.0, dram / origin.bandwidth_bytes_per_s() / (origin_kernel_ms * 1e-3));
  return m * bandwidth + (1 - m) * clock;
}

}  // namespace dpro::costmodel
