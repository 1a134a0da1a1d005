#include "hw/device_rates.h"

#include <cmath>
#include <cstdio>
#include <limits>

namespace dpro::hw {
namespace {

// Bytes a cast of one fp32 element to 16 bits moves: read 4, write 2.
constexpr double kCastBytesPerElement = 6;

// The profile's (operand dtype, math mode) of a GEMM at arithmetic `math`; nullopt for one the
// profile does not measure (int8, fp8).
std::optional<std::pair<DType, GemmMath>> profile_key(DType math) {
  switch (math) {
    case DType::kFloat32: return std::pair{DType::kFloat32, GemmMath::kDefault};
    case DType::kTensorFloat32: return std::pair{DType::kFloat32, GemmMath::kTF32};
    case DType::kFloat16:
    case DType::kBFloat16:
    case DType::kFloat64: return std::pair{math, GemmMath::kDefault};
    default: return std::nullopt;
  }
}

double gemm_flops_of(const GemmSample& g) {
  return 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k) *
         static_cast<double>(g.batch);
}

}  // namespace

std::optional<Measured<double>> DeviceRates::gemm_flops(DType math, std::optional<double> call_flops) const {
  const auto key = profile_key(math);
  if (!profile_ || !key) return std::nullopt;
  const GemmSample* best = nullptr;
  double best_distance = std::numeric_limits<double>::infinity();
  for (const GemmSample& g : profile_->gemms) {
    if (g.dtype != key->first || g.math != key->second || g.tflops <= 0) continue;
    // Without a size, the largest sample wins: the smallest "distance" is the most FLOPs.
    const double distance = call_flops ? std::abs(std::log(gemm_flops_of(g)) - std::log(std::max(*call_flops, 1.0)))
                                       : -gemm_flops_of(g);
    if (distance < best_distance) best = &g, best_distance = distance;
  }
  if (!best) return std::nullopt;
  return Measured<double>{best->tflops * 1e12, std::string("gemm ") + to_string(key->first) + "/" + to_string(key->second)};
}

std::optional<Measured<double>> DeviceRates::elementwise_bytes_per_ns() const {
  for (const char* cast : {kCastToBf16Kernel, kCastToFp16Kernel})
    if (const auto fit = kernel(cast); fit && fit->value.ns_per_element > 0)
      return Measured<double>{kCastBytesPerElement / fit->value.ns_per_element, "elementwise bandwidth (" + fit->figure + ")"};
  return std::nullopt;
}

std::optional<Measured<KernelFit>> DeviceRates::kernel(const std::string& name, double param) const {
  if (!profile_) return std::nullopt;
  const KernelCurve* best = nullptr;
  for (const KernelCurve& c : profile_->kernels)
    if (c.kernel == name && (!best || std::abs(c.param - param) < std::abs(best->param - param))) best = &c;
  if (!best) return std::nullopt;
  std::string figure = name;
  if (best->param != 0) {
    char text[32];
    std::snprintf(text, sizeof text, ":%g", best->param);
    figure += text;
  }
  return Measured<KernelFit>{{best->latency_ns, best->ns_per_element, best->param}, figure};
}

std::optional<Measured<CopyFit>> DeviceRates::copy(CopyDirection direction) const {
  if (!profile_) return std::nullopt;
  for (const CopyCurve& c : profile_->copies)
    if (c.kind == direction && c.bandwidth_gbps > 0)
      return Measured<CopyFit>{{c.latency_ns, c.bandwidth_gbps}, std::string("copy ") + to_string(direction)};
  return std::nullopt;
}

std::optional<Measured<double>> DeviceRates::launch_ns() const {
  if (!profile_ || profile_->launch.launches == 0) return std::nullopt;
  return Measured<double>{profile_->launch.gpu_ns_per_launch, "launch"};
}

DeviceRates load_device_rates(const std::string& path, const PricedGpu& priced, const DeviceCatalog& catalog) {
  if (path.empty()) return {};
  auto profile = std::make_shared<DeviceProfile>(read_device_profile(path));
  require_profile_applies(path, *profile, priced, catalog);
  return DeviceRates(std::move(profile));
}

}  // namespace dpro::hw
