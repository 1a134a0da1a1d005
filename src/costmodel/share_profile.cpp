#include "costmodel/share_profile.h"

#include <algorithm>

#include <fmt/format.h>

namespace dpro::costmodel {

namespace {

Measurement kernel_sample(OpFamily family, std::string name, std::vector<std::int64_t> dims, double ns,
                          const DeviceSpec& device) {
  Measurement m;
  m.op.family = family;
  m.op.name = std::move(name);
  m.op.dims = std::move(dims);
  m.op.dtype = DType::kFloat32;
  m.device = &device;
  m.latency_ms = 0;  // timed on the GPU alone: share_device_fit.h prices it without the host
  m.kernel_ms = ns * 1e-6;
  return m;
}

}  // namespace

ProfileSamples share_samples_from_profile(const hw::DeviceProfile& profile, const DeviceSpec& device) {
  ProfileSamples out;
  std::size_t gemms = 0, other_math = 0;
  for (const hw::GemmSample& g : profile.gemms) {
    if (g.dtype != DType::kFloat32 || g.math != hw::GemmMath::kDefault) {
      ++other_math;
      continue;
    }
    if (!(g.ns > 0) || g.m < 1 || g.n < 1 || g.k < 1 || g.batch < 1) continue;
    const bool batched = g.batch > 1;
    out.samples.push_back(kernel_sample(batched ? OpFamily::kBmm : OpFamily::kLinear, batched ? "bmm" : "linear",
                                        {g.batch, g.m, g.n, g.k}, static_cast<double>(g.ns), device));
    ++gemms;
  }
  out.notes.push_back(fmt::format("gemms: {} fp32 sample{} as GEMM samples{}", gemms, gemms == 1 ? "" : "s",
                                  other_math ? fmt::format(", {} of other arithmetic left out (the prior's GEMM "
                                                           "curves are fp32's)", other_math)
                                             : std::string()));
  std::size_t casts = 0, small = 0;
  for (const hw::KernelCurve& c : profile.kernels) {
    if (c.kernel != hw::kCastToBf16Kernel && c.kernel != hw::kCastToFp16Kernel) continue;
    for (const hw::KernelSample& s : c.samples) {
      // Large points only: the streamed part (elements x the fit's slope) at least half the
      // point's time (not the fit's intercept, which a fit through the origin sets to 0).
      if (!(s.ns > 0) || s.elements < 4 || !(c.ns_per_element > 0) ||
          static_cast<double>(s.elements) * c.ns_per_element < 0.5 * static_cast<double>(s.ns)) {
        ++small;
        continue;
      }
      const std::int64_t relu_elements = s.elements / 4 * 3;  // the cast's 6 bytes per element, as relu's 8
      out.samples.push_back(kernel_sample(OpFamily::kRelu, "relu", {1, relu_elements}, static_cast<double>(s.ns), device));
      ++casts;
    }
  }
  out.notes.push_back(fmt::format("casts: {} large point{} as elementwise samples (relu of the same bytes), {} "
                                  "smaller left out (mostly the kernel's fixed latency)",
                                  casts, casts == 1 ? "" : "s", small));
  if (profile.launch.launches > 0 && profile.launch.gpu_ns_per_launch > 0) {
    out.min_kernel_floor_ms = profile.launch.gpu_ns_per_launch * 1e-6;
    out.notes.push_back(fmt::format("launch: the empty kernel's {:.2f} us bounds the kernel floors from below; its "
                                    "host time per launch is not the host overhead of an op (not used)",
                                    profile.launch.gpu_ns_per_launch * 1e-3));
  }
  return out;
}

ProfileSamples load_share_profile(const std::string& path, const DeviceSpec& device, const DeviceCatalog& catalog) {
  const hw::DeviceProfile profile = hw::read_device_profile(path);
  hw::require_profile_applies(path, profile, {device.name, {}}, catalog);
  return share_samples_from_profile(profile, device);
}

void append_samples(std::vector<const Measurement*>& into, const ProfileSamples& p) {
  for (const Measurement& m : p.samples) into.push_back(&m);
}

}  // namespace dpro::costmodel
