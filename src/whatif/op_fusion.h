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
//     event it recorded, a blocking sync on a CPU thread, a barrier), launch-queue edges aside;
//   - no part but the first has an in-edge from another track except its own launch, and
//     that launch call launches this part only (a graph launch of many kernels stays).
// Such a run meets the rest of the graph at its ends only (once the launches of its inner
// parts are gone), so fusing it contracts a path and makes no cycle the graph did not have.
// A chain that occurs nowhere, or only where it is illegal, changes nothing.
//
// Launch-queue waits (graph/launch_queue.h: a launch call that blocked until an earlier GPU op
// freed its queue slot, EdgeKind::kLaunchQueue) do not cut a chain. The fused kernel takes one
// queue slot where its parts took k, and it has one launch where they had k:
//   - a queue edge out of a part but the last goes (the launch that waited for that part's slot
//     finds a free one: k-1 fewer ops are in flight ahead of it); the last part's stays, on the
//     fused kernel (the launch that waited for it now waits for the whole fused kernel);
//   - a removed launch call's own queue wait goes with it (no launch, no slot to wait for);
//     the launches after it keep theirs.
// Both move the queue towards what it holds after the fusion; the queue edges are not re-derived
// from the new launch order (the launches after a fused chain could get k-1 ops further ahead).
//
// GEMM epilogues (cuBLASLt's CUBLASLT_MATMUL_DESC_EPILOGUE): a chain whose first kernel is a GEMM
// (is_epilogue_gemm) fuses the elementwise kernels after it into the GEMM, as cuBLASLt computes
// them on the GEMM's output tile before it is stored. Only the epilogues cuBLASLt has are legal
// (EpilogueOp, epilogue_supported): forward bias, relu, gelu and bias + relu/gelu
// (CUBLASLT_EPILOGUE_BIAS, RELU[_BIAS], GELU[_BIAS]; their _AUX variants store the
// pre-activation a training step keeps for backward), and backward drelu/dgelu with an optional
// bias-gradient reduction after it (DRELU, DGELU, DRELU_BGRAD, DGELU_BGRAD). Other occurrences of
// such a chain are skipped (FusionSkip::kNotEpilogue). Priced by FusionPricer::price_epilogue.
//
// The fused node (graph::Editor::fuse) waits for what its first part waited for; the delays
// and stream gaps between the parts (launch latency, the GPU idling between kernels) go with
// the launches.
#include <array>
#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/time.h"
#include "graph/dfg.h"
#include "whatif/fusion_pricing.h"
#include "whatif/workload.h"

namespace dpro::costmodel {
struct OpDesc;
}  // namespace dpro::costmodel

namespace dpro::whatif {

struct OpFusion {
  // Each chain: >= 2 kernel names, in stream order, as the graph names its kernels (the op
  // table's name; the trace's name for a node without one). Applied in order; a kernel fused
  // by an earlier chain is not fused again.
  std::vector<std::vector<std::string>> chains;
  // A training step keeps forward intermediates for its backward pass: fusion then saves their
  // re-read only, not their write (fusion_pricing.h).
  bool intermediates_kept = false;
  // A device profile of the GPU the kernels are timed for, whose elementwise bandwidth and launch
  // cost price the fused kernels (fusion_pricing.h); none by default.
  FusionDevice device;
};

// Why an occurrence of a chain was not fused.
enum class FusionSkip : std::uint8_t {
  kFeedsOtherTrack,  // a part but the last has a dependant on another track
  kFedByOtherTrack,  // a part but the first waits for another track (not its own launch)
  kSharedLaunch,     // a part but the first has a launch call that launches other GPU ops too
  kNotEpilogue,      // a GEMM-headed chain whose later parts are no epilogue cuBLASLt has
};
inline constexpr int kFusionSkipCount = static_cast<int>(FusionSkip::kNotEpilogue) + 1;
const char* to_string(FusionSkip skip);

// GEMM epilogues (above). A GEMM kernel by name: costmodel::is_gemm_or_conv_kernel, less the
// convolutions (cuDNN's, implicit GEMM, winograd, fft, dgrad/wgrad/fprop engines), whose fused
// bias and activation is cuDNN's, not cuBLASLt's.
bool is_epilogue_gemm(std::string_view kernel_name);
// One elementwise kernel as an epilogue step: judged by the framework op that launched it
// (aten::gelu, aten::relu or the clamp_min it runs as, aten::gelu_backward,
// aten::threshold_backward, aten::sum, aten::add of a broadcast vector: a bias), else by the
// kernel's name.
enum class EpilogueOp : std::uint8_t { kNone, kBias, kRelu, kGelu, kDRelu, kDGelu, kBGrad };
const char* to_string(EpilogueOp op);
// The rule above for one kernel: its launching op's name ("aten::gelu"; empty when none), its
// kernel name, and (for an add) its cost-model description, which tells a bias from a residual
// add (nullptr: an add is no epilogue step). The executor lowers fused epilogues with it.
EpilogueOp epilogue_op_of(std::string_view launcher, std::string_view kernel_name, const costmodel::OpDesc* add_desc);
// Whether cuBLASLt has an epilogue for these steps after a GEMM: bias; relu; gelu; bias, relu;
// bias, gelu; drelu; dgelu; drelu, bgrad; dgelu, bgrad.
bool epilogue_supported(std::span<const EpilogueOp> steps);

struct ChainFusion {
  std::vector<std::string> kernels;
  std::size_t instances = 0;  // occurrences fused
  std::array<std::size_t, kFusionSkipCount> skipped{};  // occurrences left alone, by reason
  std::size_t launches_removed = 0;
  std::size_t priced_by_fallback = 0;  // instances priced by the fallback rule
  Nanos gpu_before = 0, gpu_after = 0;  // the parts' replay durations / the fused kernels', summed
  Nanos launch_time_removed = 0;       // the removed launch calls' own durations, summed
  std::size_t queue_waits_removed = 0;  // launch-queue edges dropped (see above)
  bool epilogue = false;                // a GEMM epilogue chain (its first name is a GEMM kernel)
  std::size_t skipped_total() const;
};

struct OpFusionChange {
  OpFusion options;
  std::vector<ChainFusion> chains;  // parallel to options.chains
  std::size_t instances = 0, skipped = 0, launches_removed = 0, priced_by_fallback = 0;
  std::size_t queue_waits_removed = 0;
  std::size_t epilogue_instances = 0;  // of `instances`, GEMMs fused with their epilogue
  Nanos gpu_before = 0, gpu_after = 0, launch_time_removed = 0;
  // The figures of the device profile the pricing used ("elementwise bandwidth (cast_fp32_bf16)",
  // "launch"); empty without one.
  std::set<std::string> from_profile;
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

// The streams of a graph as op fusion reads them: each stream's GPU ops in stream order, the
// kernels' names, and what the legality rule needs to know of each kernel's edges. Made on a
// graph before any edit; reads it (which must outlive this) for names.
class FusionStreams {
 public:
  FusionStreams(const trace::TraceSet& traces, const graph::Dfg& dfg);
  const std::vector<std::vector<graph::NodeId>>& streams() const { return streams_; }
  std::size_t node_count() const { return launch_.size(); }  // of the graph it was made on
  std::string_view name(graph::NodeId id) const;
  // Why `after` cannot follow `before` inside one fused kernel; none when it can.
  std::optional<FusionSkip> cut(graph::NodeId before, graph::NodeId after) const;
  // The kernel as an epilogue step (see EpilogueOp); `pricer` tells a bias from a residual add.
  EpilogueOp epilogue_op(graph::NodeId id, const FusionPricer& pricer) const;
  // The kLaunch edge into a kernel that its call alone launches; none otherwise.
  graph::EdgeId own_launch(graph::NodeId id) const;
  // Launch calls a fusion of `parts` removes: those of every part but the first, when the
  // first has a launch of its own to launch the fused kernel.
  std::vector<graph::EdgeId> removable_launches(std::span<const graph::NodeId> parts) const;
  // Where a kernel may start a chain whose first kernel is named `first`: every kernel of the
  // streams with a name of the same hash (so every one named `first`, and rarely others), as
  // (index into streams(), position in it), in stream order then position order. Made once with
  // the view: a chain's search visits these, not every kernel of every stream.
  struct Position {
    std::uint32_t stream = 0;
    std::uint32_t at = 0;
  };
  std::span<const Position> starts(std::string_view first) const;

 private:
  const trace::TraceSet& traces_;
  const graph::Dfg& dfg_;
  IdVector<graph::NodeId, char> feeds_other_;   // has an out-edge to another track (launches aside)
  IdVector<graph::NodeId, char> fed_by_other_;  // has an in-edge from another track (launches aside)
  IdVector<graph::NodeId, std::uint8_t> launches_;  // 0: none, 1: its own launch call, 2: several or a shared call
  IdVector<graph::NodeId, graph::EdgeId> launch_;
  std::vector<std::vector<graph::NodeId>> streams_;
  // Kernels by the hash of their name (std::hash<std::string_view>): a hash, not the name, so
  // that the view holds no view into an op table that a fusion of this graph grows.
  std::unordered_map<std::size_t, std::vector<Position>> by_name_hash_;
};

// The same, with the streams made on this graph or on an unedited copy of it (which must outlive
// the call): a caller that fuses many copies of one graph reads its streams once. The result is
// the same (op_fusion.cpp says why).
OpFusionChange op_fusion(Workload& workload, const OpFusion& options, const FusionPricer& pricer,
                         const FusionStreams& streams);

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
  // Per occurrence (parallel to `occurrences`): the GPU time its fusion saves (the parts' replay
  // durations less the fused kernel's; negative where fusing is slower), and the launch calls it
  // removes (nodes of the same graph), what the search's ranking by slack reads.
  std::vector<Nanos> occurrence_gpu_saving;
  std::vector<std::vector<graph::NodeId>> occurrence_launches;
  std::size_t priced_by_fallback = 0;
  bool epilogue = false;  // a GEMM with its epilogue (find_epilogue_candidates)
  Nanos gpu_saving() const { return measured - predicted; }
};

struct CandidateOptions {
  std::size_t max_length = 8;     // longer runs are split into near-equal chains
  std::size_t min_instances = 1;  // classes seen fewer times are dropped
  bool intermediates_kept = false;
  FusionDevice device;  // a device profile to price with (OpFusion::device)
};

// The legal chains of consecutive memory-bound kernels (elementwise, activations,
// normalisations, reductions; not GEMM, convolution or NCCL kernels), judged by the op family
// of the CPU op that launched them and else by the kernel's name: each maximal legal run of
// 2 or more such kernels on a stream, split at options.max_length, grouped by kernel names.
// Largest predicted GPU saving first (then launches saved, then names).
std::vector<FusionCandidate> find_fusion_candidates(const Workload& workload, const CandidateOptions& options = {});

// The legal GEMM epilogue chains: each GEMM kernel (is_epilogue_gemm) with the longest run of
// kernels after it on its stream that is legal (as above) and an epilogue cuBLASLt has
// (epilogue_supported), grouped by kernel names, priced by FusionPricer::price_epilogue. Sorted
// as find_fusion_candidates sorts. options.max_length does not apply (an epilogue has at most 2
// steps).
std::vector<FusionCandidate> find_epilogue_candidates(const Workload& workload, const CandidateOptions& options = {});

// The rewrite that fuses every candidate, in the given order.
OpFusion fuse_candidates(const std::vector<FusionCandidate>& candidates, bool intermediates_kept = false);

}  // namespace dpro::whatif
