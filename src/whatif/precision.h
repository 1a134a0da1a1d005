#pragma once
// Precision lowering on the same GPU: classes of GPU ops re-timed as if they ran at a narrower
// dtype (PyTorch autocast to bf16 or fp16, or fp32 GEMMs on TF32 tensor cores), priced from the
// trace's own kernels and the GPU's datasheet (hw::DeviceSpec), never from a trace recorded at the
// target dtype. docs/precision.md gives the rules and what they predict against recorded pairs.
//
// Op classes (OpClass), judged per GPU kernel:
//   gemm: GEMM kernels (is_gemm_or_conv_kernel, not cuDNN's "convert_*" dtype conversions) whose
//         launching op is matmul/linear/bmm/addmm/mm (OpFamily kBmm, kLinear), or, without one,
//         whose name says no convolution;
//   conv: GEMM kernels of a convolution (OpFamily kConv2d, "convolution_backward"), or, without a
//         launching op, whose name says convolution ("conv", "fprop", "dgrad", "wgrad", "winograd",
//         "implicit", "cudnn", "fft");
//   elementwise: every other kernel that consumes lowered activations or their gradients (batch
//         norm, activations, pooling, adds, layout transforms): within one iteration of one
//         stream, the kernels between its first and its last GEMM or convolution kernel whose
//         output the target narrows (none in a job autocast already ran, none for fp8), as
//         autocast's precision-agnostic ops inherit their input's dtype. Kernels autocast keeps in
//         fp32 (softmax, layer/group norm, losses, reductions), kernels on fp32 parameters and
//         buffers (optimizer, batch norm's running statistics), copies and casts (kKeptTimeWords in
//         precision.cpp), and kernels outside that span (data preparation, zeroing gradients, the
//         optimizer step) keep their time.
//   "all": the three.
//
// Pricing. A kernel's origin arithmetic and element size come from its name (kernel_math_dtype;
// kernel_tensor_dtype, "float" for fp32, an integer type: left alone), else from its launching op's
// recorded dtype, else, for a GEMM kernel (cuBLAS's nvjet kernels name neither), from the narrower
// type its closest named stream neighbours state (autocast runs an op at its inputs' type), else
// fp32. With t its current replay duration and f the rank's latency floor (its shortest kernel:
// time no byte count or peak shrinks):
//   gemm/conv kernel of a described op (FLOPs F and bytes B from the launching op's shapes; a
//     convolution's backward as its forward):
//     t' = f + (t - f) * max(F / P_target, B * b_t/b_o / BW) / max(F / P_origin, B / BW),
//     the roofline at the target's peak times the efficiency the kernel achieved at its origin
//     arithmetic (which cancels out);
//   gemm/conv kernel without shapes: half the time compute, half memory (costmodel::kGemmKernelGamma,
//     the split cross-device scaling takes for such kernels):
//     t' = f + (t - f) * (0.5 * P_origin / P_target + 0.5 * b_t / b_o);
//   other kernels of a lowered GEMM/conv op (cuDNN layout transforms, split-K reductions) and
//     elementwise kernels: memory-bound, t' = f + (t - f) * b_t / b_o;
//   a kernel never gets slower (t' <= t). P: the GPU's dense peak of an arithmetic
//   (DeviceSpec::peak_flops), BW its datasheet bandwidth, b the element sizes.
// Casts (autocast's, when b_t < b_o). Each lowered GEMM/conv op casts one weight-sized tensor
// (forward: its weight to the target dtype; backward: its weight gradient back to the fp32
// parameter's), and its first input (activation, or gradient) when the kernel before the op's
// kernels on the stream was not lowered (its output is fp32). A cast reads b_o and writes b_t bytes
// per element, priced at f + bytes / the trace's elementwise bandwidth (summed bytes over summed
// time of its described memory-bound kernels; the datasheet's when it has none). An op's casts
// are one kernel node of their summed time, inserted on its stream right before its first kernel
// and enqueued by its own launch call: it costs the host nothing, although autocast's casts are
// launches the host pays too. Casts of ops without shapes cannot be sized and cost f each.
// Order: device_retime prices kernels from their measured durations, so a precision change before
// it is lost; precision is for the GPU the trace ran on (the CLI refuses --precision-dtype with
// --device).
// Gradients and collectives: under autocast parameters and their gradients stay fp32, so
// all-reduce bytes, copies and memsets are unchanged. A "pure" low-precision mode (parameters in
// bf16, halving the all-reduce) is not modelled.
#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/time.h"
#include "costmodel/hw.h"
#include "whatif/workload.h"

namespace dpro::whatif {

enum class OpClass { kGemm, kConv, kElementwise };
const char* to_string(OpClass c);

// Part of an op class (per-layer precision), named by op positions or by layers.
// "conv@0,-1" names the class's ops at those positions, "conv@^0,-1" every other op of the class.
// An op's position is its index among the class's ops (launching op instances with a GEMM or
// convolution kernel; in a step without CPU ops, the like step's ops whose launchers its kernels
// borrow) within one iteration of one stream, in start order; a negative position
// counts from the end (-1: the last). In a training step the forward ops come first and their
// backward ops last, so "conv@0,-1" is the first convolution's forward and the backward op that
// ends the step (its gradients). A position is matched as written: in a class with as few ops as
// positions listed, 0 and -1 may name one op.
// "conv#0,-1" names layers: a layer is a forward op of the class and the backward ops autograd
// pairs with it (the same sequence number: torch.profiler and emit_nvtx record it), numbered by
// the forward ops' order in the iteration, negative from the last forward op. Steps whose ops
// record no sequence number (the steps of a dpro-profile capture outside emit_nvtx) take the layers
// of a step of the same rank and stream that does, with as many ops of the class; where none
// does, a layer part names none of their ops (PrecisionChange::without_layers counts them).
// One class's parts use one of the two (a plan or rules mixing them is refused).
struct OpPart {
  OpClass cls = OpClass::kGemm;
  bool complement = false;
  std::vector<long> positions;  // sorted, distinct: op positions, or layers when `layers`
  bool layers = false;
  // Whether it takes the op (or layer) at `index` of `count` of its class.
  bool selects(long index, long count) const;
  std::string to_string() const;  // canonical: "conv@-1,0", "conv@^-1,0", "conv#-1,0"
};
// nullopt for text without '@' or '#' (a whole class); OptionError("precision_classes", text) for a
// part that is malformed (a class other than gemm or conv, no position, a non-integer).
std::optional<OpPart> parse_op_part(const std::string& text);
// Whether `subject` names a part of class `cls` ("conv@..", "conv#..").
bool names_part_of(const std::string& subject, const std::string& cls);

class PrecisionCache;

struct Precision {
  std::string dtype = "bf16";              // the target dtype: tf32, fp16, bf16, fp8 (hw::parse_dtype)
  std::vector<std::string> classes{"all"};  // "gemm", "conv", "elementwise", "all", or parts (OpPart)
  std::string device_dir;                   // directory of GPU spec files (the trace's GPU is looked up there)
  // The GPU the kernels' replay times are for: "" for the one each ran on; after a --device
  // re-timing, its target (a catalog name), whose peaks and bandwidth then price the lowering.
  std::string device;
  // A device profile of that GPU (hw/device_profile.h; "" none): its measured GEMM throughput per
  // dtype and math mode, elementwise bandwidth and cast curves replace the datasheet priors above
  // (hw/device_rates.h; docs/executor.md, "How the cost models use the device profile").
  std::string device_profile;
  // Further lowerings of other classes at other dtypes, applied after this one in order, each as
  // if alone with its own dtype and classes (a dtype per op class: the optimizer's decisions).
  // A class belongs to one lowering at most; casts between two lowered classes of different
  // dtypes are priced as each lowering prices its own (from fp32).
  struct Stage {
    std::string dtype;
    std::vector<std::string> classes;
    bool operator==(const Stage&) const = default;
  };
  std::vector<Stage> then;
  // Optional: what the first lowering reads, made once for the workload this one rewrites
  // (PrecisionCache); without it, or where it does not serve, the lowering reads its own.
  std::shared_ptr<const PrecisionCache> cache;
};

// What precision()'s first lowering reads before it edits anything, made once: the device catalog
// of device_dir, the device profile's rates, and the workload's kernels (each one's description,
// role, class, dtype, launching op and GPU; their groups per rank, stream and iteration in start
// order; each rank's latency floor). These are a function of the files and of the workload only,
// not of the lowering's dtype or classes, so every plan of a search whose precision rewrite
// starts from the same job (optimizer::PrefixEvaluator: precision is a plan's first rewrite, on a
// copy of the conditioned job) lowers the same kernels; reading and describing them was most of a
// ResNet-50 plan's precision rewrite (docs/optimizer.md, "Sixth round").
// Contract: a Precision that carries a cache is applied to a workload equal to `base` (a copy of
// it, not yet edited); the cache serves only options with the same device_dir, device and
// device_profile and a graph of base's node and edge counts (else the lowering reads its own),
// and only the first lowering (Precision::then's work on the first one's result). Throws what
// precision() throws for these reads (an unknown GPU, bad spec or profile files). Immutable once
// made: threads share it.
class PrecisionCache {
 public:
  PrecisionCache(const Workload& base, std::string device_dir, std::string device, std::string device_profile);
  ~PrecisionCache();
  PrecisionCache(const PrecisionCache&) = delete;
  PrecisionCache& operator=(const PrecisionCache&) = delete;
  bool serves(const Workload& w, const Precision& options) const;
  const std::string device_dir, device, device_profile;
  const std::size_t nodes, edges;  // of base
  struct Collected;
  const std::unique_ptr<const Collected> collected;
};

struct PrecisionChange {
  costmodel::DType dtype = costmodel::DType::kBFloat16;
  std::string device;  // catalog name of the trace's GPU
  double peak_tflops = 0;  // the GPU's peak at the target dtype
  struct ClassTotals {
    std::size_t kernels = 0;     // kernels re-priced
    std::size_t described = 0;   // of them, priced from their op's FLOPs and bytes (gemm/conv)
    Nanos before = 0, after = 0;  // their replay time, casts excluded
  };
  std::map<OpClass, ClassTotals> lowered;
  std::size_t casts = 0;
  std::size_t casts_unsized = 0;  // of the ops that need one, those without shapes (priced at the floor)
  Nanos cast_time = 0;
  double cast_bandwidth_gbs = 0;  // what casts were priced at (GB/s)
  bool cast_bandwidth_measured = false;  // from the trace's elementwise kernels, not the datasheet
  Nanos latency_floor = 0;  // the shortest kernel (first rank with kernels)
  // Kernels left alone: already at (or narrower than) the target dtype; kept in fp32 by autocast;
  // outside every span of lowered ops (data preparation, optimizer step).
  std::size_t already_at_dtype = 0, kept_fp32 = 0, outside_span = 0;
  // GEMM or convolution kernels a layer part ("conv#0") could not place: their op has no layer
  // (no sequence number recorded, and no like step of its stream that has them).
  std::size_t without_layers = 0;
  Nanos gpu_before = 0, gpu_after = 0;  // summed replay time of kernels, copies and memsets
  // The figures of the device profile the pricing used ("gemm bf16/default", "cast_fp32_bf16");
  // empty without one.
  std::set<std::string> from_profile;
  // With Precision::then: the dtype of each further lowering (the figures above are summed over
  // all of them; dtype and peak_tflops are the first's).
  std::vector<costmodel::DType> then_dtypes;
};

// With a device profile (Precision::device_profile), a GEMM/conv kernel whose origin and target
// arithmetic the profile both measured is priced with P_origin and P_target its measured FLOP/s
// at the op's FLOPs per call (the largest sample's without shapes), BW the profile's elementwise
// bandwidth where it has one, and a cast of n elements at the profile's cast fit
// (latency + n x ns_per_element) in place of f + bytes / bandwidth; the other figures keep their
// priors (whether a kernel is lowered at all still follows the datasheet's peaks).
// Re-times the workload's kernels in place. Throws OptionError for a dtype that is not a narrower
// float or that the GPU has no arithmetic for (its spec lists no peak for it: fp8 before Hopper,
// bf16 before Ampere), and for an unknown class; InputError for a kernel whose GPU the catalog does
// not know, for bad spec files, and for a device profile that is malformed or does not apply
// (hw::require_profile_applies: `device`, else every GPU the trace recorded, must be the profile's).
PrecisionChange precision(Workload& workload, const Precision& options);

// Per class, the GEMM or convolution kernels (of ops of that class) that a layer part cannot place:
// no layer (OpPart), as PrecisionChange::without_layers counts them; a class with none is absent.
// `device_dir`, `device`: as Precision's. Throws what precision() throws for an unknown GPU or bad
// spec files.
std::map<OpClass, std::size_t> kernels_without_layer(const Workload& workload, const std::string& device_dir,
                                                     const std::string& device);

}  // namespace dpro::whatif
