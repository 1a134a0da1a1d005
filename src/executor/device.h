#pragma once
// The device the reference executor drives: the few CUDA runtime, cuBLASLt and NCCL operations a
// schedule needs, behind one interface. The schedule logic (lowering a rank's graph and a plan into
// streams, events, buffers and launches) is plain C++ and is tested against a fake device; the CUDA
// implementation (built only where the toolkit is found) turns each call into the runtime call or
// the kernel from kernels/ that it names.
//
// Threads: the executor issues calls from one host thread per recorded CPU thread, so an
// implementation must accept calls from several threads at once. Handles are small integers the
// device hands out; they are valid until the device is destroyed (buffers: until free()).
//
// Units: durations in ns (core/time.h), sizes in bytes or elements as named.
#include <array>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "core/time.h"

namespace dpro::executor {

using StreamHandle = std::uint32_t;
using EventHandle = std::uint32_t;
using BufferHandle = std::uint32_t;
// A communicator opened by a CollectiveFabric over several devices; 0 is none (a stand-in).
using CommHandle = std::uint32_t;

enum class DType : std::uint8_t { kF32, kF16, kBF16, kF64, kI32, kI64, kU8 };
std::size_t dtype_bytes(DType t);
const char* to_string(DType t);  // "fp32", "fp16", "bf16", "fp64", "int32", "int64", "uint8"

// A range of a device buffer.
struct Span {
  BufferHandle buffer = 0;
  std::uint64_t offset = 0;  // bytes from the buffer's start
  std::uint64_t bytes = 0;
};

using Dim3 = std::array<std::uint32_t, 3>;

// A kernel that occupies `grid` x `block` for about `duration` (calibrated spinning), for a
// recorded op no real kernel stands for. It touches no memory.
struct StandinKernel {
  Dim3 grid{1, 1, 1};
  Dim3 block{1, 1, 1};
  Nanos duration = 0;
};

enum class MathMode : std::uint8_t { kDefault, kTF32 };

// What cuBLASLt computes on the output tile before it stores C (CUBLASLT_MATMUL_DESC_EPILOGUE):
// the optimizer's GEMM epilogues (whatif/op_fusion.h, epilogue_supported). Forward: + bias (a
// vector of m, broadcast over the n columns), relu, gelu, or bias then relu/gelu. Backward: C is
// multiplied by the activation's derivative at the forward pre-activation, which `aux` holds
// (drelu: a bit mask, gemm_aux_ld bits a column; dgelu: m x n values of the GEMM's dtype); the
// _bgrad forms also write the bias gradient (C summed over its columns, m values) to `bias`.
// GELU is cuBLASLt's: the tanh approximation (docs/executor.md, "GEMM epilogues").
enum class GemmEpilogue : std::uint8_t {
  kNone, kBias, kRelu, kGelu, kBiasRelu, kBiasGelu, kDRelu, kDGelu, kDReluBGrad, kDGeluBGrad
};
const char* to_string(GemmEpilogue e);  // "none", "bias", "relu", "gelu", "bias_relu", ..., "dgelu_bgrad"
bool epilogue_reads_bias(GemmEpilogue e);   // bias, bias_relu, bias_gelu
bool epilogue_writes_bias(GemmEpilogue e);  // drelu_bgrad, dgelu_bgrad
bool epilogue_reads_aux(GemmEpilogue e);    // the backward forms
// The aux buffer's leading dimension (elements; bits for the drelu mask) and its bytes for one
// GEMM of m x n, `batch` of them, as cuBLASLt requires (a multiple of 128 bits / 8 elements >= m).
std::int64_t gemm_aux_ld(GemmEpilogue e, std::int64_t m);
std::uint64_t gemm_aux_bytes(GemmEpilogue e, std::int64_t m, std::int64_t n, std::int64_t batch, DType t);

// C = epilogue(op(A) op(B) [+ C]), column-major as cuBLASLt takes it, `batch` independent
// products. `bias` (m values of dtype a product, read or written as the epilogue says) and
// `aux` (gemm_aux_bytes a product) are empty unless the epilogue uses them.
struct GemmCall {
  std::int64_t m = 0, n = 0, k = 0, batch = 1;
  bool transpose_a = false, transpose_b = false;
  DType dtype = DType::kF32;  // of A, B, C, bias and a dgelu aux; accumulation in fp32
  MathMode math = MathMode::kDefault;
  Span a, b, c;
  GemmEpilogue epilogue = GemmEpilogue::kNone;
  Span bias, aux;
};

// One step of a fused elementwise chain: value <- op(value[, inputs[input]]). Unary ops ignore
// `input`; kScale multiplies by `scalar`, kAddScalar adds it.
// The backward ops are binary: value is the incoming gradient g, inputs[input] is x (the forward
// op's input: relu, gelu, silu) or y (its output: sigmoid, tanh), as PyTorch's *_backward ops take them:
//   kReluBackward     threshold_backward: x <= scalar ? 0 : g (relu's: scalar 0)
//   kGeluBackward     g * (Phi(x) + x * phi(x)), the erf form (PyTorch's default approximate="none")
//   kSigmoidBackward  g * (1 - y) * y
//   kTanhBackward     g * (1 - y * y)
//   kSiluBackward     g * s * (1 + x * (1 - s)), s = sigmoid(x)
// and the scalar ops: kPowScalar value^scalar, kClampMin max(value, scalar) (NaN kept), kFill scalar.
enum class ElementwiseOp : std::uint8_t {
  kCopy, kAdd, kSub, kMul, kDiv, kMax, kMin,
  kRelu, kGelu, kSilu, kSigmoid, kTanh, kExp, kLog, kSqrt, kRsqrt, kNeg, kAbs, kScale, kAddScalar,
  kReluBackward, kGeluBackward, kSigmoidBackward, kTanhBackward, kSiluBackward, kPowScalar, kClampMin, kFill
};
inline constexpr ElementwiseOp kLastElementwiseOp = ElementwiseOp::kFill;
// Whether the step reads inputs[input] (the tensor-operand ops and the backward ops).
constexpr bool elementwise_op_is_binary(ElementwiseOp op) {
  return (op >= ElementwiseOp::kAdd && op <= ElementwiseOp::kMin) ||
         (op >= ElementwiseOp::kReluBackward && op <= ElementwiseOp::kSiluBackward);
}
// Whether the step reads `scalar`.
constexpr bool elementwise_op_takes_scalar(ElementwiseOp op) {
  return op == ElementwiseOp::kScale || op == ElementwiseOp::kAddScalar || op == ElementwiseOp::kReluBackward ||
         op == ElementwiseOp::kPowScalar || op == ElementwiseOp::kClampMin || op == ElementwiseOp::kFill;
}
struct ElementwiseStep {
  ElementwiseOp op = ElementwiseOp::kCopy;
  int input = -1;  // binary ops: index into ElementwiseChain::inputs; -1 for unary ops
  float scalar = 0;
};
// value <- inputs[0], then each step in order, over `elements` elements of `dtype` (arithmetic in
// fp32). The final value is written to outputs.back(); with store_intermediates, step i's value is
// also written to outputs[i] (outputs.size() == steps.size()), as the unfused kernels did.
struct ElementwiseChain {
  std::vector<ElementwiseStep> steps;
  std::vector<Span> inputs;
  std::vector<Span> outputs;
  std::int64_t elements = 0;
  DType dtype = DType::kF32;
  bool store_intermediates = false;
};

struct CastCall {
  DType from = DType::kF32, to = DType::kBF16;
  std::int64_t elements = 0;
  Span src, dst;
};

// Gradient compression kernels (docs/compression.md's methods): `param` is the method's
// parameter (top-k / random-k density, PowerSGD rank); `dst` receives the wire payload and
// `residual` (error feedback, may be empty) is read and updated.
enum class CompressMethod : std::uint8_t { kTopK, kRandomK, kSignPack, kPowerSgd, kCastF16, kCastBF16 };
struct CompressCall {
  CompressMethod method = CompressMethod::kTopK;
  bool decompress = false;
  double param = 0;
  std::int64_t elements = 0;  // of the fp32 gradient
  std::int64_t rows = 0;      // PowerSGD: the gradient as a rows x (elements / rows) matrix
  Span src, dst, residual;
  std::uint64_t seed = 0;     // random-k: the index draw
};

enum class CopyKind : std::uint8_t { kHostToDevice, kDeviceToHost, kDeviceToDevice };
struct CopyCall {
  CopyKind kind = CopyKind::kDeviceToDevice;
  std::uint64_t bytes = 0;
  Span src, dst;  // the host side of a host copy is the device's pinned staging memory
};

struct MemsetCall {
  Span dst;
  std::uint8_t value = 0;
};

// A collective of the recorded size. With `comm` (a communicator a CollectiveFabric opened over
// the ranks' devices, one GPU each) it is the real collective (NCCL) of `bytes` over that group;
// without (comm == 0: one GPU, or a group of one scheduled rank) it runs as a stand-in of
// `standin_duration`. `bytes` is the whole buffer of one member (all_gather: its output; all_to_all:
// what it sends to all peers together).
struct CollectiveCall {
  std::string op;  // "all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all", "send", "recv"
  std::uint64_t bytes = 0;
  DType dtype = DType::kF32;
  Span buffer;
  int peer = -1;  // send/recv: the peer's rank in the group
  Nanos standin_duration = 0;
  CommHandle comm = 0;
};

using Launch = std::variant<StandinKernel, GemmCall, ElementwiseChain, CastCall, CompressCall, CopyCall, MemsetCall,
                            CollectiveCall>;

class Device {
 public:
  virtual ~Device() = default;
  virtual std::string name() const = 0;  // "NVIDIA H100 80GB HBM3", "fake"

  virtual StreamHandle create_stream() = 0;
  virtual EventHandle create_event() = 0;
  // Throws std::runtime_error (the CUDA error text) when the device has no room.
  virtual BufferHandle allocate(std::uint64_t bytes) = 0;
  virtual void free(BufferHandle buffer) = 0;

  // Enqueues `launch` on `stream`; returns at once, as a CUDA launch does (or after blocking on a
  // full launch queue, which is part of what the executor reproduces).
  virtual void launch(StreamHandle stream, const Launch& launch) = 0;
  virtual void record(EventHandle event, StreamHandle stream) = 0;
  virtual void wait(StreamHandle stream, EventHandle event) = 0;  // cudaStreamWaitEvent
  virtual void synchronize(EventHandle event) = 0;                // the host blocks until it completes
  virtual void synchronize() = 0;                                 // the whole device

  // GPU time between two completed events (cudaEventElapsedTime), ns.
  virtual Nanos elapsed(EventHandle from, EventHandle to) = 0;
  // The host clock (steady), ns; and a host busy-wait of `duration` that stands for a CPU op's own
  // cost (the executor calls it so that launch pacing is the recorded one).
  virtual Nanos host_now() = 0;
  virtual void host_spin(Nanos duration) = 0;
};

// Communicators between devices of this process, one rank per device (ncclCommInitAll-style: the
// NCCL implementation needs no launcher and no bootstrap network). Opened once per group before a
// run, used from the ranks' host threads at once; every member must issue the collectives of one
// communicator in the same order (NCCL hangs otherwise: the schedule checks it before the run).
class CollectiveFabric {
 public:
  virtual ~CollectiveFabric() = default;
  virtual std::string name() const = 0;  // "nccl", "fake"
  // Opens one communicator over `members` (group rank i is members[i], devices of this fabric's
  // kind, each at most once); the returned handle names it in every member's CollectiveCall.
  // Throws std::runtime_error (the library's error text) when it cannot.
  virtual CommHandle open(const std::vector<Device*>& members) = 0;
  // A rank failed: collectives waiting for it must give up (throw) instead of hanging. Idempotent.
  virtual void abort() = 0;
};

}  // namespace dpro::executor
