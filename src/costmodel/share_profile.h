#pragma once
// A device profile (hw/device_profile.h: what `dpro-exec calibrate` measured on one GPU) as
// few-shot samples of the roofline-share model (share_device_fit.h; issue 36, deliverable 3):
// the same sample form `--device-samples` gives the fit, so one fit serves both, alone or
// together. Each sample is timed on the GPU alone (Measurement::latency_ms 0, kernel_ms the
// profile's median ns): the fit prices it without the host.
//
//   - gemms, fp32 operands without TF32 (the prior's GEMM curves are fp32's: the shared data ran
//     fp32, TF32 off): each shape a GEMM-group sample, `linear` (B 1, M m, N n, K k) for batch 1,
//     `bmm` (B batch) otherwise; the other arithmetics are left out, and a note says so;
//   - the fp32 -> bf16 and fp32 -> fp16 cast curves, their large points only (the streamed part,
//     elements x the fit's ns per element, at least half the point's time): each an
//     elementwise-group sample of the same bytes, a `relu` of 3/4 as many fp32 elements (a cast
//     reads 4 bytes and writes 2 per element, relu 4 and 4);
//   - launch.gpu_ns_per_launch, the empty kernel's GPU time: min_kernel_floor_ms, a lower bound
//     of every kernel floor.
// The host (overhead and floor of host-timed latencies) is not in a profile: it times kernels
// on the GPU, and its host_ns_per_launch is the launch call alone, not the framework's dispatch
// around an op; the host figures stay the prior's or those fitted on measured samples.
#include <string>
#include <vector>

#include "costmodel/dataset.h"
#include "hw/device_profile.h"

namespace dpro::costmodel {

struct ProfileSamples {
  std::vector<Measurement> samples;  // kernel-timed; device = the target
  double min_kernel_floor_ms = 0;    // the empty kernel's GPU time; 0 when not measured
  std::vector<std::string> notes;    // what became samples, what was left out and why
};

// Samples of `device` (the GPU the profile was calibrated on: the caller checks) from `profile`.
ProfileSamples share_samples_from_profile(const hw::DeviceProfile& profile, const DeviceSpec& device);

// Reads the profile at `path` and converts it. Throws InputError naming the file (and the key)
// for an unreadable or malformed profile, and (item "device") for one that does not apply to
// `device` (--device): hw::require_profile_applies, the rule every profile reader follows.
ProfileSamples load_share_profile(const std::string& path, const DeviceSpec& device, const DeviceCatalog& catalog);

// Pointers to `p.samples`, for fit_device_scalars (appended to `into`).
void append_samples(std::vector<const Measurement*>& into, const ProfileSamples& p);

}  // namespace dpro::costmodel
