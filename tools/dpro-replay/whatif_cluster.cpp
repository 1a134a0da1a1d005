#include "whatif_cluster.h"

#include <fmt/format.h>

#include <optional>

#include "core/error.h"
#include "core/strings.h"
#include "graph/builder.h"
#include "replayer/comm/calibration.h"
#include "replayer/comm/cluster.h"
#include "replayer/comm/comm_ops.h"
#include "replayer/comm/retime.h"
#include "replayer/comm/scale_out.h"

namespace dpro::cli {

namespace {

// " allreduce latency x1.27, byte time x1.21 (16 samples); ..." for the fitted operations,
// then what the others take.
std::string describe(const comm::CalibrationFit& fit) {
  std::string text, others;
  for (int i = 0; i < comm::kCollectiveOpCount; ++i) {
    const auto op = static_cast<comm::CollectiveOp>(i);
    const comm::Scales& s = fit.calibration.of(op);
    if (fit.source[i] == comm::ScaleSource::kOperation)
      text += fmt::format("{} {} latency x{:.2f}, byte time x{:.2f} ({} samples)", text.empty() ? "" : ";",
                          comm::to_string(op), s.latency, s.byte_time, fit.samples[i]);
  }
  bool fallback = false;
  for (int i = 0; i < comm::kCollectiveOpCount; ++i) fallback |= fit.source[i] != comm::ScaleSource::kOperation;
  if (text.empty()) {
    const comm::Scales& c = fit.calibration.of(comm::CollectiveOp::kAllReduce);
    const comm::Scales& p = fit.calibration.of(comm::CollectiveOp::kAllToAll);
    return fmt::format(" latency x{:.2f} / x{:.2f}, byte time x{:.2f} / x{:.2f} (collectives / point-to-point)",
                       c.latency, p.latency, c.byte_time, p.byte_time);
  }
  if (fallback) text += "; other operations take the scales of their family (reductions/gathers or point-to-point)";
  return text;
}

class ClusterWhatIf : public WhatIfOption {
 public:
  void add_options(CLI::App& replay) override {
    replay.add_option("--cluster", target_name_, "Re-time NCCL ops for this cluster (a name in --clusters-dir)");
    replay.add_option("--origin-cluster", origin_name_, "Cluster the trace was recorded on (default: guessed from its GPUs)");
    replay.add_option("--clusters-dir", clusters_dir_, "Directory of cluster JSON files")
        ->default_val(comm::ClusterCatalog::default_directory());
    replay.add_option("--set", settings_,
                      "Change the target cluster: network.inter_node_gbps, network.intra_node_gbps (GB/s per GPU "
                      "per direction), network.inter_node_latency_us, network.intra_node_latency_us, "
                      "cluster.gpus_per_node (repeatable)")
        ->allow_extra_args(false);
    replay.add_option("--ranks", ranks_, "Data-parallel scale-out/in: replay the job on N ranks (1 to 2^20)");
    replay.add_option("--bucket-mb", bucket_mb_, "Fuse consecutive all-reduces into gradient buckets of at most X MB");
    replay.add_option("--comm-sizes", comm_sizes_,
                      "Host execution traces giving NCCL message sizes: a directory, or one file per rank (repeatable)")
        ->allow_extra_args(false);
  }

  bool enabled() const override {
    return !target_name_.empty() || !settings_.empty() || ranks_.has_value() || bucket_mb_.has_value();
  }

  void apply(graph::BuiltGraph& built, const trace::TraceSet& traces, Logger& log) override {
    graph::Dfg& dfg = built.dfg;
    const auto catalog = comm::ClusterCatalog::load_directory(clusters_dir_);
    const comm::ClusterSpec* origin = origin_name_.empty() ? catalog.guess(traces) : &catalog.get(origin_name_);
    if (!origin) {
      std::string gpus;
      for (const auto& r : traces.ranks)
        for (const auto& d : r.devices)
          if (!d.name.empty()) gpus = d.name;
      throw InputError(traces.ranks.empty() ? "" : traces.ranks.front().file, "--origin-cluster",
                       "cannot tell which cluster the trace ran on (" +
                           (gpus.empty() ? std::string("it records no GPU model") : "GPU '" + gpus + "'") +
                           "); name one with --origin-cluster: " + catalog.known_names());
    }
    comm::ClusterSpec target = target_name_.empty() ? *origin : catalog.get(target_name_);
    for (const std::string& s : settings_) comm::apply_setting(target, s);
    const int world = comm::world_size(traces);
    std::optional<comm::Placement> placement;  // throws for ranks that do not fill whole nodes
    // The bound a trace's own ranks and groups have (comm_ops.h): a larger job is a typo.
    if (ranks_ && (*ranks_ < 1 || *ranks_ > comm::kMaxGroupSize))
      throw InputError("", "--ranks", "must be from 1 to 2^20 (1048576) ranks, got " + std::to_string(*ranks_));
    if (ranks_) placement = comm::place(target, *ranks_);
    if (bucket_mb_ && !(*bucket_mb_ > 0)) throw InputError("", "--bucket-mb", "must be positive");

    if (!dfg.finalized()) dfg.finalize();
    std::vector<comm::CommOp> ops = comm::find_comm_ops(dfg, traces);
    std::size_t from_et = 0;
    if (!comm_sizes_.empty())
      from_et = comm::attach_host_et_sizes(ops, traces, comm::expand_host_et_paths(comm_sizes_));
    const auto samples = comm::make_samples(ops, *origin);
    const comm::CalibrationFit fit = comm::fit_calibration_detailed(*origin, samples);
    const comm::Calibration& cal = fit.calibration;
    const comm::CollectiveModel origin_model(*origin, cal), target_model(target, cal);
    std::size_t from_trace = 0;
    for (const auto& op : ops) from_trace += op.size_source == comm::SizeSource::kTrace;
    const std::size_t inferred = comm::infer_sizes(ops, origin_model, *origin);
    const comm::RetimeStats retimed = comm::retime_collectives(dfg, ops, origin_model, target_model, ranks_);
    std::optional<comm::BucketStats> buckets;
    if (bucket_mb_)
      buckets = comm::fuse_allreduce_buckets(dfg, ops, traces, target_model,
                                             static_cast<std::int64_t>(*bucket_mb_ * 1024 * 1024), ranks_);

    std::string text = fmt::format("communication what-if: cluster {}{} -> {}", origin->name,
                                   origin_name_.empty() ? " (guessed from the trace's GPUs)" : "", target.name);
    for (const std::string& s : settings_) text += " with " + s;
    text += fmt::format(
        ". {} NCCL ops re-timed ({} sized by the trace, {} by host execution traces, {} inferred from their transfer "
        "time). Model calibrated on {} samples ({}, {}):{}. Transfer time summed over ranks {} -> {}.",
        retimed.ops, from_trace, from_et, inferred, samples.size(), comm::to_string(comm::FitOptions{}.method),
        comm::to_string(comm::FitOptions{}.grouping), describe(fit), format_duration(retimed.before),
        format_duration(retimed.after));
    if (buckets)
      text += fmt::format(" Gradient buckets of {} MB: {} all-reduces per rank -> {}, all-reduce time {} -> {}.",
                          *bucket_mb_, buckets->allreduces, count_of(buckets->buckets, "bucket"),
                          format_duration(buckets->before), format_duration(buckets->after));
    nlohmann::json scaled_in_jobs = nlohmann::json::array();
    if (ranks_) {
      const comm::Placement& p = *placement;
      const int w = static_cast<int>(traces.ranks.size());
      text += fmt::format(" Ranks {} -> {} ({} node(s) x {}); {} group(s) resized.", world, *ranks_, p.nodes,
                          p.ranks_per_node, retimed.resized_groups);
      if (*ranks_ >= w) {
        text += fmt::format(" Trace ranks 0..{} stand for all {} (rank g runs trace rank g mod {}): the job row is "
                            "the {}-rank job, exact by symmetry.", w - 1, *ranks_, w, *ranks_);
      } else {
        const comm::ScaleOutResult r = comm::simulate_scaled_job(traces, built.ranks, dfg, *ranks_, true);
        text += fmt::format(" Ranks {}..{} are not part of the {}-rank job; from its expanded graph ({} ops):", *ranks_,
                            w - 1, *ranks_, r.nodes);
        for (const auto& it : r.iterations) {
          if (it.whole_trace) {
            text += fmt::format(" whole trace job {};", format_duration(it.job_predicted_ns));
            scaled_in_jobs.push_back({{"iteration", nullptr}, {"whole_trace", true}, {"job_predicted_ns", it.job_predicted_ns}});
          } else {
            text += fmt::format(" ProfilerStep#{} job {};", it.number, format_duration(it.job_predicted_ns));
            scaled_in_jobs.push_back({{"iteration", it.number}, {"job_predicted_ns", it.job_predicted_ns}});
          }
        }
      }
    }
    if (ops.empty()) {
      // Said, not left to be inferred from "0 NCCL ops": a one-rank trace scaled out predicts a
      // job that never communicates.
      std::string warning = "the trace has no NCCL collectives, so the cluster and network change nothing";
      if (ranks_ && *ranks_ > world && world == 1)
        warning += fmt::format(", and the {}-rank job is predicted as {} copies of this one that never communicate: a "
                               "data-parallel job would all-reduce its gradients, which a trace without collectives "
                               "does not show (record the job on at least 2 ranks)", *ranks_, *ranks_);
      else if (ranks_ && *ranks_ > world)
        // A multi-rank job without NCCL ops talked through another backend (gloo runs its
        // collectives on the CPU, where the trace records none): its time stays as recorded.
        warning += fmt::format(", and the {}-rank job is predicted as copies of these {} ranks: their communication "
                               "did not go through NCCL (gloo, for one, runs on the CPU and leaves no collective in "
                               "the trace), so whatever time it took stays as recorded and does not grow with the "
                               "ranks", *ranks_, world);
      text += " Warning: " + warning + ".";
      log.warn(warning);
    }
    summary_ = text;
    log.info(summary_);

    nlohmann::json& j = details_;
    j = {{"origin_cluster", origin->name},
         {"origin_guessed", origin_name_.empty()},
         {"target_cluster", target.name},
         {"settings", settings_},
         {"ops_retimed", retimed.ops},
         {"sized_by_trace", from_trace},
         {"sized_by_host_et", from_et},
         {"sizes_inferred", inferred},
         {"transfer_before_ns", retimed.before},
         {"transfer_after_ns", retimed.after}};
    j["calibration"] = {{"samples", samples.size()},
                        {"method", comm::to_string(comm::FitOptions{}.method)},
                        {"grouping", comm::to_string(comm::FitOptions{}.grouping)}};
    for (int i = 0; i < comm::kCollectiveOpCount; ++i) {
      const auto op = static_cast<comm::CollectiveOp>(i);
      j["calibration"]["operations"][comm::to_string(op)] = {{"latency_scale", cal.of(op).latency},
                                                             {"byte_time_scale", cal.of(op).byte_time},
                                                             {"samples", fit.samples[i]},
                                                             {"from", comm::to_string(fit.source[i])}};
    }
    if (buckets)
      j["buckets"] = {{"bucket_mb", *bucket_mb_}, {"allreduces_per_rank", buckets->allreduces},
                      {"buckets_per_rank", buckets->buckets}, {"allreduce_before_ns", buckets->before},
                      {"allreduce_after_ns", buckets->after}};
    if (ranks_)
      j["ranks"] = {{"from", world}, {"to", *ranks_}, {"nodes", placement->nodes},
                    {"ranks_per_node", placement->ranks_per_node}, {"groups_resized", retimed.resized_groups},
                    {"exact_by_symmetry", *ranks_ >= static_cast<int>(traces.ranks.size())}};
    // Scale-in: the job of the first N ranks, from the expanded graph (the report's rows are the trace's ranks).
    if (ranks_ && !scaled_in_jobs.empty()) j["ranks"]["scaled_in_jobs"] = scaled_in_jobs;
  }

  std::string summary() const override { return summary_; }
  const char* key() const override { return "communication"; }
  nlohmann::json details() const override { return details_; }

 private:
  std::string target_name_, origin_name_, clusters_dir_, summary_;
  nlohmann::json details_;
  std::vector<std::string> settings_, comm_sizes_;
  std::optional<int> ranks_;
  std::optional<double> bucket_mb_;
};

}  // namespace

std::unique_ptr<WhatIfOption> make_cluster_whatif() { return std::make_unique<ClusterWhatIf>(); }

}  // namespace dpro::cli
