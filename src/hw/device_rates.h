#pragma once
// The rates the what-ifs price re-timed GPU work at, in one lookup: each figure is the pricer's
// prior (a datasheet peak, a bandwidth measured on the trace's own kernels, a constant) unless a
// device profile of that GPU (hw/device_profile.h, `dpro-exec calibrate`) measured it. Pricers ask
// this lookup for a figure and get the measured one with its name, or nothing (then they keep
// their prior and say so); the names of the measured figures they used go into their reports.
//
// What the profile answers (all for the GPU it was calibrated on):
//   gemm_flops(math, call_flops): FLOP/s of a GEMM at arithmetic `math` (fp32, tf32 = fp32 operands
//     on TF32 tensor cores, fp16, bf16, fp64) of about `call_flops` FLOPs: the profile's sample of
//     that dtype and math mode whose FLOPs per call are nearest on a log scale (the traces' shapes
//     when `calibrate` was given them; its default shapes otherwise); without `call_flops`, the
//     sample of the most FLOPs (the GEMM's sustained rate);
//   elementwise_bytes_per_ns(): memory-bound kernels' bandwidth, from the fp32 -> bf16 cast's
//     (else fp16's) fitted slope, 6 bytes moved per element (read 4, write 2); none when the fit
//     found no positive slope;
//   kernel(name, param): a cast or compression kernel's fit (latency + elements x slope), the curve
//     of that name whose param is nearest (top-k/random-k density, PowerSGD rank);
//   copy(direction): the copy fit of that direction (latency + bytes / bandwidth), when it found a
//     bandwidth; launch_ns(): the empty kernel's GPU time.
// Thread-safe: const after construction (the optimizer prices from several threads).
#include <memory>
#include <optional>
#include <string>

#include "hw/device_profile.h"
#include "hw/device_spec.h"

namespace dpro::hw {

// A figure taken from the profile, with the name a report shows ("gemm bf16/default").
template <typename T>
struct Measured {
  T value{};
  std::string figure;
};

// A copy's fitted time: latency_ns + bytes / bytes_per_ns.
struct CopyFit {
  double latency_ns = 0;
  double bytes_per_ns = 0;  // > 0
  double ns(double bytes) const { return latency_ns + bytes / bytes_per_ns; }
};

// A kernel's fitted time: latency_ns + elements x ns_per_element.
struct KernelFit {
  double latency_ns = 0;
  double ns_per_element = 0;
  double param = 0;  // of the curve chosen
  double ns(double elements) const { return latency_ns + elements * ns_per_element; }
};

class DeviceRates {
 public:
  DeviceRates() = default;  // no profile: every lookup answers nothing
  explicit DeviceRates(std::shared_ptr<const DeviceProfile> profile) : profile_(std::move(profile)) {}

  bool profiled() const { return profile_ != nullptr; }
  const DeviceProfile* profile() const { return profile_.get(); }

  std::optional<Measured<double>> gemm_flops(DType math, std::optional<double> call_flops) const;  // FLOP/s
  std::optional<Measured<double>> elementwise_bytes_per_ns() const;
  std::optional<Measured<KernelFit>> kernel(const std::string& name, double param = 0) const;
  std::optional<Measured<CopyFit>> copy(CopyDirection direction) const;
  std::optional<Measured<double>> launch_ns() const;  // GPU time of an empty kernel

 private:
  std::shared_ptr<const DeviceProfile> profile_;
};

// The rates for pricing work on the GPU `priced` names (--device's, else the trace's recorded
// GPUs) from the profile at `path` ("" = no profile: a lookup with priors only, nothing checked).
// Throws InputError naming the file for an unreadable or malformed profile, and (item "device")
// for one that does not apply to the priced GPU: require_profile_applies (hw/device_profile.h),
// the one rule, with `catalog` resolving names and aliases.
DeviceRates load_device_rates(const std::string& path, const PricedGpu& priced, const DeviceCatalog& catalog);

}  // namespace dpro::hw
