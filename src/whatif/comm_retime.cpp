#include "whatif/comm_retime.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.h"
#include "costmodel/comm/comm_ops.h"
#include "whatif/comm/scale_out.h"

namespace dpro::whatif {

namespace {

OptionError unknown_origin(const trace::TraceSet& traces, const comm::ClusterCatalog& catalog) {
  std::string gpus;
  for (const auto& r : traces.ranks)
    for (const auto& d : r.devices)
      if (!d.name.empty()) gpus = d.name;
  return OptionError("origin_cluster", "",
                     "cannot tell which cluster the trace ran on (" +
                         (gpus.empty() ? std::string("it records no GPU model") : "GPU '" + gpus + "'") +
                         "); name one with --origin-cluster: " + catalog.known_names(),
                     traces.ranks.empty() ? "" : traces.ranks.front().file);
}

const comm::GpuRateMeter* meter_for(const CommRetime& options, const std::string& devices_dir,
                                    const std::string& device_profile, const std::string& device) {
  const auto& c = options.cache;
  return c && c->devices_dir == devices_dir && c->device_profile == device_profile && c->device == device ? &c->rates
                                                                                                          : nullptr;
}

// Whether two sample lists are the same to comm::fit_calibration_detailed, which reads each
// sample's call and time, in order, and nothing else (not the instance ids: they are node ids,
// which other rewrites renumber).
bool same_to_fit(const std::vector<comm::CommSample>& a, const std::vector<comm::CommSample>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const comm::CommSample& x, const comm::CommSample& y) {
    const comm::Placement &p = x.call.placement, &q = y.call.placement;
    return x.call.op == y.call.op && x.call.bytes == y.call.bytes && p.ranks == q.ranks && p.nodes == q.nodes &&
           p.ranks_per_node == q.ranks_per_node && x.time_us == y.time_us;
  });
}

// The fit of the samples on `origin`: the cache's memo where `origin` is a spec of its catalog.
comm::CalibrationFit fit_of(const CommRetime& options, const comm::ClusterSpec& origin,
                            const std::vector<comm::CommSample>& samples) {
  if (options.cache && options.cache->holds(&origin)) return options.cache->fit(origin, samples);
  return comm::fit_calibration_detailed(origin, samples);
}

// Sizes the NCCL ops, calibrates the model on them and re-times them (and fuses buckets).
void retime(graph::BuiltGraph& built, std::vector<comm::CommOp>& ops, const trace::TraceSet& traces,
            const comm::ClusterSpec& origin, const comm::ClusterSpec& target, const CommRetime& options,
            CommChange& change) {
  graph::Dfg& dfg = built.dfg;
  if (!options.comm_sizes.empty())
    change.sized_by_host_et = comm::attach_host_et_sizes(ops, traces, trace::expand_host_et_paths(options.comm_sizes));
  const auto samples = comm::make_samples(ops, origin);
  change.samples = samples.size();
  change.fit = fit_of(options, origin, samples);
  const comm::CollectiveModel origin_model(origin, change.fit.calibration), target_model(target, change.fit.calibration);
  for (const auto& op : ops) change.sized_by_trace += op.size_source == comm::SizeSource::kTrace;
  change.peer_waiting_ops = comm::split_peer_waiting(ops, origin_model, &change.peer_waiting);
  change.sizes_inferred = comm::infer_sizes(ops, origin_model, origin);
  for (const auto& op : ops)
    change.alltoalls_inferred += op.size_source == comm::SizeSource::kInferred && op.op == comm::CollectiveOp::kAllToAll;
  change.retimed = comm::retime_collectives(dfg, ops, origin_model, target_model, options.ranks);
  if (options.bucket_mb || options.bucket_boundaries) {
    comm::BucketLayout layout;
    if (options.bucket_mb) layout.max_bytes = static_cast<std::int64_t>(*options.bucket_mb * kBytesPerMb);
    layout.boundaries = options.bucket_boundaries;
    change.buckets = comm::fuse_allreduce_buckets(dfg, ops, traces, target_model, layout, options.ranks);
  }
  if (options.price_buckets)
    change.bucket_pricing = comm::BucketPricing{
        comm::gradient_buckets(dfg, ops, traces, change.buckets ? &change.buckets->bucket_end : nullptr, options.ranks),
        target_model,
        meter_for(options, options.devices_dir, options.device_profile, options.device)
            ? meter_for(options, options.devices_dir, options.device_profile, options.device)->measure(dfg)
            : comm::measure_gpu_rates(dfg, traces, options.devices_dir, options.device_profile, options.device)};
  if (options.compression)
    change.compression = comm::compress_allreduces(built, ops, traces, target_model, *options.compression,
                                                   change.buckets ? &change.buckets->bucket_end : nullptr,
                                                   options.ranks,
                                                   meter_for(options, options.compression->devices_dir,
                                                             options.compression->device_profile, options.compression->device));
}

}  // namespace

CommRetimeCache::CommRetimeCache(const Workload& base, std::string clusters, std::string devices, std::string profile,
                                 std::string gpu)
    : clusters_dir(std::move(clusters)),
      devices_dir(std::move(devices)),
      device_profile(std::move(profile)),
      device(std::move(gpu)),
      clusters(comm::ClusterCatalog::load_directory(clusters_dir)),
      rates(base.graph.dfg, *base.traces, devices_dir, device_profile, device) {}

bool CommRetimeCache::holds(const comm::ClusterSpec* spec) const {
  return std::any_of(clusters.all().begin(), clusters.all().end(), [&](const auto& entry) { return &entry.second == spec; });
}

comm::CalibrationFit CommRetimeCache::fit(const comm::ClusterSpec& origin,
                                          const std::vector<comm::CommSample>& samples) const {
  {
    const std::lock_guard lock(fits_mutex_);
    for (const Fitted& f : fits_)
      if (f.origin == &origin && same_to_fit(f.samples, samples)) return f.fit;
  }
  comm::CalibrationFit made = comm::fit_calibration_detailed(origin, samples);  // outside the lock
  const std::lock_guard lock(fits_mutex_);
  fits_.push_back(Fitted{&origin, samples, made});
  if (fits_.size() > kFitsKept) fits_.pop_front();
  return made;
}

CommChange comm_retime(Workload& workload, const CommRetime& options) {
  const trace::TraceSet& traces = *workload.traces;
  graph::Dfg& dfg = workload.graph.dfg;
  // The bound a trace's own ranks and groups have (comm_ops.h): a larger job is a typo.
  if (options.ranks && (*options.ranks < 1 || *options.ranks > comm::kMaxGroupSize))
    throw OptionError("ranks", "", "must be from 1 to 2^20 (1048576) ranks, got " + std::to_string(*options.ranks));
  if (options.bucket_mb && !(*options.bucket_mb * kBytesPerMb >= 1 && *options.bucket_mb <= kMaxBucketMb))
    throw OptionError("bucket_mb", fmt::format("{:g}", *options.bucket_mb),
                      "must be from 1 byte (1/1048576 MB) to 1048576 MB (1 TiB)");
  if (options.compression) comm::validate(*options.compression);
  if (options.compression && options.price_buckets)
    throw OptionError("compress", "", "bucket pricing is for the uncompressed graph: give no compression with it");
  if (!dfg.finalized()) dfg.finalize();
  CommChange change;
  change.options = options;
  std::vector<comm::CommOp> ops = comm::find_comm_ops(dfg, traces);
  change.nccl_ops = ops.size();
  std::optional<comm::ClusterCatalog> read;
  if (!options.cache || options.cache->clusters_dir != options.clusters_dir)
    read = comm::ClusterCatalog::load_directory(options.clusters_dir);
  const comm::ClusterCatalog& catalog = read ? *read : options.cache->clusters;
  const comm::ClusterSpec* guessed = options.origin_cluster.empty() ? catalog.guess(traces.gpu_names()) : nullptr;
  const comm::ClusterSpec* origin =
      options.origin_cluster.empty() ? guessed : &catalog.get(options.origin_cluster, "origin_cluster");
  std::optional<comm::ClusterSpec> target;
  if (!options.cluster.empty()) target = catalog.get(options.cluster);
  else if (origin) target = *origin;
  // Without NCCL ops a cluster would only re-time nothing: an unknown one is no error then.
  if (!origin && !ops.empty()) throw unknown_origin(traces, catalog);
  comm::ClusterSpec checked;  // settings are checked even where no cluster takes them
  for (const std::string& s : options.settings) comm::apply_setting(target ? *target : checked, s);
  if (!origin && target) origin = &*target;  // nothing to re-time: the origin is immaterial
  if (options.ranks && target) change.placement = comm::place(*target, *options.ranks);  // whole nodes or throws

  if (origin) {
    change.origin = origin->name;
    change.origin_guessed = guessed != nullptr;
    retime(workload.graph, ops, traces, *origin, *target, options, change);
  }
  if (options.compression && !change.compression) change.compression.emplace();  // no NCCL op: nothing to compress
  if (target) change.target = target->name;
  // Scale-in: the report, the what-if table, its JSON and the timeline are then the N-rank job's.
  change.scaled_in = options.ranks && *options.ranks < static_cast<int>(traces.ranks.size());
  if (change.scaled_in) {
    workload.graph = comm::scale_in(workload.graph, traces, *options.ranks);
    change.bucket_pricing.reset();  // its node ids were the full graph's
  }
  change.world = comm::world_size(traces);
  for (const auto& r : traces.ranks) change.trace_ranks.push_back(r.rank);
  change.nodes = workload.graph.dfg.op_count();
  return change;
}

}  // namespace dpro::whatif
