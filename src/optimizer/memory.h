#pragma once
// Memory per rank of the recorded job, so that `optimize --memory-budget GiB` can refuse a budget
// the job itself does not fit and plans that would not fit (issue 30: "memory per rank estimated
// from the trace's memory events where recorded, else from tensor sizes").
//
// Where the traces record memory events (Kineto's "[memory]", profile_memory=True), the job's
// memory per rank is the largest peak they record (trace::TraceRank::peak_gpu_memory_bytes).
// The bundled traces record none, so the estimate then comes from what the graph knows:
// the gradient bytes a rank all-reduces in one step (the largest step's, the largest rank's) are
// the model's parameters at the gradient's width, and training keeps kTrainingStateFactor times
// that: weights, gradients and the two moments of Adam at the same width. Where the trace records
// tensor shapes, the activation estimate below is added (a proxy, not a bound); workspace and the
// allocator's cache are never counted. Without shapes the estimate is a lower bound, so a budget
// refused for being below it is certainly too small. A plan's precision decisions change the
// activation estimate (precision_memory below); the search counts that change in its memory.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "optimizer/plan.h"
#include "whatif/workload.h"

namespace dpro::optimizer {

inline constexpr std::int64_t kTrainingStateFactor = 4;  // weights + gradients + 2 Adam moments
inline constexpr double kBytesPerGiB = 1024.0 * 1024.0 * 1024.0;

struct MemoryEstimate {
  std::int64_t bytes = 0;       // per rank
  std::int64_t gradient_bytes = 0;  // 0 when recorded
  std::int64_t activation_bytes = 0;  // the activation estimate counted in `bytes` (0: recorded, or none)
  std::string source;           // how it was estimated, for messages
};

// Activations a training step keeps for its backward pass, estimated from the tensor shapes the
// trace records ("Input Dims": Kineto with record_shapes=True, dpro-profile's op ranges). The
// proxy: in each step, the forward pass is the span from the step's start to its first backward
// op (an event whose name contains "Backward": autograd's evaluate_function records); every CPU op
// there that launches a GPU kernel reads an activation, its first tensor input of 2 or more
// dimensions (addmm's first is the bias), and the proxy counts those bytes once per op (shape
// product x the recorded dtype's size; unknown dtypes count 4 bytes). Embedding ops are left out:
// their first input is the table, a parameter.
// Autograd saves the input of convolutions, linear layers, batch norm and activations for their
// gradients, so this is the order of magnitude of the saved activations; it over-counts ops that
// save nothing (adds, in-place ops) and tensors read by several ops, and under-counts saved
// outputs and second inputs (attention's keys and values). Of the steps, the median; of the
// ranks, the largest. nullopt when no step has both recorded shapes and a backward op.
// A floating-point tensor of a counted forward op of the median step that a precision plan may
// narrow (precision_memory). Of an op of a precision class (gemm: bmm, matmul, linear, addmm, mm;
// conv: convolutions, by the launching op's name): each input of 2 or more dimensions. Of any
// other counted op that autocast runs in its input's dtype (not on autocast's float32 or
// widest-type lists: batch norm, activations, adds, pooling; `runs_in_input_dtype`): its activation
// input, kind kOther.
struct ClassTensor {
  enum class Kind { kGemm, kConv, kOther };
  Kind kind = Kind::kGemm;
  bool activation = false;  // the op's activation input (counted in `bytes`); else another operand (a weight)
  std::int64_t elements = 0;
  int element_bytes = 4;    // at the recorded dtype
  long position = 0;        // of a gemm or conv op: its index among its class's forward ops (per-layer precision, whatif::OpPart)
  long order = 0;           // the op's index among the step's counted forward ops (in start order)
};
// Whether PyTorch autocast runs a forward op of this name (a launching op's: "aten::cudnn_batch_norm",
// "aten::_log_softmax") in the dtype of its inputs: not a GEMM or convolution (autocast's lower-
// precision list), not on its float32 list (softmax, log_softmax, layer_norm, group_norm, the
// losses, exp/log/pow, sum/prod/cumsum, norms) or its widest-input-type list (addcmul, addcdiv,
// index_put, scatter_add, ...). Names are read without "aten::", a leading '_', a trailing '_'
// (in-place), a "native_" prefix and a "_forward" suffix.
bool runs_in_input_dtype(std::string_view op_name);
struct ActivationEstimate {
  std::int64_t bytes = 0;
  int rank = 0;               // the rank it is for (trace rank number)
  std::size_t steps = 0;      // steps the median is over
  std::size_t ops = 0;        // forward ops counted in the median step
  std::vector<ClassTensor> class_tensors;  // of the median step's counted ops of a precision class
};
std::optional<ActivationEstimate> estimate_activation_bytes(const whatif::Workload& job);

// What a precision plan changes in the activation estimate, per rank, in bytes. The rule (PyTorch
// autocast, docs/optimizer.md "Precision and activations"): an op autocast runs at a narrower dtype
// receives out-of-place casts of its floating-point inputs, and autograd saves what the op
// received, so the saved activation of a lowered GEMM or convolution is its cast copy, at the
// target's width instead of the recorded one (`saved`: the bytes no longer kept), and the cast of
// its other operand (a linear layer's or convolution's weight; autocast caches it for the step) is
// a new tensor kept for backward beside the fp32 master weight (`casts`). fp8 (Transformer Engine)
// saves 1-byte casts; tf32 keeps fp32 storage and changes nothing. Inputs already at or below the
// target width change nothing. The ops between them (kOther tensors) follow the time model, which
// lowers the elementwise kernels from the first lowered GEMM or convolution on: an fp32 activation
// of such an op that comes after (`order`) a GEMM or convolution op lowered to 16 or 8 bits is kept
// at 2 bytes (the 16-bit output that op wrote: fp8 GEMMs write 16 bits too), unless the last GEMM
// or convolution op before it is one a part of its class keeps at its width (a layer kept).
struct PrecisionMemory {
  std::int64_t saved = 0;  // activation bytes freed
  std::int64_t casts = 0;  // bytes of weight casts added
  std::int64_t delta() const { return casts - saved; }  // negative: the plan needs less memory
};
// `gemm_dtype`, `conv_dtype`: the plan's dtype per class ("bf16", "fp16", "fp8", "tf32"; anything
// else, as "as_recorded" or "": that class is unchanged).
PrecisionMemory precision_memory(const ActivationEstimate& act, const std::string& gemm_dtype, const std::string& conv_dtype);
// Of a plan's decisions: the dtype per class and part of a class as decision_rewrites reads it
// (precision_of_class), each tensor at its op's. A part's positions count the class's ops in step
// order, forward first: a non-negative position names the forward op at that index; a negative
// one names an op from the end of the step, a backward op, which saves no activation here. A layer
// part ("conv#1", "conv#-1") names the forward op of that layer (one forward op per layer),
// negative from the last forward op of the class.
PrecisionMemory precision_memory(const ActivationEstimate& act, const std::vector<Decision>& decisions);

// nullopt when the job gives nothing to estimate from (no memory event, no gradient all-reduce).
std::optional<MemoryEstimate> estimate_memory_per_rank(const whatif::Workload& job);

// The memory per rank a plan may add under a total budget of `budget_gib` per rank: negative when
// the budget is below the job's own estimate but a plan can free `largest_credit` bytes (a
// precision plan's activations). Throws OptionError("memory_budget", ...) when the job's own
// estimate is unknown, or above the budget by more than `largest_credit`.
std::int64_t headroom_under_budget(double budget_gib, const std::optional<MemoryEstimate>& job,
                                   std::int64_t largest_credit = 0);

}  // namespace dpro::optimizer
