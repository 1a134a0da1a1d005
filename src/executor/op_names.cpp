#include "executor/op_names.h"

#include <algorithm>
#include <array>
#include <string>

#include "core/strings.h"

namespace dpro::executor {

namespace {

// Framework ops (aten names without "aten::" and a trailing '_') and the step each stands for.
struct NamedOp {
  const char* name;
  ElementwiseOp tensor_op;  // with a tensor operand
  ElementwiseOp scalar_op;  // with a scalar operand (or unary)
};
// copy_ (and clone, _to_copy) run as a copy at the source's dtype: a dtype-changing copy (autocast's)
// is counted at the source's element size for its writes too.
// The backward ops take (grad_output, x or y[, a scalar]) and are binary either way; pow's scalar
// exponent and clamp_min's and fill_'s scalar are kPowScalar, kClampMin and kFill (pow with a tensor
// exponent has no step: elementwise_op_of). threshold_backward is relu's backward (threshold 0).
constexpr std::array<NamedOp, 28> kAtenOps = {{
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
    {"threshold_backward", ElementwiseOp::kReluBackward, ElementwiseOp::kReluBackward},
    {"gelu_backward", ElementwiseOp::kGeluBackward, ElementwiseOp::kGeluBackward},
    {"sigmoid_backward", ElementwiseOp::kSigmoidBackward, ElementwiseOp::kSigmoidBackward},
    {"tanh_backward", ElementwiseOp::kTanhBackward, ElementwiseOp::kTanhBackward},
    {"silu_backward", ElementwiseOp::kSiluBackward, ElementwiseOp::kSiluBackward},
    {"pow", ElementwiseOp::kPowScalar, ElementwiseOp::kPowScalar},
    {"clamp_min", ElementwiseOp::kMax, ElementwiseOp::kClampMin},
    {"fill", ElementwiseOp::kFill, ElementwiseOp::kFill},
}};

// PyTorch's elementwise kernels name their functor: "CUDAFunctor_add<float>", "MulFunctor<float>",
// "AUnaryFunctor<..., MulFunctor<...>>" (a scalar operand), "GeluCUDAKernelImpl", "silu_kernel".
struct KernelWord {
  const char* word;
  ElementwiseOp op;
};
// The backward functors come first: elementwise_op_of turns any other "backward" kernel away.
constexpr std::array<KernelWord, 17> kKernelWords = {{
    {"gelubackwardcudakernelimpl", ElementwiseOp::kGeluBackward}, {"sigmoid_backward_kernel", ElementwiseOp::kSigmoidBackward},
    {"tanh_backward_kernel", ElementwiseOp::kTanhBackward}, {"silu_backward_kernel", ElementwiseOp::kSiluBackward},
    {"fillfunctor", ElementwiseOp::kFill},
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

std::string aten_base(std::string_view launcher) {
  std::string s = ascii_lower(launcher);
  if (s.rfind("aten::", 0) == 0) s = s.substr(6);
  if (!s.empty() && s.back() == '_') s.pop_back();
  return s;
}

}  // namespace

bool takes_indices(std::string_view launcher, std::string_view kernel) {
  const std::string l = ascii_lower(launcher), k = ascii_lower(kernel);
  return std::any_of(kIndexWords.begin(), kIndexWords.end(), [&](const char* w) { return contains(l, w) || contains(k, w); });
}

bool names_attention(std::string_view kernel) {
  const std::string k = ascii_lower(kernel);
  return contains(k, "sdpa") || contains(k, "flash") || contains(k, "attention") || contains(k, "fmha");
}

std::optional<ElementwiseOp> elementwise_op_of(std::string_view launcher, std::string_view kernel, bool scalar_operand) {
  if (takes_indices(launcher, kernel)) return std::nullopt;
  const std::string base = aten_base(launcher);
  if (base == "pow" && !scalar_operand) return std::nullopt;  // a tensor exponent
  for (const NamedOp& op : kAtenOps)
    if (base == op.name) return scalar_operand ? op.scalar_op : op.tensor_op;
  if (!launcher.empty()) return std::nullopt;  // a named op we have no step for (e.g. a backward)
  const std::string k = ascii_lower(kernel);
  const bool scalar = contains(k, "unaryfunctor");
  for (const KernelWord& w : kKernelWords) {
    if (!contains(k, w.word)) continue;
    if (contains(k, "backward") && !contains(w.word, "backward")) return std::nullopt;
    if (scalar && w.op == ElementwiseOp::kAdd) return ElementwiseOp::kAddScalar;
    if (scalar && w.op == ElementwiseOp::kMul) return ElementwiseOp::kScale;
    return w.op;
  }
  return std::nullopt;
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

}  // namespace dpro::executor
