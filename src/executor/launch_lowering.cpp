#include "executor/launch_lowering.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>

#include "core/error.h"
#include "core/strings.h"
#include "costmodel/op_desc.h"

namespace dpro::executor {

namespace cm = costmodel;

const char* to_string(OpClass c) {
  static constexpr std::array<const char*, kOpClassCount> kNames = {
      "gemm", "conv", "elementwise", "fused", "cast", "compress", "copy", "memset", "collective", "other"};
  return kNames[static_cast<int>(c)];
}

namespace {

// Framework ops (aten names without "aten::" and a trailing '_') and the step each stands for.
struct NamedOp {
  const char* name;
  ElementwiseOp tensor_op;  // with a tensor operand
  ElementwiseOp scalar_op;  // with a scalar operand (or unary)
};
// copy_ (and clone, _to_copy) run as a copy at the source's dtype: a dtype-changing copy (autocast's)
// is counted at the source's element size for its writes too.
constexpr std::array<NamedOp, 20> kAtenOps = {{
    {"copy", ElementwiseOp::kCopy, ElementwiseOp::kCopy},      {"clone", ElementwiseOp::kCopy, ElementwiseOp::kCopy},
    {"_to_copy", ElementwiseOp::kCopy, ElementwiseOp::kCopy},
    {"add", ElementwiseOp::kAdd, ElementwiseOp::kAddScalar},   {"sub", ElementwiseOp::kSub, ElementwiseOp::kAddScalar},
    {"mul", ElementwiseOp::kMul, ElementwiseOp::kScale},       {"div", ElementwiseOp::kDiv, ElementwiseOp::kScale},
    {"maximum", ElementwiseOp::kMax, ElementwiseOp::kMax},     {"minimum", ElementwiseOp::kMin, ElementwiseOp::kMin},
    {"relu", ElementwiseOp::kRelu, ElementwiseOp::kRelu},      {"gelu", ElementwiseOp::kGelu, ElementwiseOp::kGelu},
    {"silu", ElementwiseOp::kSilu, ElementwiseOp::kSilu},      {"sigmoid", ElementwiseOp::kSigmoid, ElementwiseOp::kSigmoid},
    {"tanh", ElementwiseOp::kTanh, ElementwiseOp::kTanh},      {"exp", ElementwiseOp::kExp, ElementwiseOp::kExp},
    {"log", ElementwiseOp::kLog, ElementwiseOp::kLog},         {"sqrt", ElementwiseOp::kSqrt, ElementwiseOp::kSqrt},
    {"rsqrt", ElementwiseOp::kRsqrt, ElementwiseOp::kRsqrt},   {"neg", ElementwiseOp::kNeg, ElementwiseOp::kNeg},
    {"abs", ElementwiseOp::kAbs, ElementwiseOp::kAbs},
}};

// PyTorch's elementwise kernels name their functor: "CUDAFunctor_add<float>", "MulFunctor<float>",
// "AUnaryFunctor<..., MulFunctor<...>>" (a scalar operand), "GeluCUDAKernelImpl", "silu_kernel".
struct KernelWord {
  const char* word;
  ElementwiseOp op;
};
constexpr std::array<KernelWord, 12> kKernelWords = {{
    {"functor_add", ElementwiseOp::kAdd}, {"addfunctor", ElementwiseOp::kAdd},  {"mulfunctor", ElementwiseOp::kMul},
    {"divfunctor", ElementwiseOp::kDiv},  {"gelucudakernelimpl", ElementwiseOp::kGelu},
    {"silu_kernel", ElementwiseOp::kSilu}, {"sigmoid_kernel", ElementwiseOp::kSigmoid},
    {"tanh_kernel", ElementwiseOp::kTanh}, {"exp_kernel", ElementwiseOp::kExp}, {"rsqrt_kernel", ElementwiseOp::kRsqrt},
    {"sqrt_kernel", ElementwiseOp::kSqrt}, {"neg_kernel", ElementwiseOp::kNeg},
}};

// Ops whose operands include indices: running them on synthetic data would read out of bounds.
constexpr std::array<const char*, 14> kIndexWords = {"embedding", "index", "gather", "scatter", "nll_loss", "cross_entropy",
                                                     "topk", "sort", "unique", "masked", "take", "put_", "nonzero", "multinomial"};

bool contains(std::string_view text, std::string_view word) { return text.find(word) != std::string_view::npos; }

bool names_attention(std::string_view kernel) {
  const std::string k = ascii_lower(kernel);
  return contains(k, "sdpa") || contains(k, "flash") || contains(k, "attention") || contains(k, "fmha");
}

std::string aten_base(std::string_view launcher) {
  std::string s = ascii_lower(launcher);
  if (s.rfind("aten::", 0) == 0) s = s.substr(6);
  if (!s.empty() && s.back() == '_') s.pop_back();
  return s;
}


bool takes_indices(std::string_view launcher, std::string_view kernel) {
  const std::string l = ascii_lower(launcher), k = ascii_lower(kernel);
  return std::any_of(kIndexWords.begin(), kIndexWords.end(), [&](const char* w) { return contains(l, w) || contains(k, w); });
}

std::int64_t elements_of(const std::vector<std::int64_t>& shape) {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= std::max<std::int64_t>(d, 0);
  return n;
}

std::optional<DType> executor_dtype(hw::DType d) {
  switch (d) {
    case hw::DType::kFloat32: case hw::DType::kTensorFloat32: return DType::kF32;
    case hw::DType::kFloat16: return DType::kF16;
    case hw::DType::kBFloat16: return DType::kBF16;
    case hw::DType::kFloat64: return DType::kF64;
    case hw::DType::kInt8: return DType::kU8;
    case hw::DType::kFloat8: return std::nullopt;
  }
  return std::nullopt;
}

DType recorded_dtype(const graph::OpTable& table, const graph::TensorDesc& t) {
  if (t.dtype.empty()) return DType::kF32;
  const auto d = hw::parse_dtype(std::string(table.name(t.dtype)));
  const auto e = d ? executor_dtype(*d) : std::nullopt;
  return e.value_or(DType::kF32);
}

// The op whose launching CPU op describes `node` (its own, or a like step's).
const graph::OpDesc& launch_op(const graph::Dfg& dfg, graph::NodeId node, const LaunchOptions& options) {
  if (options.like_steps && node.below(options.like_steps->launch.size())) {
    const graph::OpId lent = options.like_steps->launch[node];
    if (lent.valid()) return dfg.ops().op(lent);
  }
  return *dfg.op(node);
}

LoweredLaunch standin(const graph::Dfg& dfg, graph::NodeId node, OpClass c, std::string reason) {
  StandinKernel k;
  if (const graph::OpDesc* op = dfg.op(node)) {
    if (op->grid) for (int i = 0; i < 3; ++i) k.grid[i] = static_cast<std::uint32_t>(std::max(1, (*op->grid)[i]));
    if (op->block) for (int i = 0; i < 3; ++i) k.block[i] = static_cast<std::uint32_t>(std::max(1, (*op->block)[i]));
  }
  k.duration = dfg.node(node).duration;
  return {k, c, std::move(reason)};
}

// One elementwise op over the launcher's first input: (step, elements, dtype); nullopt when the op
// is not one ElementwiseOp names or its size is not recorded.
struct ElementwiseOfOp {
  ElementwiseStep step;
  std::int64_t elements = 0;
  DType dtype = DType::kF32;
  bool binary = false;
};
std::optional<ElementwiseOfOp> elementwise_of(const graph::OpTable& table, const graph::OpDesc& own,
                                              const graph::OpDesc& launch) {
  const std::string_view launcher = table.name(launch.launcher), kernel = table.name(own.name);
  const bool scalar = launch.inputs.size() < 2 || launch.inputs[1].shape.empty();
  const auto op = elementwise_op_of(launcher, kernel, scalar);
  if (!op || launch.inputs.empty() || launch.inputs[0].shape.empty()) return std::nullopt;
  ElementwiseOfOp out;
  out.step.op = *op;
  out.step.scalar = *op == ElementwiseOp::kScale ? 1.0f : 0.0f;  // the recorded scalar's value is not in the trace
  out.binary = *op == ElementwiseOp::kAdd || *op == ElementwiseOp::kSub || *op == ElementwiseOp::kMul ||
               *op == ElementwiseOp::kDiv || (!scalar && (*op == ElementwiseOp::kMax || *op == ElementwiseOp::kMin));
  out.elements = elements_of(launch.inputs[0].shape);
  out.dtype = recorded_dtype(table, launch.inputs[0]);
  return out.elements > 0 ? std::optional(out) : std::nullopt;
}

std::uint64_t bytes_of(std::int64_t elements, DType t) { return static_cast<std::uint64_t>(elements) * dtype_bytes(t); }

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

LoweredLaunch lower_fused(const graph::Dfg& dfg, graph::NodeId node) {
  const graph::OpDesc& fused = *dfg.op(node);
  std::vector<ElementwiseOfOp> parts;
  for (graph::OpId p : fused.parts) {
    const auto e = elementwise_of(dfg.ops(), dfg.ops().op(p), dfg.ops().op(p));
    if (!e) return standin(dfg, node, OpClass::kFused, "fused chain with a part no ElementwiseOp stands for or of unrecorded size");
    parts.push_back(*e);
  }
  // The chain runs over the largest part's elements (broadcast operands are read as full tensors).
  const auto widest = std::max_element(parts.begin(), parts.end(),
                                       [](const auto& a, const auto& b) { return a.elements < b.elements; });
  parts.front().elements = widest->elements;
  return {chain_of(parts), OpClass::kFused, ""};
}

// The node after `node` on its stream (the op a cast or compression kernel serves), or before it.
std::optional<graph::NodeId> stream_neighbour(const graph::Dfg& dfg, graph::NodeId node, bool after) {
  std::optional<graph::NodeId> out;
  auto take = [&](graph::EdgeId e) {
    const graph::Edge& edge = dfg.edge(e);
    if (edge.kind == graph::EdgeKind::kStreamOrder) out = after ? edge.dst : edge.src;
  };
  if (after) dfg.for_each_out_edge(node, take);
  else dfg.for_each_in_edge(node, take);
  return out;
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

LoweredLaunch lower_collective(const graph::Dfg& dfg, graph::NodeId node) {
  CollectiveCall c;
  c.standin_duration = dfg.node(node).duration;
  const graph::OpDesc* op = dfg.op(node);
  if (op && op->collective) {
    const graph::CollectiveDesc& d = *op->collective;
    c.op = collective_op_name(dfg.ops().name(d.op));
    const auto parsed = d.dtype.empty() ? std::nullopt : hw::parse_dtype(std::string(dfg.ops().name(d.dtype)));
    c.dtype = parsed ? executor_dtype(*parsed).value_or(DType::kF32) : DType::kF32;
    const std::int64_t elements = std::max(d.in_nelems.value_or(0), d.out_nelems.value_or(0));
    c.bytes = bytes_of(elements, c.dtype);
  } else {
    c.op = "all_reduce";  // size unknown: a stand-in of the recorded time on any device
  }
  c.buffer = {0, 0, c.bytes};
  return {c, OpClass::kCollective, ""};
}

CopyKind copy_kind(std::string_view name) {
  const std::string n = ascii_lower(name);
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

LoweredLaunch lower_kernel(const graph::Dfg& dfg, graph::NodeId node, const LaunchOptions& options);

}  // namespace

std::optional<ElementwiseOp> elementwise_op_of(std::string_view launcher, std::string_view kernel, bool scalar_operand) {
  if (takes_indices(launcher, kernel)) return std::nullopt;
  const std::string base = aten_base(launcher);
  for (const NamedOp& op : kAtenOps)
    if (base == op.name) return scalar_operand ? op.scalar_op : op.tensor_op;
  if (!launcher.empty()) return std::nullopt;  // a named op we have no step for (e.g. a backward)
  const std::string k = ascii_lower(kernel);
  if (contains(k, "backward")) return std::nullopt;
  const bool scalar = contains(k, "unaryfunctor");
  for (const KernelWord& w : kKernelWords) {
    if (!contains(k, w.word)) continue;
    if (scalar && w.op == ElementwiseOp::kAdd) return ElementwiseOp::kAddScalar;
    if (scalar && w.op == ElementwiseOp::kMul) return ElementwiseOp::kScale;
    return w.op;
  }
  return std::nullopt;
}

namespace {

std::optional<CompressMethod> compress_method(std::string_view name) {
  static const std::array<std::pair<const char*, CompressMethod>, 7> kMethods = {{{"topk", CompressMethod::kTopK},
                                                                                  {"dgc", CompressMethod::kTopK},
                                                                                  {"randomk", CompressMethod::kRandomK},
                                                                                  {"efsignsgd", CompressMethod::kSignPack},
                                                                                  {"powersgd", CompressMethod::kPowerSgd},
                                                                                  {"fp16", CompressMethod::kCastF16},
                                                                                  {"bf16", CompressMethod::kCastBF16}}};
  for (const auto& [word, method] : kMethods)
    if (name == word) return method;
  return std::nullopt;
}

// The compression decision's spec for `method` (its ratio or rank); the defaults when the
// decision does not name it.
const comm::CompressionSpec* spec_for(const comm::Compression& c, std::string_view method) {
  if (method == comm::to_string(c.all.method)) return &c.all;
  for (const comm::CompressionSpec& s : c.per_bucket)
    if (method == comm::to_string(s.method)) return &s;
  return nullptr;
}

std::uint64_t payload_bytes(const CompressCall& c) {
  const auto n = static_cast<double>(c.elements);
  const auto k = static_cast<std::uint64_t>(std::max(1.0, std::ceil(c.param * n)));
  switch (c.method) {
    case CompressMethod::kTopK: return 8 * k;
    case CompressMethod::kRandomK: return 4 * k;
    case CompressMethod::kSignPack: return static_cast<std::uint64_t>(c.elements + 7) / 8 + 4;
    case CompressMethod::kPowerSgd: {
      const auto cols = static_cast<std::uint64_t>((c.elements + c.rows - 1) / c.rows);
      return 4 * static_cast<std::uint64_t>(c.param) * (static_cast<std::uint64_t>(c.rows) + cols);
    }
    case CompressMethod::kCastF16: case CompressMethod::kCastBF16: return 2 * static_cast<std::uint64_t>(c.elements);
  }
  return 0;
}

LoweredLaunch lower_compress(const graph::Dfg& dfg, graph::NodeId node, const LaunchOptions& options, bool decompress,
                             std::string_view method_name) {
  const auto method = compress_method(method_name);
  const auto collective = stream_neighbour(dfg, node, !decompress);
  const graph::OpDesc* op = collective ? dfg.op(*collective) : nullptr;
  if (!method || !op || !op->collective || !op->collective->in_nelems)
    return standin(dfg, node, OpClass::kCompress, "compression kernel beside a collective of unrecorded size");
  CompressCall c;
  c.method = *method;
  c.decompress = decompress;
  c.elements = *op->collective->in_nelems;
  const comm::CompressionSpec* spec = spec_for(options.compression, method_name);
  const comm::CompressionSpec defaults;
  c.param = c.method == CompressMethod::kPowerSgd ? (spec ? spec->rank : defaults.rank) : (spec ? spec->ratio : defaults.ratio);
  c.rows = static_cast<std::int64_t>(std::ceil(std::sqrt(static_cast<double>(c.elements))));
  const std::uint64_t gradient = bytes_of(c.elements, DType::kF32), payload = payload_bytes(c);
  c.src = {0, 0, decompress ? payload : gradient};
  c.dst = {0, 0, decompress ? gradient : payload};
  const bool feedback = c.method != CompressMethod::kCastF16 && c.method != CompressMethod::kCastBF16;
  if (feedback) c.residual = {0, 0, gradient};
  c.seed = static_cast<std::uint64_t>(node.value);
  return {c, OpClass::kCompress, ""};
}

// A GEMM-like kernel whose name says convolution (cuDNN's, for kernels without a launching op):
// not attention (cuDNN's flash-attention kernels say "fprop" too) nor a dtype conversion.
bool names_convolution(std::string_view kernel) {
  const std::string k = ascii_lower(kernel);
  if (names_attention(k) || contains(k, "convert")) return false;
  for (const char* w : {"conv", "fprop", "dgrad", "wgrad", "winograd", "implicit_gemm"})
    if (contains(k, w)) return true;
  return false;
}

LoweredLaunch lower_gemm_or_standin(const graph::Dfg& dfg, graph::NodeId node, const LaunchOptions& options) {
  const graph::OpDesc& own = *dfg.op(node);
  const graph::OpDesc& launch = launch_op(dfg, node, options);
  const std::string kernel(dfg.ops().name(own.name));
  const std::string_view launcher = dfg.ops().name(launch.launcher);
  if (names_attention(kernel)) return standin(dfg, node, OpClass::kOther, "attention kernel: no kernel in kernels/");
  if (cm::is_gemm_or_conv_kernel(kernel)) {
    const cm::OpDesc d = cm::op_desc_of_kernel(dfg.ops(), own, launch);
    if (d.family == cm::OpFamily::kConv2d || (d.family == cm::OpFamily::kUnknown && names_convolution(kernel)))
      return standin(dfg, node, OpClass::kConv, "convolution: no kernel in kernels/");
    // What ran: the kernel's own arithmetic where its name says (autocast runs fp32-recorded ops in bf16).
    const hw::DType math = cm::kernel_math_dtype(kernel).value_or(d.dtype);
    const auto dtype = executor_dtype(math);
    if ((d.family != cm::OpFamily::kBmm && d.family != cm::OpFamily::kLinear) || !d.describable() || !dtype)
      return standin(dfg, node, OpClass::kGemm, "GEMM whose launching op records no shapes");
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
    return {g, OpClass::kGemm, ""};
  }
  if (takes_indices(launcher, kernel)) return standin(dfg, node, OpClass::kOther, "takes indices: no synthetic data for it");
  if (const auto e = elementwise_of(dfg.ops(), own, launch)) return {chain_of({*e}), OpClass::kElementwise, ""};
  return standin(dfg, node, OpClass::kOther, "no kernel in kernels/ for this op");
}

LoweredLaunch lower_kernel(const graph::Dfg& dfg, graph::NodeId node, const LaunchOptions& options) {
  const graph::OpDesc* op = dfg.op(node);
  if (!op) return standin(dfg, node, OpClass::kOther, "no op description");
  if (!op->parts.empty()) return lower_fused(dfg, node);
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
    case graph::NodeKind::kCollective: return lower_collective(dfg, node);
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
