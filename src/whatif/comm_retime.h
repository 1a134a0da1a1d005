#pragma once
// Communication re-timing: the NCCL ops of a workload sized (from the trace, host execution
// traces, or inferred from their transfer time), a collective model calibrated on them for the
// cluster the trace ran on, and each op re-timed for a target cluster (comm::retime_collectives);
// optionally gradient buckets (consecutive all-reduces fused, comm::fuse_allreduce_buckets) and a
// data-parallel job of another size (groups resized; below the trace's ranks the workload becomes
// the graph of the first N ranks, comm::scale_in); optionally gradient compression of the
// data-parallel all-reduces after re-timing and bucketing (comm::compress_allreduces).
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "costmodel/comm/calibration.h"
#include "hw/cluster.h"
#include "whatif/comm/compress.h"
#include "whatif/comm/retime.h"
#include "whatif/workload.h"

namespace dpro::whatif {

// What comm_retime reads that no edit of the workload changes, made once: the catalog of
// clusters_dir and the GPU-rate meter (comm::GpuRateMeter) of a base workload. An evaluation of
// many plans (optimizer/incremental.h) makes one for the job it rewrites and hands it to the
// communication rewrite of every plan, whose workload is a rewritten copy of that job.
// Immutable once made: threads share it.
struct CommRetimeCache {
  // Reads the catalog in `clusters_dir` (InputError for a bad file) and the GPU spec files in
  // `devices_dir` ("": the default), and describes `base`'s kernel ops.
  // With a device profile of GPU `device` (comm::GpuRateMeter's), used only by rewrites that name
  // the same profile and GPU.
  CommRetimeCache(const Workload& base, std::string clusters_dir, std::string devices_dir, std::string device_profile = "",
                  std::string device = "");
  std::string clusters_dir;
  std::string devices_dir;
  std::string device_profile, device;
  comm::ClusterCatalog clusters;
  comm::GpuRateMeter rates;  // for graphs whose op table extends `base`'s

  // The calibration fit of `samples` on `origin`, which must be a spec of `clusters` (holds()):
  // comm::fit_calibration_detailed's, memoised. Rewrites other than communication's leave the
  // NCCL ops, and so the samples, as they were, so the plans of a search fit the same samples
  // again and again (the fit was 5 % of an incremental evaluation on DLRM). A memo entry serves
  // only samples equal to its own in every field the fit reads (each one's call and time, in
  // order), so the fit returned is the one computed.
  // Thread-safe.
  comm::CalibrationFit fit(const comm::ClusterSpec& origin, const std::vector<comm::CommSample>& samples) const;
  bool holds(const comm::ClusterSpec* spec) const;  // a spec of `clusters` (by address)

 private:
  struct Fitted {
    const comm::ClusterSpec* origin;
    std::vector<comm::CommSample> samples;
    comm::CalibrationFit fit;
  };
  static constexpr std::size_t kFitsKept = 4;
  mutable std::mutex fits_mutex_;
  mutable std::deque<Fitted> fits_;  // the last kFitsKept fits made, oldest first
};

struct CommRetime {
  std::string cluster;                // target cluster name ("": the origin, changed by `settings`)
  std::string origin_cluster;         // cluster the trace ran on ("": guessed from its GPUs)
  std::string clusters_dir;           // directory of cluster files
  std::vector<std::string> settings;  // "key=value" changes of the target (comm::apply_setting)
  std::vector<std::string> comm_sizes;  // host execution traces giving message sizes (files or a directory)
  std::optional<int> ranks;           // data-parallel job size, 1 to comm::kMaxGroupSize
  std::optional<double> bucket_mb;    // gradient bucket size in MiB
  // Gradient buckets by partition: the positions within a step (its all-reduces in backward
  // order, 0 first) where a bucket begins (comm::BucketLayout::boundaries); with bucket_mb, a
  // boundary only where both place one.
  std::optional<std::vector<std::size_t>> bucket_boundaries;
  std::optional<comm::Compression> compression;  // of the gradient all-reduces (buckets)
  // Also hand out the gradient buckets with the model that prices compression on them
  // (CommChange::bucket_pricing; the optimizer's per-bucket planner). Needs no `compression`:
  // the node ids are those of the uncompressed graph.
  bool price_buckets = false;
  std::string devices_dir;  // GPU spec files the pricing's kernel rates come from ("": the default)
  // For price_buckets: a device profile of the GPU `device` ("": the trace's) whose curves price
  // the compression kernels (comm::Compression's fields of the same names; "" none).
  std::string device_profile;
  std::string device;
  // Made on a workload this one is a rewritten copy of (or this one), with the same traces; its
  // catalog is used when its clusters_dir is this one's, its meter when its devices_dir is the
  // one the rates are measured with. Null: both are read here. The results are equal either way.
  std::shared_ptr<const CommRetimeCache> cache;
};

// 1 TiB: above any model's gradients, and MB x 2^20 stays far within the byte counts' int64.
inline constexpr double kMaxBucketMb = 1024.0 * 1024.0;
inline constexpr double kBytesPerMb = 1024.0 * 1024.0;

struct CommChange {
  CommRetime options;                 // as given
  std::optional<std::string> origin;  // cluster name; none: unknown and not needed (no NCCL ops)
  bool origin_guessed = false;        // from the trace's GPUs
  std::optional<std::string> target;
  comm::CalibrationFit fit;
  comm::RetimeStats retimed;
  std::optional<comm::BucketStats> buckets;
  // With options.compression; allreduces == 0 when the trace has none (a no-op, not an error).
  std::optional<comm::CompressionStats> compression;
  // With options.price_buckets, when the trace has NCCL ops and the graph was not scaled in.
  std::optional<comm::BucketPricing> bucket_pricing;
  std::size_t samples = 0, sized_by_trace = 0, sized_by_host_et = 0, sizes_inferred = 0;
  std::size_t alltoalls_inferred = 0;  // of sizes_inferred: all-to-alls (their group, not their size, sets their time at scale)
  // Unmatched ops (peers outside the trace) whose measured time was split into the transfer the
  // model prices and the wait for those peers (kept as it was: comm::split_peer_waiting).
  std::size_t peer_waiting_ops = 0;
  Nanos peer_waiting = 0;
  std::size_t nccl_ops = 0;
  // With options.ranks: where the ranks sit, the job's size before, the ranks the trace holds, and
  // the ops of the replayed graph (Dfg::op_count; for a scale-in, that of the first N ranks).
  std::optional<comm::Placement> placement;
  int world = 0;
  std::vector<int> trace_ranks;
  bool scaled_in = false;
  std::size_t nodes = 0;
};

// Re-times the workload's NCCL ops in place (and, for a scale-in, replaces its graph). Throws
// OptionError ("ranks", "bucket_mb", "partition", "origin_cluster", "cluster", "set", "comm_sizes", "compress") for a
// bad option, InputError for bad cluster or host execution trace files.
CommChange comm_retime(Workload& workload, const CommRetime& options);

}  // namespace dpro::whatif
