#include "whatif/precision.h"

#include <algorithm>
#include <array>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <unordered_map>
#include <tuple>

#include "core/error.h"
#include "core/strings.h"
#include "costmodel/op_desc_from_graph.h"
#include "costmodel/scaling.h"
#include "hw/device_rates.h"
#include "trace/iterations.h"
#include "whatif/device_retime.h"

namespace dpro::whatif {

namespace cm = dpro::costmodel;

const char* to_string(OpClass c) {
  switch (c) {
    case OpClass::kGemm: return "gemm";
    case OpClass::kConv: return "conv";
    case OpClass::kElementwise: return "elementwise";
  }
  return "?";
}

bool OpPart::selects(long index, long count) const {
  const bool listed =
      std::any_of(positions.begin(), positions.end(), [&](long p) { return p >= 0 ? p == index : count + p == index; });
  return listed != complement;
}

std::string OpPart::to_string() const {
  std::string out = whatif::to_string(cls);
  out += layers ? '#' : '@';
  if (complement) out += '^';
  for (std::size_t i = 0; i < positions.size(); ++i) {
    if (i > 0) out += ',';
    out += std::to_string(positions[i]);
  }
  return out;
}

std::optional<OpPart> parse_op_part(const std::string& text) {
  const auto at = text.find_first_of("@#");
  if (at == std::string::npos) return std::nullopt;
  OpPart part;
  part.layers = text[at] == '#';
  const std::string cls = text.substr(0, at);
  if (cls == "gemm") part.cls = OpClass::kGemm;
  else if (cls == "conv") part.cls = OpClass::kConv;
  else
    throw OptionError("precision_classes", text,
                      "a part of an op class is gemm@N,.. or conv@N,.. (op positions), gemm#N,.. or conv#N,.. (layers); "
                      "@^ or #^ for the rest");
  std::size_t begin = at + 1;
  if (begin < text.size() && text[begin] == '^') {
    part.complement = true;
    ++begin;
  }
  for (;;) {
    const auto comma = text.find(',', begin);
    const std::string item = text.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin);
    const std::size_t digits = item.size() - (!item.empty() && item[0] == '-');
    if (digits == 0 || digits > 6 ||
        !std::all_of(item.end() - static_cast<std::ptrdiff_t>(digits), item.end(), [](char ch) { return ch >= '0' && ch <= '9'; }))
      throw OptionError("precision_classes", text,
                        "\"" + item + "\" is no " + (part.layers ? "layer" : "op position") + " (an integer, negative from the end)");
    part.positions.push_back(std::stol(item));
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  std::sort(part.positions.begin(), part.positions.end());
  part.positions.erase(std::unique(part.positions.begin(), part.positions.end()), part.positions.end());
  return part;
}

bool names_part_of(const std::string& subject, const std::string& cls) {
  return subject.size() > cls.size() && subject.compare(0, cls.size(), cls) == 0 &&
         (subject[cls.size()] == '@' || subject[cls.size()] == '#');
}

namespace {

// Names (of a kernel or its launching op, lower case) of kernels whose time a precision change
// keeps: what autocast runs in fp32 whatever its input (its fp32 list: softmax, norms other than
// batch norm, losses, reductions), what works on fp32 parameters and buffers (the optimizer's
// multi-tensor kernels, batch norm's running statistics), and copies (dtype casts and layout
// copies: a trace's own casts are autocast's already).
constexpr std::array<const char*, 14> kKeptTimeWords = {
    "softmax", "layer_norm", "layernorm", "group_norm", "groupnorm", "loss", "nll",
    "cross_entropy", "reduce_kernel", "multi_tensor_apply", "cumsum", "fused_adam", "update_stats", "copy_kernel"};

// Words of a GEMM/convolution kernel's name that say convolution.
constexpr std::array<const char*, 8> kConvWords = {"conv", "fprop", "dgrad", "wgrad", "winograd", "implicit",
                                                   "cudnn", "fft"};

// Words of a GEMM/convolution kernel's name that say it reduces another kernel's split-K partial
// sums.
constexpr std::array<const char*, 4> kSplitKWords = {"splitkreduce", "reducesplitk", "split_k_kernel", "reduce_wgrad"};

template <std::size_t N>
bool has_any(const std::string& text, const std::array<const char*, N>& words) {
  return std::any_of(words.begin(), words.end(), [&](const char* w) { return text.find(w) != std::string::npos; });
}

// The element type a kernel's template arguments name: kernel_tensor_dtype's 16- and 8-bit types,
// fp32 for "float"; nullopt when they name none. `integer`: they name an integer type first
// ("CUDAFunctorOnSelf_add<long>": a step counter), which no float precision changes.
std::optional<cm::DType> named_element(const std::string& name, bool* integer) {
  for (const char* w : {"<long>", "<long,", "<int>", "<int,", "<bool>", "<bool,", "<unsigned char", "<signed char"})
    if (name.find(w) != std::string::npos) {
      *integer = true;
      return std::nullopt;
    }
  *integer = false;
  if (const auto d = cm::kernel_tensor_dtype(name)) return d;
  const std::string l = ascii_lower(name);
  if (l.find("bfloat16") != std::string::npos) return cm::DType::kBFloat16;  // bfloat16_copy_kernel_cuda
  if (l.find("float") != std::string::npos) return cm::DType::kFloat32;
  return std::nullopt;
}

std::string_view short_name(std::string_view name) {
  const auto p = name.rfind("::");
  return p == std::string_view::npos ? name : name.substr(p + 2);
}

// Where a GEMM or convolution op's kernel stands in its class, for parts (OpPart): its op's
// (index, count) within the class, and its layer's (layer, layers) where it has one.
struct Place {
  std::optional<std::pair<long, long>> at, layer;
};

// What a lowering takes: whole classes, and parts of the gemm and conv classes (OpPart).
struct Selection {
  std::set<OpClass> whole;
  std::vector<OpPart> parts;
  bool takes(OpClass c, const Place& place) const {
    if (whole.contains(c)) return true;
    return std::any_of(parts.begin(), parts.end(), [&](const OpPart& p) {
      const auto& where = p.layers ? place.layer : place.at;
      return p.cls == c && where && p.selects(where->first, where->second);
    });
  }
  // Whether the class is decided in parts here (a part of it taken, the class as a whole not).
  bool in_parts(OpClass c) const {
    return !whole.contains(c) && std::any_of(parts.begin(), parts.end(), [&](const OpPart& p) { return p.cls == c; });
  }
  bool has_layer_parts() const {
    return std::any_of(parts.begin(), parts.end(), [](const OpPart& p) { return p.layers; });
  }
};

Selection parse_classes(const std::vector<std::string>& names) {
  Selection out;
  for (const std::string& raw : names) {
    const std::string c = ascii_lower(raw);
    if (auto part = parse_op_part(c)) out.parts.push_back(std::move(*part));
    else if (c == "all") out.whole.insert({OpClass::kGemm, OpClass::kConv, OpClass::kElementwise});
    else if (c == "gemm") out.whole.insert(OpClass::kGemm);
    else if (c == "conv") out.whole.insert(OpClass::kConv);
    else if (c == "elementwise") out.whole.insert(OpClass::kElementwise);
    else throw OptionError("precision_classes", raw, "unknown op class (known: gemm, conv, elementwise, all)");
  }
  if (out.whole.empty() && out.parts.empty())
    throw OptionError("precision_classes", "", "names no op class (known: gemm, conv, elementwise, all)");
  return out;
}

cm::DType parse_target(const std::string& text) {
  const auto d = cm::parse_dtype(text);
  if (!d || (*d != cm::DType::kTensorFloat32 && *d != cm::DType::kFloat16 && *d != cm::DType::kBFloat16 &&
             *d != cm::DType::kFloat8))
    throw OptionError("precision_dtype", text, "not a dtype an op can be lowered to (known: tf32, fp16, bf16, fp8)");
  return *d;
}

// What the rules need of one kernel node.
enum class Role {
  kGemmKernel,  // a GEMM or convolution kernel
  kOfGemmOp,    // another kernel of a GEMM or convolution op (layout transform, split-K reduction)
  kKeptFp32,
  kOther,
};

struct Kernel {
  graph::NodeId id;
  const cm::DeviceSpec* spec = nullptr;
  // Described by its launching op (own or a like step's); an entry of Kernels::names (or kNoDesc),
  // so that a copy of a kernel copies no strings or vectors (PrecisionCache's plans copy them all).
  const cm::OpDesc* op = nullptr;
  const graph::OpDesc* launch = nullptr;  // the op table entry with the launcher's inputs
  std::string_view launcher;           // the launching op's short name ("" none), a key of Kernels::names
  Role role = Role::kOther;
  OpClass cls = OpClass::kElementwise;
  cm::DType math = cm::DType::kFloat32;  // the arithmetic it ran
  int element_bytes = 4;                 // its tensors' element size
  std::optional<cm::DType> named;        // the element type its name (or its op's record) states
  bool math_named = false;               // its name states its arithmetic
  bool integer = false;                  // its tensors are integers
  std::tuple<std::uint32_t, std::uint32_t, std::uint32_t> instance;  // its launching op instance
  // Its launching op's event (of a step without CPU ops: that of the like step's kernel it borrowed
  // from, whose op it repeats); none where neither is known. An op position (OpPart) counts these,
  // so that identical ops of a borrowing step (one op table entry) stay apart.
  std::uint32_t op_event = std::numeric_limits<std::uint32_t>::max();
  // Of a GEMM or convolution op's kernel: its layer in the class (OpPart; -1 none), and the layers
  // of the class in the iteration its forward op ran in.
  std::int32_t layer = -1, layers = 0;
  bool lowered = false;
  bool split_k = false;  // NameFacts::split_k
};

bool is_conv_launcher(std::string_view launcher) {
  return launcher == "convolution_backward" || cm::family_from_name(std::string(launcher)) == cm::OpFamily::kConv2d;
}

bool is_gemm_launcher(std::string_view launcher) {
  const cm::OpFamily f = cm::family_from_name(std::string(launcher));
  return f == cm::OpFamily::kBmm || f == cm::OpFamily::kLinear;
}

// The op's description for the roofline: its own, or for a convolution's backward (inputs: grad
// output, input, weight) the forward convolution's, whose FLOPs each of its gradients repeats.
cm::OpDesc described(const graph::OpTable& table, const Kernel& k) {
  if (k.op->describable() || k.launcher != "convolution_backward" || !k.launch || k.launch->inputs.size() < 3)
    return *k.op;
  cm::OpDesc d = cm::op_desc_from_cpu_op("aten::convolution", {k.launch->inputs[1], k.launch->inputs[2]}, table);
  d.dtype = k.op->dtype;
  return d;
}

std::int64_t numel(const graph::TensorDesc& t) {
  if (t.shape.empty()) return 0;
  std::int64_t n = 1;
  for (std::int64_t d : t.shape) n *= std::max<std::int64_t>(d, 0);
  return n;
}

// Elements autocast casts for a lowered op: (its weight or second operand, its activation input);
// zeros when the trace recorded no shapes for it.
std::pair<std::int64_t, std::int64_t> cast_elements(const Kernel& k) {
  if (!k.launch) return {0, 0};
  const auto& in = k.launch->inputs;
  auto at = [&](std::size_t i) { return i < in.size() ? numel(in[i]) : 0; };
  const std::string_view base = k.launcher;
  if (base == "convolution_backward") return {at(2), at(0)};
  if (base == "addmm" || base == "baddbmm") return {at(2) + at(0), at(1)};
  if (base == "linear") return {at(1) + at(2), at(0)};
  return {at(1), at(0)};
}

// What a kernel's name and its launcher's name say, worked out once per distinct name in a call
// (a trace repeats a few hundred kernel names over tens of thousands of kernels).
struct NameFacts {
  std::optional<cm::DType> named;
  bool integer = false;
  bool gemm_kernel = false;  // a GEMM or convolution kernel, not one of cuDNN's dtype conversions
  std::optional<cm::DType> math;
  bool conv_words = false, kept_words = false;
  // A split-K reduction of a GEMM or convolution (cuBLAS's splitKreduce_kernel, CUTLASS's
  // ReduceSplitK, cuDNN's reduce_wgrad helpers and xmma's execute_split_k_kernel): the second
  // kernel of the op whose GEMM ran just before it.
  bool split_k = false;
};
struct LauncherFacts {
  bool conv = false, gemm = false, kept_words = false;
};
struct NameCache {
  std::unordered_map<std::string_view, NameFacts> kernels;
  std::unordered_map<std::string, LauncherFacts> launchers;
  std::map<std::pair<const graph::OpDesc*, const graph::OpDesc*>, cm::OpDesc> descs;  // op table entries repeat

  const cm::OpDesc& op_desc(const graph::Dfg& dfg, const graph::OpDesc& own, const graph::OpDesc& launch) {
    auto [it, fresh] = descs.try_emplace({&own, &launch});
    if (fresh) it->second = cm::op_desc_of_kernel(dfg.ops(), own, launch);
    return it->second;
  }

  const NameFacts& of_kernel(std::string_view name) {
    auto [it, fresh] = kernels.try_emplace(name);
    if (!fresh) return it->second;
    NameFacts& f = it->second;
    const std::string text(name);
    const std::string lname = ascii_lower(name);
    f.named = named_element(text, &f.integer);
    // Not cuDNN's dtype conversions (cudnn::fusion::convert_dq_to_16bits), which say "conv".
    f.gemm_kernel = cm::is_gemm_or_conv_kernel(text) && lname.find("convert") == std::string::npos;
    if (f.gemm_kernel) f.math = cm::kernel_math_dtype(text);
    f.conv_words = has_any(lname, kConvWords);
    f.kept_words = has_any(lname, kKeptTimeWords);
    f.split_k = f.gemm_kernel && has_any(lname, kSplitKWords);
    return f;
  }
  // The launcher's entry: its name (a key that stays where it is) and facts.
  const std::pair<const std::string, LauncherFacts>& of_launcher(const std::string& launcher) {
    auto [it, fresh] = launchers.try_emplace(launcher);
    if (fresh) it->second = {is_conv_launcher(launcher), is_gemm_launcher(launcher), has_any(ascii_lower(launcher), kKeptTimeWords)};
    return *it;
  }
};

Kernel describe(const graph::Dfg& dfg, const cm::LikeStepLaunchers& lent, graph::NodeId id,
                const cm::DeviceSpec* spec, NameCache& names) {
  const graph::Node& n = dfg.node(id);
  Kernel k;
  k.id = id;
  k.spec = spec;
  const graph::OpDesc* own = dfg.op(id);
  k.launch = own && own->launcher.empty() && lent.launch[id].valid() ? &dfg.ops().op(lent.launch[id]) : own;
  static const cm::OpDesc kNoDesc;
  k.op = own ? &names.op_desc(dfg, *own, *k.launch) : &kNoDesc;
  std::string launcher_name;
  if (k.launch && !k.launch->launcher.empty()) launcher_name = std::string(short_name(dfg.ops().name(k.launch->launcher)));
  else k.launch = nullptr;
  const NameFacts& name = names.of_kernel(own ? dfg.ops().name(own->name) : std::string_view());
  const auto& [launcher_key, launcher] = names.of_launcher(launcher_name);
  k.launcher = launcher_key;
  k.named = name.named;
  k.integer = name.integer;
  k.split_k = name.split_k;
  // The launching op's dtype where the trace recorded its inputs' types (emit_nvtx records shapes
  // only: op.dtype is then a default).
  const bool types_recorded =
      k.launch && std::any_of(k.launch->inputs.begin(), k.launch->inputs.end(),
                              [](const graph::TensorDesc& t) { return !t.dtype.empty(); });
  if (!k.named && types_recorded && k.op->describable() && k.op->dtype != cm::DType::kTensorFloat32)
    k.named = k.op->dtype;
  const cm::DType element = k.named ? *k.named : cm::DType::kFloat32;
  k.element_bytes = cm::dtype_bytes(element);
  k.math = element;
  if (name.gemm_kernel) {
    k.role = Role::kGemmKernel;
    if (const auto m = name.math) {
      k.math = *m;
      k.math_named = true;
      k.element_bytes = cm::dtype_bytes(*m);
      if (!k.named) k.named = *m == cm::DType::kTensorFloat32 ? cm::DType::kFloat32 : *m;
    }
    k.cls = launcher.conv || (!launcher.gemm && name.conv_words) ? OpClass::kConv : OpClass::kGemm;
  } else if (launcher.conv || launcher.gemm) {
    k.role = Role::kOfGemmOp;
    k.cls = launcher.conv ? OpClass::kConv : OpClass::kGemm;
  } else if (name.kept_words || launcher.kept_words) {
    k.role = Role::kKeptFp32;
  }
  const std::uint32_t none = std::numeric_limits<std::uint32_t>::max();
  if (n.parent_op.valid()) k.instance = {n.parent_op.value, none, none};
  else if (k.launch) k.instance = {none, lent.launch[id].valid() ? lent.launch[id].value : dfg.op_of(id).value, none};
  else k.instance = {none, none, id.value};
  return k;
}

// Where a kernel lowered to `target` moves fewer bytes or computes faster.
struct Lowering {
  cm::DType target;
  int target_bytes;      // of GEMM operands
  int activation_bytes;  // of elementwise tensors: fp8 GEMMs keep 16-bit activations (Transformer Engine)
  Selection classes;
  const hw::DeviceRates* rates = nullptr;  // the profile's figures (none: priors only)
};

// P_origin and P_target (FLOP/s) of a GEMM kernel of `call_flops` FLOPs (nullopt: not described):
// the profile's when it measured both arithmetics, else the datasheet's peaks.
std::pair<double, double> gemm_peaks(const Kernel& k, const Lowering& lowering, std::optional<double> call_flops,
                                     std::set<std::string>& used) {
  if (lowering.rates) {
    const auto origin = lowering.rates->gemm_flops(k.math, call_flops);
    const auto target = lowering.rates->gemm_flops(lowering.target, call_flops);
    if (origin && target) {
      used.insert(origin->figure);
      used.insert(target->figure);
      return {origin->value, target->value};
    }
  }
  return {k.spec->peak_flops(k.math), k.spec->peak_flops(lowering.target)};
}

// Memory bandwidth (bytes/s) of the roofline: the profile's elementwise bandwidth, else the datasheet's.
double roofline_bandwidth(const Kernel& k, const Lowering& lowering, std::set<std::string>& used) {
  if (lowering.rates)
    if (const auto bw = lowering.rates->elementwise_bytes_per_ns()) {
      used.insert(bw->figure);
      return bw->value * 1e9;
    }
  return k.spec->bandwidth_bytes_per_s();
}

// A cast kernel to run right before `before` on its stream.
struct CastNode {
  graph::NodeId before;
  Nanos duration;
};

// Each cast becomes a kernel on the stream of the op it serves, between that op's first kernel
// and its stream predecessor, enqueued by the op's own launch call (the launch edge and its gap
// copied): it delays the op by its time and costs the host nothing of its own. Edited on the
// graph's tables directly, not through graph::Editor, whose cycle search per insert walks
// everything downstream: a node put between two stream neighbours and after their launch call
// cannot close a cycle.
void insert_casts(graph::Dfg& dfg, const std::vector<CastNode>& casts) {
  if (casts.empty()) return;
  if (!dfg.finalized()) dfg.finalize();
  graph::OpDesc cast_op;
  cast_op.name = dfg.ops().intern("autocast cast");
  cast_op.kind = graph::NodeKind::kKernel;
  const graph::OpId op = dfg.ops().add(std::move(cast_op));
  std::vector<std::vector<graph::EdgeId>> in_edges(casts.size());
  for (std::size_t i = 0; i < casts.size(); ++i)
    dfg.for_each_in_edge(casts[i].before, [&](graph::EdgeId e) {
      const graph::EdgeKind kind = dfg.edge(e).kind;
      if (kind == graph::EdgeKind::kStreamOrder || kind == graph::EdgeKind::kLaunch) in_edges[i].push_back(e);
    });
  for (std::size_t i = 0; i < casts.size(); ++i) {
    const graph::Node& op_node = dfg.node(casts[i].before);
    graph::Node cast;
    cast.kind = graph::NodeKind::kKernel;
    cast.rank = op_node.rank;
    cast.track = op_node.track;
    cast.measured_start = op_node.measured_start;
    cast.duration = casts[i].duration;
    cast.release = op_node.release;
    const graph::NodeId id = dfg.add_node(cast);
    dfg.set_op(id, op);
    for (const graph::EdgeId e : in_edges[i]) {
      if (dfg.edge(e).kind == graph::EdgeKind::kStreamOrder) {
        dfg.edge(e).dst = id;
      } else {
        graph::Edge launch = dfg.edge(e);
        launch.dst = id;
        dfg.add_edge(launch);
      }
    }
    dfg.add_edge({id, casts[i].before, graph::EdgeKind::kStreamOrder, graph::Point::kEnd, graph::Point::kStart, 0});
  }
  dfg.finalize();
}

bool is_gpu_work(graph::NodeKind k) {
  return k == graph::NodeKind::kKernel || k == graph::NodeKind::kMemcpy || k == graph::NodeKind::kMemset;
}

// The kernels of each (rank, stream, iteration), in start order, with each rank's latency floor.
struct Kernels {
  std::map<std::tuple<int, std::uint32_t, std::int64_t>, std::vector<Kernel>> groups;
  std::map<int, Nanos> floor_of_rank;  // the rank's shortest kernel
  std::vector<const cm::DeviceSpec*> specs;  // the GPUs they ran on, in order of first kernel
  // What the kernels' op and launcher point to (shared by copies: read-only once collected).
  std::shared_ptr<NameCache> names;
};

// Autograd's sequence number of a CPU op: its own where it records one, else that of the innermost
// CPU op around it that does; whether the op that gave it is a backward node ("ConvolutionBackward0":
// it carries the number of the forward op it differentiates). seq < 0: none.
struct Sequence {
  std::int64_t seq = -1;
  bool backward = false;
};

// Per event of the rank (CPU ops only; the rest stay none). Events are sorted by (start, longer
// first), so the ops around an op come before it.
std::vector<Sequence> sequence_numbers(const trace::TraceSet& traces, const trace::TraceRank& rank) {
  std::vector<Sequence> out(rank.events.size());
  std::unordered_map<trace::ResourceId, std::vector<std::uint32_t>> open;  // per thread: the ops around the next
  for (std::uint32_t i = 0; i < rank.events.size(); ++i) {
    const trace::Event& e = rank.events[i];
    if (e.kind != trace::EventKind::kCpuOp) continue;
    std::vector<std::uint32_t>& stack = open[e.resource];
    while (!stack.empty() && rank.events[stack.back()].end() < e.end()) stack.pop_back();
    Sequence s = stack.empty() ? Sequence{} : out[stack.back()];
    if (const trace::EventAttrs* a = rank.attrs_of(e); a && a->sequence_number && *a->sequence_number >= 0)
      s = {*a->sequence_number, traces.name(e).find("Backward") != std::string_view::npos};
    out[i] = s;
    stack.push_back(i);
  }
  return out;
}

// Each GEMM or convolution op's layer (OpPart): in each group (rank, stream, iteration), a class's
// forward ops (a sequence number recorded, not a backward node) number the layers in start order,
// and a backward op takes the layer of the forward op with its number, wherever on its stream it
// ran (a step's last backward kernels may run after the step's end). `seq_of_node`: per kernel,
// its launching op's number, or for a kernel of a step without CPU ops the number of the like
// step's kernel it borrowed its launcher from (launchers_from_like_steps).
void assign_layers(Kernels& out, const std::vector<Sequence>& seq_of_node) {
  struct Layer {
    std::int32_t layer, layers;
  };
  // (rank, stream) -> class -> forward op's number -> its layer in its group
  std::map<std::pair<int, std::uint32_t>, std::map<OpClass, std::unordered_map<std::int64_t, Layer>>> forward;
  for (const auto& [key, kernels] : out.groups) {
    std::map<OpClass, std::vector<std::int64_t>> numbered;  // the group's forward numbers in order
    for (const Kernel& k : kernels) {
      if (k.role != Role::kGemmKernel && k.role != Role::kOfGemmOp) continue;
      const Sequence s = seq_of_node[k.id.value];
      if (s.seq < 0 || s.backward) continue;
      auto& seqs = numbered[k.cls];
      if (std::find(seqs.begin(), seqs.end(), s.seq) == seqs.end()) seqs.push_back(s.seq);
    }
    auto& of_stream = forward[{std::get<0>(key), std::get<1>(key)}];
    for (const auto& [cls, seqs] : numbered)
      for (std::size_t i = 0; i < seqs.size(); ++i)
        of_stream[cls].try_emplace(seqs[i], Layer{static_cast<std::int32_t>(i), static_cast<std::int32_t>(seqs.size())});
  }
  for (auto& [key, kernels] : out.groups) {
    const auto& of_stream = forward[{std::get<0>(key), std::get<1>(key)}];
    for (Kernel& k : kernels) {
      if (k.role != Role::kGemmKernel && k.role != Role::kOfGemmOp) continue;
      const Sequence s = seq_of_node[k.id.value];
      const auto cls = of_stream.find(k.cls);
      if (s.seq < 0 || cls == of_stream.end()) continue;
      if (const auto it = cls->second.find(s.seq); it != cls->second.end()) {
        k.layer = it->second.layer;
        k.layers = it->second.layers;
      }
    }
  }
}

// A kernel that no op is known to have launched (a capture without CPU ops, and no like step to
// borrow them from) is an op of its own, so an op position (OpPart) would count a GEMM and its
// split-K reduction as two ops and `conv@-1` name the reduction alone. Such a reduction joins
// the op of the GEMM or convolution kernel right before it on its stream (the group, in start
// order), as the launching op would have made it.
void join_split_k_reductions(std::vector<Kernel>& kernels) {
  constexpr std::uint32_t none = std::numeric_limits<std::uint32_t>::max();
  const auto own_op = [](const Kernel& k) { return std::get<0>(k.instance) == none && std::get<1>(k.instance) == none; };
  for (std::size_t i = 1; i < kernels.size(); ++i) {
    Kernel& k = kernels[i];
    const Kernel& before = kernels[i - 1];
    // (A split-K reduction is a GEMM kernel by its name: NameFacts::split_k.)
    if (k.split_k && own_op(k) && k.op_event == none && before.role == Role::kGemmKernel && own_op(before) &&
        before.op_event == none && before.cls == k.cls)
      k.instance = before.instance;
  }
}

// Throws InputError for a kernel on a GPU the catalog does not know.
// `device`: the GPU every kernel's replay time is for (a --device re-timing's target), or null for
// the GPU each ran on.
Kernels collect_kernels(const trace::TraceSet& traces, const graph::Dfg& dfg, const cm::DeviceCatalog& catalog,
                        const cm::DeviceSpec* device) {
  Kernels out;
  const cm::LikeStepLaunchers lent = cm::launchers_from_like_steps(traces, dfg);
  out.names = std::make_shared<NameCache>();
  NameCache& names = *out.names;
  std::unordered_map<std::uint32_t, const cm::DeviceSpec*> spec_of_track;  // the GPU of a stream
  std::map<int, std::vector<Sequence>> sequences;  // per rank, made on its first kernel with a launching CPU op
  std::vector<Sequence> seq_of_node(dfg.node_count());
  for (const graph::NodeId id : dfg.node_ids()) {
    const graph::Node& n = dfg.node(id);
    if (n.kind != graph::NodeKind::kKernel) continue;
    const trace::TraceRank* rank = traces.find_rank(n.rank);
    auto [known, fresh] = spec_of_track.try_emplace(n.track.value, nullptr);
    if (fresh) known->second = device ? device : origin_of(catalog, traces, n);
    const cm::DeviceSpec* spec = known->second;
    if (!spec)
      throw InputError(rank ? rank->file : std::string(), "",
                       "the device catalog does not know the GPU the trace ran on (" +
                           (rank && !rank->devices.empty() ? "'" + rank->devices.front().name + "'"
                                                           : std::string("none recorded")) +
                           "), so its peaks for a precision change are unknown");
    if (std::find(out.specs.begin(), out.specs.end(), spec) == out.specs.end()) out.specs.push_back(spec);
    if (n.duration > 0) {
      auto [it, fresh] = out.floor_of_rank.try_emplace(n.rank, n.duration);
      if (!fresh) it->second = std::min(it->second, n.duration);
    }
    const std::int64_t iteration = rank ? trace::iteration_index_at(*rank, n.measured_start) : -1;
    Kernel& k = out.groups[{n.rank, n.track.value, iteration}].emplace_back(describe(dfg, lent, id, spec, names));
    // Its launching op and that op's sequence number: its own, or those of the like step's kernel
    // it borrowed its launcher from.
    const graph::NodeId from = n.parent_op.valid() ? id : lent.lender[id];
    if (!from.valid() || !dfg.node(from).parent_op.valid()) continue;
    const graph::Node& launched = dfg.node(from);
    k.op_event = launched.parent_op.value;
    auto [seqs, made] = sequences.try_emplace(launched.rank);
    if (made)
      if (const trace::TraceRank* of = traces.find_rank(launched.rank)) seqs->second = sequence_numbers(traces, *of);
    if (launched.parent_op.below(seqs->second.size())) seq_of_node[id.value] = seqs->second[launched.parent_op.value];
  }
  for (auto& [key, kernels] : out.groups) {
    std::stable_sort(kernels.begin(), kernels.end(), [&](const Kernel& a, const Kernel& b) {
      return dfg.node(a.id).measured_start < dfg.node(b.id).measured_start;
    });
    join_split_k_reductions(kernels);
  }
  assign_layers(out, seq_of_node);
  return out;
}

// A GEMM kernel whose name states neither its arithmetic nor its tensors' type (cuBLAS's nvjet
// kernels) runs at the narrower of the types stated by the closest kernels before and after it on
// its stream (what it reads, what reads it): autocast runs an op at its inputs' type.
void infer_unnamed_gemms(std::vector<Kernel>& kernels) {
  std::vector<std::optional<cm::DType>> before(kernels.size()), after(kernels.size());
  for (std::size_t i = 1; i < kernels.size(); ++i)
    before[i] = kernels[i - 1].named ? kernels[i - 1].named : before[i - 1];
  for (std::size_t i = kernels.size(); i-- > 1;)
    after[i - 1] = kernels[i].named ? kernels[i].named : after[i];
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    Kernel& k = kernels[i];
    if (k.role != Role::kGemmKernel || k.math_named || k.named) continue;
    for (const auto& d : {before[i], after[i]})
      if (d && cm::dtype_bytes(*d) < k.element_bytes) {
        k.math = *d;
        k.element_bytes = cm::dtype_bytes(*d);
      }
  }
}

// The trace's own elementwise bandwidth (GB/s): the bytes its described memory-bound kernels moved
// over their time; nullopt when none is described.
std::optional<double> elementwise_bandwidth_gbs(const Kernels& kernels, const graph::Dfg& dfg) {
  double bytes = 0, ns = 0;
  for (const auto& [key, group] : kernels.groups)
    for (const Kernel& k : group)
      if (k.role == Role::kOther && k.op->describable() && k.op->flops() <= k.op->bytes()) {
        bytes += k.op->bytes();
        ns += static_cast<double>(dfg.node(k.id).duration);
      }
  if (bytes <= 0 || ns <= 0) return std::nullopt;
  return bytes / ns;
}

// t' = f + (t - f) * ratio, never above t.
Nanos scaled_above_floor(Nanos t, Nanos floor, double ratio) {
  if (t <= floor) return t;
  return std::min(t, floor + nanos_from_double(static_cast<double>(t - floor) * ratio));
}

// Whether a GEMM kernel computes faster or moves fewer bytes at the target dtype.
bool below_target(const Kernel& k, const Lowering& lowering) {
  return k.spec->peak_flops(lowering.target) > k.spec->peak_flops(k.math) || lowering.target_bytes < k.element_bytes;
}

// The time ratio of a GEMM/convolution kernel at the target dtype (the header's rules).
double gemm_ratio(const Kernel& k, const graph::OpTable& table, const Lowering& lowering, bool* described_op,
                  std::set<std::string>& used) {
  const double bytes_ratio = std::min(1.0, static_cast<double>(lowering.target_bytes) / k.element_bytes);
  const cm::OpDesc op = described(table, k);
  *described_op = op.describable() && (op.family == cm::OpFamily::kBmm || op.family == cm::OpFamily::kLinear ||
                                       op.family == cm::OpFamily::kConv2d);
  const auto [p_origin, p_target] =
      gemm_peaks(k, lowering, *described_op ? std::optional<double>(op.flops()) : std::nullopt, used);
  if (!*described_op) return (1 - cm::kGemmKernelGamma) * p_origin / p_target + cm::kGemmKernelGamma * bytes_ratio;
  const double f = op.flops(), b = op.bytes(), bw = roofline_bandwidth(k, lowering, used);
  return std::max(f / p_target, b * bytes_ratio / bw) / std::max(f / std::max(p_origin, 1.0), b / bw);
}

// The kernel's time at the target dtype, and its class in k.cls; nullopt when it keeps its time
// (counted in `change` by why).
// `place`: where the kernel's op stands in its class (OpPart), for a GEMM or convolution op's kernel.
std::optional<Nanos> lowered_time(Kernel& k, Nanos t, Nanos floor, bool in_span, const Place& place,
                                  const graph::OpTable& table, const Lowering& lowering, PrecisionChange& change,
                                  bool* described_op) {
  *described_op = false;
  if (k.role == Role::kGemmKernel) {
    if (!below_target(k, lowering)) {
      ++change.already_at_dtype;
      return std::nullopt;
    }
    if (!lowering.classes.takes(k.cls, place)) return std::nullopt;
    return scaled_above_floor(t, floor, gemm_ratio(k, table, lowering, described_op, change.from_profile));
  }
  if (k.integer) return std::nullopt;
  if (k.role == Role::kKeptFp32) {
    change.kept_fp32 += in_span;
    return std::nullopt;
  }
  const int to = k.role == Role::kOfGemmOp ? lowering.target_bytes : lowering.activation_bytes;
  if (to >= k.element_bytes) {
    change.already_at_dtype += in_span || k.role == Role::kOfGemmOp;
    return std::nullopt;
  }
  if (k.role == Role::kOther && !in_span) {
    ++change.outside_span;
    return std::nullopt;
  }
  const OpClass cls = k.role == Role::kOfGemmOp ? k.cls : OpClass::kElementwise;
  if (!lowering.classes.takes(cls, place)) return std::nullopt;
  k.cls = cls;
  return scaled_above_floor(t, floor, static_cast<double>(to) / k.element_bytes);
}

// The profile's fit of autocast's cast to the target dtype (fp32 -> bf16 or fp16), if it has one.
std::optional<hw::Measured<hw::KernelFit>> cast_fit(const Lowering& lowering) {
  if (!lowering.rates) return std::nullopt;
  if (lowering.target == cm::DType::kBFloat16) return lowering.rates->kernel(hw::kCastToBf16Kernel);
  if (lowering.target == cm::DType::kFloat16) return lowering.rates->kernel(hw::kCastToFp16Kernel);
  return std::nullopt;
}

// Autocast's casts for the lowered GEMM kernel kernels[i], when it is its op's first: the op's
// weight-sized tensor, and its first input when the kernel before the op's kernels was not lowered
// (its output is fp32). Their summed time, before the op's first kernel.
std::optional<CastNode> casts_of(const std::vector<Kernel>& kernels, std::size_t i, Nanos floor,
                                 const Lowering& lowering, PrecisionChange& change) {
  const Kernel& k = kernels[i];
  if (lowering.target_bytes >= k.element_bytes) return std::nullopt;
  std::size_t op_first = i;
  while (op_first > 0 && kernels[op_first - 1].instance == k.instance) --op_first;
  for (std::size_t j = op_first; j < i; ++j)
    if (kernels[j].role == Role::kGemmKernel) return std::nullopt;
  const auto [weight, input] = cast_elements(k);
  const bool input_fp32 = op_first == 0 || !kernels[op_first - 1].lowered;
  const int casts = 1 + input_fp32;
  change.casts += casts;
  const auto fit = cast_fit(lowering);
  if (fit) change.from_profile.insert(fit->figure);
  auto cast_time = [&](std::int64_t elements) {
    if (fit) return nanos_from_double(fit->value.ns(static_cast<double>(elements)));
    const double bytes = static_cast<double>(elements) * (k.element_bytes + lowering.activation_bytes);
    return floor + nanos_from_double(bytes / change.cast_bandwidth_gbs);  // GB/s = bytes per ns
  };
  Nanos time = casts * floor;
  if (weight == 0) change.casts_unsized += casts;
  else time = cast_time(weight) + (input_fp32 ? cast_time(input) : 0);
  change.cast_time = saturating_add(change.cast_time, time);
  return CastNode{kernels[op_first].id, time};
}

// Whether a layer part leaves out a kernel without a layer that it may have meant: a GEMM or
// convolution kernel of an op of its class (a kernel another op launched, fbgemm's permute, is no
// layer's), or of no known op.
bool unplaced(const Kernel& k) {
  return k.layer < 0 && k.role == Role::kGemmKernel && !k.integer &&
         (k.launcher.empty() || is_gemm_launcher(k.launcher) || is_conv_launcher(k.launcher));
}

// What an op position counts: the kernel's launching op (its own or the like step's), else its
// instance.
decltype(Kernel::instance) position_key(const Kernel& k) {
  constexpr std::uint32_t none = std::numeric_limits<std::uint32_t>::max();
  return k.op_event != none ? decltype(Kernel::instance){k.op_event, none, none} : k.instance;
}

// Lowers one (rank, stream, iteration)'s kernels in place; the casts to insert go to `casts`.
void lower_group(std::vector<Kernel>& kernels, Nanos floor, graph::Dfg& dfg, const Lowering& lowering,
                 PrecisionChange& change, std::vector<CastNode>& casts) {
  infer_unnamed_gemms(kernels);
  // The span of narrowed activations: from the first to the last GEMM kernel whose output the
  // target narrows (in a job autocast already ran, or under fp8 GEMMs that write 16 bits, the
  // elementwise kernels stay as they were).
  std::size_t first = kernels.size(), last = 0;
  for (std::size_t i = 0; i < kernels.size(); ++i)
    if (kernels[i].role == Role::kGemmKernel && kernels[i].element_bytes > lowering.activation_bytes) {
      first = std::min(first, i);
      last = i;
    }
  // Each GEMM or convolution op's index within its class (OpPart), in the order its kernels start.
  std::map<OpClass, std::map<decltype(Kernel::instance), long>> index_of;
  for (const Kernel& k : kernels)
    if (k.role == Role::kGemmKernel || k.role == Role::kOfGemmOp) index_of[k.cls].try_emplace(position_key(k), index_of[k.cls].size());
  const bool layer_parts = lowering.classes.has_layer_parts();
  // Whether the last GEMM or convolution kernel so far is one a part of its class leaves out (a
  // layer kept at its width): the elementwise kernels after it read its output, not a narrowed one.
  bool kept_before = false;
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    Kernel& k = kernels[i];
    graph::Node& n = dfg.node(k.id);
    bool described_op = false;
    Place place;
    if (k.role == Role::kGemmKernel || k.role == Role::kOfGemmOp) {
      const auto& of_class = index_of[k.cls];
      place.at = {of_class.at(position_key(k)), static_cast<long>(of_class.size())};
      if (k.layer >= 0) place.layer = {k.layer, k.layers};
      else if (layer_parts && unplaced(k))
        ++change.without_layers;
      if (k.role == Role::kGemmKernel) kept_before = lowering.classes.in_parts(k.cls) && !lowering.classes.takes(k.cls, place);
    }
    const bool in_span = first <= i && i <= last && !(k.role == Role::kOther && kept_before);
    const auto after = lowered_time(k, n.duration, floor, in_span, place, dfg.ops(), lowering, change, &described_op);
    if (!after) continue;
    k.lowered = true;
    auto& totals = change.lowered[k.cls];
    ++totals.kernels;
    totals.described += described_op;
    totals.before = saturating_add(totals.before, n.duration);
    totals.after = saturating_add(totals.after, *after);
    n.duration = *after;
    if (k.role == Role::kGemmKernel)
      if (const auto cast = casts_of(kernels, i, floor, lowering, change)) casts.push_back(*cast);
  }
}

}  // namespace

namespace {

PrecisionChange lower(Workload& workload, const Precision& options);

// `more`'s figures added to `into`'s (one lowering after another).
void add_lowering(PrecisionChange& into, const PrecisionChange& more) {
  for (const auto& [cls, t] : more.lowered) {
    auto& totals = into.lowered[cls];
    totals.kernels += t.kernels;
    totals.described += t.described;
    totals.before = saturating_add(totals.before, t.before);
    totals.after = saturating_add(totals.after, t.after);
  }
  into.casts += more.casts;
  into.casts_unsized += more.casts_unsized;
  into.cast_time = saturating_add(into.cast_time, more.cast_time);
  into.already_at_dtype += more.already_at_dtype;
  into.kept_fp32 += more.kept_fp32;
  into.outside_span += more.outside_span;
  into.without_layers += more.without_layers;
  into.gpu_after = more.gpu_after;
  into.then_dtypes.push_back(more.dtype);
  into.from_profile.insert(more.from_profile.begin(), more.from_profile.end());
}

}  // namespace

// What lower() reads of the files and of the workload before it edits anything.
struct PrecisionCache::Collected {
  // In lower()'s order: the catalog, the device, the kernels (each may throw).
  Collected(const Workload& w, const std::string& device_dir, const std::string& device_name)
      : catalog(cm::DeviceCatalog::load_directory(device_dir)),
        device(device_name.empty() ? nullptr : &catalog.get(device_name, "device")),
        kernels(collect_kernels(*w.traces, w.graph.dfg, catalog, device)) {}
  cm::DeviceCatalog catalog;
  const cm::DeviceSpec* device;  // into catalog
  Kernels kernels;               // their specs point into catalog
  // The profile's rates; lower() reads them after its dtype check, so the cache reads them after
  // the kernels, and a lowering without the cache reads its own after that check.
  std::optional<hw::DeviceRates> rates;
};

PrecisionCache::PrecisionCache(const Workload& base, std::string dir, std::string gpu, std::string profile)
    : device_dir(std::move(dir)),
      device(std::move(gpu)),
      device_profile(std::move(profile)),
      nodes(base.graph.dfg.node_count()),
      edges(base.graph.dfg.edge_count()),
      collected([&] {
        auto c = std::make_unique<Collected>(base, device_dir, device);
        c->rates = hw::load_device_rates(device_profile, {device, base.traces->gpu_names()}, c->catalog);
        return std::unique_ptr<const Collected>(std::move(c));
      }()) {}

PrecisionCache::~PrecisionCache() = default;

bool PrecisionCache::serves(const Workload& w, const Precision& options) const {
  return options.device_dir == device_dir && options.device == device && options.device_profile == device_profile &&
         w.graph.dfg.node_count() == nodes && w.graph.dfg.edge_count() == edges;
}

std::map<OpClass, std::size_t> kernels_without_layer(const Workload& workload, const std::string& device_dir,
                                                     const std::string& device) {
  const PrecisionCache::Collected read(workload, device_dir, device);
  std::map<OpClass, std::size_t> out;
  for (const auto& [key, kernels] : read.kernels.groups)
    for (const Kernel& k : kernels)
      if (unplaced(k)) ++out[k.cls];
  return out;
}

PrecisionChange precision(Workload& workload, const Precision& options) {
  PrecisionChange change = lower(workload, options);
  for (const Precision::Stage& stage : options.then) {
    Precision next = options;
    next.dtype = stage.dtype;
    next.classes = stage.classes;
    next.then.clear();
    next.cache.reset();  // the workload is the first lowering's, not the one the cache read
    add_lowering(change, lower(workload, next));
  }
  return change;
}

namespace {

PrecisionChange lower(Workload& workload, const Precision& options) {
  const cm::DType target = parse_target(options.dtype);
  Lowering lowering{target, cm::dtype_bytes(target), std::max(cm::dtype_bytes(target), 2),
                    parse_classes(options.classes)};
  graph::Dfg& dfg = workload.graph.dfg;
  // Made here, or copied from the cache's (made the same way, in the same order, on a workload
  // equal to this one: PrecisionCache).
  std::optional<PrecisionCache::Collected> own;
  const bool cached = options.cache && options.cache->serves(workload, options);
  if (!cached) own.emplace(workload, options.device_dir, options.device);
  const PrecisionCache::Collected& read = cached ? *options.cache->collected : *own;
  Kernels kernels = read.kernels;  // lower_group edits its copy
  for (const cm::DeviceSpec* spec : kernels.specs)
    if (!spec->peak_tflops.contains(cm::to_string(target)))
      throw OptionError("precision_dtype", options.dtype,
                        "the trace's GPU (" + spec->name + ") has no " + cm::to_string(target) +
                            " arithmetic: its spec lists no peak for it");
  if (own) own->rates = hw::load_device_rates(options.device_profile, {options.device, workload.traces->gpu_names()}, own->catalog);
  const hw::DeviceRates& rates = *read.rates;
  if (rates.profiled()) lowering.rates = &rates;
  PrecisionChange change;
  change.dtype = target;
  if (!kernels.specs.empty()) {
    change.device = kernels.specs.front()->name;
    change.peak_tflops = kernels.specs.front()->peak_flops(target) / 1e12;
    change.cast_bandwidth_gbs = kernels.specs.front()->memory_bandwidth_gbs;
  }
  if (const auto bw = elementwise_bandwidth_gbs(kernels, dfg)) {
    change.cast_bandwidth_gbs = *bw;
    change.cast_bandwidth_measured = true;
  }
  if (!kernels.floor_of_rank.empty()) change.latency_floor = kernels.floor_of_rank.begin()->second;
  for (const graph::Node& n : dfg.nodes())
    if (is_gpu_work(n.kind)) change.gpu_before = saturating_add(change.gpu_before, n.duration);
  std::vector<CastNode> casts;
  for (auto& [key, group] : kernels.groups)
    lower_group(group, kernels.floor_of_rank[std::get<0>(key)], dfg, lowering, change, casts);
  insert_casts(dfg, casts);
  for (const graph::Node& n : dfg.nodes())
    if (is_gpu_work(n.kind)) change.gpu_after = saturating_add(change.gpu_after, n.duration);
  return change;
}

}  // namespace

}  // namespace dpro::whatif
