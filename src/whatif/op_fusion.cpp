#include "whatif/op_fusion.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string_view>

#include "core/error.h"
#include "core/strings.h"
#include "costmodel/op_desc.h"
#include "graph/editor.h"
#include "whatif/fusion_pricing.h"

namespace dpro::whatif {

using graph::EdgeId;
using graph::EdgeKind;
using graph::NodeId;
using graph::NodeKind;

const char* to_string(FusionSkip skip) {
  switch (skip) {
    case FusionSkip::kFeedsOtherTrack: return "feeds_other_track";
    case FusionSkip::kFedByOtherTrack: return "fed_by_other_track";
    case FusionSkip::kSharedLaunch: return "shared_launch";
    case FusionSkip::kNotEpilogue: return "not_an_epilogue";
  }
  return "?";
}

const char* to_string(EpilogueOp op) {
  switch (op) {
    case EpilogueOp::kNone: return "none";
    case EpilogueOp::kBias: return "bias";
    case EpilogueOp::kRelu: return "relu";
    case EpilogueOp::kGelu: return "gelu";
    case EpilogueOp::kDRelu: return "drelu";
    case EpilogueOp::kDGelu: return "dgelu";
    case EpilogueOp::kBGrad: return "bgrad";
  }
  return "?";
}

bool is_epilogue_gemm(std::string_view kernel_name) {
  const std::string name(kernel_name.substr(0, std::min<std::size_t>(kernel_name.size(), 512)));
  return costmodel::is_gemm_or_conv_kernel(name) && !costmodel::is_conv_kernel(name);
}

// cuBLASLt's epilogues (cublasLtEpilogue_t): BIAS; RELU, GELU and their _BIAS and _AUX forms;
// DRELU, DGELU and their _BGRAD forms (the bias gradient, a sum over the batch of the step's
// output). A residual add, a cast, dropout or a norm after a GEMM has none.
bool epilogue_supported(std::span<const EpilogueOp> steps) {
  using E = EpilogueOp;
  auto activation = [](E e) { return e == E::kRelu || e == E::kGelu; };
  auto backward = [](E e) { return e == E::kDRelu || e == E::kDGelu; };
  if (steps.size() == 1) return steps[0] == E::kBias || activation(steps[0]) || backward(steps[0]);
  if (steps.size() == 2)
    return (steps[0] == E::kBias && activation(steps[1])) || (backward(steps[0]) && steps[1] == E::kBGrad);
  return false;
}

std::size_t ChainFusion::skipped_total() const {
  std::size_t n = 0;
  for (std::size_t s : skipped) n += s;
  return n;
}

FusionStreams::FusionStreams(const trace::TraceSet& traces, const graph::Dfg& dfg) : traces_(traces), dfg_(dfg) {
  const std::size_t n = dfg.node_count();
  feeds_other_.assign(n, 0);
  fed_by_other_.assign(n, 0);
  launches_.assign(n, 0);
  launch_.assign(n, EdgeId::none());
  IdVector<NodeId, std::uint32_t> launched(n, 0);  // per call: the GPU ops it launches
  for (const EdgeId e : dfg.edge_ids()) {
    const graph::Edge& edge = dfg.edge(e);
    const bool across = dfg.node(edge.src).track != dfg.node(edge.dst).track || !dfg.node(edge.src).track.valid();
    if (edge.kind == EdgeKind::kLaunch) {
      ++launched[edge.src];
      ++launches_[edge.dst];
      launch_[edge.dst] = e;
      continue;
    }
    if (!across || edge.kind == EdgeKind::kLaunchQueue) continue;  // queue waits: op_fusion.h
    feeds_other_[edge.src] = 1;
    fed_by_other_[edge.dst] = 1;
  }
  for (const NodeId id : dfg.node_ids()) {
    if (launches_[id] == 1 && launched[dfg.edge(launch_[id]).src] > 1) launches_[id] = 2;
  }
  std::map<std::uint32_t, std::vector<NodeId>> by_track;
  for (const NodeId id : dfg.node_ids()) {
    const graph::Node& node = dfg.node(id);
    if (graph::on_gpu(node.kind) && node.kind != NodeKind::kBarrier && node.track.valid())
      by_track[node.track.value].push_back(id);
  }
  for (auto& [track, ops] : by_track) {
    // A total order (ties by id), so the order is the same whether or not it was sorted before;
    // a track's ops are mostly added in start order, so the check usually spares the sort.
    const auto earlier = [&](NodeId a, NodeId b) {
      return std::pair(dfg.node(a).measured_start, a) < std::pair(dfg.node(b).measured_start, b);
    };
    if (!std::is_sorted(ops.begin(), ops.end(), earlier)) std::sort(ops.begin(), ops.end(), earlier);
    streams_.push_back(std::move(ops));
  }
  const std::hash<std::string_view> hash;
  for (std::uint32_t s = 0; s < streams_.size(); ++s) {
    for (std::uint32_t at = 0; at < streams_[s].size(); ++at) {
      const NodeId id = streams_[s][at];
      if (dfg.node(id).kind == NodeKind::kKernel) by_name_hash_[hash(name(id))].push_back({s, at});
    }
  }
}

std::span<const FusionStreams::Position> FusionStreams::starts(std::string_view first) const {
  const auto it = by_name_hash_.find(std::hash<std::string_view>()(first));
  return it == by_name_hash_.end() ? std::span<const Position>() : std::span<const Position>(it->second);
}

std::string_view FusionStreams::name(NodeId id) const {
  const std::string_view own = dfg_.op_name(id);
  return own.empty() ? traces_.strings.view(dfg_.node(id).name) : own;
}

std::optional<FusionSkip> FusionStreams::cut(NodeId before, NodeId after) const {
  if (feeds_other_[before]) return FusionSkip::kFeedsOtherTrack;
  if (fed_by_other_[after]) return FusionSkip::kFedByOtherTrack;
  if (launches_[after] > 1) return FusionSkip::kSharedLaunch;
  return std::nullopt;
}

EpilogueOp epilogue_op_of(std::string_view launcher, std::string_view kernel_name, const costmodel::OpDesc* add_desc) {
  std::string op = ascii_lower(launcher);  // "" when none
  if (op.starts_with("aten::")) op.erase(0, 6);
  if (!op.empty() && op.back() == '_') op.pop_back();  // in place: relu_, add_
  if (op.empty()) {  // no launching op: the kernel's name (PyTorch's functors name the op)
    const std::string lower = ascii_lower(kernel_name.substr(0, std::min<std::size_t>(kernel_name.size(), 512)));
    if (lower.find("gelu_backward") != std::string::npos || lower.find("gelubackward") != std::string::npos)
      return EpilogueOp::kDGelu;
    if (lower.find("threshold_backward") != std::string::npos) return EpilogueOp::kDRelu;
    if (lower.find("gelu") != std::string::npos) return EpilogueOp::kGelu;
    if (lower.find("relu") != std::string::npos) return EpilogueOp::kRelu;
    return EpilogueOp::kNone;
  }
  if (op == "gelu") return EpilogueOp::kGelu;
  // PyTorch's relu runs as clamp_min(x, 0), and a profiler names the innermost op; the bound is
  // not recorded, and a clamp_min after a GEMM is taken to be that relu.
  if (op == "relu" || op == "clamp_min") return EpilogueOp::kRelu;
  if (op == "gelu_backward") return EpilogueOp::kDGelu;
  if (op == "threshold_backward" || op == "relu_backward") return EpilogueOp::kDRelu;
  if (op == "sum") return EpilogueOp::kBGrad;
  if (op == "add") {
    // A bias: the other operand is a vector broadcast over the output (at most an eighth of it);
    // a residual add reads a second tensor of the output's size.
    if (!add_desc || !add_desc->describable()) return EpilogueOp::kNone;
    const double written = add_desc->bytes_written(), read = add_desc->bytes() - written;
    return read - written <= written / 8 ? EpilogueOp::kBias : EpilogueOp::kNone;
  }
  return EpilogueOp::kNone;
}

EpilogueOp FusionStreams::epilogue_op(NodeId id, const FusionPricer& pricer) const {
  if (dfg_.node(id).kind != NodeKind::kKernel) return EpilogueOp::kNone;
  const graph::OpDesc* own = dfg_.op(id);
  return epilogue_op_of(own ? dfg_.ops().name(own->launcher) : std::string_view(), name(id), &pricer.desc(id));
}

EdgeId FusionStreams::own_launch(NodeId id) const { return launches_[id] == 1 ? launch_[id] : EdgeId::none(); }

std::vector<EdgeId> FusionStreams::removable_launches(std::span<const NodeId> parts) const {
  std::vector<EdgeId> out;
  if (!own_launch(parts.front()).valid()) return out;
  for (std::size_t i = 1; i < parts.size(); ++i)
    if (own_launch(parts[i]).valid()) out.push_back(own_launch(parts[i]));
  return out;
}

namespace {

std::string chain_text(const std::vector<std::string>& chain) {
  std::string out;
  for (const std::string& name : chain) out += (out.empty() ? "" : " -> ") + name;
  return out.empty() ? "(empty)" : out;
}

// One occurrence of a chain, legal, its parts in stream order.
using Instance = std::vector<NodeId>;

// The occurrences of `chain` on the streams among kernels not yet `taken`, left to right without
// overlap; the legal ones are returned (and taken), the others counted in `skipped`.
std::vector<Instance> occurrences(const FusionStreams& view, const graph::Dfg& dfg, const FusionPricer& pricer,
                                  const std::vector<std::string>& chain, IdVector<NodeId, char>& taken,
                                  std::array<std::size_t, kFusionSkipCount>& skipped) {
  std::vector<Instance> out;
  const std::size_t k = chain.size();
  const bool epilogue = is_epilogue_gemm(chain.front());
  // A scan of each stream left to right, trying each position i and moving past an instance
  // taken there: a position whose kernel is not named chain[0] never matches, so only the
  // positions starts() gives are tried, in the same order (`next`: the scan's i on that stream).
  std::uint32_t stream_index = 0;
  std::size_t next = 0;
  bool first = true;
  for (const FusionStreams::Position hit : view.starts(chain.front())) {
    if (first || hit.stream != stream_index) {
      stream_index = hit.stream;
      next = 0;
      first = false;
    }
    const std::vector<NodeId>& stream = view.streams()[hit.stream];
    const std::size_t i = hit.at;
    if (i < next || i + k > stream.size()) continue;
    bool match = true;
    for (std::size_t j = 0; j < k && match; ++j) {
      const NodeId id = stream[i + j];
      match = dfg.node(id).kind == NodeKind::kKernel && !taken[id] && view.name(id) == chain[j];
    }
    if (!match) continue;
    std::optional<FusionSkip> why;
    for (std::size_t j = 1; j < k && !why; ++j) why = view.cut(stream[i + j - 1], stream[i + j]);
    if (!why && epilogue) {
      std::vector<EpilogueOp> steps;
      for (std::size_t j = 1; j < k; ++j) steps.push_back(view.epilogue_op(stream[i + j], pricer));
      if (!epilogue_supported(steps)) why = FusionSkip::kNotEpilogue;
    }
    if (why) {
      ++skipped[static_cast<int>(*why)];
      continue;
    }
    Instance parts(stream.begin() + static_cast<std::ptrdiff_t>(i), stream.begin() + static_cast<std::ptrdiff_t>(i + k));
    for (const NodeId p : parts) taken[p] = 1;
    out.push_back(std::move(parts));
    next = i + k;
  }
  return out;
}

// A call's delay is the thread's short untraced work before it (framework code that no one
// recorded): the call goes, that work stays, before the next op of its thread.
void keep_wait_before(graph::Editor& editor, graph::Dfg& dfg, NodeId call) {
  for (const EdgeId e : editor.out_edges(call)) {
    const graph::Edge& edge = dfg.edge(e);
    if (edge.kind != EdgeKind::kThreadOrder || dfg.node(edge.dst).track != dfg.node(call).track) continue;
    editor.set_delay(edge.dst, dfg.node(edge.dst).delay + dfg.node(call).delay);
    return;
  }
}

// Fuses one legal instance and removes the launch calls of its parts but the first. Their
// launch edges go first, without a bridge (removing a call bridges its edges: the fused kernel
// would wait for the thread to reach the call); the parts then meet the graph at the run's ends
// only, and the editor fuses them without a search for cycles (graph/editor.h).
// Launch-queue edges out of the parts but the last, and into the removed launch calls, go
// first (op_fusion.h, "Launch-queue waits").
void fuse_instance(graph::Editor& editor, graph::Dfg& dfg, const FusionStreams& view, const FusionPricer& pricer,
                   const Instance& parts, ChainFusion& record, std::set<std::string>& from_profile) {
  const FusedPrice price = record.epilogue ? pricer.price_epilogue(parts) : pricer.price(parts);
  const Nanos first_delay = dfg.node(parts.front()).delay;
  auto drop_queue_edges = [&](std::span<const EdgeId> edges) {
    std::vector<EdgeId> queue;
    for (const EdgeId q : edges)
      if (dfg.edge(q).kind == EdgeKind::kLaunchQueue) queue.push_back(q);
    for (const EdgeId q : queue) editor.remove_edge(q);
    record.queue_waits_removed += queue.size();
  };
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) drop_queue_edges(editor.out_edges(parts[i]));
  for (const EdgeId e : view.removable_launches(parts)) {
    const NodeId call = dfg.edge(e).src;
    drop_queue_edges(editor.in_edges(call));
    editor.remove_edge(e);
    record.launch_time_removed = saturating_add(record.launch_time_removed, dfg.node(call).duration);
    keep_wait_before(editor, dfg, call);
    editor.remove(call);
    ++record.launches_removed;
  }
  const NodeId fused = editor.fuse(parts);
  editor.set_duration(fused, price.duration);
  editor.set_delay(fused, first_delay);
  ++record.instances;
  record.priced_by_fallback += price.fallback ? 1 : 0;
  record.gpu_before = saturating_add(record.gpu_before, price.parts);
  record.gpu_after = saturating_add(record.gpu_after, price.duration);
  pricer.figures_used(price, from_profile);
}

// Memory-bound by the kernel's name: PyTorch's elementwise and reduction kernels, cuDNN's batch
// norm, Triton's pointwise and reduction kernels, normalisations, activations, softmax, dropout.
bool memory_bound_name(std::string_view name) {
  const std::string lower = ascii_lower(name.substr(0, std::min<std::size_t>(name.size(), 512)));
  static constexpr std::string_view kWords[] = {
      "elementwise", "reduce_kernel", "norm",    "softmax", "relu",       "gelu",      "silu",
      "tanh",        "sigmoid",       "dropout", "bn_",     "triton_poi", "triton_per", "triton_red",
      "pointwise",   "activation",    "fill",    "copy_kernel", "cast"};
  return std::any_of(std::begin(kWords), std::end(kWords),
                     [&](std::string_view w) { return lower.find(w) != std::string::npos; });
}

bool is_nccl(std::string_view name) {
  return name.find("nccl") != std::string_view::npos || name.find("NCCL") != std::string_view::npos;
}

bool fusable_kernel(const graph::Dfg& dfg, const FusionStreams& view, const FusionPricer& pricer, NodeId id) {
  if (dfg.node(id).kind != NodeKind::kKernel) return false;
  const std::string_view name = view.name(id);
  if (is_nccl(name) || costmodel::is_gemm_or_conv_kernel(std::string(name))) return false;
  return memory_bound_name(name) || pricer.memory_bound(id);
}

// Near-equal pieces of at most `max_length` (>= 2) kernels.
std::vector<std::span<const NodeId>> split_run(std::span<const NodeId> run, std::size_t max_length) {
  const std::size_t pieces = (run.size() + max_length - 1) / max_length;
  std::vector<std::span<const NodeId>> out;
  std::size_t at = 0;
  for (std::size_t p = 0; p < pieces; ++p) {
    const std::size_t size = run.size() / pieces + (p < run.size() % pieces ? 1 : 0);
    out.push_back(run.subspan(at, size));
    at += size;
  }
  return out;
}

void check_chains(const OpFusion& options) {
  for (const std::vector<std::string>& chain : options.chains) {
    if (chain.size() < 2)
      throw OptionError("chains", chain_text(chain), "a chain to fuse needs at least two kernel names");
  }
}

}  // namespace

OpFusionChange op_fusion(Workload& workload, const OpFusion& options) {
  check_chains(options);  // before calibrating
  const FusionPricer pricer(*workload.traces, workload.graph.dfg, options.intermediates_kept,
                            load_fusion_rates(*workload.traces, options.device));
  return op_fusion(workload, options, pricer);
}

OpFusionChange op_fusion(Workload& workload, const OpFusion& options, const FusionPricer& pricer) {
  const FusionStreams view(*workload.traces, workload.graph.dfg);
  return op_fusion(workload, options, pricer, view);
}

// `view` may be of an unedited copy of the graph: a name is read only for a kernel not yet taken,
// which no edit has reached (the `taken` test comes first in occurrences), and its other tables
// are read for the ids of the graph as it was.
OpFusionChange op_fusion(Workload& workload, const OpFusion& options, const FusionPricer& pricer,
                         const FusionStreams& view) {
  check_chains(options);
  OpFusionChange change;
  change.options = options;
  graph::Dfg& dfg = workload.graph.dfg;
  DPRO_CHECK(view.node_count() == dfg.node_count());
  IdVector<NodeId, char> taken(dfg.node_count(), 0);
  graph::Editor editor(workload.graph);
  for (const std::vector<std::string>& chain : options.chains) {
    ChainFusion& record = change.chains.emplace_back();
    record.kernels = chain;
    record.epilogue = is_epilogue_gemm(chain.front());
    for (const Instance& parts : occurrences(view, dfg, pricer, chain, taken, record.skipped))
      fuse_instance(editor, dfg, view, pricer, parts, record, change.from_profile);
    change.instances += record.instances;
    change.queue_waits_removed += record.queue_waits_removed;
    if (record.epilogue) change.epilogue_instances += record.instances;
    change.skipped += record.skipped_total();
    change.launches_removed += record.launches_removed;
    change.priced_by_fallback += record.priced_by_fallback;
    change.gpu_before = saturating_add(change.gpu_before, record.gpu_before);
    change.gpu_after = saturating_add(change.gpu_after, record.gpu_after);
    change.launch_time_removed = saturating_add(change.launch_time_removed, record.launch_time_removed);
  }
  editor.commit();
  return change;
}

namespace {

// One occurrence of a chain (`parts`, in stream order) counted into its class, by kernel names.
FusionCandidate& count_occurrence(std::map<std::vector<std::string>, FusionCandidate>& classes,
                                  std::span<const NodeId> parts, const FusedPrice& price,
                                  const FusionStreams& view, const graph::Dfg& dfg) {
  std::vector<std::string> names;
  for (const NodeId p : parts) names.emplace_back(view.name(p));
  FusionCandidate& c = classes[names];
  if (c.kernels.empty()) c.kernels = std::move(names);
  ++c.instances;
  c.occurrences.emplace_back(parts.begin(), parts.end());
  c.measured = saturating_add(c.measured, price.parts);
  c.predicted = saturating_add(c.predicted, price.duration);
  c.priced_by_fallback += price.fallback ? 1 : 0;
  c.occurrence_gpu_saving.push_back(price.parts - price.duration);
  std::vector<NodeId>& launches = c.occurrence_launches.emplace_back();
  for (const EdgeId e : view.removable_launches(parts)) {
    ++c.launches_saved;
    c.launch_time_saved = saturating_add(c.launch_time_saved, dfg.node(dfg.edge(e).src).duration);
    launches.push_back(dfg.edge(e).src);
  }
  return c;
}

// The classes seen at least `min_instances` times, largest predicted saving first.
std::vector<FusionCandidate> ranked(std::map<std::vector<std::string>, FusionCandidate>& classes, std::size_t min_instances) {
  std::vector<FusionCandidate> out;
  for (auto& [names, c] : classes)
    if (c.instances >= min_instances) out.push_back(std::move(c));
  std::sort(out.begin(), out.end(), [](const FusionCandidate& a, const FusionCandidate& b) {
    if (a.gpu_saving() != b.gpu_saving()) return a.gpu_saving() > b.gpu_saving();
    if (a.launches_saved != b.launches_saved) return a.launches_saved > b.launches_saved;
    return a.kernels < b.kernels;
  });
  return out;
}

}  // namespace

std::vector<FusionCandidate> find_fusion_candidates(const Workload& workload, const CandidateOptions& options) {
  if (options.max_length < 2)
    throw OptionError("max_length", std::to_string(options.max_length), "a chain has at least two kernels");
  const graph::Dfg& dfg = workload.graph.dfg;
  const FusionStreams view(*workload.traces, dfg);
  const FusionPricer pricer(*workload.traces, dfg, options.intermediates_kept,
                            load_fusion_rates(*workload.traces, options.device));
  std::map<std::vector<std::string>, FusionCandidate> classes;
  auto add = [&](std::span<const NodeId> parts) {
    if (parts.size() < 2) return;
    count_occurrence(classes, parts, pricer.price(parts), view, dfg);
  };
  auto flush = [&](std::vector<NodeId>& run) {
    if (run.size() >= 2)
      for (const auto piece : split_run(run, options.max_length)) add(piece);
    run.clear();
  };
  for (const std::vector<NodeId>& stream : view.streams()) {
    std::vector<NodeId> run;
    for (const NodeId id : stream) {
      if (!fusable_kernel(dfg, view, pricer, id)) {
        flush(run);
        continue;
      }
      if (!run.empty() && view.cut(run.back(), id)) flush(run);
      run.push_back(id);
    }
    flush(run);
  }
  return ranked(classes, options.min_instances);
}

std::vector<FusionCandidate> find_epilogue_candidates(const Workload& workload, const CandidateOptions& options) {
  const graph::Dfg& dfg = workload.graph.dfg;
  const FusionStreams view(*workload.traces, dfg);
  const FusionPricer pricer(*workload.traces, dfg, options.intermediates_kept,
                            load_fusion_rates(*workload.traces, options.device));
  std::map<std::vector<std::string>, FusionCandidate> classes;
  constexpr std::size_t kMaxSteps = 2;  // epilogue_supported has none longer
  for (const std::vector<NodeId>& stream : view.streams()) {
    for (std::size_t i = 0; i < stream.size(); ++i) {
      const NodeId gemm = stream[i];
      if (dfg.node(gemm).kind != NodeKind::kKernel || !is_epilogue_gemm(view.name(gemm))) continue;
      // The longest legal run after the GEMM that is an epilogue cuBLASLt has.
      std::vector<EpilogueOp> steps;
      std::size_t best = 0;
      for (std::size_t j = i + 1; j < stream.size() && j - i <= kMaxSteps; ++j) {
        if (dfg.node(stream[j]).kind != NodeKind::kKernel || view.cut(stream[j - 1], stream[j])) break;
        steps.push_back(view.epilogue_op(stream[j], pricer));
        if (steps.back() == EpilogueOp::kNone) break;
        if (epilogue_supported(steps)) best = steps.size();
      }
      if (best == 0) continue;
      const std::span<const NodeId> parts(stream.data() + i, best + 1);
      count_occurrence(classes, parts, pricer.price_epilogue(parts), view, dfg).epilogue = true;
      i += best;
    }
  }
  return ranked(classes, options.min_instances);
}

OpFusion fuse_candidates(const std::vector<FusionCandidate>& candidates, bool intermediates_kept) {
  OpFusion out;
  out.intermediates_kept = intermediates_kept;
  for (const FusionCandidate& c : candidates) out.chains.push_back(c.kernels);
  return out;
}

}  // namespace dpro::whatif
