#include "executor/launch_lowering.h"

#include <algorithm>
#include <array>
#include <utility>

#include "core/error.h"
#include "core/strings.h"
#include "costmodel/op_desc.h"
#include "executor/lowering_internal.h"
#include "whatif/op_fusion.h"

namespace dpro::executor {

namespace cm = costmodel;
using namespace detail;

const char* to_string(OpClass c) {
  static constexpr std::array<const char*, kOpClassCount> kNames = {
      "gemm", "conv", "elementwise", "fused", "cast", "compress", "copy", "memset", "collective", "other"};
  return kNames[static_cast<int>(c)];
}

namespace {

// One elementwise op over the launcher's first input: (step, elements, dtype); nullopt when the op
// is not one ElementwiseOp names or its size is not recorded.
struct ElementwiseOfOp {
  ElementwiseStep step;
  std::int64_t elements = 0;
  DType dtype = DType::kF32;
  bool binary = false;
};
// The ElementwiseOp a kernel stands for, by its launching op (a second input without a shape: a
// scalar operand) or its own name.
std::optional<ElementwiseOp> elementwise_op_of_kernel(const graph::OpTable& table, const graph::OpDesc& own,
                                                      const graph::OpDesc& launch) {
  const bool scalar = launch.inputs.size() < 2 || launch.inputs[1].shape.empty();
  return elementwise_op_of(table.name(launch.launcher), table.name(own.name), scalar);
}
std::optional<ElementwiseOfOp> elementwise_of(const graph::OpTable& table, const graph::OpDesc& own,
                                              const graph::OpDesc& launch) {
  const auto op = elementwise_op_of_kernel(table, own, launch);
  if (!op || launch.inputs.empty() || launch.inputs[0].shape.empty()) return std::nullopt;
  ElementwiseOfOp out;
  out.step.op = *op;
  // The recorded scalar's value is not in the trace: a scale of 1, pow's exponent 2, 0 otherwise
  // (threshold_backward's threshold and clamp_min's bound as relu's, fill_'s value).
  out.step.scalar = *op == ElementwiseOp::kScale ? 1.0f : *op == ElementwiseOp::kPowScalar ? 2.0f : 0.0f;
  out.binary = elementwise_op_is_binary(*op);
  out.elements = elements_of(launch.inputs[0].shape);
  out.dtype = recorded_dtype(table, launch.inputs[0]);
  return out.elements > 0 ? std::optional(out) : std::nullopt;
}


ElementwiseChain chain_of(const std::vector<ElementwiseOfOp>& parts) {
  ElementwiseChain c;
  c.elements = parts.front().elements;
  c.dtype = parts.front().dtype;
  const std::uint64_t bytes = bytes_of(c.elements, c.dtype);
  c.inputs.push_back({0, 0, bytes});
  for (const ElementwiseOfOp& p : parts) {
    ElementwiseStep s = p.step;
    if (p.binary) {
      s.input = static_cast<int>(c.inputs.size());
      c.inputs.push_back({0, 0, bytes});
    }
    c.steps.push_back(s);
  }
  c.outputs.push_back({0, 0, bytes});
  return c;
}

// The GEMM a kernel ran, at its launching op's shape (bmm, linear) and the arithmetic its name
// says (autocast runs fp32-recorded ops in bf16); nullopt when the op records no shapes.
std::optional<GemmCall> gemm_call_of(const graph::OpTable& table, const graph::OpDesc& own, const graph::OpDesc& launch) {
  const std::string kernel(table.name(own.name));
  const cm::OpDesc d = cm::op_desc_of_kernel(table, own, launch);
  const hw::DType math = cm::kernel_math_dtype(kernel).value_or(d.dtype);
  const auto dtype = executor_dtype(math);
  if ((d.family != cm::OpFamily::kBmm && d.family != cm::OpFamily::kLinear) || !d.describable() || !dtype)
    return std::nullopt;
  GemmCall g;
  g.batch = d.dims[0];
  g.m = d.dims[1];
  g.n = d.dims[2];
  g.k = d.dims[3];
  g.dtype = *dtype;
  g.math = math == hw::DType::kTensorFloat32 ? MathMode::kTF32 : MathMode::kDefault;
  g.a = {0, 0, bytes_of(g.batch * g.m * g.k, g.dtype)};
  g.b = {0, 0, bytes_of(g.batch * g.k * g.n, g.dtype)};
  g.c = {0, 0, bytes_of(g.batch * g.m * g.n, g.dtype)};
  return g;
}

// The optimizer's epilogue steps (whatif::epilogue_op_of, the classification op_fusion fuses by)
// as one cuBLASLt epilogue; kNone when cuBLASLt has none for them (whatif::epilogue_supported).
GemmEpilogue gemm_epilogue_of(const std::vector<whatif::EpilogueOp>& steps) {
  using E = whatif::EpilogueOp;
  if (!whatif::epilogue_supported(steps)) return GemmEpilogue::kNone;
  const E first = steps.front(), second = steps.size() > 1 ? steps[1] : E::kNone;
  switch (first) {
    case E::kBias:
      return second == E::kRelu ? GemmEpilogue::kBiasRelu : second == E::kGelu ? GemmEpilogue::kBiasGelu : GemmEpilogue::kBias;
    case E::kRelu: return GemmEpilogue::kRelu;
    case E::kGelu: return GemmEpilogue::kGelu;
    case E::kDRelu: return second == E::kBGrad ? GemmEpilogue::kDReluBGrad : GemmEpilogue::kDRelu;
    case E::kDGelu: return second == E::kBGrad ? GemmEpilogue::kDGeluBGrad : GemmEpilogue::kDGelu;
    default: return GemmEpilogue::kNone;
  }
}

// A GEMM fused with its epilogue (whatif/op_fusion.h) as one cuBLASLt call. The recorded
// row-major C[M,N] = A[M,K] W[K,N] is cuBLASLt's column-major N x M product (as PyTorch calls
// it), so that the bias cuBLASLt broadcasts over D's columns is the N output features' vector.
// Parts whose launching op records no shapes take the like step's (part_launch_op).
LoweredLaunch lower_epilogue(const graph::Dfg& dfg, graph::NodeId node, const LaunchOptions& options) {
  const graph::OpDesc& fused = *dfg.op(node);
  const graph::OpTable& table = dfg.ops();
  std::vector<whatif::EpilogueOp> steps;
  for (std::size_t i = 1; i < fused.parts.size(); ++i) {
    const graph::OpDesc& part = table.op(fused.parts[i]);
    const graph::OpDesc& launch = part_launch_op(dfg, node, i, options);
    const cm::OpDesc desc = cm::op_desc_of_kernel(table, part, launch);
    steps.push_back(whatif::epilogue_op_of(table.name(launch.launcher), table.name(part.name), &desc));
  }
  const GemmEpilogue epilogue = gemm_epilogue_of(steps);
  if (epilogue == GemmEpilogue::kNone)
    return standin(dfg, node, OpClass::kFused, "GEMM-headed fused chain that is no cuBLASLt epilogue");
  const graph::OpDesc& gemm = table.op(fused.parts.front());
  auto g = gemm_call_of(table, gemm, part_launch_op(dfg, node, 0, options));
  if (!g)
    return standin(dfg, node, OpClass::kFused,
                   "GEMM with a cuBLASLt epilogue whose launching op records no shapes (none lent by a like step)");
  std::swap(g->m, g->n);
  g->epilogue = epilogue;
  if (epilogue_reads_bias(epilogue) || epilogue_writes_bias(epilogue))
    g->bias = {0, 0, bytes_of(g->batch * g->m, g->dtype)};
  if (epilogue_reads_aux(epilogue)) g->aux = {0, 0, gemm_aux_bytes(epilogue, g->m, g->n, g->batch, g->dtype)};
  return {*g, OpClass::kFused, ""};
}

// Parts whose launching op records no sizes take the like step's (part_launch_op).
LoweredLaunch lower_fused(const graph::Dfg& dfg, graph::NodeId node, const LaunchOptions& options) {
  const graph::OpDesc& fused = *dfg.op(node);
  const graph::OpTable& table = dfg.ops();
  if (!fused.parts.empty() && whatif::is_epilogue_gemm(table.name(table.op(fused.parts.front()).name)))
    return lower_epilogue(dfg, node, options);
  std::vector<ElementwiseOfOp> parts;
  // Why a part is no step, the reason that lending cannot change first: an op no ElementwiseOp
  // stands for; a kernel its name alone does not name, without a launching op; a size unrecorded.
  bool not_elementwise = false, unlaunched = false, unsized = false;
  std::vector<std::string> blocking;
  for (std::size_t k = 0; k < fused.parts.size(); ++k) {
    const graph::OpDesc& part = table.op(fused.parts[k]);
    const graph::OpDesc& launch = part_launch_op(dfg, node, k, options);
    if (const auto e = elementwise_of(table, part, launch)) {
      parts.push_back(*e);
      continue;
    }
    if (elementwise_op_of_kernel(table, part, launch)) unsized = true;
    else if (launch.launcher.empty()) unlaunched = true;
    else {
      not_elementwise = true;
      const std::string name(table.name(launch.launcher));
      if (std::find(blocking.begin(), blocking.end(), name) == blocking.end()) blocking.push_back(name);
    }
  }
  if (not_elementwise) {
    LoweredLaunch l = standin(dfg, node, OpClass::kFused, "fused chain with a part no ElementwiseOp stands for");
    l.blocking_ops = std::move(blocking);
    return l;
  }
  if (unlaunched)
    return standin(dfg, node, OpClass::kFused,
                   "fused chain with a part whose kernel name names no ElementwiseOp and no launching op does (none lent by a like step)");
  if (unsized || parts.empty())
    return standin(dfg, node, OpClass::kFused,
                   "fused chain with a part whose launching op records no size (none lent by a like step)");
  // The chain runs over the largest part's elements (broadcast operands are read as full tensors).
  const auto widest = std::max_element(parts.begin(), parts.end(),
                                       [](const auto& a, const auto& b) { return a.elements < b.elements; });
  parts.front().elements = widest->elements;
  return {chain_of(parts), OpClass::kFused, ""};
}

LoweredLaunch lower_cast(const graph::Dfg& dfg, graph::NodeId node, const LaunchOptions& options) {
  // The precision rewrite casts the weight (second operand) of the GEMM it is inserted before.
  const auto next = stream_neighbour(dfg, node, true);
  const graph::OpDesc* served = next ? dfg.op(*next) : nullptr;
  const graph::OpDesc& launch = served ? launch_op(dfg, *next, options) : graph::OpDesc{};
  if (!served || launch.inputs.size() < 2 || elements_of(launch.inputs[1].shape) <= 0 || launch.inputs[1].shape.empty())
    return standin(dfg, node, OpClass::kCast, "cast whose GEMM records no weight shape");
  CastCall c;
  c.from = DType::kF32;
  c.to = options.cast_to;
  c.elements = elements_of(launch.inputs[1].shape);
  c.src = {0, 0, bytes_of(c.elements, c.from)};
  c.dst = {0, 0, bytes_of(c.elements, c.to)};
  return {c, OpClass::kCast, ""};
}

std::string collective_op_name(std::string_view normalised) {
  static const std::array<std::pair<const char*, const char*>, 7> kNames = {{{"allreduce", "all_reduce"},
                                                                             {"allgather", "all_gather"},
                                                                             {"reducescatter", "reduce_scatter"},
                                                                             {"alltoall", "all_to_all"},
                                                                             {"alltoallv", "all_to_all"},
                                                                             {"sendrecv", "send"},
                                                                             {"reduce", "all_reduce"}}};
  for (const auto& [from, to] : kNames)
    if (normalised == from) return to;
  return std::string(normalised);
}

LoweredLaunch lower_collective(const graph::Dfg& dfg, graph::NodeId node, const LaunchOptions& options) {
  const auto bucket = options.buckets.find(node);
  if (bucket != options.buckets.end() && !bucket->second.last)
    return {StandinKernel{{1, 1, 1}, {1, 1, 1}, 0}, OpClass::kCollective, "gradient bucket member: runs in its last member's call"};
  CollectiveCall c;
  c.standin_duration = dfg.node(node).duration;
  const graph::OpDesc* op = dfg.op(node);
  if (op && op->collective) {
    const graph::CollectiveDesc& d = *op->collective;
    c.op = collective_op_name(dfg.ops().name(d.op));
    const auto parsed = d.dtype.empty() ? std::nullopt : hw::parse_dtype(std::string(dfg.ops().name(d.dtype)));
    c.dtype = parsed ? executor_dtype(*parsed).value_or(DType::kF32) : DType::kF32;
    const std::int64_t elements = bucket != options.buckets.end() ? bucket->second.bucket_elements
                                                                   : std::max(d.in_nelems.value_or(0), d.out_nelems.value_or(0));
    c.bytes = bytes_of(elements, c.dtype);
  } else {
    c.op = "all_reduce";  // size unknown: a stand-in of the recorded time on any device
  }
  c.buffer = {0, 0, c.bytes};
  return {c, OpClass::kCollective, ""};
}

CopyKind copy_kind(std::string_view name) {
  const std::string n = ascii_lower(name);
  auto contains = [](std::string_view text, std::string_view word) { return text.find(word) != std::string_view::npos; };
  if (contains(n, "htod") || contains(n, "host to device") || contains(n, "h2d")) return CopyKind::kHostToDevice;
  if (contains(n, "dtoh") || contains(n, "device to host") || contains(n, "d2h")) return CopyKind::kDeviceToHost;
  return CopyKind::kDeviceToDevice;
}

LoweredLaunch lower_copy(const graph::Dfg& dfg, graph::NodeId node) {
  const graph::OpDesc* op = dfg.op(node);
  if (!op || !op->bytes || *op->bytes <= 0) return standin(dfg, node, OpClass::kCopy, "copy of unrecorded size");
  CopyCall c;
  c.kind = copy_kind(dfg.ops().name(op->name));
  c.bytes = static_cast<std::uint64_t>(*op->bytes);
  if (c.kind != CopyKind::kHostToDevice) c.src = {0, 0, c.bytes};
  if (c.kind != CopyKind::kDeviceToHost) c.dst = {0, 0, c.bytes};
  return {c, OpClass::kCopy, ""};
}

LoweredLaunch lower_memset(const graph::Dfg& dfg, graph::NodeId node) {
  const graph::OpDesc* op = dfg.op(node);
  if (!op || !op->bytes || *op->bytes <= 0) return standin(dfg, node, OpClass::kMemset, "memset of unrecorded size");
  MemsetCall m;
  m.dst = {0, 0, static_cast<std::uint64_t>(*op->bytes)};
  return {m, OpClass::kMemset, ""};
}

LoweredLaunch lower_gemm_or_standin(const graph::Dfg& dfg, graph::NodeId node, const LaunchOptions& options) {
  const graph::OpDesc& own = *dfg.op(node);
  const graph::OpDesc& launch = launch_op(dfg, node, options);
  const std::string kernel(dfg.ops().name(own.name));
  const std::string_view launcher = dfg.ops().name(launch.launcher);
  // By the launching op too: cuDNN's attention backward launches convert_dq_to_16bits, which
  // is_gemm_or_conv_kernel takes for a convolution ("conv" in "convert").
  if (names_attention(kernel) || names_attention(launcher))
    return standin(dfg, node, OpClass::kOther, "attention kernel: no kernel in kernels/");
  if (cm::is_gemm_or_conv_kernel(kernel)) {
    const cm::OpDesc d = cm::op_desc_of_kernel(dfg.ops(), own, launch);
    // By the launching op too: cuDNN runs a 1x1 convolution's backward as cuBLAS's nvjet GEMMs.
    if (d.family == cm::OpFamily::kConv2d ||
        (d.family == cm::OpFamily::kUnknown && (names_convolution(kernel) || names_convolution(launcher))))
      return standin(dfg, node, OpClass::kConv, "convolution: no kernel in kernels/");
    const auto g = gemm_call_of(dfg.ops(), own, launch);
    if (!g) return standin(dfg, node, OpClass::kGemm, "GEMM whose launching op records no shapes");
    return {*g, OpClass::kGemm, ""};
  }
  if (takes_indices(launcher, kernel)) return standin(dfg, node, OpClass::kOther, "takes indices: no synthetic data for it");
  if (const auto e = elementwise_of(dfg.ops(), own, launch)) return {chain_of({*e}), OpClass::kElementwise, ""};
  return standin(dfg, node, OpClass::kOther, "no kernel in kernels/ for this op");
}

LoweredLaunch lower_kernel(const graph::Dfg& dfg, graph::NodeId node, const LaunchOptions& options) {
  const graph::OpDesc* op = dfg.op(node);
  if (!op) return standin(dfg, node, OpClass::kOther, "no op description");
  if (!op->parts.empty()) return lower_fused(dfg, node, options);
  const std::string_view name = dfg.ops().name(op->name);
  if (name == "autocast cast") return lower_cast(dfg, node, options);
  for (const auto& [prefix, decompress] : {std::pair{std::string_view("dpro::compress("), false},
                                           std::pair{std::string_view("dpro::decompress("), true}}) {
    if (name.rfind(prefix, 0) == 0 && name.back() == ')')
      return lower_compress(dfg, node, options, decompress, name.substr(prefix.size(), name.size() - prefix.size() - 1));
  }
  return lower_gemm_or_standin(dfg, node, options);
}

}  // namespace

LoweredLaunch lower_launch(const graph::Dfg& dfg, graph::NodeId node, const LaunchOptions& options) {
  DPRO_CHECK(dfg.finalized());
  switch (dfg.node(node).kind) {
    case graph::NodeKind::kKernel: return lower_kernel(dfg, node, options);
    case graph::NodeKind::kCollective: return lower_collective(dfg, node, options);
    case graph::NodeKind::kMemcpy: return lower_copy(dfg, node);
    case graph::NodeKind::kMemset: return lower_memset(dfg, node);
    default: DPRO_CHECK(false && "lower_launch: not a GPU op");
  }
  return {};
}

std::vector<Slot> slots_of(Launch& launch) {
  std::vector<Slot> out;
  auto add = [&](Span& s, SlotRole r) {
    if (s.bytes > 0) out.push_back({&s, r});
  };
  std::visit(
      [&](auto& l) {
        using T = std::decay_t<decltype(l)>;
        if constexpr (std::is_same_v<T, GemmCall>) {
          add(l.a, SlotRole::kInput), add(l.b, SlotRole::kInput), add(l.c, SlotRole::kOutput);
          add(l.bias, epilogue_writes_bias(l.epilogue) ? SlotRole::kOutput : SlotRole::kInput);
          add(l.aux, SlotRole::kInput);
        } else if constexpr (std::is_same_v<T, ElementwiseChain>) {
          for (Span& s : l.inputs) add(s, SlotRole::kInput);
          for (Span& s : l.outputs) add(s, SlotRole::kOutput);
        } else if constexpr (std::is_same_v<T, CastCall>) {
          add(l.src, SlotRole::kInput), add(l.dst, SlotRole::kOutput);
        } else if constexpr (std::is_same_v<T, CompressCall>) {
          add(l.src, SlotRole::kInput), add(l.dst, SlotRole::kOutput), add(l.residual, SlotRole::kPersistent);
        } else if constexpr (std::is_same_v<T, CopyCall>) {
          add(l.src, SlotRole::kInput), add(l.dst, SlotRole::kOutput);
        } else if constexpr (std::is_same_v<T, MemsetCall>) {
          add(l.dst, SlotRole::kOutput);
        } else if constexpr (std::is_same_v<T, CollectiveCall>) {
          add(l.buffer, SlotRole::kOutput);
        }
      },
      launch);
  return out;
}

}  // namespace dpro::executor
