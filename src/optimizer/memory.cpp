#include "optimizer/memory.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "costmodel/comm/comm_ops.h"
#include "costmodel/op_desc.h"
#include "hw/device_spec.h"
#include "trace/iterations.h"
#include "whatif/precision.h"

namespace dpro::optimizer {

std::optional<MemoryEstimate> estimate_memory_per_rank(const whatif::Workload& job) {
  std::optional<MemoryEstimate> recorded;
  for (const trace::TraceRank& r : job.traces->ranks)
    if (r.peak_gpu_memory_bytes && (!recorded || *r.peak_gpu_memory_bytes > recorded->bytes))
      recorded = MemoryEstimate{*r.peak_gpu_memory_bytes, 0, 0, fmt::format("the peak the trace's memory events record, rank {}", r.rank)};
  if (recorded) return recorded;
  const std::vector<comm::CommOp> ops = comm::find_comm_ops(job.graph.dfg, *job.traces);
  std::map<std::pair<std::size_t, int>, std::int64_t> per_step;  // (rank index, iteration) -> gradient bytes
  for (const comm::CommOp& op : ops) {
    if (op.op != comm::CollectiveOp::kAllReduce || !op.bytes || !op.world_group || op.group_size < 2) continue;
    const int it = trace::iteration_index_at(job.traces->ranks[op.rank_index], op.measured_start);
    per_step[{op.rank_index, it}] += *op.bytes;
  }
  if (per_step.empty()) return std::nullopt;
  MemoryEstimate e;
  for (const auto& [key, bytes] : per_step) e.gradient_bytes = std::max(e.gradient_bytes, bytes);
  e.bytes = e.gradient_bytes * kTrainingStateFactor;
  const std::optional<ActivationEstimate> act = estimate_activation_bytes(job);
  if (!act) {
    e.source = fmt::format("{} x the {:.3f} GiB of gradients a rank all-reduces in a step: weights, gradients and "
                           "Adam's two moments; activations not counted (no step records tensor shapes and a backward op)",
                           kTrainingStateFactor, static_cast<double>(e.gradient_bytes) / kBytesPerGiB);
    return e;
  }
  e.activation_bytes = act->bytes;
  e.bytes += act->bytes;
  e.source = fmt::format("{} x the {:.3f} GiB of gradients a rank all-reduces in a step: weights, gradients and "
                         "Adam's two moments; plus {:.3f} MiB of activations, estimated as the bytes of the activation "
                         "input of the {} forward ops that launch kernels in rank {}'s median step",
                         kTrainingStateFactor, static_cast<double>(e.gradient_bytes) / kBytesPerGiB,
                         static_cast<double>(act->bytes) / (1024.0 * 1024.0), act->ops, act->rank);
  return e;
}

namespace {

// Bytes of one element of a recorded dtype ("float", "c10::Half", ...); 4 when unknown.
std::int64_t element_bytes(std::string_view dtype) {
  if (dtype == "double" || dtype == "long int" || dtype == "long" || dtype == "int64" || dtype == "c10::complex<float>") return 8;
  if (dtype == "c10::Half" || dtype == "c10::BFloat16" || dtype == "short int" || dtype == "half" || dtype == "bfloat16") return 2;
  if (dtype == "bool" || dtype == "unsigned char" || dtype == "signed char" || dtype == "c10::Float8_e4m3fn" ||
      dtype == "c10::Float8_e5m2")
    return 1;
  return 4;
}

// Whether autocast casts a tensor of this recorded dtype: floating point ("" for unrecorded:
// counted as fp32, as element_bytes does).
bool floating(std::string_view dtype) {
  if (dtype.empty()) return true;
  const std::optional<hw::DType> d = hw::parse_dtype(std::string(dtype));
  return d && *d != hw::DType::kInt8;
}

// The width a precision value stores tensors at; 0: storage unchanged (tf32, as recorded).
int stored_bytes(const std::string& dtype) {
  if (dtype == "bf16" || dtype == "fp16") return 2;
  if (dtype == "fp8") return 1;
  return 0;
}

// What a GEMM or convolution lowered to 16 or 8 bits writes: a 16-bit activation (Transformer
// Engine's fp8 GEMMs write bf16 too).
constexpr int kNarrowedActivationBytes = 2;

}  // namespace

bool runs_in_input_dtype(std::string_view name) {
  if (const auto p = name.rfind("::"); p != std::string_view::npos) name.remove_prefix(p + 2);
  while (!name.empty() && name.front() == '_') name.remove_prefix(1);
  if (name.size() > 1 && name.back() == '_') name.remove_suffix(1);
  if (name.rfind("native_", 0) == 0) name.remove_prefix(7);
  if (name.size() > 8 && name.substr(name.size() - 8) == "_forward") name.remove_suffix(8);
  if (name.empty()) return false;
  // PyTorch's CUDA autocast lists (docs "Autocast Op Reference"): the ops it runs at the lower
  // precision (GEMMs, convolutions: the precision classes), at float32, and at the widest input
  // type; every other op runs in its inputs' dtype.
  static const std::set<std::string_view> kNotInputDtype = {
      // lower precision (the classes themselves)
      "matmul", "addbmm", "addmm", "addmv", "addr", "baddbmm", "bmm", "chain_matmul", "multi_dot", "conv1d", "conv2d",
      "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "convolution", "cudnn_convolution",
      "linear", "mm", "mv", "prelu", "einsum",
      // float32
      "acos", "asin", "binary_cross_entropy_with_logits", "cosh", "cosine_embedding_loss", "cdist", "cosine_similarity",
      "cross_entropy", "cross_entropy_loss", "cumprod", "cumsum", "dist", "erfinv", "exp", "expm1", "group_norm",
      "hinge_embedding_loss", "kl_div", "l1_loss", "layer_norm", "log", "log_softmax", "log10", "log1p", "log2",
      "margin_ranking_loss", "mse_loss", "multilabel_margin_loss", "multi_margin_loss", "nll_loss", "nll_loss2d",
      "nll_loss_nd", "norm", "normalize", "pdist", "poisson_nll_loss", "pow", "prod", "reciprocal", "rsqrt", "sinh",
      "smooth_l1_loss", "huber_loss", "soft_margin_loss", "softmax", "softmin", "softplus", "sum", "renorm", "tan",
      "triplet_margin_loss", "logsumexp", "frobenius_norm", "nuclear_norm",
      // widest input type
      "addcdiv", "addcmul", "atan2", "bilinear", "cross", "dot", "grid_sampler", "grid_sample", "index_put",
      "scatter_add", "tensordot"};
  return !kNotInputDtype.contains(name);
}

namespace {

// The change of a plan whose stored width per class tensor is `width_of` (0: unchanged);
// `kept_of`: whether a part of its class keeps the tensor's op at its width (a layer kept).
template <class WidthOf, class KeptOf>
PrecisionMemory narrowed(const ActivationEstimate& act, WidthOf width_of, KeptOf kept_of) {
  PrecisionMemory m;
  // The first forward op whose output the plan narrows to 16 bits: the ops after it that run in
  // their input's dtype get 16-bit inputs (memory.h).
  long first_lowered = std::numeric_limits<long>::max();
  for (const ClassTensor& t : act.class_tensors) {
    if (t.kind == ClassTensor::Kind::kOther) continue;
    const int to = width_of(t);
    if (to == 0 || t.element_bytes <= to) continue;
    if (t.activation) {
      m.saved += t.elements * (t.element_bytes - to);
      if (t.element_bytes > kNarrowedActivationBytes) first_lowered = std::min(first_lowered, t.order);
    } else {
      m.casts += t.elements * to;
    }
  }
  // An op after a kept layer reads its output at the recorded width, until the next lowered op.
  bool kept_before = false;
  for (const ClassTensor& t : act.class_tensors) {
    if (t.kind != ClassTensor::Kind::kOther) {
      if (t.activation) kept_before = kept_of(t);
    } else if (t.order > first_lowered && !kept_before && t.element_bytes > kNarrowedActivationBytes) {
      m.saved += t.elements * (t.element_bytes - kNarrowedActivationBytes);
    }
  }
  return m;
}

}  // namespace

PrecisionMemory precision_memory(const ActivationEstimate& act, const std::string& gemm_dtype, const std::string& conv_dtype) {
  const int gemm = stored_bytes(gemm_dtype), conv = stored_bytes(conv_dtype);
  return narrowed(act, [&](const ClassTensor& t) { return t.kind == ClassTensor::Kind::kConv ? conv : gemm; },
                  [](const ClassTensor&) { return false; });
}

PrecisionMemory precision_memory(const ActivationEstimate& act, const std::vector<Decision>& decisions) {
  const std::map<std::string, std::string> dtype = precision_of_class(decisions);
  // Negative positions count from the step's end: past every forward op (memory.h).
  constexpr long kBeyondForward = std::numeric_limits<long>::max() / 2;
  // A layer part numbers the forward ops of its class (one op per forward layer), negative from
  // the last of them.
  std::map<ClassTensor::Kind, long> forward_ops;
  for (const ClassTensor& t : act.class_tensors) forward_ops[t.kind] = std::max(forward_ops[t.kind], t.position + 1);
  // The subjects parsed once, in the map's order (a class before its parts): per class, its own
  // width and its parts' with theirs; whether the class is decided in parts.
  struct Subjects {
    std::optional<int> whole;
    std::vector<std::pair<whatif::OpPart, int>> parts;
  };
  std::map<ClassTensor::Kind, Subjects> of_kind;
  for (const ClassTensor::Kind kind : {ClassTensor::Kind::kGemm, ClassTensor::Kind::kConv}) {
    const std::string cls = kind == ClassTensor::Kind::kConv ? "conv" : "gemm";
    for (const auto& [subject, value] : dtype) {
      if (subject == cls) of_kind[kind].whole = stored_bytes(value);
      else if (whatif::names_part_of(subject, cls)) of_kind[kind].parts.emplace_back(*whatif::parse_op_part(subject), stored_bytes(value));
    }
  }
  const auto width_of = [&](const ClassTensor& t) {
    const Subjects& s = of_kind[t.kind];
    if (s.whole) return *s.whole;
    for (const auto& [part, width] : s.parts)
      if (part.selects(t.position, part.layers ? forward_ops[t.kind] : kBeyondForward)) return width;
    return 0;
  };
  // A class decided in parts keeps the ops of a part at tf32 or as recorded (precision_of_class
  // resolves a class beside its parts into parts).
  const auto kept_of = [&](const ClassTensor& t) { return !of_kind[t.kind].parts.empty() && width_of(t) == 0; };
  return narrowed(act, width_of, kept_of);
}

std::optional<ActivationEstimate> estimate_activation_bytes(const whatif::Workload& job) {
  const trace::TraceSet& traces = *job.traces;
  const graph::Dfg& dfg = job.graph.dfg;
  std::optional<ActivationEstimate> best;
  for (std::size_t ri = 0; ri < traces.ranks.size() && ri < job.graph.ranks.size(); ++ri) {
    const trace::TraceRank& rank = traces.ranks[ri];
    const graph::RankNodes& nodes = job.graph.ranks[ri];
    // Per step: the forward span [start, first backward op).
    std::vector<std::pair<Nanos, Nanos>> forward;
    for (const trace::Iteration& it : rank.iterations) {
      std::optional<Nanos> backward;
      for (const trace::Event& e : rank.events) {
        if (e.start < it.start || e.start >= it.end || e.kind != trace::EventKind::kCpuOp) continue;
        if (traces.name(e).find("Backward") != std::string_view::npos) {
          backward = e.start;
          break;  // events are sorted by start
        }
      }
      if (backward) forward.emplace_back(it.start, *backward);
    }
    if (forward.empty()) continue;
    std::vector<std::int64_t> bytes(forward.size(), 0);
    std::vector<std::size_t> ops(forward.size(), 0);
    std::vector<std::vector<ClassTensor>> tensors(forward.size());
    std::vector<std::array<long, 2>> class_ops(forward.size(), {0, 0});  // per step: gemm, conv ops so far (positions)
    std::vector<bool> counted(rank.events.size(), false);  // launcher events already counted
    for (std::uint32_t ev = 0; ev < rank.events.size(); ++ev) {
      const graph::EventRef ref(ev);
      if (!ref.below(nodes.node_of_event.size())) break;
      const graph::NodeId id = nodes.node_of_event[ref];
      if (!id.valid()) continue;
      const graph::Node& n = dfg.node(id);
      if (n.kind != graph::NodeKind::kKernel || !n.parent_op.valid()) continue;
      const trace::Event* launcher = graph::event_of(rank, n.parent_op);
      if (!launcher) continue;
      std::size_t step = forward.size();
      for (std::size_t k = 0; k < forward.size(); ++k)
        if (launcher->start >= forward[k].first && launcher->start < forward[k].second) step = k;
      if (step == forward.size()) continue;
      if (!n.parent_op.below(counted.size()) || counted[n.parent_op.value]) continue;
      const graph::OpDesc* op = dfg.op(id);
      if (!op) continue;
      // An embedding's first input is its table (a parameter, in the gradients' estimate); what it
      // saves is its indices.
      const std::string_view launcher_name = dfg.ops().name(op->launcher);
      if (launcher_name.find("embedding") != std::string_view::npos) continue;
      const costmodel::OpFamily family = costmodel::family_from_name(std::string(launcher_name));
      const bool conv = family == costmodel::OpFamily::kConv2d;
      const bool of_class = conv || family == costmodel::OpFamily::kLinear || family == costmodel::OpFamily::kBmm;
      const ClassTensor::Kind kind = !of_class ? ClassTensor::Kind::kOther : conv ? ClassTensor::Kind::kConv : ClassTensor::Kind::kGemm;
      const bool narrowable = of_class || runs_in_input_dtype(launcher_name);
      const auto order = static_cast<long>(ops[step]);  // this op's index among the step's counted ops
      bool first = true;
      for (const graph::TensorDesc& t : op->inputs) {
        if (t.shape.size() < 2) continue;  // scalars, lists, biases: the activation is the first of 2 or more dims
        std::int64_t elements = 1;
        for (const std::int64_t d : t.shape) elements *= std::max<std::int64_t>(d, 0);
        const std::string_view dtype = dfg.ops().name(t.dtype);
        if (first) {
          bytes[step] += elements * element_bytes(dtype);
          ++ops[step];
          counted[n.parent_op.value] = true;
        }
        if (narrowable && floating(dtype))
          tensors[step].push_back(
              {kind, first, elements, static_cast<int>(element_bytes(dtype)), of_class ? class_ops[step][conv] : 0, order});
        first = false;
        if (!of_class) break;  // the first such input only
      }
      if (of_class && !first) ++class_ops[step][conv];  // counted once: `counted` skips its later kernels
    }
    std::vector<std::size_t> order;
    for (std::size_t k = 0; k < forward.size(); ++k)
      if (ops[k] > 0) order.push_back(k);
    if (order.empty()) continue;
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return bytes[a] < bytes[b]; });
    const std::size_t median = order[order.size() / 2];
    if (!best || bytes[median] > best->bytes)
      best = ActivationEstimate{bytes[median], rank.rank, order.size(), ops[median], std::move(tensors[median])};
  }
  return best;
}

std::int64_t headroom_under_budget(double budget_gib, const std::optional<MemoryEstimate>& job, std::int64_t largest_credit) {
  const std::string value = fmt::format("{:g}", budget_gib);
  if (!job)
    throw OptionError("memory_budget", value,
                      "cannot tell the job's own memory per rank: the traces record no memory events and no gradient "
                      "all-reduce to estimate it from (use --memory-headroom for memory beyond the job's)");
  const auto budget = static_cast<std::int64_t>(budget_gib * kBytesPerGiB);
  largest_credit = std::max<std::int64_t>(largest_credit, 0);
  if (budget < job->bytes - largest_credit)
    throw OptionError("memory_budget", value,
                      fmt::format("below the job's own memory per rank, at least {:.3f} GiB ({}){}: no plan fits",
                                  static_cast<double>(job->bytes) / kBytesPerGiB, job->source,
                                  largest_credit > 0 ? fmt::format(", less the {:.3f} MiB of activations the search's precision "
                                                                   "plans free at most", static_cast<double>(largest_credit) / (1024.0 * 1024.0))
                                                     : std::string()));
  return budget - job->bytes;
}

}  // namespace dpro::optimizer
