#pragma once
// Gradient compression of the data-parallel all-reduces (issue 30; the table in
// shared/notes/optimizer.md). Applied after re-timing and bucketing to every gradient
// all-reduce (a bucket's, or each all-reduce's without buckets) of a world-spanning group of at
// least two ranks:
//
// - Wire. The all-reduce of n elements (4n bytes for fp32) becomes the collective the method
//   needs, at the bytes it sends, re-timed by the same ratio rule as retime.h:
//     T_new = T_now x model(new collective, new bytes) / model(all-reduce, old bytes)
//   with the calibrated collective model of the target cluster, so that the method "none" is
//   exactly the replay without compression. Per rank (r: ratio, N: group, q: rank):
//     fp16, bf16   2n bytes, all-reduce
//     top-k, DGC   8rn (fp32 value + int32 index), all-gather (message N x 8rn)
//     random-k     4rn, all-reduce: a seed shared by every rank picks the same indices, so only
//                  the values travel (the table's 8rn counts the indices too)
//     EF-SignSGD   n/8 + a 4-byte scale, all-gather (message N x (n/8 + 4))
//     PowerSGD     two all-reduces, P (4qm) and Q (4qn), for the gradient as an m x n matrix.
//                  A bucket's tensor shapes are not in the trace: the n elements are taken as one
//                  square-ish matrix of m = ceil(sqrt(n)) rows and ceil(n / m) columns (padded),
//                  which sends the fewest bytes of any shape (per-tensor shapes send more).
//   A gradient whose elements are already 2 bytes wide is not cast by fp16 / bf16 (nothing
//   changes). k = ceil(r x n), at least 1.
//
// - Kernels. One compression kernel is inserted on the collective's stream just before it and
//   one decompression kernel just after it (graph::Editor::insert), standing for the few kernels
//   a communication hook launches. They take no other stream's time, but the collective starts
//   only after compression (its peers wait for it at the barrier) and whatever waited for the
//   collective (the stream's next op, event waits, CPU syncs) waits for decompression too.
//   Each costs kKernelOverheadNs + max(bytes / bandwidth, flops / GEMM rate), the bandwidth being
//   the trace's own elementwise kernels' (bytes they move over their replay time; see
//   GpuRates) and the GEMM rate the GPU's fp32 peak x kGemmEfficiency. PowerSGD's three GEMMs
//   (P = MQ before, Q = M^T P and M ~ P Q^T after; the orthogonalisation of P after) are all
//   priced, the middle one in the decompression kernel: on one stream the sum is the same.
//   With a device profile of the GPU, the compression kernel is the profile's measured curve of the
//   method (latency + n x ns_per_element: fp16/bf16 the fp32 casts, top-k and random-k the curve of
//   the nearest density, EF-SignSGD signpack, PowerSGD the nearest rank; DGC has none) in place of
//   the rule above; decompression keeps the rule (calibrate measures no decompression).
//
// - Memory. Methods with error feedback (all but fp16/bf16) keep a 4n-byte residual per
//   gradient on each rank, and move it twice per step (read before compressing, written
//   after: 2 x 4n bytes of traffic, in the kernels above).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "costmodel/comm/collective_model.h"
#include "costmodel/comm/comm_ops.h"
#include "graph/builder.h"
#include "hw/device_rates.h"
#include "trace/event.h"

namespace dpro::comm {

enum class CompressionMethod { kNone, kFp16, kBf16, kTopK, kRandomK, kDgc, kEfSignSgd, kPowerSgd };
inline constexpr int kCompressionMethodCount = 8;
const char* to_string(CompressionMethod method);  // "none", "fp16", "bf16", "topk", "randomk", "dgc", "efsignsgd", "powersgd"
bool has_error_feedback(CompressionMethod method);

// One method with its parameter.
struct CompressionSpec {
  CompressionMethod method = CompressionMethod::kNone;
  double ratio = 0.01;  // top-k, random-k, DGC: fraction of the elements sent, in (0, 1]
  int rank = 4;         // PowerSGD: rank q of the approximation, >= 1
};

struct Compression {
  CompressionSpec all;                     // every bucket not in per_bucket
  // A method per bucket index within an iteration, in the order the trace runs them (backward
  // order: the last layers' gradients first); empty: `all` for every bucket.
  std::vector<CompressionSpec> per_bucket;
  std::string devices_dir;                 // GPU spec files ("": hw::DeviceCatalog::default_directory())
  // A device profile (hw/device_profile.h; "" none) of the GPU the kernels run on: `device` (a
  // catalog name, after a --device re-timing) or, "", the trace's. Its cast and compression curves
  // price the compression kernels (GpuRates::measured).
  std::string device_profile;
  std::string device;
};

// "fp16", "topk:0.01", "powersgd:4"; several separated by ',' are a method per bucket
// ("powersgd:4,none,fp16": buckets past the list are not compressed). A method without its
// parameter takes CompressionSpec's default. Throws OptionError("compress", text, why) for an
// unknown method, a parameter that is not a number or is out of range, or one given to a
// method that takes none.
Compression parse_compression(const std::string& text);
// Throws OptionError("compress", ...) for a ratio outside (0, 1] or a rank below 1.
void validate(const Compression& compression);

// Compression kernel constants (bytes of memory traffic per element, fixed costs).
inline constexpr Nanos kKernelOverheadNs = 5000;      // per inserted kernel node: launches and ramp (costmodel roofline's)
inline constexpr double kCastBytesPerElement = 6;      // fp32 -> 16-bit: read 4, write 2 (and back)
inline constexpr double kTopKSelectionPasses = 4;      // radix select: passes over the 4n-byte gradient
inline constexpr double kDgcPasses = 2;                // threshold from a sample, then one compaction pass
inline constexpr double kDgcSampleFraction = 0.01;     // elements DGC samples for its threshold
inline constexpr double kSignPasses = 2;               // |g| mean for the scale, then sign packing
inline constexpr double kGemmEfficiency = 0.5;         // of the fp32 peak, for PowerSGD's thin GEMMs
inline constexpr double kResidualBytesPerElement = 4;  // fp32 error-feedback residual
// Elementwise kernels that move at least this much count towards the measured bandwidth
// (smaller ones are dominated by their launch).
inline constexpr double kMinBandwidthSampleBytes = 1 << 20;
// Without a measurable elementwise kernel: the datasheet bandwidth x this, or, for a GPU the
// catalog does not know, the fallback figures (a V100's).
inline constexpr double kDatasheetBandwidthEfficiency = 0.8;
inline constexpr double kFallbackBandwidthGbs = 900;
inline constexpr double kFallbackFp32Tflops = 15.7;

// The rates the compression kernels are priced at.
struct GpuRates {
  double bandwidth_gbs = 0;         // GB/s (= bytes per ns)
  std::size_t bandwidth_kernels = 0;  // elementwise kernels it was measured on (0: datasheet or fallback)
  std::string bandwidth_source;     // "measured", "datasheet <GPU>", "fallback"
  double fp32_tflops = 0;           // peak of the GPU the trace ran on
  std::string gpu;                  // catalog name; "" when unknown
  hw::DeviceRates measured;         // a device profile's figures (none without one)
};
// From the graph's elementwise kernels at their current replay durations (after a --device
// re-timing: the target GPU's) and the catalog's spec of the trace's GPU; with `device_profile`
// ("" none), its figures for the GPU `device` (a catalog name; "": the trace's). Throws InputError
// for a malformed profile or one that does not apply (hw::require_profile_applies: `device`, else
// every GPU the traces recorded, must be the profile's).
GpuRates measure_gpu_rates(const graph::Dfg& dfg, const trace::TraceSet& traces, const std::string& devices_dir,
                           const std::string& device_profile = "", const std::string& device = "");
// The profile's curve that prices `spec`'s compression kernel on gradients of `element_bytes`-wide
// elements; nullopt without one (then the rule above prices it).
std::optional<hw::Measured<hw::KernelFit>> profiled_compression(const CompressionSpec& spec, int element_bytes,
                                                                const GpuRates& rates);

// measure_gpu_rates with what does not depend on the durations done once: the catalog read from
// disk, and each kernel op's description (whether it is a bandwidth sample, and its bytes). An
// evaluation of many plans of one graph (optimizer/incremental.h) measures each rewritten copy
// of it with one meter: a pass over the nodes, no description, no file. Immutable once made
// (threads share it).
class GpuRateMeter {
 public:
  // Reads the catalog in `devices_dir` ("": the default) and the device profile (as
  // measure_gpu_rates), and describes the kernel ops of `dfg`.
  GpuRateMeter(const graph::Dfg& dfg, const trace::TraceSet& traces, const std::string& devices_dir,
               const std::string& device_profile = "", const std::string& device = "");
  // Equal to measure_gpu_rates(dfg, traces, devices_dir) for the traces the meter was made with
  // and a graph whose op table extends the one it was made on (that graph, or a copy of it edited
  // since: an op table only grows, graph/op_table.h): ops the meter described are looked up, any
  // other (a fused op, an inserted kernel) is described anew.
  GpuRates measure(const graph::Dfg& dfg) const;

 private:
  static constexpr double kNotASample = -1;
  // The op's bytes if its kernels are bandwidth samples, else kNotASample.
  double sample_bytes(const graph::Dfg& dfg, graph::OpId op) const;
  GpuRates spec_rates_;           // gpu, fp32_tflops; bandwidth from the datasheet or fallback
  std::vector<double> op_bytes_;  // per op id of the table it was made on; NaN: not described
};

// What one method did; times summed over ranks and steps, bytes summed over ranks and steps of
// what each rank sends, residual per rank.
struct MethodStats {
  std::size_t collectives = 0;           // compressed all-reduces (buckets), all ranks
  std::int64_t wire_bytes_before = 0;
  std::int64_t wire_bytes_after = 0;
  Nanos comm_before = 0;                 // transfer time of those collectives
  Nanos comm_after = 0;
  Nanos kernel_time = 0;                 // compression + decompression kernels added
  std::int64_t residual_bytes = 0;       // error-feedback residual per rank (the largest step's)
  std::string compress_from_profile;     // the device profile's curve that priced its compression kernels ("" none)
};

struct CompressionStats {
  std::map<CompressionMethod, MethodStats> by_method;  // methods other than none that ran
  std::size_t allreduces = 0;     // gradient all-reduces (buckets) found, all ranks; 0: a no-op
  std::size_t uncompressed = 0;   // of those, left as they were (method none)
  std::size_t single_rank = 0;    // all-reduces of a one-rank group, left alone (nothing to send)
  std::size_t kernels_inserted = 0;
  GpuRates rates;
};

// One gradient bucket as the compression prices it: its summed all-reduce bytes, element width,
// group size (after a --ranks change) and current transfer time (re-timed and bucketed).
struct BucketShape {
  std::int64_t bytes = 0;
  int element_bytes = 4;
  int group = 1;
  Nanos transfer = 0;
};

// What one method costs one bucket: the collective's transfer time after it (the ratio rule
// above, so that none gives `transfer` back), the two kernels (0 for none) and memory.
struct MethodCost {
  Nanos transfer = 0;
  Nanos compress = 0;    // kernel before the collective, on its stream
  Nanos decompress = 0;  // kernel after it
  std::int64_t wire_bytes = 0;      // what one rank sends
  std::int64_t residual_bytes = 0;  // error-feedback residual per rank
};
// The pricing compress_allreduces applies; the optimizer's planner calls the same function.
MethodCost price_method(const CompressionSpec& spec, const BucketShape& bucket, const CollectiveModel& target,
                        const GpuRates& rates);

// A gradient bucket of one rank: the all-reduces fused into it (the carrier, last, holds its
// time), the step it belongs to and its position there (0: the first the trace runs).
struct GradientBucket {
  std::size_t rank_index = 0;  // into TraceSet::ranks
  int iteration = -1;          // trace::iteration_index_at of the carrier (-1: outside every step)
  std::size_t position = 0;
  std::vector<graph::NodeId> members;  // in stream order; members.back() is the carrier
  BucketShape shape;
};
// The world-group gradient buckets of `ops` (sized), per rank in order. `bucket_end` and `ranks`
// as for compress_allreduces. Node ids are those of the graph `ops` was found in.
std::vector<GradientBucket> gradient_buckets(const graph::Dfg& dfg, const std::vector<CommOp>& ops,
                                             const trace::TraceSet& traces, const std::vector<std::size_t>* bucket_end,
                                             std::optional<int> ranks);

// The buckets of a replayed graph with what is needed to price any method on them: what a
// planner reads instead of re-deriving the model (whatif::CommRetime::price_buckets).
struct BucketPricing {
  std::vector<GradientBucket> buckets;
  CollectiveModel target;
  GpuRates rates;
  MethodCost price(const CompressionSpec& spec, const GradientBucket& b) const {
    return price_method(spec, b.shape, target, rates);
  }
};

// Compresses the all-reduces of `ops` (sized, re-timed) in `built`. `bucket_end`: the buckets
// fuse_allreduce_buckets made (exclusive ends into each rank's sized all-reduces; the last
// member carries the bucket's time), or nullptr for one bucket per all-reduce. `ranks` as in
// retime_collectives. Only inserts nodes and edges: every id of `ops` stays valid.
// `meter`: one made for compression.devices_dir on a graph `built` is a copy of (the rates then
// cost a pass over the nodes), or null to measure them here; the result is the same.
CompressionStats compress_allreduces(graph::BuiltGraph& built, std::vector<CommOp>& ops, const trace::TraceSet& traces,
                                     const CollectiveModel& target, const Compression& compression,
                                     const std::vector<std::size_t>* bucket_end, std::optional<int> ranks,
                                     const GpuRateMeter* meter = nullptr);

}  // namespace dpro::comm
