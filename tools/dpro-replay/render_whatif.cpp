#include "render_whatif.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <set>
#include <string>

#include "core/strings.h"
#include "costmodel/learned_model.h"

namespace dpro::cli {

namespace cm = dpro::costmodel;

namespace {

// ---- host re-timing --------------------------------------------------------------------------

std::string summary_of(const whatif::HostChange& c) {
  return fmt::format(
      "--set host.cpu_speed={:g}: the CPU side of {} ops re-timed: their own time {} -> {}, the untraced time "
      "before them {} -> {} (what they wait for, GPU work and launch latency unchanged).",
      c.options.cpu_speed, c.cpu_ops, format_duration(c.op_time_before), format_duration(c.op_time_after),
      format_duration(c.untraced_before), format_duration(c.untraced_after));
}

nlohmann::json details_of(const whatif::HostChange& c) {
  return {{"cpu_speed", c.options.cpu_speed},
          {"cpu_ops", c.cpu_ops},
          {"op_time_before_ns", c.op_time_before},
          {"op_time_after_ns", c.op_time_after},
          {"untraced_before_ns", c.untraced_before},
          {"untraced_after_ns", c.untraced_after}};
}

void warn_of(const whatif::HostChange&, Logger&) {}

// ---- device re-timing ------------------------------------------------------------------------

std::string share(const whatif::DeviceChange& c, cm::PricedBy by) {
  const Nanos total = c.coverage.total_measured();
  const int i = static_cast<int>(by);
  return fmt::format("{:.1f}% of measured GPU time ({}, {} -> {})",
                     total ? 100.0 * c.coverage.measured[i] / total : 0.0, count_of(c.coverage.ops[i], "op"),
                     format_duration(c.coverage.measured[i]), format_duration(c.coverage.predicted[i]));
}

// " Kernels priced with the peak of the arithmetic their names say: tf32 615 (T4: 8.1 TFLOP/s,
// its fp32 peak, no faster tf32 arithmetic)."
std::string math_note(const whatif::DeviceChange& c) {
  if (c.math.empty()) return "";
  std::string out = " Kernels priced with the peak of the arithmetic their names say:";
  bool first = true;
  for (const auto& [dtype, mode] : c.math) {
    const char* name = cm::to_string(dtype);
    out += fmt::format("{} {} {} ({}: {:.1f} TFLOP/s{})", first ? "" : ",", name, mode.kernels, c.target,
                       mode.target_peak_tflops,
                       mode.native_on_target ? "" : fmt::format(", its fp32 peak, no faster {} arithmetic", name));
    first = false;
  }
  return out + ".";
}

// "; 5765 kernels launched by no recorded CPU op were described by the operators of a like step
// (ProfilerStep#12: ...; ... read another step), 4115 of them priced by this model".
std::string like_step_note(const whatif::DeviceChange& c) {
  if (!c.like_step_kernels) return "";
  std::string steps;
  for (std::size_t i = 0; i < c.like_step_lenders.size() && i < 3; ++i) steps += (i ? ", " : "") + c.like_step_lenders[i];
  if (c.like_step_lenders.size() > 3) steps += ", ...";
  return fmt::format("; {} launched by no recorded CPU op were described by the operators of a like step ({}: "
                     "the same kernels in the same order; under emit_nvtx its own host time is not the job's, "
                     "read another step), {} of them priced by this model",
                     count_of(c.like_step_kernels, "kernel"), steps, c.like_step_learned);
}

// What priced the kernels no op description was built for: scaling, or between GPUs of one chip
// the same-chip rule (both where a trace's ranks ran on GPUs of either kind).
const char* undescribed_priced_by(const whatif::DeviceChange& c) {
  if (c.undescribable_same_chip == 0) return "scaling";
  return c.undescribable_same_chip < c.undescribable_kernels ? "scaling or the same-chip rule" : "the same-chip rule";
}

// " Largest undescribed kernels (priced by ...), by launching op: NAME (N kernels, T), ..." for the
// top 5 by measured time.
std::string largest_undescribed(const whatif::DeviceChange& c) {
  const auto v = c.sorted_undescribed();
  if (v.empty()) return "";
  std::string out = fmt::format(" Largest undescribed kernels (priced by {}), by launching op:", undescribed_priced_by(c));
  for (std::size_t i = 0; i < v.size() && i < 5; ++i)
    out += fmt::format("{} {} ({}, {})", i ? "," : "", v[i].first, count_of(v[i].second.first, "kernel"),
                       format_duration(v[i].second.second));
  out += ".";
  if (c.without_shapes)
    out += fmt::format(" {} the learned model prices but the trace has no shapes for "
                       "(record with torch.profiler.profile(record_shapes=True)).",
                       c.without_shapes == 1 ? std::string("1 of them is an op")
                                             : std::to_string(c.without_shapes) + " of them are ops");
  if (c.without_cpu_op)
    out += fmt::format(" {} no CPU op launched in the trace, so nothing gives their op and shapes{}.",
                       c.without_cpu_op == 1 ? std::string("1 kernel had")
                                             : std::to_string(c.without_cpu_op) + " kernels had",
                       !c.without_cpu_op_in_capture
                           ? ""
                           : " (a dpro-profile capture of a PyTorch job has them when recorded with --nvtx and a "
                             "step runs inside torch.autograd.profiler.emit_nvtx(record_shapes=True); steps launching "
                             "the same kernels borrow its operators)");
  return out;
}

// " Copies from the device profile: copy h2d: 12 copies, 1.2 ms -> 0.8 ms." ("" without a profile).
std::string profiled_copies_note(const whatif::DeviceChange& c) {
  if (c.copies_from_profile.empty()) return "";
  std::string out = " Copies from the device profile:";
  for (const auto& [figure, p] : c.copies_from_profile)
    out += fmt::format(" {}: {} copies, {} -> {};", figure, p.copies, format_duration(p.before),
                       format_duration(p.after));
  out.back() = '.';
  return out;
}

// "Learned compact-AST model: ..." or, with --pricer roofline-share, "Roofline-share model (...): ...".
std::string described_model_note(const whatif::DeviceChange& c) {
  const bool shares = c.pricer == cm::PricerKind::kRooflineShare;
  return fmt::format(
      "{}: {}{}{}",
      shares ? fmt::format("Roofline-share model (kernel-time ratio, {})", c.shares_path) : "Learned compact-AST model",
      share(c, shares ? cm::PricedBy::kRooflineShare : cm::PricedBy::kLearned),
      c.like_ops ? fmt::format(", of which {} elementwise ops priced as a like op (sigmoid as tanh, "
                               "clamp as relu, ...)", c.like_ops)
                 : "",
      like_step_note(c));
}

// With --origin-samples: after the target's note ", the origin's side (V100-PCIE-32GB) by those
// fitted on 50 ops measured on it"; without --device-samples "; the origin's side of the ratio
// (V100-PCIE-32GB) by the share scalars fitted on 50 ops measured on it".
std::string origin_fits_note(const whatif::DeviceChange& c) {
  std::string out;
  for (const auto& [origin, fit] : c.origin_fits)
    out += c.samples_used ? fmt::format(", the origin's side ({}) by those fitted on {} measured on it", origin,
                                        count_of(fit.samples, "op"))
                          : fmt::format("; the origin's side of the ratio ({}) by the share scalars fitted on {} "
                                        "measured on it",
                                        origin, count_of(fit.samples, "op"));
  for (const auto& [gpu, rows] : c.origin_unused)
    out += fmt::format("; {} of --origin-samples measured on {} left unused (no re-timed op ran on it)",
                       count_of(rows, "row"), gpu);
  return out;
}

std::string device_summary(const whatif::DeviceChange& c) {
  using cm::PricedBy;
  return fmt::format(
      "--device {}{}: re-timed {} GPU ops ({} measured). {}{}. "
      "Cross-device scaling: {}. Unchanged "
      "(collectives at their transfer time, host<->device copies): {}{}. {} could not be "
      "described (priced by {}).{}{}",
      c.target, c.pricing ? cm::pricing_note(*c.pricing) : "", c.coverage.total_ops(),
      format_duration(c.coverage.total_measured()),
      c.coverage.ops[static_cast<int>(PricedBy::kSameChip)]
          ? fmt::format("Same chip as the origin (kernels of described ops by their DRAM traffic, GEMMs and "
                        "convolutions by their arithmetic's peak, others halfway between the bandwidth and "
                        "clock ratios): {}. ",
                        share(c, PricedBy::kSameChip))
          : "",
      described_model_note(c), share(c, PricedBy::kScaling), share(c, PricedBy::kUnchanged),
      (!c.samples_used ? ""
       : c.pricer == cm::PricerKind::kRooflineShare
           ? fmt::format("; the target's side of the ratio by the share scalars fitted on {} measured on {}",
                         count_of(c.samples_used, "op"), c.target)
           : fmt::format("; learned model corrected by {} measured on {}", count_of(c.samples_used, "op"), c.target)) +
          origin_fits_note(c),
      count_of(c.undescribable_kernels, "kernel"), undescribed_priced_by(c), math_note(c), largest_undescribed(c));
}

std::string summary_of(const whatif::DeviceChange& c) { return device_summary(c) + profiled_copies_note(c); }

nlohmann::json details_of(const whatif::DeviceChange& c) {
  nlohmann::json j = {{"target", c.target}};
  if (c.pricing) {
    j["learned_pricing"] = {{"kind", c.pricing->kind_name()}};
    if (!c.pricing->as.empty()) j["learned_pricing"]["as"] = c.pricing->as;
  }
  if (c.pricer == cm::PricerKind::kRooflineShare) {
    j["pricer"] = cm::to_string(c.pricer);
    j["shares"] = c.shares_path;
    if (!c.share_fit.empty()) j["share_fit"] = c.share_fit;
    for (const auto& [origin, fit] : c.origin_fits)
      j["origin_share_fit"][origin] = {{"samples", fit.samples}, {"share_fit", fit.share_fit}};
    for (const auto& [gpu, rows] : c.origin_unused) j["origin_samples_unused"][gpu] = rows;
  }
  const Nanos total = c.coverage.total_measured();
  for (int i = 0; i < cm::kPricedByCount; ++i)
    if (static_cast<cm::PricedBy>(i) != cm::PricedBy::kRooflineShare || c.pricer == cm::PricerKind::kRooflineShare)
      j["models"][cm::to_string(static_cast<cm::PricedBy>(i))] = {
        {"ops", c.coverage.ops[i]},
        {"measured_ns", c.coverage.measured[i]},
        {"predicted_ns", c.coverage.predicted[i]},
        {"share_of_measured",
         total ? static_cast<double>(c.coverage.measured[i]) / static_cast<double>(total) : 0.0}};
  j["gpu_ops"] = c.coverage.total_ops();
  j["measured_ns"] = total;
  j["like_family_ops"] = c.like_ops;
  j["undescribable_kernels"] = c.undescribable_kernels;
  j["undescribable_same_chip"] = c.undescribable_same_chip;
  j["undescribable_without_shapes"] = c.without_shapes;
  j["undescribable_without_cpu_op"] = c.without_cpu_op;
  j["like_step"] = {{"kernels", c.like_step_kernels}, {"learned", c.like_step_learned}, {"lenders", c.like_step_lenders}};
  j["samples_used"] = c.samples_used;
  // Kernels priced with the peak of their own arithmetic (TF32 tensor cores, fp16, ...) and that
  // peak on the target (its fp32 peak where it has no faster arithmetic for that dtype).
  j["kernel_math"] = nlohmann::json::object();
  for (const auto& [dtype, mode] : c.math)
    j["kernel_math"][cm::to_string(dtype)] = {{"kernels", mode.kernels},
                                              {"target_peak_tflops", mode.target_peak_tflops},
                                              {"native_on_target", mode.native_on_target}};
  // The host overhead taken out of the learned model's latencies (kernel_time.h), in us:
  // "target" and "origin <GPU>" for each GPU the trace's priced ops ran on.
  j["measurement_overhead_us"] = nlohmann::json::object();
  for (const auto& [which, ms] : c.overheads_ms) j["measurement_overhead_us"][which] = ms * 1e3;
  j["undescribed_by_op"] = nlohmann::json::array();
  for (const auto& [name, v] : c.sorted_undescribed())
    j["undescribed_by_op"].push_back({{"op", name}, {"kernels", v.first}, {"measured_ns", v.second}});
  for (const auto& [figure, p] : c.copies_from_profile)
    j["copies_from_profile"][figure] = {{"copies", p.copies}, {"before_ns", p.before}, {"after_ns", p.after}};
  return j;
}

void warn_of(const whatif::DeviceChange& c, Logger& log) {
  for (const auto& o : c.origin_overrides)
    log.warn(fmt::format("{}: --origin-device {} overrides the GPU the trace records, '{}' ({} in the "
                         "device catalog)", o.file, c.forced_origin, o.recorded, o.catalog_name));
  if (!c.learned_unavailable.empty()) log.warn(c.learned_unavailable + "; --device uses cross-device scaling only");
  for (const auto& line : c.share_fit) log.info("--device-samples, " + c.target + "'s share scalars: " + line);
  for (const auto& [origin, fit] : c.origin_fits)
    for (const auto& line : fit.share_fit)
      log.info("--origin-samples, " + origin + "'s share scalars: " + line);
  for (const auto& [gpu, rows] : c.origin_unused)
    log.warn(fmt::format("--origin-samples: {} measured on {} left unused: no re-timed op of the trace ran on it",
                         count_of(rows, "row"), gpu));
}

// ---- communication re-timing -----------------------------------------------------------------

// " allreduce latency x1.27, byte time x1.21 (16 samples); ..." for the fitted operations,
// then what the others take.
std::string describe(const comm::CalibrationFit& fit) {
  std::string text;
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

std::string describe_retiming(const whatif::CommChange& c) {
  std::string text = fmt::format(
      ". {} NCCL ops re-timed ({} sized by the trace, {} by host execution traces, {} inferred from their transfer "
      "time). Model calibrated on {} samples ({}, {}):{}. Transfer time summed over the trace's ranks {} -> {}.",
      c.retimed.ops, c.sized_by_trace, c.sized_by_host_et, c.sizes_inferred, c.samples,
      comm::to_string(comm::FitOptions{}.method), comm::to_string(comm::FitOptions{}.grouping), describe(c.fit),
      format_duration(c.retimed.before), format_duration(c.retimed.after));
  constexpr int kAllToAll = static_cast<int>(comm::CollectiveOp::kAllToAll);
  if (c.retimed.before_by_op[kAllToAll] > 0 || c.retimed.after_by_op[kAllToAll] > 0) {
    text.pop_back();  // the all-to-alls' share belongs to the same sentence
    text += fmt::format(", of which all-to-alls {} -> {}.", format_duration(c.retimed.before_by_op[kAllToAll]),
                        format_duration(c.retimed.after_by_op[kAllToAll]));
  }
  if (c.peer_waiting_ops)
    text += fmt::format(" Of them, {} waited for peers outside the trace: {} of their measured time is that "
                        "waiting, kept as it was (their transfer is what the model prices, and only it is re-timed).",
                        count_of(c.peer_waiting_ops, "op"), format_duration(c.peer_waiting));
  if (c.buckets)
    text += fmt::format(" Gradient buckets{}{}: {} all-reduces per rank -> {}, all-reduce time {} -> {}.",
                        c.options.bucket_mb ? fmt::format(" of {} MB", *c.options.bucket_mb) : "",
                        c.options.bucket_boundaries
                            ? fmt::format("{} beginning at step positions [{}]", c.options.bucket_mb ? " and" : "",
                                          fmt::join(*c.options.bucket_boundaries, ", "))
                            : "",
                        c.buckets->allreduces, count_of(c.buckets->buckets, "bucket"),
                        format_duration(c.buckets->before), format_duration(c.buckets->after));
  return text;
}

std::string mib(std::int64_t bytes) { return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1 << 20)); }

std::string describe_compression(const whatif::CommChange& c) {
  const comm::CompressionStats& s = *c.compression;
  if (s.allreduces == 0) return " Compression: the trace has no data-parallel all-reduce, nothing compressed (0).";
  std::string text = fmt::format(" Compression of {} gradient all-reduce{} (all ranks{}): ", s.allreduces,
                                 s.allreduces == 1 ? "" : "s", c.buckets ? ", buckets" : "");
  if (s.by_method.empty()) text += "none compressed";
  bool first = true;
  for (const auto& [method, m] : s.by_method) {
    text += fmt::format("{}{} on {}, wire {} -> {}, their transfer {} -> {}, kernels +{}, residual {} per rank",
                        first ? "" : "; ", comm::to_string(method), m.collectives, mib(m.wire_bytes_before),
                        mib(m.wire_bytes_after), format_duration(m.comm_before), format_duration(m.comm_after),
                        format_duration(m.kernel_time), mib(m.residual_bytes));
    if (!m.compress_from_profile.empty())
      text += fmt::format(" (compression kernels: the device profile's {} curve)", m.compress_from_profile);
    first = false;
  }
  if (s.uncompressed) text += fmt::format("; {} left uncompressed", s.uncompressed);
  if (s.single_rank) text += fmt::format("; {} of a one-rank group left alone", s.single_rank);
  if (s.kernels_inserted)
    text += fmt::format(". {} kernels inserted, priced at {:.0f} GB/s ({}{}) and {:.1f} TFLOP/s fp32 peak{}", s.kernels_inserted,
                        s.rates.bandwidth_gbs, s.rates.bandwidth_source,
                        s.rates.bandwidth_kernels ? fmt::format(" on {} elementwise kernels", s.rates.bandwidth_kernels) : "",
                        s.rates.fp32_tflops, s.rates.gpu.empty() ? "" : " of " + s.rates.gpu);
  return text + ".";
}

nlohmann::json compression_details(const comm::CompressionStats& s) {
  using nlohmann::json;
  json methods = json::object();
  for (const auto& [method, m] : s.by_method) {
    methods[comm::to_string(method)] = {{"collectives", m.collectives},         {"wire_bytes_before", m.wire_bytes_before},
                                        {"wire_bytes_after", m.wire_bytes_after}, {"transfer_before_ns", m.comm_before},
                                        {"transfer_after_ns", m.comm_after},     {"kernel_ns", m.kernel_time},
                                        {"residual_bytes_per_rank", m.residual_bytes}};
    if (!m.compress_from_profile.empty()) methods[comm::to_string(method)]["compress_from_profile"] = m.compress_from_profile;
  }
  return {{"allreduces", s.allreduces},
          {"uncompressed", s.uncompressed},
          {"single_rank", s.single_rank},
          {"kernels_inserted", s.kernels_inserted},
          {"methods", std::move(methods)},
          {"bandwidth_gbs", s.rates.bandwidth_gbs},
          {"bandwidth_source", s.rates.bandwidth_source},
          {"bandwidth_kernels", s.rates.bandwidth_kernels},
          {"fp32_tflops", s.rates.fp32_tflops},
          {"gpu", s.rates.gpu}};
}

// "0..7", or "0, 3, 5" for a partial set.
std::string rank_numbers(const std::vector<int>& ranks) {
  bool contiguous = true;
  for (std::size_t i = 1; i < ranks.size(); ++i) contiguous &= ranks[i] == ranks[i - 1] + 1;
  if (ranks.size() == 1) return std::to_string(ranks.front());
  if (contiguous) return fmt::format("{}..{}", ranks.front(), ranks.back());
  std::string list;
  for (int r : ranks) list += (list.empty() ? "" : ", ") + std::to_string(r);
  return list;
}

std::string describe_ranks(const whatif::CommChange& c) {
  const int n = *c.options.ranks;
  const int w = static_cast<int>(c.trace_ranks.size());
  std::string text = fmt::format(" Ranks {} -> {}", c.world, n);
  if (c.placement) text += fmt::format(" ({} node(s) x {})", c.placement->nodes, c.placement->ranks_per_node);
  text += fmt::format("; {} group(s) resized.", c.retimed.resized_groups);
  if (n < w) {
    const int first_dropped = c.trace_ranks[n], last = c.trace_ranks.back();
    const std::string dropped = first_dropped == last ? fmt::format("Trace rank {} is", last)
                                                      : fmt::format("Trace ranks {}..{} are", first_dropped, last);
    return text + fmt::format(" {} not part of the {}-rank job: the what-if replays the graph of the first {} ({} "
                              "ops), and its rows and job row are the {}-rank job.",
                              dropped, n, n, c.nodes, n);
  }
  if (w < c.world)  // a partial set: the absent ranks are not known to behave as the present ones
    return text + fmt::format(" The trace has {} of the job's {} ranks ({}): the missing ranks are stood in for by "
                              "the present ones (rank g runs what the (g mod {})-th present rank ran), so the job row assumes they "
                              "behave alike; not exact.",
                              w, c.world, rank_numbers(c.trace_ranks), w);
  return text + fmt::format(" Trace rank{} {} stand{} for all {} (rank g runs trace rank g mod {}): the job row is "
                            "the {}-rank job, exact by symmetry.", w == 1 ? "" : "s", rank_numbers(c.trace_ranks),
                            w == 1 ? "s" : "", n, w, n);
}

// "" when the trace has NCCL ops.
std::string no_collectives_warning(const whatif::CommChange& c) {
  if (c.nccl_ops) return "";
  const auto& ranks = c.options.ranks;
  // Said, not left to be inferred from "0 NCCL ops": a one-rank trace scaled out predicts a
  // job that never communicates.
  std::string warning = "the trace has no NCCL collectives, so the cluster and network change nothing";
  if (ranks && *ranks > c.world && c.world == 1)
    warning += fmt::format(", and the {}-rank job is predicted as {} copies of this one that never communicate: a "
                           "data-parallel job would all-reduce its gradients, which a trace without collectives "
                           "does not show (record the job on at least 2 ranks)", *ranks, *ranks);
  else if (ranks && *ranks > c.world)
    // A multi-rank job without NCCL ops talked through another backend (gloo runs its
    // collectives on the CPU, where the trace records none): its time stays as recorded.
    warning += fmt::format(", and the {}-rank job is predicted as copies of these {} ranks: their communication "
                           "did not go through NCCL (gloo, for one, runs on the CPU and leaves no collective in "
                           "the trace), so whatever time it took stays as recorded and does not grow with the "
                           "ranks", *ranks, c.world);
  return warning;
}

std::string summary_of(const whatif::CommChange& c) {
  std::string text;
  if (!c.origin)
    text = "communication what-if: cluster unknown (no cluster file names the trace's GPUs; the trace has no NCCL "
           "ops to re-time, so none is needed).";
  else
    text = fmt::format("communication what-if: cluster {}{} -> {}", *c.origin,
                       c.origin_guessed                 ? " (guessed from the trace's GPUs)"
                       : c.options.origin_cluster.empty() ? " (not known from the trace's GPUs; immaterial without NCCL ops)"
                                                          : "",
                       *c.target);
  for (const std::string& s : c.options.settings) text += " with " + s;
  if (c.origin) text += describe_retiming(c);
  if (c.compression) text += describe_compression(c);
  if (c.options.ranks) text += describe_ranks(c);
  if (const std::string w = no_collectives_warning(c); !w.empty()) text += " Warning: " + w + ".";
  return text;
}

nlohmann::json details_of(const whatif::CommChange& c) {
  using nlohmann::json;
  const comm::Calibration& cal = c.fit.calibration;
  json j = {{"origin_cluster", c.origin ? json(*c.origin) : json(nullptr)},
            {"origin_guessed", c.origin_guessed},
            {"target_cluster", c.target ? json(*c.target) : json(nullptr)},
            {"settings", c.options.settings},
            {"ops_retimed", c.retimed.ops},
            {"sized_by_trace", c.sized_by_trace},
            {"sized_by_host_et", c.sized_by_host_et},
            {"sizes_inferred", c.sizes_inferred},
            {"alltoalls_inferred", c.alltoalls_inferred},
            {"peer_waiting_ops", c.peer_waiting_ops},
            {"peer_waiting_ns", c.peer_waiting},
            {"transfer_before_ns", c.retimed.before},
            {"transfer_after_ns", c.retimed.after}};
  json by_op = json::object();
  for (int i = 0; i < comm::kCollectiveOpCount; ++i) {
    if (c.retimed.before_by_op[i] == 0 && c.retimed.after_by_op[i] == 0) continue;
    by_op[comm::to_string(static_cast<comm::CollectiveOp>(i))] = {{"before_ns", c.retimed.before_by_op[i]},
                                                                  {"after_ns", c.retimed.after_by_op[i]}};
  }
  j["transfer_by_operation"] = std::move(by_op);
  j["calibration"] = {{"samples", c.samples},
                      {"method", comm::to_string(comm::FitOptions{}.method)},
                      {"grouping", comm::to_string(comm::FitOptions{}.grouping)}};
  for (int i = 0; i < comm::kCollectiveOpCount; ++i) {
    const auto op = static_cast<comm::CollectiveOp>(i);
    j["calibration"]["operations"][comm::to_string(op)] = {{"latency_scale", cal.of(op).latency},
                                                           {"byte_time_scale", cal.of(op).byte_time},
                                                           {"samples", c.fit.samples[i]},
                                                           {"from", comm::to_string(c.fit.source[i])}};
  }
  if (c.buckets) {
    j["buckets"] = {{"bucket_mb", c.options.bucket_mb ? nlohmann::json(*c.options.bucket_mb) : nlohmann::json(nullptr)},
                    {"allreduces_per_rank", c.buckets->allreduces},
                    {"buckets_per_rank", c.buckets->buckets}, {"allreduce_before_ns", c.buckets->before},
                    {"allreduce_after_ns", c.buckets->after}};
    if (c.options.bucket_boundaries) j["buckets"]["boundaries"] = *c.options.bucket_boundaries;
  }
  if (c.compression) j["compression"] = compression_details(*c.compression);
  if (c.options.ranks) {
    const int n = *c.options.ranks;
    const int w = static_cast<int>(c.trace_ranks.size());
    j["ranks"] = {{"from", c.world},
                  {"to", n},
                  {"nodes", c.placement ? json(c.placement->nodes) : json(nullptr)},
                  {"ranks_per_node", c.placement ? json(c.placement->ranks_per_node) : json(nullptr)},
                  {"groups_resized", c.retimed.resized_groups},
                  // Scale-in: whatif.iterations are the N-rank job's, from the graph of ranks 0..N-1.
                  {"scaled_in", n < w},
                  {"exact_by_symmetry", n >= w && w == c.world},
                  {"missing_ranks_stood_in", n >= w && w < c.world}};
  }
  return j;
}

// Sizes inferred from transfer times make the model price what it was calibrated to see: a
// latency-bound transfer comes out at a few bytes, and a what-if that changes bandwidth or ranks
// barely moves it. Said as a warning, with the way to real sizes.
std::string inferred_sizes_warning(const whatif::CommChange& c) {
  if (!c.sizes_inferred) return "";
  const std::string alltoalls =
      c.alltoalls_inferred ? fmt::format(" ({} of them all-to-alls: their group still sets their latency, not their bytes)",
                                         c.alltoalls_inferred)
                           : "";
  return fmt::format("{} of {} NCCL ops have no recorded message size{}: their sizes were inferred from their transfer "
                     "time, which leaves latency-bound ones near zero bytes, so bandwidth and rank changes move them "
                     "too little; record them with torch.profiler (record_shapes=True: record_param_comms and the "
                     "nccl:* ranges give sizes) or give host execution traces with --comm-sizes",
                     c.sizes_inferred, c.nccl_ops, alltoalls);
}

void warn_of(const whatif::CommChange& c, Logger& log) {
  if (const std::string w = no_collectives_warning(c); !w.empty()) log.warn(w);
  if (const std::string w = inferred_sizes_warning(c); !w.empty()) log.warn(w);
}

// " From the device profile: a, b." (empty without a profile: the report stays as it was).
std::string from_profile_text(const std::set<std::string>& figures) {
  if (figures.empty()) return "";
  std::string out = " From the device profile: ";
  for (const std::string& f : figures) out += (f == *figures.begin() ? "" : ", ") + f;
  return out + ".";
}

// ---- op fusion --------------------------------------------------------------------------------

std::string summary_of(const whatif::OpFusionChange& c) {
  return fmt::format("op fusion: fused {} instances of {} chains: GPU time {} -> {}, launches removed {}.{}", c.instances,
                     c.chains.size(), format_duration(c.gpu_before), format_duration(c.gpu_after), c.launches_removed,
                     from_profile_text(c.from_profile));
}

nlohmann::json details_of(const whatif::OpFusionChange& c) {
  nlohmann::json skipped = nlohmann::json::object();
  for (int r = 0; r < whatif::kFusionSkipCount; ++r) {
    std::size_t n = 0;
    for (const whatif::ChainFusion& chain : c.chains) n += chain.skipped[r];
    skipped[whatif::to_string(static_cast<whatif::FusionSkip>(r))] = n;
  }
  nlohmann::json j = {{"chains", c.chains.size()},         {"instances", c.instances},
                      {"skipped", skipped},                {"launches_removed", c.launches_removed},
                      {"priced_by_fallback", c.priced_by_fallback}, {"gpu_before_ns", c.gpu_before},
                      {"gpu_after_ns", c.gpu_after},       {"launch_time_removed_ns", c.launch_time_removed}};
  if (!c.from_profile.empty()) j["from_profile"] = c.from_profile;
  return j;
}

void warn_of(const whatif::OpFusionChange&, Logger&) {}

// ---- precision ---------------------------------------------------------------------------------

std::string summary_of(const whatif::PrecisionChange& c) {
  std::size_t kernels = 0;
  for (const auto& [cls, t] : c.lowered) kernels += t.kernels;
  std::string dtypes = cm::to_string(c.dtype);
  for (const cm::DType d : c.then_dtypes) dtypes += std::string(" then ") + cm::to_string(d);
  return fmt::format("precision {} on {}: {} kernels lowered, {} casts ({}); GPU work {} -> {}.{}",
                     dtypes, c.device, kernels, c.casts, format_duration(c.cast_time),
                     format_duration(c.gpu_before), format_duration(c.gpu_after), from_profile_text(c.from_profile));
}

nlohmann::json details_of(const whatif::PrecisionChange& c) {
  nlohmann::json j = {{"dtype", cm::to_string(c.dtype)},
                      {"device", c.device},
                      {"peak_tflops", c.peak_tflops},
                      {"casts", c.casts},
                      {"casts_unsized", c.casts_unsized},
                      {"cast_time_ns", c.cast_time},
                      {"cast_bandwidth_gbs", c.cast_bandwidth_gbs},
                      {"cast_bandwidth_measured", c.cast_bandwidth_measured},
                      {"latency_floor_ns", c.latency_floor},
                      {"already_at_dtype", c.already_at_dtype},
                      {"kept_fp32", c.kept_fp32},
                      {"outside_span", c.outside_span},
                      {"gpu_before_ns", c.gpu_before},
                      {"gpu_after_ns", c.gpu_after}};
  if (!c.from_profile.empty()) j["from_profile"] = c.from_profile;
  if (c.without_layers > 0) j["without_layers"] = c.without_layers;
  if (!c.then_dtypes.empty()) {
    j["then_dtypes"] = nlohmann::json::array();
    for (const cm::DType d : c.then_dtypes) j["then_dtypes"].push_back(cm::to_string(d));
  }
  j["lowered"] = nlohmann::json::object();
  for (const auto& [cls, t] : c.lowered)
    j["lowered"][whatif::to_string(cls)] = {
        {"kernels", t.kernels}, {"described", t.described}, {"before_ns", t.before}, {"after_ns", t.after}};
  return j;
}

void warn_of(const whatif::PrecisionChange& c, Logger& log) {
  if (c.without_layers > 0)
    log.warn(fmt::format("precision: {} GEMM or convolution kernel(s) have no layer for a layer part (gemm#N, conv#N): "
                         "their ops record no autograd sequence number and no like step of their stream does (record "
                         "with torch.profiler, or dpro-profile --nvtx with a step inside emit_nvtx); no layer part "
                         "lowers them",
                         c.without_layers));
}

}  // namespace

std::string unmoved_note(const whatif::Unmoved& u) {
  const double gpu_percent = u.path > 0 ? 100.0 * static_cast<double>(u.path_gpu) / static_cast<double>(u.path) : 0;
  std::string work, why;
  if (u.gpu_after != u.gpu_before) {
    work = fmt::format("re-timed GPU work {} -> {}", format_duration(u.gpu_before), format_duration(u.gpu_after));
    why = gpu_percent < 50 ? fmt::format("only {:.0f}% of the baseline's critical path is GPU work: the step is bound "
                                         "by its host (CPU ops, launches, untraced time)",
                                         gpu_percent)
                           : fmt::format("{:.0f}% of the baseline's critical path is GPU work, but not the work that "
                                         "changed",
                                         gpu_percent);
  } else {
    work = fmt::format("re-timed CPU work {} -> {}", format_duration(u.cpu_before), format_duration(u.cpu_after));
    why = fmt::format("{:.0f}% of the baseline's critical path is GPU work: the step is bound by its GPU", gpu_percent);
  }
  return fmt::format("The step moved {:+.2f}% although the what-if {}; {}.", 100 * u.step_change, work, why);
}

nlohmann::json to_json(const whatif::Unmoved& u) {
  return {{"step_change", u.step_change}, {"gpu_before_ns", u.gpu_before}, {"gpu_after_ns", u.gpu_after},
          {"cpu_before_ns", u.cpu_before}, {"cpu_after_ns", u.cpu_after},  {"critical_path_ns", u.path},
          {"critical_path_gpu_ns", u.path_gpu}};
}

std::string summary(const whatif::Change& change) {
  return std::visit([](const auto& c) { return summary_of(c); }, change);
}

const char* key(const whatif::Change& change) {
  if (std::holds_alternative<whatif::HostChange>(change)) return "host";
  if (std::holds_alternative<whatif::OpFusionChange>(change)) return "op_fusion";
  if (std::holds_alternative<whatif::PrecisionChange>(change)) return "precision";
  return std::holds_alternative<whatif::DeviceChange>(change) ? "device" : "communication";
}

nlohmann::json details(const whatif::Change& change) {
  return std::visit([](const auto& c) { return details_of(c); }, change);
}

void log_warnings(const whatif::Change& change, Logger& log) {
  std::visit([&](const auto& c) { warn_of(c, log); }, change);
}

std::string gpu_work_warning(const whatif::GpuWorkAfterSteps& checks) {
  if (checks.cases.empty()) return "";
  const whatif::GpuWorkAfterStep& worst = checks.cases[*checks.worst];
  return fmt::format(
      "in {} of the {} reported (step, rank) pairs the re-timed GPU work ends after the step by more than the step's "
      "length (worst: {}, GPU work ending {} after a {} step): the what-if's step and job times do not include it, "
      "because the trace's CPU never waits for that work inside the step; the job would take longer than they say",
      checks.cases.size(), checks.steps, fmt::format("{} rank {}", worst.iteration_name, worst.rank),
      format_duration(worst.gpu_end_after_step_ns), format_duration(worst.step_ns));
}

nlohmann::json to_json(const whatif::GpuWorkAfterSteps& checks) {
  nlohmann::json cases = nlohmann::json::array();
  for (const auto& c : checks.cases)
    cases.push_back({{"iteration", c.iteration ? nlohmann::json(*c.iteration) : nlohmann::json(nullptr)},
                     {"rank", c.rank},
                     {"step_ns", c.step_ns},
                     {"gpu_end_after_step_ns", c.gpu_end_after_step_ns}});
  return cases;
}

}  // namespace dpro::cli
