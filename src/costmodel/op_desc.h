#pragma once
// What a cost model knows about one GPU op: its family (the framework operator it
// implements), its dimensions, dtype, and, when it came from a trace, the kernel's name and
// launch geometry. Built from a shared-data CSV row (dataset.h) or from a graph node
// (op_desc_from_graph.h).
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "costmodel/hw.h"

namespace dpro::costmodel {

// Op families the compact-AST builder understands. kUnknown: the op cannot be described
// (no shapes, or an operator we have no tree for); models then fall back.
enum class OpFamily : std::uint8_t {
  kUnknown, kBmm, kLinear, kConv2d,
  kAdd, kMul, kDiv, kPow,        // tensor (+) tensor
  kAddScalar, kMulScalar, kDivScalar, kPowScalar,  // tensor (+) scalar
  kGelu, kRelu, kTanh, kLayerNorm, kSoftmax,
};
constexpr int kOpFamilyCount = 17;
const char* to_string(OpFamily family);
// Shared-data OPName ("bmm", "addu", "ln") or an aten name ("aten::bmm", "aten::add_",
// "aten::layer_norm", "aten::_softmax", "aten::convolution", ...). kUnknown otherwise.
OpFamily family_from_name(const std::string& name);
// Framework elementwise ops with no family of their own, priced as the family with the same
// memory traffic and kind of arithmetic (a "like op"): cheap unary ops (clamp, neg, abs, copy_,
// hardtanh, leaky_relu, ...; fill_ and zero_, which only write) as relu, transcendental unary ops (sigmoid, exp, log, sqrt, silu,
// erf, ...) as tanh, elementwise ops of two or three inputs (threshold_backward, maximum,
// addcmul_, addcdiv_, where, ...) as mul. kUnknown for anything else. docs/costmodel.md, table (c), measures what pricing
// an op by a like family costs in accuracy.
OpFamily like_family(const std::string& name);
// The family an op of this name is priced as: its own (family_from_name), else a like family
// (then *like_op is set), else kUnknown.
OpFamily resolve_family(const std::string& name, bool* like_op = nullptr);

// A kernel's function name, namespaces included ("at::native::reduce_kernel"), without its return
// type ("void "), template and call arguments, and "(anonymous namespace)::" wherever it stands
// (its parenthesis would otherwise end the name before the function:
// "at::native::(anonymous namespace)::conv_depthwise2d_..."). Case kept.
std::string kernel_function_name(std::string_view kernel_name);

// Whether a kernel's name says it is a GEMM or a convolution (cuBLAS/cuDNN/CUTLASS: "sgemm",
// "implicit_gemm", "winograd", "fft", "xmma", "cutlass", "dgrad", "wgrad", "fprop", ...),
// judged on its function name only ("void " and template or call arguments cut off: their
// types say nothing of what the kernel computes). GEMV kernels (memory-bound) are not.
// cuDNN's own convolution kernels count too ("volta_scudnn_128x64_relu_...",
// "turing_fp16_s1688cudnn_fp16_...": "cudnn" after 's', 'h' or a digit, not "cudnn::"), and
// TorchInductor's templates ("triton_tem_fused_mm_0"), not its pointwise or reduction kernels.
bool is_gemm_or_conv_kernel(const std::string& kernel_name);
// Of those, the convolutions: the whole name (template arguments included) says so ("conv",
// "winograd", "fft", "implicit", "dgrad", "wgrad", "fprop", "cudnn"); the rest are GEMMs.
bool is_conv_kernel(const std::string& kernel_name);
// The arithmetic a GEMM or convolution kernel runs, when its name says it is not plain fp32
// (the whole name is read, template arguments included: CUTLASS writes "tfloat32_t" there):
// TF32 tensor cores ("tf32", "tfloat32", CUTLASS's fp32-input "tensorop_s1688"),
// fp16 ("fp16", "f16", "h884", "h1688", "h16816", "hmma", "half"), bf16 ("bf16", "bfloat16"),
// fp8 ("e4m3", "e5m2"); nullopt for any other kernel, and for kernels that are not GEMM or
// convolution (an elementwise kernel's dtype is its tensors', which the trace records).
std::optional<DType> kernel_math_dtype(const std::string& kernel_name);
// The element type a kernel's template arguments name (demangled, as torch.profiler and the
// native importer give them): "CUDAFunctor_add<c10::BFloat16>", "__nv_bfloat16" -> bf16;
// "c10::Half", "__half" -> fp16; "c10::Float8_e4m3fn" -> fp8; nullopt otherwise (fp32 is the
// default). For ops whose trace recorded shapes but no types (PyTorch's emit_nvtx ranges).
std::optional<DType> kernel_tensor_dtype(const std::string& kernel_name);

// The coarse type of work a GPU kernel does, for sums of kernel time per type (the whole-model
// view of a prediction, docs/costmodel.md "Per op type"): the cost model's families or coarser.
//   gemm: bmm and linear (matmul, mm, addmm, baddbmm, linear); conv: conv2d and its backward;
//   elementwise: the tensor and scalar arithmetic families, gelu, relu, tanh and every like op
//   (like_family: copy_, fill_, clamp, sigmoid, threshold_backward, where, ...);
//   norm: layer norm and the other normalisations (batch, group, instance; forward and backward);
//   dropout and the multi-tensor (foreach, fused optimizer) kernels, elementwise over lists of
//   tensors, count here too); norm: layer norm and the other normalisations (batch, group,
//   instance; forward and backward); softmax: softmax and log-softmax, forward and backward;
//   attention: fused attention (scaled_dot_product_attention's flash and cuDNN kernels);
//   reduction: sum, mean, max, min, var, std, vector norms, cumulative sums, pooling (a windowed
//   reduction); copy: data moved without arithmetic: DMA copies and memsets (no kernel_type: the
//   graph says, kernel_types), cat and stack; communication: NCCL kernels (likewise);
//   other: anything else (embedding, index, loss, sort, ...).
enum class KernelType : std::uint8_t {
  kGemm, kConv, kElementwise, kNorm, kSoftmax, kAttention, kReduction, kCopy, kCommunication, kOther,
};
inline constexpr int kKernelTypeCount = 10;
const char* to_string(KernelType type);
// One kernel's type. `launcher`: the framework op that launched it ("aten::addmm"; empty when the
// trace has none), `kernel_name`: the kernel's own name. First the launcher's cost-model family
// (resolve_family: a GEMM's split-K reduction and a convolution's layout transforms count with
// the GEMM or convolution that launched them, as the cost model prices them), then coarse
// launcher names (attention, norm, softmax, convolution backward, reductions, pooling, foreach
// and fused optimizers, dropout, cat), then the kernel's name (attention kernels; is_gemm_or_conv_kernel,
// split into convolution and GEMM as op fusion does; PyTorch's elementwise, multi-tensor,
// reduce, pooling, softmax, norm and cat kernels), else other.
KernelType kernel_type(std::string_view launcher, std::string_view kernel_name);

struct OpDesc {
  OpFamily family = OpFamily::kUnknown;
  std::string name;  // the operator name as recorded (kept for reports)
  // Family dimensions, in the shared data's column order:
  //   bmm/linear: B, M, N, K  (C[B,M,N] = A[B,M,K] x W[K,N])
  //   conv2d: B, Cin, Cout, kernel, input size (square), stride, padding
  //   elementwise/ln/softmax: B, H (rows x row length)
  std::vector<std::int64_t> dims;
  DType dtype = DType::kFloat32;
  std::string kernel_name;                   // the main kernel; empty when unknown
  // Every kernel the op launched, ';'-separated, when the source lists them (the shared
  // data's "Kernels" column: cuDNN's Winograd transforms, split-K reductions, ...).
  std::string kernel_list;
  std::optional<std::array<int, 3>> grid, block;
  // True when `family` is a like family (like_family()), not the op's own.
  bool like_op = false;
  // True when `dtype` is the arithmetic the kernel's name says (take_kernel_math).
  bool dtype_from_kernel = false;

  bool describable() const;  // family known and dims complete and positive
  // Takes the arithmetic kernel_name says (kernel_math_dtype) as the dtype: fp32 tensors on TF32
  // tensor cores become tf32 (same bytes); fp16, bf16 or fp8 only when the source recorded no
  // dtype (`dtype_recorded` false), since the recorded one sizes the tensors.
  void take_kernel_math(bool dtype_recorded);
  double flops() const;      // floating-point operations (a multiply-add counts 2)
  double bytes() const;      // DRAM bytes read + written, assuming each tensor touched once
  double bytes_written() const;
};

// The configuration of an op, independent of the GPU and of the kernel that ran it:
// "family,dim,...,dtype". Rows of the shared data with the same key measured the same op.
std::string op_key(const OpDesc& op);

// Number of dims each family needs (0 for kUnknown).
int dims_needed(OpFamily family);

}  // namespace dpro::costmodel
