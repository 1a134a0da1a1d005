#include "kernels/elementwise_codegen.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <stdexcept>

#include "kernels/half_bits.h"

namespace dpro::kernels {
namespace {

using executor::DType;
using executor::ElementwiseChain;
using executor::ElementwiseOp;

bool is_binary(ElementwiseOp op) { return executor::elementwise_op_is_binary(op); }

std::string float_literal(float f) {
  char text[48];
  std::snprintf(text, sizeof text, "%af", static_cast<double>(f));  // exact: hexadecimal
  return text;
}

// One step as C source over fp32 `v` and `x` (the binary step's input): the same expressions
// compile for the GPU (NVRTC's built-in math) and the host (<math.h>).
std::string step_expression(ElementwiseOp op, const std::string& x, float scalar) {
  switch (op) {
    case ElementwiseOp::kCopy: return "v";
    case ElementwiseOp::kAdd: return "v + " + x;
    case ElementwiseOp::kSub: return "v - " + x;
    case ElementwiseOp::kMul: return "v * " + x;
    case ElementwiseOp::kDiv: return "v / " + x;
    case ElementwiseOp::kMax: return "fmaxf(v, " + x + ")";
    case ElementwiseOp::kMin: return "fminf(v, " + x + ")";
    case ElementwiseOp::kRelu: return "fmaxf(v, 0.0f)";
    case ElementwiseOp::kGelu: return "0.5f * v * (1.0f + erff(v * 0x1.6a09e6p-1f))";
    case ElementwiseOp::kSilu: return "v / (1.0f + expf(-v))";
    case ElementwiseOp::kSigmoid: return "1.0f / (1.0f + expf(-v))";
    case ElementwiseOp::kTanh: return "tanhf(v)";
    case ElementwiseOp::kExp: return "expf(v)";
    case ElementwiseOp::kLog: return "logf(v)";
    case ElementwiseOp::kSqrt: return "sqrtf(v)";
    case ElementwiseOp::kRsqrt: return "1.0f / sqrtf(v)";  // IEEE on both sides, unlike rsqrtf
    case ElementwiseOp::kNeg: return "-v";
    case ElementwiseOp::kAbs: return "fabsf(v)";
    case ElementwiseOp::kScale: return "v * " + float_literal(scalar);
    case ElementwiseOp::kAddScalar: return "v + " + float_literal(scalar);
    // The backward ops: v is the gradient, x the forward input or output (device.h).
    case ElementwiseOp::kReluBackward: return "(" + x + " <= " + float_literal(scalar) + " ? 0.0f : v)";
    case ElementwiseOp::kGeluBackward:  // 1/sqrt(2), 1/sqrt(2 pi) as fp32
      return "v * (0.5f * (1.0f + erff(" + x + " * 0x1.6a09e6p-1f)) + " + x + " * (expf(-0.5f * " + x + " * " + x +
             ") * 0x1.988454p-2f))";
    case ElementwiseOp::kSigmoidBackward: return "v * (1.0f - " + x + ") * " + x;
    case ElementwiseOp::kTanhBackward: return "v * (1.0f - " + x + " * " + x + ")";
    case ElementwiseOp::kSiluBackward:
      return "v * (1.0f / (1.0f + expf(-" + x + "))) * (1.0f + " + x + " * (1.0f - 1.0f / (1.0f + expf(-" + x + "))))";
    case ElementwiseOp::kPowScalar: return "powf(v, " + float_literal(scalar) + ")";
    case ElementwiseOp::kClampMin: return "(v != v ? v : fmaxf(v, " + float_literal(scalar) + "))";
    case ElementwiseOp::kFill: return float_literal(scalar);
  }
  throw std::invalid_argument("elementwise chain: unknown op " + std::to_string(static_cast<int>(op)));
}

// The reference of step_expression, written out once more in C++.
float apply_step(ElementwiseOp op, float v, float x, float s) {
  switch (op) {
    case ElementwiseOp::kCopy: return v;
    case ElementwiseOp::kAdd: return v + x;
    case ElementwiseOp::kSub: return v - x;
    case ElementwiseOp::kMul: return v * x;
    case ElementwiseOp::kDiv: return v / x;
    case ElementwiseOp::kMax: return std::fmax(v, x);
    case ElementwiseOp::kMin: return std::fmin(v, x);
    case ElementwiseOp::kRelu: return std::fmax(v, 0.0f);
    case ElementwiseOp::kGelu: return 0.5f * v * (1.0f + std::erf(v * 0.70710677f));
    case ElementwiseOp::kSilu: return v / (1.0f + std::exp(-v));
    case ElementwiseOp::kSigmoid: return 1.0f / (1.0f + std::exp(-v));
    case ElementwiseOp::kTanh: return std::tanh(v);
    case ElementwiseOp::kExp: return std::exp(v);
    case ElementwiseOp::kLog: return std::log(v);
    case ElementwiseOp::kSqrt: return std::sqrt(v);
    case ElementwiseOp::kRsqrt: return 1.0f / std::sqrt(v);
    case ElementwiseOp::kNeg: return -v;
    case ElementwiseOp::kAbs: return std::fabs(v);
    case ElementwiseOp::kScale: return v * s;
    case ElementwiseOp::kAddScalar: return v + s;
    case ElementwiseOp::kReluBackward: return x <= s ? 0.0f : v;
    case ElementwiseOp::kGeluBackward:
      return v * (0.5f * (1.0f + std::erf(x * 0x1.6a09e6p-1f)) + x * (std::exp(-0.5f * x * x) * 0x1.988454p-2f));
    case ElementwiseOp::kSigmoidBackward: return v * (1.0f - x) * x;
    case ElementwiseOp::kTanhBackward: return v * (1.0f - x * x);
    case ElementwiseOp::kSiluBackward: return v * (1.0f / (1.0f + std::exp(-x))) * (1.0f + x * (1.0f - 1.0f / (1.0f + std::exp(-x))));
    case ElementwiseOp::kPowScalar: return std::pow(v, s);
    case ElementwiseOp::kClampMin: return std::isnan(v) ? v : std::fmax(v, s);
    case ElementwiseOp::kFill: return s;
  }
  return v;
}

const char* storage_type(DType t) { return t == DType::kF32 ? "float" : "dpro_u16"; }

// dpro_load / dpro_store for the chain's dtype: PTX conversions on the GPU, half_bits.h's on
// the host (both round to nearest even).
std::string load_store_source(DType t) {
  std::string gpu, host;
  if (t == DType::kF32) {
    gpu = host =
        "DPRO_EW_FN float dpro_load(const float* p, long long i) { return p[i]; }\n"
        "DPRO_EW_FN void dpro_store(float* p, long long i, float v) { p[i] = v; }\n";
  } else if (t == DType::kF16) {
    gpu = "DPRO_EW_FN float dpro_load(const dpro_u16* p, long long i) { float f; asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(f) : \"h\"(p[i])); return f; }\n"
          "DPRO_EW_FN void dpro_store(dpro_u16* p, long long i, float v) { dpro_u16 h; asm(\"cvt.rn.f16.f32 %0, %1;\" : \"=h\"(h) : \"f\"(v)); p[i] = h; }\n";
    host = "DPRO_EW_FN float dpro_load(const dpro_u16* p, long long i) { return dpro::kernels::half_to_float(p[i]); }\n"
           "DPRO_EW_FN void dpro_store(dpro_u16* p, long long i, float v) { p[i] = dpro::kernels::float_to_half(v); }\n";
  } else {
    gpu = "DPRO_EW_FN float dpro_load(const dpro_u16* p, long long i) { return __uint_as_float(((unsigned)p[i]) << 16); }\n"
          "DPRO_EW_FN void dpro_store(dpro_u16* p, long long i, float v) { dpro_u16 h; asm(\"cvt.rn.bf16.f32 %0, %1;\" : \"=h\"(h) : \"f\"(v)); p[i] = h; }\n";
    host = "DPRO_EW_FN float dpro_load(const dpro_u16* p, long long i) { return dpro::kernels::bf16_to_float(p[i]); }\n"
           "DPRO_EW_FN void dpro_store(dpro_u16* p, long long i, float v) { p[i] = dpro::kernels::float_to_bf16(v); }\n";
  }
  return "typedef unsigned short dpro_u16;\n#if defined(__CUDACC__)\n#define DPRO_EW_FN __device__ __forceinline__\n" + gpu +
         "#else\n#include <math.h>\n#include \"kernels/half_bits.h\"\n#define DPRO_EW_FN static inline\n" + host + "#endif\n";
}

std::string parameter_list(const ElementwiseChain& chain, const std::string& t, const char* index) {
  std::string p = std::string("long long ") + index;
  for (std::size_t i = 0; i < chain.inputs.size(); ++i) p += ", const " + t + "* in" + std::to_string(i);
  for (std::size_t o = 0; o < chain_written_outputs(chain); ++o) p += ", " + t + "* out" + std::to_string(o);
  return p;
}

std::string argument_list(const ElementwiseChain& chain, const std::string& t, bool from_arrays) {
  std::string a = "i";
  for (std::size_t i = 0; i < chain.inputs.size(); ++i)
    a += from_arrays ? ", (const " + t + "*)in[" + std::to_string(i) + "]" : ", in" + std::to_string(i);
  for (std::size_t o = 0; o < chain_written_outputs(chain); ++o)
    a += from_arrays ? ", (" + t + "*)out[" + std::to_string(o) + "]" : ", out" + std::to_string(o);
  return a;
}

std::string element_body(const ElementwiseChain& chain) {
  std::string body = "  float v = dpro_load(in0, i);\n";
  for (std::size_t s = 0; s < chain.steps.size(); ++s) {
    const auto& step = chain.steps[s];
    if (is_binary(step.op))  // the operand loaded once: the backward ops read it more than once
      body += "  { const float x = dpro_load(in" + std::to_string(step.input) + ", i); v = " +
              step_expression(step.op, "x", step.scalar) + "; }\n";
    else body += "  v = " + step_expression(step.op, "0.0f", step.scalar) + ";\n";
    if (chain.store_intermediates && s + 1 < chain.steps.size()) body += "  dpro_store(out" + std::to_string(s) + ", i, v);\n";
  }
  body += "  dpro_store(out" + std::to_string(chain_written_outputs(chain) - 1) + ", i, v);\n";
  return body;
}

std::uint64_t fnv1a(const std::string& text) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  return h;
}

}  // namespace

void validate_chain(const ElementwiseChain& chain) {
  if (chain.dtype != DType::kF32 && chain.dtype != DType::kF16 && chain.dtype != DType::kBF16) {
    throw std::invalid_argument(std::string("elementwise chain: dtype ") + executor::to_string(chain.dtype) +
                                " (fp32, fp16 or bf16 only)");
  }
  if (chain.inputs.empty()) throw std::invalid_argument("elementwise chain: no input");
  for (std::size_t s = 0; s < chain.steps.size(); ++s) {
    const auto& step = chain.steps[s];
    if (static_cast<int>(step.op) > static_cast<int>(executor::kLastElementwiseOp)) {
      throw std::invalid_argument("elementwise chain: step " + std::to_string(s) + " has an unknown op");
    }
    if (is_binary(step.op) && (step.input < 0 || step.input >= static_cast<int>(chain.inputs.size()))) {
      throw std::invalid_argument("elementwise chain: step " + std::to_string(s) + " reads input " +
                                  std::to_string(step.input) + " of " + std::to_string(chain.inputs.size()));
    }
    if (!std::isfinite(step.scalar)) throw std::invalid_argument("elementwise chain: step " + std::to_string(s) + " has a non-finite scalar");
  }
  bool ok = chain.store_intermediates ? !chain.steps.empty() && chain.outputs.size() == chain.steps.size()
                                      : !chain.outputs.empty();
  if (!ok) {
    throw std::invalid_argument("elementwise chain: " + std::to_string(chain.outputs.size()) + " outputs for " +
                                std::to_string(chain.steps.size()) + " steps" +
                                (chain.store_intermediates ? " with intermediates stored" : ""));
  }
}

std::size_t chain_written_outputs(const ElementwiseChain& chain) {
  return chain.store_intermediates ? chain.steps.size() : 1;
}

std::string chain_signature(const ElementwiseChain& chain) {
  std::string sig = std::string(executor::to_string(chain.dtype)) + "/in" + std::to_string(chain.inputs.size()) +
                    "/out" + std::to_string(chain_written_outputs(chain));
  for (const auto& step : chain.steps) {
    sig.append(1, '/').append(std::to_string(static_cast<int>(step.op)));
    if (is_binary(step.op)) sig.append(1, ':').append(std::to_string(step.input));
    if (executor::elementwise_op_takes_scalar(step.op)) sig.append(1, ':').append(float_literal(step.scalar));
  }
  return sig;
}

std::string chain_kernel_name(const ElementwiseChain& chain) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(fnv1a(chain_signature(chain))));
  return std::string("dpro_ew_") + hex;
}

std::string elementwise_source(const ElementwiseChain& chain) {
  validate_chain(chain);
  std::string name = chain_kernel_name(chain), t = storage_type(chain.dtype);
  std::string src = "// Generated by dpro kernels/elementwise_codegen.cpp for " + chain_signature(chain) + "\n";
  src += load_store_source(chain.dtype);
  src += "DPRO_EW_FN void dpro_element(" + parameter_list(chain, t, "i") + ") {\n" + element_body(chain) + "}\n";
  src += "#if defined(__CUDACC__)\nextern \"C\" __global__ void " + name + "(" + parameter_list(chain, t, "n") + ") {\n"
         "  long long stride = (long long)gridDim.x * blockDim.x;\n"
         "  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) dpro_element(" +
         argument_list(chain, t, false) + ");\n}\n";
  src += "#else\nextern \"C\" void " + name + "_host(long long n, const void* const* in, void* const* out) {\n"
         "  for (long long i = 0; i < n; ++i) dpro_element(" + argument_list(chain, t, true) + ");\n}\n#endif\n";
  return src;
}

void evaluate_chain_reference(const ElementwiseChain& chain, const std::vector<const void*>& inputs,
                              const std::vector<void*>& outputs) {
  validate_chain(chain);
  if (inputs.size() != chain.inputs.size() || outputs.size() != chain_written_outputs(chain)) {
    throw std::invalid_argument("evaluate_chain_reference: input or output count differs from the chain's");
  }
  auto load = [&](int input, std::int64_t i) {
    const void* p = inputs[static_cast<std::size_t>(input)];
    if (chain.dtype == DType::kF32) return static_cast<const float*>(p)[i];
    std::uint16_t h = static_cast<const std::uint16_t*>(p)[i];
    return chain.dtype == DType::kF16 ? half_to_float(h) : bf16_to_float(h);
  };
  auto store = [&](std::size_t output, std::int64_t i, float v) {
    void* p = outputs[output];
    if (chain.dtype == DType::kF32) static_cast<float*>(p)[i] = v;
    else static_cast<std::uint16_t*>(p)[i] = chain.dtype == DType::kF16 ? float_to_half(v) : float_to_bf16(v);
  };
  for (std::int64_t i = 0; i < chain.elements; ++i) {
    float v = load(0, i);
    for (std::size_t s = 0; s < chain.steps.size(); ++s) {
      const auto& step = chain.steps[s];
      v = apply_step(step.op, v, is_binary(step.op) ? load(step.input, i) : 0.0f, step.scalar);
      if (chain.store_intermediates && s + 1 < chain.steps.size()) store(s, i, v);
    }
    store(outputs.size() - 1, i, v);
  }
}

}  // namespace dpro::kernels
