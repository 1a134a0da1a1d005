#include "costmodel/op_desc.h"

#include <algorithm>
#include <string_view>
#include <unordered_map>

#include "core/strings.h"

namespace dpro::costmodel {

const char* to_string(OpFamily f) {
  switch (f) {
    case OpFamily::kUnknown: return "unknown";
    case OpFamily::kBmm: return "bmm";
    case OpFamily::kLinear: return "linear";
    case OpFamily::kConv2d: return "conv";
    case OpFamily::kAdd: return "add";
    case OpFamily::kMul: return "mul";
    case OpFamily::kDiv: return "div";
    case OpFamily::kPow: return "pow";
    case OpFamily::kAddScalar: return "addu";
    case OpFamily::kMulScalar: return "mulu";
    case OpFamily::kDivScalar: return "divu";
    case OpFamily::kPowScalar: return "powu";
    case OpFamily::kGelu: return "gelu";
    case OpFamily::kRelu: return "relu";
    case OpFamily::kTanh: return "tanh";
    case OpFamily::kLayerNorm: return "ln";
    case OpFamily::kSoftmax: return "softmax";
  }
  return "unknown";
}

namespace {
// "aten::Add_" -> "add": the name without namespace, lower case, in-place suffix dropped.
std::string normalised_op_name(const std::string& raw) {
  std::string name = raw;
  if (auto p = name.rfind("::"); p != std::string::npos) name = name.substr(p + 2);
  name = ascii_lower(name);
  if (name.size() > 1 && name.back() == '_') name.pop_back();  // in-place variants
  return name;
}

OpFamily find_family(const std::unordered_map<std::string, OpFamily>& names, const std::string& raw) {
  const auto it = names.find(normalised_op_name(raw));
  return it == names.end() ? OpFamily::kUnknown : it->second;
}
}  // namespace

OpFamily family_from_name(const std::string& raw) {
  static const std::unordered_map<std::string, OpFamily> kNames = {
      {"bmm", OpFamily::kBmm}, {"matmul", OpFamily::kBmm}, {"baddbmm", OpFamily::kBmm},
      {"linear", OpFamily::kLinear}, {"addmm", OpFamily::kLinear}, {"mm", OpFamily::kLinear},
      {"conv", OpFamily::kConv2d}, {"conv2d", OpFamily::kConv2d},
      {"convolution", OpFamily::kConv2d}, {"cudnn_convolution", OpFamily::kConv2d},
      {"_convolution", OpFamily::kConv2d},
      {"add", OpFamily::kAdd}, {"mul", OpFamily::kMul}, {"div", OpFamily::kDiv},
      {"pow", OpFamily::kPow}, {"sub", OpFamily::kAdd},
      {"addu", OpFamily::kAddScalar}, {"mulu", OpFamily::kMulScalar},
      {"divu", OpFamily::kDivScalar}, {"powu", OpFamily::kPowScalar},
      {"gelu", OpFamily::kGelu}, {"relu", OpFamily::kRelu}, {"tanh", OpFamily::kTanh},
      {"ln", OpFamily::kLayerNorm}, {"layer_norm", OpFamily::kLayerNorm},
      {"native_layer_norm", OpFamily::kLayerNorm},
      {"softmax", OpFamily::kSoftmax}, {"_softmax", OpFamily::kSoftmax},
  };
  return find_family(kNames, raw);
}

OpFamily like_family(const std::string& raw) {
  static const std::unordered_map<std::string, OpFamily> kLike = {
      // read N, write N, a few cheap instructions per element
      {"clamp", OpFamily::kRelu}, {"clamp_min", OpFamily::kRelu}, {"clamp_max", OpFamily::kRelu},
      {"hardtanh", OpFamily::kRelu}, {"leaky_relu", OpFamily::kRelu}, {"relu6", OpFamily::kRelu},
      {"threshold", OpFamily::kRelu}, {"neg", OpFamily::kRelu}, {"abs", OpFamily::kRelu},
      {"copy", OpFamily::kRelu}, {"reciprocal", OpFamily::kRelu},
      // write N only (memory-bound like the above, half the bytes)
      {"fill", OpFamily::kRelu}, {"zero", OpFamily::kRelu},
      // read N, write N, a transcendental function per element
      {"sigmoid", OpFamily::kTanh}, {"exp", OpFamily::kTanh}, {"log", OpFamily::kTanh},
      {"sqrt", OpFamily::kTanh}, {"rsqrt", OpFamily::kTanh}, {"sin", OpFamily::kTanh},
      {"cos", OpFamily::kTanh}, {"silu", OpFamily::kTanh}, {"elu", OpFamily::kTanh},
      {"erf", OpFamily::kTanh}, {"softplus", OpFamily::kTanh}, {"hardswish", OpFamily::kRelu},
      // read 2N (or 3N), write N
      {"threshold_backward", OpFamily::kMul}, {"sigmoid_backward", OpFamily::kMul},
      {"tanh_backward", OpFamily::kMul}, {"gelu_backward", OpFamily::kMul},
      {"silu_backward", OpFamily::kMul}, {"maximum", OpFamily::kMul}, {"minimum", OpFamily::kMul},
      {"addcmul", OpFamily::kMul}, {"addcdiv", OpFamily::kMul}, {"lerp", OpFamily::kMul},
      {"where", OpFamily::kMul},
  };
  return find_family(kLike, raw);
}

OpFamily resolve_family(const std::string& name, bool* like_op) {
  OpFamily f = family_from_name(name);
  const bool like = f == OpFamily::kUnknown && (f = like_family(name)) != OpFamily::kUnknown;
  if (like_op) *like_op = like;
  return f;
}

int dims_needed(OpFamily f) {
  switch (f) {
    case OpFamily::kUnknown: return 0;
    case OpFamily::kBmm:
    case OpFamily::kLinear: return 4;
    case OpFamily::kConv2d: return 7;
    default: return 2;
  }
}

std::string kernel_function_name(std::string_view name) {
  if (name.substr(0, 5) == "void ") name.remove_prefix(5);
  std::string fn(name);
  constexpr std::string_view kAnonymous = "(anonymous namespace)::";
  for (std::size_t at; (at = fn.find(kAnonymous)) != std::string::npos;) fn.erase(at, kAnonymous.size());
  fn.resize(std::min(fn.size(), fn.find_first_of("<(")));
  return fn;
}

namespace {

// kernel_function_name in lower case: what the kernel-kind rules read (an elementwise kernel's
// functor, in its template arguments, may be named after a reduction or a GEMM).
std::string lower_function_name(std::string_view name) { return ascii_lower(kernel_function_name(name)); }

}  // namespace

bool is_gemm_or_conv_kernel(const std::string& kernel_name) {
  const std::string lower = lower_function_name(kernel_name);
  // TorchInductor names its kernels by kind: "triton_tem_*" templates (mm, bmm, conv) are GEMMs;
  // "triton_poi_*", "triton_red_*", "triton_per_*" are pointwise or reductions, whatever ops they
  // fused ("triton_poi_fused_convolution_relu_3" is a bias add and relu after a convolution).
  if (lower.starts_with("triton_"))
    return lower.starts_with("triton_tem") || lower.starts_with("triton_mm") || lower.starts_with("triton_bmm");
  // Not "precomp": cuDNN's precomputed_convolve_sgemm says gemm anyway, while its
  // engines_precompiled::nchwToNhwcKernel (a layout transform) and cnn::kern_precompute_indices are
  // no GEMMs.
  // "nvjet": cuBLAS's Hopper GEMMs (nvjet_sm90_tst_192x128_64x5_1x2_h_bz_coopB_TNT).
  for (const char* word : {"gemm", "conv", "winograd", "fft", "xmma", "cutlass", "implicit", "dgrad", "wgrad",
                           "fprop", "nvjet"})
    if (lower.find(word) != std::string::npos) return true;
  for (auto at = lower.find("cudnn", 1); at != std::string::npos; at = lower.find("cudnn", at + 1)) {
    const char before = lower[at - 1];
    if (before == 's' || before == 'h' || (before >= '0' && before <= '9')) return true;
  }
  return false;
}

bool is_conv_kernel(const std::string& kernel_name) {
  if (!is_gemm_or_conv_kernel(kernel_name)) return false;
  const std::string whole = ascii_lower(kernel_name);
  for (const char* conv : {"conv", "winograd", "fft", "implicit", "dgrad", "wgrad", "fprop", "cudnn"})
    if (whole.find(conv) != std::string::npos) return true;
  return false;
}

const char* to_string(KernelType type) {
  switch (type) {
    case KernelType::kGemm: return "gemm";
    case KernelType::kConv: return "conv";
    case KernelType::kElementwise: return "elementwise";
    case KernelType::kNorm: return "norm";
    case KernelType::kSoftmax: return "softmax";
    case KernelType::kAttention: return "attention";
    case KernelType::kReduction: return "reduction";
    case KernelType::kCopy: return "copy";
    case KernelType::kCommunication: return "communication";
    case KernelType::kOther: return "other";
  }
  return "other";
}

namespace {
// The type a launching op's name says when it has no cost-model family; nullopt: it says none.
std::optional<KernelType> launcher_type(const std::string& raw) {
  const std::string name = normalised_op_name(raw);
  if (name.empty()) return std::nullopt;
  static const std::unordered_map<std::string, KernelType> kNames = {
      {"sum", KernelType::kReduction}, {"mean", KernelType::kReduction}, {"amax", KernelType::kReduction},
      {"amin", KernelType::kReduction}, {"max", KernelType::kReduction}, {"min", KernelType::kReduction},
      {"argmax", KernelType::kReduction}, {"argmin", KernelType::kReduction}, {"var", KernelType::kReduction},
      {"std", KernelType::kReduction}, {"var_mean", KernelType::kReduction}, {"std_mean", KernelType::kReduction},
      {"prod", KernelType::kReduction}, {"norm", KernelType::kReduction}, {"linalg_vector_norm", KernelType::kReduction},
      {"frobenius_norm", KernelType::kReduction}, {"cumsum", KernelType::kReduction},
      {"logsumexp", KernelType::kReduction}, {"all", KernelType::kReduction}, {"any", KernelType::kReduction},
      {"addbmm", KernelType::kGemm}, {"addmv", KernelType::kGemm}, {"mv", KernelType::kGemm},
      {"_scaled_mm", KernelType::kGemm}, {"cat", KernelType::kCopy}, {"stack", KernelType::kCopy},
  };
  if (const auto it = kNames.find(name); it != kNames.end()) return it->second;
  auto has = [&](const char* word) { return name.find(word) != std::string::npos; };
  if (has("attention")) return KernelType::kAttention;  // _scaled_dot_product_cudnn_attention_backward
  if (name.starts_with("_foreach_") || name.starts_with("_fused_") || has("dropout")) return KernelType::kElementwise;
  if (has("pool")) return KernelType::kReduction;  // max_pool2d_with_indices, avg_pool2d_backward
  if (has("softmax")) return KernelType::kSoftmax;
  if (has("_norm")) return KernelType::kNorm;  // batch_norm, native_layer_norm_backward
  if (has("convolution")) return KernelType::kConv;  // convolution_backward
  return std::nullopt;
}
}  // namespace

KernelType kernel_type(std::string_view launcher, std::string_view kernel_name) {
  switch (resolve_family(std::string(launcher))) {
    case OpFamily::kBmm:
    case OpFamily::kLinear: return KernelType::kGemm;
    case OpFamily::kConv2d: return KernelType::kConv;
    case OpFamily::kLayerNorm: return KernelType::kNorm;
    case OpFamily::kSoftmax: return KernelType::kSoftmax;
    case OpFamily::kUnknown: break;
    default: return KernelType::kElementwise;
  }
  if (const auto t = launcher_type(std::string(launcher))) return *t;
  const std::string name(kernel_name.substr(0, std::min<std::size_t>(kernel_name.size(), 512)));
  const std::string lower = lower_function_name(name);
  auto has = [&](const char* word) { return lower.find(word) != std::string::npos; };
  // Before GEMMs: cuDNN's attention kernels say "fprop"/"bprop" ("..._sdpa_sm90_flash_fprop_...").
  if (has("sdpa") || has("flash") || has("fmha") || has("attention")) return KernelType::kAttention;
  if (is_gemm_or_conv_kernel(name)) return is_conv_kernel(name) ? KernelType::kConv : KernelType::kGemm;
  if (has("softmax")) return KernelType::kSoftmax;
  if (has("splitk")) return KernelType::kGemm;  // cuBLAS's splitKreduce_kernel
  if (has("norm")) return KernelType::kNorm;
  if (has("pool")) return KernelType::kReduction;
  if (has("reduce")) return KernelType::kReduction;
  if (has("elementwise") || has("multi_tensor_apply") || has("dropout")) return KernelType::kElementwise;
  if (has("catarray")) return KernelType::kCopy;  // CatArrayBatchedCopy
  return KernelType::kOther;
}

std::optional<DType> kernel_math_dtype(const std::string& kernel_name) {
  if (!is_gemm_or_conv_kernel(kernel_name)) return std::nullopt;
  const std::string lower = ascii_lower(kernel_name);
  auto has = [&](std::initializer_list<const char*> words) {
    for (const char* w : words)
      if (lower.find(w) != std::string::npos) return true;
    return false;
  };
  // Most specific first: an fp8 GEMM may write bf16 or fp16, and "bf16" contains "f16".
  if (has({"e4m3", "e5m2"})) return DType::kFloat8;
  if (has({"bf16", "bfloat16"})) return DType::kBFloat16;
  if (has({"fp16", "f16", "h884", "h1688", "h16816", "hmma", "half"})) return DType::kFloat16;
  // CUTLASS's "s1688" is an fp32-accumulating m16n8k8 MMA: with 32-bit inputs (no fp16/bf16 named,
  // caught above) that is TF32 ("cutlass_80_tensorop_s1688gemm_256x64_16x4_nn_align4").
  if (has({"tf32", "tfloat32", "tensorop_s1688"})) return DType::kTensorFloat32;
  return std::nullopt;
}

std::optional<DType> kernel_tensor_dtype(const std::string& kernel_name) {
  auto has = [&](std::string_view w) { return kernel_name.find(w) != std::string::npos; };
  if (has("c10::Float8_e")) return DType::kFloat8;
  if (has("c10::BFloat16") || has("__nv_bfloat16")) return DType::kBFloat16;
  if (has("c10::Half") || has("__half")) return DType::kFloat16;
  return std::nullopt;
}

void OpDesc::take_kernel_math(bool dtype_recorded) {
  const auto math = kernel_math_dtype(kernel_name);
  if (math && dtype == DType::kFloat32 && (*math == DType::kTensorFloat32 || !dtype_recorded)) dtype = *math;
  dtype_from_kernel = math && dtype == *math;
}

bool OpDesc::describable() const {
  const int n = dims_needed(family);
  if (n == 0 || static_cast<int>(dims.size()) < n) return false;
  for (int i = 0; i < n; ++i) {
    // conv padding may be 0; every other dimension must be positive.
    const bool may_be_zero = family == OpFamily::kConv2d && i == 6;
    if (dims[i] < 0 || (dims[i] == 0 && !may_be_zero)) return false;
  }
  if (family == OpFamily::kConv2d && dims[4] + 2 * dims[6] < dims[3]) return false;
  return true;
}

namespace {
double conv_out(const std::vector<std::int64_t>& d) {
  return static_cast<double>((d[4] + 2 * d[6] - d[3]) / d[5] + 1);
}
// Arithmetic per element of the elementwise/normalisation families.
double flops_per_element(OpFamily f) {
  switch (f) {
    case OpFamily::kPow: case OpFamily::kPowScalar: return 8;
    case OpFamily::kGelu: return 10;
    case OpFamily::kTanh: return 8;
    case OpFamily::kLayerNorm: return 8;
    case OpFamily::kSoftmax: return 6;
    default: return 1;
  }
}
}  // namespace

double OpDesc::flops() const {
  if (!describable()) return 0;
  const auto& d = dims;
  switch (family) {
    case OpFamily::kBmm:
    case OpFamily::kLinear: return 2.0 * d[0] * d[1] * d[2] * d[3];
    case OpFamily::kConv2d: {
      const double o = conv_out(d);
      return 2.0 * d[0] * d[2] * o * o * d[1] * d[3] * d[3];
    }
    default: return flops_per_element(family) * static_cast<double>(d[0]) * d[1];
  }
}

double OpDesc::bytes_written() const {
  if (!describable()) return 0;
  const double e = dtype_bytes(dtype);
  const auto& d = dims;
  switch (family) {
    case OpFamily::kBmm:
    case OpFamily::kLinear: return e * d[0] * d[1] * d[2];
    case OpFamily::kConv2d: { const double o = conv_out(d); return e * d[0] * d[2] * o * o; }
    default: return e * static_cast<double>(d[0]) * d[1];
  }
}

double OpDesc::bytes() const {
  if (!describable()) return 0;
  const double e = dtype_bytes(dtype);
  const auto& d = dims;
  const double n = static_cast<double>(d[0]) * d[1];
  switch (family) {
    case OpFamily::kBmm: return e * (1.0 * d[0] * d[1] * d[3] + 1.0 * d[0] * d[3] * d[2]) + bytes_written();
    case OpFamily::kLinear: return e * (1.0 * d[0] * d[1] * d[3] + 1.0 * d[3] * d[2]) + bytes_written();
    case OpFamily::kConv2d:
      return e * (1.0 * d[0] * d[1] * d[4] * d[4] + 1.0 * d[2] * d[1] * d[3] * d[3]) + bytes_written();
    case OpFamily::kAdd: case OpFamily::kMul: case OpFamily::kDiv: case OpFamily::kPow:
      return 3 * e * n;
    case OpFamily::kLayerNorm: return 2 * e * n + 2 * e * d[1];
    default: return 2 * e * n;
  }
}

std::string op_key(const OpDesc& op) {
  // Appended piece by piece: GCC 12 takes `"," + std::to_string(d)` for an overlapping copy
  // (a -Wrestrict false positive in a Release build).
  std::string k = to_string(op.family);
  for (auto d : op.dims) {
    k += ',';
    k += std::to_string(d);
  }
  k += ',';
  k += to_string(op.dtype);
  return k;
}

}  // namespace dpro::costmodel
