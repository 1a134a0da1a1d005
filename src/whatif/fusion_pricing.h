#pragma once
// The price of one fused chain of GPU kernels: XLA's open GPU performance model
// (openxla/xla gpu_performance_model), calibrated on the trace's own kernels, no fitted constant.
//
//   memory  = bytes the fused kernel moves / the device's effective bandwidth
//   compute = the parts' flops / the device's effective FLOP rate
//   exec    = compute + memory - 0.95 * min(compute, memory)
//   fused   = clamp(exec, the device's shortest kernel, the sum of the parts' replay durations)
//
// Bytes: the parts' own (costmodel::OpDesc::bytes, from the shapes of the CPU ops that launched
// them) less what fusion keeps on chip. Each part after the first is taken to consume the
// output of the part before it (a chain of elementwise kernels on one stream), that
// intermediate being the smaller of the producer's written bytes and the consumer's read bytes;
// it is written once and read once, so fusion saves twice its size (once with
// `intermediates_kept`: a training step keeps forward activations for its backward pass, so
// only the re-read goes). The fused kernel moves at least what its largest part moves.
//
// Rates, per (rank, device): bandwidth = the median achieved bytes/ns of the device's
// memory-bound kernels (elementwise, activation and normalisation families) whose bytes are
// known; FLOP rate = the highest achieved flops/ns among them, what the device proved it
// computes on its vector units (not its tensor cores) while moving memory: their median would be
// a memory rate in disguise, and a chain's compute would then count its traffic again.
// Durations are replay durations (what a preceding device re-timing set), so a re-timed
// workload is priced on its target.
//
// Fallback, when a part has no byte count (no shapes recorded, an unknown op family) or its
// device has no calibrated bandwidth: fused = the longest part + kFallbackRestShare x the other
// parts. A unary elementwise op that reads its producer's output saves half its traffic fused
// (its read; its write stays), a binary one a third; 1/2 is the unary case, and the kernel
// launch gaps between the parts go in every case.
// GEMM epilogues (price_epilogue; op_fusion.h says which are legal): the GEMM keeps its own replay
// duration, and the epilogue steps add what they still move beyond what the GEMM moves, at the
// same calibrated bandwidth:
//
//   epilogue bytes = sum over steps i of  bytes(i) - reuse x min(written(i-1), read(i))
//   fused          = clamp(GEMM + epilogue bytes / bandwidth, GEMM, the sum of the parts)
//
// with step 0 the GEMM (written: its output) and reuse as above (2: the intermediate is neither
// written nor re-read; 1 with `intermediates_kept`: cuBLASLt's _AUX epilogues still store the
// pre-activation for the backward pass, only its re-read goes). A gelu step then costs nothing
// (2) or its output's write (1); a bias step the bias vector's read. The epilogue's arithmetic
// is taken as free: a few flops per output element against the GEMM's 2K. Fallback (a step or
// the device not described): GEMM + kFallbackRestShare x the steps' replay durations.
//
// With a device profile of the GPU (hw/device_rates.h; FusionDevice, load_fusion_rates) its
// measured figures replace two of these priors:
//   bandwidth: the profile's elementwise bandwidth (6 bytes per element over the fp32 -> bf16
//     cast's fitted ns per element, hw::DeviceRates::elementwise_bytes_per_ns), for every device,
//     chains and epilogues alike (a device without calibrated kernels is then described too);
//   launch: that bandwidth is a slope, with no kernel's fixed cost in it (the trace's median
//     bytes/ns has its kernels' fixed costs in it), so the fused kernel pays its one launch at
//     the profile's empty-kernel GPU time (hw::DeviceRates::launch_ns), as XLA's model adds a
//     launch overhead per kernel: exec += launch, and the floor is that launch, not the trace's
//     shortest kernel. The parts' own launches are in their measured durations, and go with them.
//     An epilogue runs in its GEMM's kernel: it pays no launch.
// The FLOP rate, the reuse and the fallback keep their priors (the profile measures no vector-unit
// FLOP rate). A profile that answers neither figure prices as no profile does.
#include <optional>
#include <set>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/time.h"
#include "costmodel/op_desc.h"
#include "graph/dfg.h"
#include "hw/device_rates.h"
#include "trace/event.h"

namespace dpro::whatif {

inline constexpr double kFallbackRestShare = 0.5;

// What the trace says one device of one rank achieves on memory-bound kernels.
struct DeviceRates {
  std::optional<double> bytes_per_ns;  // none: no memory-bound kernel with known bytes
  std::optional<double> flops_per_ns;  // none: as bytes_per_ns
  Nanos shortest_kernel = 0;  // the floor of any kernel on this device, ns
  std::size_t calibrated_from = 0;  // kernels whose bytes were known
  bool bandwidth_from_profile = false;  // bytes_per_ns is the device profile's
  Nanos launch = 0;  // the fused kernel's own launch (the device profile's); 0: none priced
};

// Where the device profile fusion prices with comes from (OpFusion, CandidateOptions).
struct FusionDevice {
  std::string device_dir;      // GPU spec files ("": the default catalog)
  std::string device;          // the GPU the kernels are timed for ("": the trace's own; a --device target)
  std::string device_profile;  // "": none (the trace's own kernels calibrate everything)
};

// The profile's rates for pricing fusion on the workload's GPU; no profile when none is named.
// Throws InputError naming the profile for one that is malformed or does not apply to `device`
// (else to every GPU the traces recorded): hw::require_profile_applies, the rule every reader follows.
hw::DeviceRates load_fusion_rates(const trace::TraceSet& traces, const FusionDevice& where);

struct FusedPrice {
  Nanos duration = 0;       // the fused kernel's replay duration, ns
  Nanos parts = 0;          // the parts' replay durations, summed, ns
  bool fallback = false;    // priced by the fallback rule
  double bytes = 0;         // what the fused kernel moves (0 for the fallback)
  bool bandwidth_from_profile = false;  // memory priced at the device profile's bandwidth
  bool launch_from_profile = false;     // a launch at the device profile's cost paid
};

// Describes and calibrates once from a graph (no edits in between); prices chains of its nodes.
// Holds references to `traces` and `dfg`, which must outlive it; node ids are the graph's as
// of construction (an open graph::Editor keeps them).
class FusionPricer {
 public:
  // `profile`: a device profile of the traces' GPU (load_fusion_rates); none: the priors above.
  FusionPricer(const trace::TraceSet& traces, const graph::Dfg& dfg, bool intermediates_kept = false,
               const hw::DeviceRates& profile = {});

  // `parts`: kernels of one stream, consecutive, in stream order.
  FusedPrice price(std::span<const graph::NodeId> parts) const;
  // The same for a GEMM (parts[0]) and its epilogue steps (parts[1..]); see above.
  FusedPrice price_epilogue(std::span<const graph::NodeId> parts) const;
  // The cost-model description of a kernel (family kUnknown when the graph does not say).
  const costmodel::OpDesc& desc(graph::NodeId kernel) const;
  // Whether the description makes the kernel memory-bound: an elementwise, activation or
  // normalisation family (not a GEMM or a convolution).
  bool memory_bound(graph::NodeId kernel) const;
  const DeviceRates* rates(graph::NodeId kernel) const;
  // The names of the profile's figures a price used ("elementwise bandwidth (cast_fp32_bf16)",
  // "launch"), added to `into`.
  void figures_used(const FusedPrice& price, std::set<std::string>& into) const;

 private:
  const graph::Dfg& dfg_;
  bool intermediates_kept_;
  // Each node's description: an index into distinct_, whose entry 0 is the default (non-kernels,
  // kernels without an op). Op table entries repeat, so a few hundred descriptions serve tens of
  // thousands of kernels; a copy per node was most of making a pricer (docs/optimizer.md,
  // "Sixth round").
  IdVector<graph::NodeId, std::uint32_t> descs_;
  std::vector<costmodel::OpDesc> distinct_;
  IdVector<graph::NodeId, std::uint32_t> device_of_;  // index into devices_
  std::vector<DeviceRates> devices_;
  std::optional<hw::Measured<double>> profile_bandwidth_, profile_launch_;
};

}  // namespace dpro::whatif
