#pragma once
// Few-shot for the roofline-share model (roofline_share.h; issue 36, deliverable 3): a GPU and
// its machine enter through a few explicit scalars fitted on a handful of ops measured there,
// the share curves (the prior) staying as they are:
//
//   - the machine's host overhead and host floor (ms), what every host-timed latency carries,
//     and a scale of the prior's kernel floors (1, 1/2, 1/4 or 1/10: fitted with the host, as
//     only their sum shows in the smallest ops);
//   - per family group (GEMM-like bmm/linear, conv, ln/softmax, elementwise), and per family
//     where it has samples enough, a sustained-share multiplier m: kernel ms = max(kernel floor,
//     roofline ms / (share x m)); with samples enough, log m follows log roofline time on a line
//     (held flat beyond the samples' range): a GPU whose large GEMMs sustain more than its small
//     ones, against the prior, is not one scalar.
//
// A sample's kernel time (a Kernel Time column, a device profile's kernel) is what the
// multipliers and the kernel floors' scale read where it has one; its latency what the host
// figures read (fit_device_scalars).
//
// The fit is robust: it minimises the sum of |log(predicted / measured)| over the samples (where
// the floors do not bind, a multiplier is then the median of its rows' log ratios): the host
// figures over a grid, when there are small elementwise samples to read them from (bounded by
// the fastest of them), with at each grid point every group's multiplier on its own rows; then,
// the host fixed, each multiplier (and its slope) on its own rows. A group with fewer than
// `min_group_rows` samples keeps the prior (m = 1), and the fit says so in its notes; so do the
// host figures without `min_host_rows` small elementwise samples.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "costmodel/dataset.h"
#include "costmodel/roofline_share.h"

namespace dpro::costmodel {

enum class ShareGroup { kGemm, kConv, kNorm, kElementwise };
ShareGroup share_group(OpFamily family);
const char* to_string(ShareGroup group);  // "GEMM (bmm, linear)", ...

// One fitted multiplier: a family group's (every family of the group that has none of its own)
// or one family's (with at least DeviceFitOptions::min_family_rows samples).
struct FittedShare {
  std::string label;  // "GEMM (bmm, linear)", "linear", ...
  std::vector<OpFamily> families;
  std::size_t rows = 0;
  ShareMultiplier multiplier;
};

// One GEMM kernel class's multiplier (ShareTable::kernel_class_log10), on top of its rows'
// family multiplier: log10 = the class's fitted level x rows / (rows + shrink rows).
struct FittedKernelClass {
  std::string kernel_class;  // gemm_kernel_class
  std::size_t rows = 0;
  double log10_fitted = 0, log10 = 0;  // before and after the shrinkage
};

struct DeviceScalars {
  double host_overhead_ms = 0, host_floor_ms = 0;
  double kernel_floor_scale = 1;           // of the prior's kernel floors (fitted with the host)
  bool host_fitted = false;                // false: the prior's host figures
  bool kernel_floor_fitted = false;        // the scale fitted (with the host, or on kernel times)
  double min_kernel_floor_ms = 0;          // DeviceFitOptions::min_kernel_floor_ms
  std::vector<FittedShare> shares;         // groups first, then families (which override them)
  std::map<ShareGroup, std::size_t> rows;  // samples per group
  std::vector<FittedKernelClass> kernel_classes;
  std::vector<std::string> notes;          // what kept the prior, and why
};

struct DeviceFitOptions {
  std::size_t min_group_rows = 3;   // samples a group needs for its own multiplier
  std::size_t min_family_rows = 6;  // samples a family needs for a multiplier of its own
  std::size_t min_slope_rows = 6;   // samples a multiplier needs to follow the roofline time too
  // Elementwise samples faster than this many prior host floors read the host; the host figures
  // are fitted when there are at least min_host_rows of them.
  double host_rows_below_floors = 4.0;
  std::size_t min_host_rows = 3;
  // GEMM kernel classes (gemm_kernel_class of bmm/linear samples whose Kernel Name is recorded):
  // a class with at least this many samples gets a multiplier of its own on top of its family's,
  // shrunk toward the family's (x1) as rows / (rows + kernel_class_shrink_rows); a class with
  // fewer is pooled into its family. 0: no class multipliers.
  std::size_t min_kernel_class_rows = 0;
  double kernel_class_shrink_rows = 0;
  // No kernel takes less than this (ms): a device profile's empty-kernel GPU time
  // (share_profile.h). The kernel floors (the prior's x the fitted scale) are held at or above
  // it, in the fit and in with_device_scalars; 0: no bound.
  double min_kernel_floor_ms = 0;
  // A sample with both a latency and a Kernel Time fits the multipliers on its kernel time (and
  // the host on its latency); false: on its latency, as before kernel times were read (`few-shot-shares
  // --latency-only`, for comparison). A sample with a kernel time alone is read as one either way.
  bool read_kernel_time = true;
};

// Fits the scalars of `device` on `samples`, each measured on it: Measurement::latency_ms, the
// host-timed latency, and/or Measurement::kernel_ms, the kernel's GPU time (a Kernel Time column;
// a device profile's kernel, latency 0: share_profile.h). The multipliers read a sample's kernel
// time where it has one (priced as the kernel alone: roofline / (share x m), at least the kernel
// floor, no host), else its latency; the host figures read the latencies (all of them, each group
// at its best level; bounded by the small elementwise ones), and the kernel floors' scale the
// latencies with the host and the kernel times. A sample with no Kernel Time fits as it did
// before kernel times were read. `prior` gives the curves and the host figures the fit starts from.
// Throws InputError when `samples` is empty or a sample's device is not `device`.
DeviceScalars fit_device_scalars(const ShareTable& prior, const std::vector<const Measurement*>& samples,
                                 const DeviceSpec& device, const DeviceFitOptions& options = {});

// `prior` with the scalars applied: its host figures replaced where fitted, each fitted group's
// families' share multiplied, its kernel floors scaled (and held at min_kernel_floor_ms).
ShareTable with_device_scalars(const ShareTable& prior, const DeviceScalars& scalars);

// One line per scalar, for a command's stderr ("host overhead 12.3 us (fitted on 14 rows)", ...).
std::vector<std::string> describe(const DeviceScalars& scalars);
std::string describe(const ShareMultiplier& multiplier);

// Which of `ops` (describable, priced on `device`) to measure: `n` in all, as evenly as the
// rows allow over the family groups present, and within a group spread over the op's roofline
// time on `device` (the group's rows sorted by it, cut into equal strata, one row drawn from
// each with `seed`). Indices into `ops`, ascending. Fewer than `n` when `ops` has fewer.
std::vector<std::size_t> pick_share_samples(const std::vector<OpDesc>& ops, const DeviceSpec& device, std::size_t n,
                                            std::uint64_t seed);

}  // namespace dpro::costmodel
