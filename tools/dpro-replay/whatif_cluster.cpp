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
    replay.add_option("--ranks", ranks_,
                      "Data-parallel scale-out/in: replay the job on N ranks (1 to 2^20). Below the trace's ranks,\n"
                      "the what-if (its rows, job row, JSON and --timeline) is the job of the first N ranks");
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
    // The bound a trace's own ranks and groups have (comm_ops.h): a larger job is a typo.
    if (ranks_ && (*ranks_ < 1 || *ranks_ > comm::kMaxGroupSize))
      throw InputError("", "--ranks", "must be from 1 to 2^20 (1048576) ranks, got " + std::to_string(*ranks_));
    if (bucket_mb_ && !(*bucket_mb_ * kBytesPerMb >= 1 && *bucket_mb_ <= kMaxBucketMb))
      throw InputError("", "--bucket-mb " + fmt::format("{:g}", *bucket_mb_),
                       "must be from 1 byte (1/1048576 MB) to 1048576 MB (1 TiB)");
    if (!dfg.finalized()) dfg.finalize();
    std::vector<comm::CommOp> ops = comm::find_comm_ops(dfg, traces);
    const auto catalog = comm::ClusterCatalog::load_directory(clusters_dir_);
    const comm::ClusterSpec* guessed = origin_name_.empty() ? catalog.guess(traces) : nullptr;
    const comm::ClusterSpec* origin =
        origin_name_.empty() ? guessed : &catalog.get(origin_name_, "--origin-cluster");
    std::optional<comm::ClusterSpec> target;
    if (!target_name_.empty()) target = catalog.get(target_name_);
    else if (origin) target = *origin;
    // Without NCCL ops a cluster would only re-time nothing: an unknown one is no error then.
    if (!origin && !ops.empty()) throw unknown_origin(traces, catalog);
    comm::ClusterSpec checked;  // --set values are checked even where no cluster takes them
    for (const std::string& s : settings_) comm::apply_setting(target ? *target : checked, s);
    if (!origin && target) origin = &*target;  // nothing to re-time: the origin is immaterial
    std::optional<comm::Placement> placement;  // throws for ranks that do not fill whole nodes
    if (ranks_ && target) placement = comm::place(*target, *ranks_);

    const Retimed r = origin ? retime(dfg, ops, traces, *origin, *target) : Retimed{};
    std::string text;
    if (!origin)
      text = "communication what-if: cluster unknown (no cluster file names the trace's GPUs; the trace has no NCCL "
             "ops to re-time, so none is needed).";
    else
      text = fmt::format("communication what-if: cluster {}{} -> {}", origin->name,
                         guessed                ? " (guessed from the trace's GPUs)"
                         : origin_name_.empty() ? " (not known from the trace's GPUs; immaterial without NCCL ops)"
                                                : "",
                         target->name);
    for (const std::string& s : settings_) text += " with " + s;
    if (origin) text += describe_retiming(r);
    // Scale-in: the report, the what-if table, its JSON and the timeline are then the N-rank job's.
    if (ranks_ && *ranks_ < static_cast<int>(traces.ranks.size())) built = comm::scale_in(built, traces, *ranks_);
    if (ranks_) text += describe_ranks(traces, placement, r.retimed.resized_groups, built.dfg.node_count());
    if (ops.empty()) text += warn_no_collectives(traces, log);
    summary_ = text;
    log.info(summary_);
    details_ = to_json(r, origin, target ? &*target : nullptr, guessed != nullptr, traces, placement);
  }

  std::string summary() const override { return summary_; }
  const char* key() const override { return "communication"; }
  nlohmann::json details() const override { return details_; }

 private:
  // 1 TiB: above any model's gradients, and MB x 2^20 stays far within the byte counts' int64.
  static constexpr double kMaxBucketMb = 1024.0 * 1024.0;
  static constexpr double kBytesPerMb = 1024.0 * 1024.0;

  struct Retimed {
    comm::CalibrationFit fit;
    comm::RetimeStats retimed;
    std::optional<comm::BucketStats> buckets;
    std::size_t samples = 0, from_trace = 0, from_et = 0, inferred = 0;
  };

  InputError unknown_origin(const trace::TraceSet& traces, const comm::ClusterCatalog& catalog) const {
    std::string gpus;
    for (const auto& r : traces.ranks)
      for (const auto& d : r.devices)
        if (!d.name.empty()) gpus = d.name;
    return InputError(traces.ranks.empty() ? "" : traces.ranks.front().file, "--origin-cluster",
                      "cannot tell which cluster the trace ran on (" +
                          (gpus.empty() ? std::string("it records no GPU model") : "GPU '" + gpus + "'") +
                          "); name one with --origin-cluster: " + catalog.known_names());
  }

  // Sizes the NCCL ops, calibrates the model on them and re-times them (and fuses buckets).
  Retimed retime(graph::Dfg& dfg, std::vector<comm::CommOp>& ops, const trace::TraceSet& traces,
                 const comm::ClusterSpec& origin, const comm::ClusterSpec& target) const {
    Retimed r;
    if (!comm_sizes_.empty())
      r.from_et = comm::attach_host_et_sizes(ops, traces, comm::expand_host_et_paths(comm_sizes_));
    const auto samples = comm::make_samples(ops, origin);
    r.samples = samples.size();
    r.fit = comm::fit_calibration_detailed(origin, samples);
    const comm::CollectiveModel origin_model(origin, r.fit.calibration), target_model(target, r.fit.calibration);
    for (const auto& op : ops) r.from_trace += op.size_source == comm::SizeSource::kTrace;
    r.inferred = comm::infer_sizes(ops, origin_model, origin);
    r.retimed = comm::retime_collectives(dfg, ops, origin_model, target_model, ranks_);
    if (bucket_mb_)
      r.buckets = comm::fuse_allreduce_buckets(dfg, ops, traces, target_model,
                                               static_cast<std::int64_t>(*bucket_mb_ * kBytesPerMb), ranks_);
    return r;
  }

  std::string describe_retiming(const Retimed& r) const {
    std::string text = fmt::format(
        ". {} NCCL ops re-timed ({} sized by the trace, {} by host execution traces, {} inferred from their transfer "
        "time). Model calibrated on {} samples ({}, {}):{}. Transfer time summed over the trace's ranks {} -> {}.",
        r.retimed.ops, r.from_trace, r.from_et, r.inferred, r.samples, comm::to_string(comm::FitOptions{}.method),
        comm::to_string(comm::FitOptions{}.grouping), describe(r.fit), format_duration(r.retimed.before),
        format_duration(r.retimed.after));
    if (r.buckets)
      text += fmt::format(" Gradient buckets of {} MB: {} all-reduces per rank -> {}, all-reduce time {} -> {}.",
                          *bucket_mb_, r.buckets->allreduces, count_of(r.buckets->buckets, "bucket"),
                          format_duration(r.buckets->before), format_duration(r.buckets->after));
    return text;
  }

  // "0..7", or "0, 3, 5" for a partial set.
  static std::string rank_numbers(const trace::TraceSet& traces) {
    bool contiguous = true;
    for (std::size_t i = 1; i < traces.ranks.size(); ++i)
      contiguous &= traces.ranks[i].rank == traces.ranks[i - 1].rank + 1;
    if (traces.ranks.size() == 1) return std::to_string(traces.ranks.front().rank);
    if (contiguous) return fmt::format("{}..{}", traces.ranks.front().rank, traces.ranks.back().rank);
    std::string list;
    for (const auto& r : traces.ranks) list += (list.empty() ? "" : ", ") + std::to_string(r.rank);
    return list;
  }

  // `nodes`: of the replayed graph (for N < W, that of the first N ranks).
  std::string describe_ranks(const trace::TraceSet& traces, const std::optional<comm::Placement>& placement,
                             std::size_t resized_groups, std::size_t nodes) const {
    const int world = comm::world_size(traces);
    const int w = static_cast<int>(traces.ranks.size());
    std::string text = fmt::format(" Ranks {} -> {}", world, *ranks_);
    if (placement) text += fmt::format(" ({} node(s) x {})", placement->nodes, placement->ranks_per_node);
    text += fmt::format("; {} group(s) resized.", resized_groups);
    if (*ranks_ < w) {
      const int first_dropped = traces.ranks[*ranks_].rank, last = traces.ranks.back().rank;
      const std::string dropped = first_dropped == last ? fmt::format("Trace rank {} is", last)
                                                        : fmt::format("Trace ranks {}..{} are", first_dropped, last);
      return text + fmt::format(" {} not part of the {}-rank job: the what-if replays the graph of the first {} ({} "
                                "ops), and its rows and job row are the {}-rank job.",
                                dropped, *ranks_, *ranks_, nodes, *ranks_);
    }
    if (w < world)  // --allow-partial: the absent ranks are not known to behave as the present ones
      return text + fmt::format(" The trace has {} of the job's {} ranks ({}): the missing ranks are stood in for by "
                                "the present ones (rank g runs what the (g mod {})-th present rank ran), so the job row assumes they "
                                "behave alike; not exact.",
                                w, world, rank_numbers(traces), w);
    return text + fmt::format(" Trace rank{} {} stand{} for all {} (rank g runs trace rank g mod {}): the job row is "
                              "the {}-rank job, exact by symmetry.", w == 1 ? "" : "s", rank_numbers(traces),
                              w == 1 ? "s" : "", *ranks_, w, *ranks_);
  }

  std::string warn_no_collectives(const trace::TraceSet& traces, Logger& log) const {
    const int world = comm::world_size(traces);
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
    log.warn(warning);
    return " Warning: " + warning + ".";
  }

  nlohmann::json to_json(const Retimed& r, const comm::ClusterSpec* origin, const comm::ClusterSpec* target,
                         bool guessed, const trace::TraceSet& traces, const std::optional<comm::Placement>& placement) const {
    using nlohmann::json;
    const comm::Calibration& cal = r.fit.calibration;
    json j = {{"origin_cluster", origin ? json(origin->name) : json(nullptr)},
              {"origin_guessed", guessed},
              {"target_cluster", target ? json(target->name) : json(nullptr)},
              {"settings", settings_},
              {"ops_retimed", r.retimed.ops},
              {"sized_by_trace", r.from_trace},
              {"sized_by_host_et", r.from_et},
              {"sizes_inferred", r.inferred},
              {"transfer_before_ns", r.retimed.before},
              {"transfer_after_ns", r.retimed.after}};
    j["calibration"] = {{"samples", r.samples},
                        {"method", comm::to_string(comm::FitOptions{}.method)},
                        {"grouping", comm::to_string(comm::FitOptions{}.grouping)}};
    for (int i = 0; i < comm::kCollectiveOpCount; ++i) {
      const auto op = static_cast<comm::CollectiveOp>(i);
      j["calibration"]["operations"][comm::to_string(op)] = {{"latency_scale", cal.of(op).latency},
                                                             {"byte_time_scale", cal.of(op).byte_time},
                                                             {"samples", r.fit.samples[i]},
                                                             {"from", comm::to_string(r.fit.source[i])}};
    }
    if (r.buckets)
      j["buckets"] = {{"bucket_mb", *bucket_mb_}, {"allreduces_per_rank", r.buckets->allreduces},
                      {"buckets_per_rank", r.buckets->buckets}, {"allreduce_before_ns", r.buckets->before},
                      {"allreduce_after_ns", r.buckets->after}};
    if (ranks_) {
      const int w = static_cast<int>(traces.ranks.size());
      const int world = comm::world_size(traces);
      j["ranks"] = {{"from", world},
                    {"to", *ranks_},
                    {"nodes", placement ? json(placement->nodes) : json(nullptr)},
                    {"ranks_per_node", placement ? json(placement->ranks_per_node) : json(nullptr)},
                    {"groups_resized", r.retimed.resized_groups},
                    // Scale-in: whatif.iterations are the N-rank job's, from the graph of ranks 0..N-1.
                    {"scaled_in", *ranks_ < w},
                    {"exact_by_symmetry", *ranks_ >= w && w == world},
                    {"missing_ranks_stood_in", *ranks_ >= w && w < world}};
    }
    return j;
  }

  std::string target_name_, origin_name_, clusters_dir_, summary_;
  nlohmann::json details_;
  std::vector<std::string> settings_, comm_sizes_;
  std::optional<int> ranks_;
  std::optional<double> bucket_mb_;
};

}  // namespace

std::unique_ptr<WhatIfOption> make_cluster_whatif() { return std::make_unique<ClusterWhatIf>(); }

}  // namespace dpro::cli
