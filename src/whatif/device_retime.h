#pragma once
// Device re-timing: every GPU op of a workload re-timed as if it ran on another GPU, priced by
// costmodel::Pricer (the same chip by what a kernel moves; the learned model for ops it can
// describe; cross-device scaling for the rest). Collectives (at their transfer time), host<->device
// copies and ops whose origin GPU the catalog does not know keep their measured times.
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "costmodel/hw.h"
#include "costmodel/learned_model.h"
#include "costmodel/pricer.h"
#include "whatif/workload.h"

namespace dpro::whatif {

struct DeviceRetime {
  std::string device;         // target GPU (a name or alias of the catalog)
  std::string origin_device;  // GPU the trace ran on, over what it records ("": what it records)
  std::string model_path;     // learned cost model file
  std::string device_dir;     // directory of GPU spec files
  std::string samples_path;   // ops measured on the target (few-shot correction; "": none)
  // A device profile of the target (hw/device_profile.h; "": none; it must apply to `device`:
  // hw::require_profile_applies): copies whose direction it measured (host to device, device to
  // host, device to device) and whose bytes the trace records take its fit, latency + bytes /
  // bandwidth, in place of their rule (host copies keep their time, device copies are priced by
  // the cost model).
  std::string device_profile;
  // Which model prices described kernels: "learned" (kernel-time factor of the learned model) or
  // "roofline-share" (kernel-time ratio of the share table at shares_path, "": the shipped one;
  // the learned model and LibTorch are not loaded). costmodel::parse_pricer_kind names them.
  std::string pricer = "learned";
  std::string shares_path;
  // Ops measured on the GPU(s) the trace ran on (roofline-share only; "": none): each GPU's share
  // scalars fitted on its rows (costmodel::fit_device_scalars, as the target's on samples_path)
  // price the origin's side of the ratio for the trace's ops on that GPU; the others keep the prior.
  std::string origin_samples_path;
};

// What the rewrite did, per rule (costmodel::PricedBy), and what a report says about it.
struct DeviceChange {
  std::string target;  // catalog name of the target GPU
  costmodel::PricerKind pricer = costmodel::PricerKind::kLearned;
  std::string shares_path;  // the share table that priced, with the roofline-share pricer
  std::optional<costmodel::DevicePricing> pricing;  // how the learned model saw the target, when it priced an op
  costmodel::PricingCoverage coverage;              // GPU ops per rule, measured and predicted time
  std::size_t undescribable_kernels = 0;
  // Of those: ops the model knows whose shapes the trace did not record; kernels no CPU op
  // launched (and whether one is in a dpro-profile capture, which has CPU ops only from emit_nvtx
  // ranges); kernels the same-chip rule priced (the rest by scaling).
  std::size_t without_shapes = 0;
  std::size_t without_cpu_op = 0;
  bool without_cpu_op_in_capture = false;
  std::size_t undescribable_same_chip = 0;
  // Kernels without a launching CPU op described by a like step's (launchers_from_like_steps),
  // of them those the learned model priced, and the steps that lent them.
  std::size_t like_step_kernels = 0, like_step_learned = 0;
  std::vector<std::string> like_step_lenders;
  std::size_t like_ops = 0;  // learned-model ops priced as a like family (sigmoid as tanh, ...)
  // Ops on a GPU the catalog does not know, and what their ranks recorded ("'NAME'", or "none recorded").
  // Kernels priced with the peak of the arithmetic their names say, by dtype: count, the
  // target's peak for it (TFLOP/s), whether that is above its fp32 peak (arithmetic of its own).
  struct MathMode {
    std::size_t kernels = 0;
    double target_peak_tflops = 0;
    bool native_on_target = false;
  };
  std::map<costmodel::DType, MathMode> math;
  // Undescribable kernels by the name of their launching op (or kernel): count, measured time.
  std::map<std::string, std::pair<std::size_t, Nanos>> undescribed;
  std::size_t samples_used = 0;  // --device-samples rows: the learned model's correction, or the share fit's
  // With the roofline-share pricer and samples: the fitted scalars of the target, one line each
  // (costmodel::describe(DeviceScalars)).
  std::vector<std::string> share_fit;
  // With origin samples (DeviceRetime::origin_samples_path), per GPU of their rows (catalog name):
  // the rows it was fitted on and its scalars, as share_fit's.
  struct OriginFit {
    std::size_t samples = 0;
    std::vector<std::string> share_fit;
  };
  std::map<std::string, OriginFit> origin_fits;
  // Origin samples of GPUs the trace's re-timed ops did not run on: rows per GPU (fitted nothing).
  std::map<std::string, std::size_t> origin_unused;
  std::map<std::string, double> overheads_ms;  // "target" / "origin <GPU>" -> overhead taken out (ms)
  // --origin-device over a GPU the trace records: the trace file, the recorded name and its catalog
  // name (once per recorded name).
  struct OriginOverride {
    std::string file, recorded, catalog_name;
  };
  std::vector<OriginOverride> origin_overrides;
  std::string forced_origin;  // catalog name of origin_device, when given
  // Copies re-timed from the device profile, by its figure ("copy h2d"): count and summed time
  // before -> after. They are not in `coverage`.
  struct ProfiledCopies {
    std::size_t copies = 0;
    Nanos before = 0, after = 0;
  };
  std::map<std::string, ProfiledCopies> copies_from_profile;
  // Why the learned model is not available (no LibTorch in this build, its plugin missing); "" when
  // it is. Without it kernels are priced by scaling only.
  std::string learned_unavailable;

  // Undescribable kernels by launching op, the most measured time first.
  std::vector<std::pair<std::string, std::pair<std::size_t, Nanos>>> sorted_undescribed() const;
};

// The catalog entry of the GPU that the node's rank recorded (its device properties; the device
// the node's event names when the rank recorded several); nullptr when the rank recorded none or
// the catalog does not know it.
const costmodel::DeviceSpec* origin_of(const costmodel::DeviceCatalog& catalog, const trace::TraceSet& traces,
                                       const graph::Node& n);

// Re-times the workload's GPU ops in place. Throws OptionError for an unknown device name
// ("device", "origin_device"), an unknown pricer ("pricer"), samples with the learned pricer and
// no learned model ("device_samples") and for GPU ops whose GPU the catalog does not know and no
// origin_device names ("origin_device": they could not be re-timed), InputError for bad spec,
// model, share-table or sample files.
DeviceChange device_retime(Workload& workload, const DeviceRetime& options);

}  // namespace dpro::whatif
