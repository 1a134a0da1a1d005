#pragma once
// Op fusion: the job with chains of GPU kernels fused into one kernel each, as a compiler that
// fuses elementwise ops (XLA, TorchInductor) would run them. A chain is a sequence of kernel
// names; every occurrence of it, consecutive kernels of one stream, on every rank and in every
// step and layer, is fused where that is legal, and priced by fusion_pricing.h. The fused
// kernel is launched by its first part's launch; the other parts' launch calls leave their CPU
// thread (their own CPU time goes; what the thread did around them stays: the untraced work
// before a removed call waits before the thread's next op).
//
// Legality (conservative): the parts are kernels (NodeKind::kKernel), consecutive on one
// stream (no copy, memset, collective or other kernel between them), and nothing outside the
// chain's stream depends on a part but the last, or is depended on by a part but the first:
//   - no part but the last has an out-edge to another track (another stream waiting on an
//     event it recorded, a blocking sync or a full launch queue on a CPU thread, a barrier);
//   - no part but the first has an in-edge from another track except its own launch, and
//     that launch call launches this part only (a graph launch of many kernels stays).
// Such a run meets the rest of the graph at its ends only (once the launches of its inner
// parts are gone), so fusing it contracts a path and makes no cycle the graph did not have.
// A chain that occurs nowhere, or only where it is illegal, changes nothing.
//
// The fused node (graph::Editor::fuse) waits for what its first part waited for; the delays
// and stream gaps between the parts (launch latency, the GPU idling between kernels) go with
// the launches.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/time.h"
#include "graph/dfg.h"
#include "whatif/workload.h"

namespace dpro::whatif {

struct OpFusion {
  // Each chain: >= 2 kernel names, in stream order, as the graph names its kernels (the op
  // table's name; the trace's name for a node without one). Applied in order; a kernel fused
  // by an earlier chain is not fused again.
  std::vector<std::vector<std::string>> chains;
  // A training step keeps forward intermediates for its backward pass: fusion then saves their
  // re-read only, not their write (fusion_pricing.h).
  bool intermediates_kept = false;
};

// Why an occurrence of a chain was not fused.
enum class FusionSkip : std::uint8_t {
  kFeedsOtherTrack,  // a part but the last has a dependant on another track
  kFedByOtherTrack,  // a part but the first waits for another track (not its own launch)
  kSharedLaunch,     // a part but the first has a launch call that launches other GPU ops too
};
inline constexpr int kFusionSkipCount = static_cast<int>(FusionSkip::kSharedLaunch) + 1;
const char* to_string(FusionSkip skip);

struct ChainFusion {
  std::vector<std::string> kernels;
  std::size_t instances = 0;  // occurrences fused
  std::array<std::size_t, kFusionSkipCount> skipped{};  // occurrences left alone, by reason
  std::size_t launches_removed = 0;
  std::size_t priced_by_fallback = 0;  // instances priced by the fallback rule
  Nanos gpu_before = 0, gpu_after = 0;  // the parts' replay durations / the fused kernels', summed
  Nanos launch_time_removed = 0;       // the removed launch calls' own durations, summed
  std::size_t skipped_total() const;
};

struct OpFusionChange {
  OpFusion options;
  std::vector<ChainFusion> chains;  // parallel to options.chains
  std::size_t instances = 0, skipped = 0, launches_removed = 0, priced_by_fallback = 0;
  Nanos gpu_before = 0, gpu_after = 0, launch_time_removed = 0;
};

// Fuses the chains in the workload's graph in place. Throws OptionError("chains", ...) for a
// chain of fewer than two names.
OpFusionChange op_fusion(Workload& workload, const OpFusion& options);

class FusionPricer;
// The same, pricing with `pricer` (built with options.intermediates_kept on this graph or on an
// unedited copy of it, which must outlive the call) instead of calibrating one: a caller that
// fuses many copies of one graph calibrates once. The result is the same, since fusing reads only
// what the edits leave alone (the durations, kinds and tracks of kernels not yet fused).
OpFusionChange op_fusion(Workload& workload, const OpFusion& options, const FusionPricer& pricer);

// A class of fusable chains: the same kernel-name sequence, wherever it runs.
struct FusionCandidate {
  std::vector<std::string> kernels;
  std::size_t instances = 0;
  // Each instance's kernels, in stream order: ids of the graph the candidates were found in
  // (valid until it is edited).
  std::vector<std::vector<graph::NodeId>> occurrences;
  Nanos measured = 0;         // the parts' replay durations, summed over the instances
  Nanos predicted = 0;        // the fused kernels' predicted durations, summed
  std::size_t launches_saved = 0;  // launch calls the fusion removes, over the instances
  Nanos launch_time_saved = 0;     // their own CPU time
  std::size_t priced_by_fallback = 0;
  Nanos gpu_saving() const { return measured - predicted; }
};

struct CandidateOptions {
  std::size_t max_length = 8;     // longer runs are split into near-equal chains
  std::size_t min_instances = 1;  // classes seen fewer times are dropped
  bool intermediates_kept = false;
};

// The legal chains of consecutive memory-bound kernels (elementwise, activations,
// normalisations, reductions; not GEMM, convolution or NCCL kernels), judged by the op family
// of the CPU op that launched them and else by the kernel's name: each maximal legal run of
// 2 or more such kernels on a stream, split at options.max_length, grouped by kernel names.
// Largest predicted GPU saving first (then launches saved, then names).
std::vector<FusionCandidate> find_fusion_candidates(const Workload& workload, const CandidateOptions& options = {});

// The rewrite that fuses every candidate, in the given order.
OpFusion fuse_candidates(const std::vector<FusionCandidate>& candidates, bool intermediates_kept = false);

}  // namespace dpro::whatif
