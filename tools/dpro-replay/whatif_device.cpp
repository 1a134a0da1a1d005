#include "whatif_device.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "core/error.h"
#include "core/strings.h"
#include "costmodel/device_spec.h"
#include "costmodel/kernel_time.h"
#include "costmodel/learned_model.h"
#include "costmodel/dataset.h"
#include "costmodel/op_desc_from_trace.h"
#include "costmodel/residual_correction.h"
#include "costmodel/paths.h"
#include "costmodel/scaling.h"

namespace dpro::cli {

namespace cm = dpro::costmodel;

namespace {

enum class Retimer { kLearned, kScaling, kUnchanged, kSameChip };
constexpr int kRetimers = 4;

struct Coverage {
  std::size_t ops[kRetimers] = {};
  Nanos measured[kRetimers] = {};
  Nanos predicted[kRetimers] = {};
  std::size_t undescribable_kernels = 0;
  // Of those, kernels of an op the model knows but whose shapes the trace did not record.
  std::size_t without_shapes = 0;
  // Of those, kernels no CPU op launched, and whether any is in a dpro-profile capture (which
  // has CPU ops only from emit_nvtx ranges).
  std::size_t without_cpu_op = 0;
  bool without_cpu_op_in_capture = false;
  // Undescribable kernels priced by cm::same_chip_factor (the rest by scaling).
  std::size_t undescribable_same_chip = 0;
  // Kernels without a launching CPU op described by a like step's (cm::launchers_from_like_steps),
  // of them those the learned model priced, and the steps that lent them.
  std::size_t like_step_kernels = 0, like_step_learned = 0;
  std::vector<std::string> like_step_lenders;
  // Learned-model ops priced as a like family (cm::like_family: aten::sigmoid as tanh, ...).
  std::size_t like_ops = 0;
  std::size_t unknown_origin = 0;
  // Kernels re-timed with the peak of the arithmetic their name says (cm::kernel_math_dtype:
  // TF32, fp16, ...), by that dtype.
  std::map<cm::DType, std::size_t> math_ops;
  // Undescribable kernels by the name of their launching op (or kernel): count, measured time.
  std::map<std::string, std::pair<std::size_t, Nanos>> undescribed;

  std::size_t total_ops() const { return std::accumulate(std::begin(ops), std::end(ops), std::size_t{0}); }
  Nanos total_measured() const { return std::accumulate(std::begin(measured), std::end(measured), Nanos{0}); }
};

class DeviceWhatIf : public WhatIfOption {
 public:
  void add_options(CLI::App& replay) override {
    replay.add_option("--device", device_, "Re-time every GPU op for this GPU (e.g. H100-SXM5-80GB)");
    replay.add_option("--origin-device", origin_override_,
                      "GPU the trace was recorded on, when the trace does not say (over a GPU it records: with a "
                      "warning)");
    replay.add_option("--costmodel", model_path_, "Learned cost model file")->default_val(cm::default_model_path());
    replay.add_option("--device-specs", device_dir_, "Directory of GPU spec JSON files")
        ->default_val(cm::default_device_dir());
    replay.add_option("--device-samples", samples_path_,
                      "Ops measured on the --device GPU (CSV in the shared-data schema, or a directory of "
                      "them): the learned model is corrected by them (few-shot)");
  }

  bool enabled() const override { return !device_.empty(); }

  void apply(graph::BuiltGraph& built, const trace::TraceSet& traces, Logger& log) override {
    graph::Dfg& dfg = built.dfg;
    const auto catalog = cm::DeviceCatalog::load_directory(device_dir_);
    const cm::DeviceSpec& target = catalog.get(device_, "--device");
    target_name_ = target.name;
    const cm::DeviceSpec* forced = origin_override_.empty() ? nullptr : &catalog.get(origin_override_, "--origin-device");
    // --origin-device overrides a GPU the trace records only with a warning naming it (the
    // catalog may map the recorded name to a board the user knows it was not, e.g. an A100's
    // memory size); said once per recorded name.
    if (forced) {
      std::set<std::string> warned;
      for (const trace::TraceRank& r : traces.ranks)
        for (const auto& d : r.devices)
          if (const cm::DeviceSpec* recorded = catalog.find(d.name);
              recorded && recorded != forced && warned.insert(d.name).second)
            log.warn(fmt::format("{}: --origin-device {} overrides the GPU the trace records, '{}' ({} in the "
                                 "device catalog)", r.file, forced->name, d.name, recorded->name));
    }
    std::optional<cm::LearnedModel> model;
    if (cm::LearnedModel::available()) model = cm::LearnedModel::load(model_path_);
    else log.warn(cm::LearnedModel::unavailable_reason() + "; --device uses cross-device scaling only");

    coverage_ = Coverage{};
    pricing_.reset();
    overheads_ms_.clear();
    std::set<int> unknown_ranks;  // ranks of ops whose origin GPU the catalog does not know
    std::vector<cm::OpDesc> ops;
    std::vector<graph::NodeId> learned_nodes;
    std::vector<const cm::DeviceSpec*> learned_origin;
    const cm::LikeStepLaunchers lent = cm::launchers_from_like_steps(traces, dfg);
    coverage_.like_step_kernels = lent.kernels;
    coverage_.like_step_lenders = lent.lenders;
    for (graph::NodeId id = 0; id < dfg.node_count(); ++id) {
      graph::Node& n = dfg.node(id);
      if (!is_gpu_op(n.kind)) continue;
      const cm::DeviceSpec* origin = forced ? forced : origin_of(catalog, traces, n);
      if (!origin || n.kind == graph::NodeKind::kCollective || is_host_copy(traces, n)) {
        if (!origin) {
          ++coverage_.unknown_origin;
          unknown_ranks.insert(n.rank);
        }
        // Counted at the duration the replay gives them (a collective's transfer after its
        // last peer arrived, not its kernel time with the waiting), before and after alike.
        count(Retimer::kUnchanged, n.duration, n.duration);
        continue;
      }
      const std::uint32_t launcher = n.parent_op != graph::kNone ? n.parent_op : lent.launcher[id];
      cm::OpDesc op =
          n.kind == graph::NodeKind::kKernel ? cm::op_desc_from_trace(traces, n, launcher) : cm::OpDesc{};
      if (op.dtype_from_kernel) ++coverage_.math_ops[op.dtype];
      if (n.kind == graph::NodeKind::kKernel && !op.describable()) {
        ++coverage_.undescribable_kernels;
        if (cm::resolve_family(op.name) != cm::OpFamily::kUnknown) ++coverage_.without_shapes;
        if (launcher == graph::kNone) {
          ++coverage_.without_cpu_op;
          if (!coverage_.without_cpu_op_in_capture) {
            const trace::TraceRank* r = rank_of(traces, n.rank);
            coverage_.without_cpu_op_in_capture = r && r->format == "native";
          }
        }
        auto& u = coverage_.undescribed[op.name.empty() ? std::string("(unnamed)") : op.name];
        ++u.first;
        u.second += n.measured_duration;
      }
      // Between GPUs of one chip, what a kernel moves says more than either GPU's model
      // (cm::same_chip_factor; the learned model prices an H100 and an H200 as two unseen GPUs).
      // Copies and memsets move bytes only: scaled by bandwidth below.
      const auto f = n.kind == graph::NodeKind::kKernel
                         ? cm::same_chip_factor(op, *origin, target, to_millis(n.measured_duration))
                         : std::nullopt;
      if (f) {
        coverage_.undescribable_same_chip += !op.describable();
        n.duration = cm::millis_to_nanos(to_millis(n.measured_duration) * *f);
        count(Retimer::kSameChip, n.measured_duration, n.duration);
        continue;
      }
      if (model && op.describable()) {
        if (op.like_op) ++coverage_.like_ops;
        if (launcher != n.parent_op) ++coverage_.like_step_learned;
        ops.push_back(std::move(op));
        learned_nodes.push_back(id);
        learned_origin.push_back(origin);
        continue;
      }
      const double ms = cm::scale_ms(op, *origin, to_millis(n.measured_duration), target);
      n.duration = cm::millis_to_nanos(ms);
      count(Retimer::kScaling, n.measured_duration, n.duration);
    }
    if (coverage_.unknown_origin) {
      std::set<std::string> names;  // what those ranks recorded
      for (int r : unknown_ranks) {
        const trace::TraceRank* rank = rank_of(traces, r);
        names.insert(rank && !rank->devices.empty() ? "'" + rank->devices.front().name + "'" : "none recorded");
      }
      std::string gpus;
      for (const auto& g : names) gpus += (gpus.empty() ? "" : ", ") + g;
      log.warn(fmt::format("--device: {} GPU ops keep their measured times: the device catalog does not know the GPU "
                           "they ran on (GPU model: {}); name it with --origin-device (`dpro-replay costmodel "
                           "devices` lists the known ones)",
                           coverage_.unknown_origin, gpus));
    }
    cm::ResidualCorrection correction;
    if (!samples_path_.empty()) {
      if (!model) throw InputError(samples_path_, "", "--device-samples needs the learned cost model (LibTorch)");
      correction = cm::correction_from_samples(*model, cm::load_samples_of(samples_path_, catalog, target), target);
    }
    if (!learned_nodes.empty()) {
      pricing_ = model->pricing_of(target);
      // The predictions are latencies as the training data measured them, host overhead
      // included; a trace's kernel durations are not (kernel_time.h).
      const auto priced = cm::learned_kernel_factors(*model, ops, learned_origin, target, &correction);
      overheads_ms_["target"] = priced.target_overhead_ms;
      for (const auto& [origin, ms] : priced.origin_overhead_ms) overheads_ms_["origin " + origin->name] = ms;
      for (size_t i = 0; i < learned_nodes.size(); ++i) {
        graph::Node& n = dfg.node(learned_nodes[i]);
        n.duration = cm::millis_to_nanos(to_millis(n.measured_duration) * priced.factor[i]);
        count(Retimer::kLearned, n.measured_duration, n.duration);
      }
    }
    samples_used_ = correction.size();
    target_math_peaks_.clear();
    for (const auto& [dtype, n] : coverage_.math_ops) {
      const double peak = target.peak_flops(dtype);
      // Native: the target's spec lists that dtype at a rate of its own (above its fp32 one).
      target_math_peaks_[dtype] = {peak / 1e12, peak > target.peak_flops(cm::DType::kFloat32)};
    }
    log.info(summary());
  }

  std::string summary() const override {
    if (!enabled()) return "";
    const Nanos total = coverage_.total_measured();
    auto share = [&](Retimer r) {
      const int i = static_cast<int>(r);
      return fmt::format("{:.1f}% of measured GPU time ({}, {} -> {})",
                         total ? 100.0 * coverage_.measured[i] / total : 0.0, count_of(coverage_.ops[i], "op"),
                         format_duration(coverage_.measured[i]), format_duration(coverage_.predicted[i]));
    };
    return fmt::format(
        "--device {}{}: re-timed {} GPU ops ({} measured). {}Learned compact-AST model: {}{}{}. "
        "Cross-device scaling: {}. Unchanged "
        "(collectives at their transfer time, host<->device copies, unknown origin GPU): {}{}{}. {} could not be "
        "described (priced by {}).{}{}",
        target_name_, pricing_ ? cm::pricing_note(*pricing_) : "", coverage_.total_ops(), format_duration(total),
        coverage_.ops[static_cast<int>(Retimer::kSameChip)]
            ? fmt::format("Same chip as the origin (kernels of described ops by their DRAM traffic, GEMMs and "
                          "convolutions by their arithmetic's peak, others halfway between the bandwidth and "
                          "clock ratios): {}. ",
                          share(Retimer::kSameChip))
            : "",
        share(Retimer::kLearned),
        coverage_.like_ops ? fmt::format(", of which {} elementwise ops priced as a like op (sigmoid as tanh, "
                                         "clamp as relu, ...)", coverage_.like_ops)
                           : "",
        like_step_note(), share(Retimer::kScaling), share(Retimer::kUnchanged),
        coverage_.unknown_origin ? fmt::format("; {} on a GPU not in the device catalog (use --origin-device)",
                                               count_of(coverage_.unknown_origin, "op"))
                                 : "",
        samples_used_ ? fmt::format("; learned model corrected by {} measured on {}", count_of(samples_used_, "op"),
                                    target_name_)
                      : "",
        count_of(coverage_.undescribable_kernels, "kernel"), undescribed_priced_by(), math_note(),
        largest_undescribed());
  }

  const char* key() const override { return "device"; }

  nlohmann::json details() const override {
    nlohmann::json j = {{"target", target_name_}};
    if (pricing_) {
      j["learned_pricing"] = {{"kind", pricing_->kind_name()}};
      if (!pricing_->as.empty()) j["learned_pricing"]["as"] = pricing_->as;
    }
    const Nanos total = coverage_.total_measured();
    const char* names[kRetimers] = {"learned", "scaling", "unchanged", "same_chip"};
    for (int i = 0; i < kRetimers; ++i)
      j["models"][names[i]] = {
          {"ops", coverage_.ops[i]},
          {"measured_ns", coverage_.measured[i]},
          {"predicted_ns", coverage_.predicted[i]},
          {"share_of_measured", total ? static_cast<double>(coverage_.measured[i]) / static_cast<double>(total) : 0.0}};
    j["gpu_ops"] = coverage_.total_ops();
    j["measured_ns"] = total;
    j["like_family_ops"] = coverage_.like_ops;
    j["undescribable_kernels"] = coverage_.undescribable_kernels;
    j["undescribable_same_chip"] = coverage_.undescribable_same_chip;
    j["undescribable_without_shapes"] = coverage_.without_shapes;
    j["undescribable_without_cpu_op"] = coverage_.without_cpu_op;
    j["like_step"] = {{"kernels", coverage_.like_step_kernels},
                      {"learned", coverage_.like_step_learned},
                      {"lenders", coverage_.like_step_lenders}};
    j["unknown_origin_ops"] = coverage_.unknown_origin;
    j["samples_used"] = samples_used_;
    // Kernels priced with the peak of their own arithmetic (TF32 tensor cores, fp16, ...) and that
    // peak on the target (its fp32 peak where it has no faster arithmetic for that dtype).
    j["kernel_math"] = nlohmann::json::object();
    for (const auto& [dtype, n] : coverage_.math_ops)
      j["kernel_math"][cm::to_string(dtype)] = {{"kernels", n},
                                 {"target_peak_tflops", target_math_peaks_.at(dtype).first},
                                 {"native_on_target", target_math_peaks_.at(dtype).second}};
    // The host overhead taken out of the learned model's latencies (kernel_time.h), in us:
    // "target" and "origin <GPU>" for each GPU the trace's priced ops ran on.
    j["measurement_overhead_us"] = nlohmann::json::object();
    for (const auto& [which, ms] : overheads_ms_) j["measurement_overhead_us"][which] = ms * 1e3;
    j["undescribed_by_op"] = nlohmann::json::array();
    for (const auto& [name, v] : sorted_undescribed())
      j["undescribed_by_op"].push_back({{"op", name}, {"kernels", v.first}, {"measured_ns", v.second}});
    return j;
  }

 private:
  // Undescribable kernels by launching op, the most measured time first.
  std::vector<std::pair<std::string, std::pair<std::size_t, Nanos>>> sorted_undescribed() const {
    std::vector<std::pair<std::string, std::pair<std::size_t, Nanos>>> v(coverage_.undescribed.begin(),
                                                                          coverage_.undescribed.end());
    std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) {
      return a.second.second != b.second.second ? a.second.second > b.second.second : a.first < b.first;
    });
    return v;
  }

  // " Kernels priced with the peak of the arithmetic their names say: tf32 615 (T4: 8.1 TFLOP/s,
  // its fp32 peak, no faster tf32 arithmetic)."
  std::string math_note() const {
    if (coverage_.math_ops.empty()) return "";
    std::string out = " Kernels priced with the peak of the arithmetic their names say:";
    bool first = true;
    for (const auto& [dtype, n] : coverage_.math_ops) {
      const auto& [peak, native] = target_math_peaks_.at(dtype);
      const char* name = cm::to_string(dtype);
      out += fmt::format("{} {} {} ({}: {:.1f} TFLOP/s{})", first ? "" : ",", name, n, target_name_, peak,
                         native ? "" : fmt::format(", its fp32 peak, no faster {} arithmetic", name));
      first = false;
    }
    return out + ".";
  }

  // "; 5765 kernels launched by no recorded CPU op were described by the operators of a like step
  // (ProfilerStep#12: ...; ... read another step), 4115 of them priced by this model".
  std::string like_step_note() const {
    if (!coverage_.like_step_kernels) return "";
    std::string steps;
    for (std::size_t i = 0; i < coverage_.like_step_lenders.size() && i < 3; ++i)
      steps += (i ? ", " : "") + coverage_.like_step_lenders[i];
    if (coverage_.like_step_lenders.size() > 3) steps += ", ...";
    return fmt::format("; {} launched by no recorded CPU op were described by the operators of a like step ({}: "
                       "the same kernels in the same order; under emit_nvtx its own host time is not the job's, "
                       "read another step), {} of them priced by this model",
                       count_of(coverage_.like_step_kernels, "kernel"), steps, coverage_.like_step_learned);
  }

  // What priced the kernels no op description was built for: scaling, or between GPUs of one chip the
  // same-chip rule (both where a trace's ranks ran on GPUs of either kind).
  const char* undescribed_priced_by() const {
    const std::size_t same_chip = coverage_.undescribable_same_chip;
    if (same_chip == 0) return "scaling";
    return same_chip < coverage_.undescribable_kernels ? "scaling or the same-chip rule" : "the same-chip rule";
  }

  // " Largest undescribed (scaled): NAME (N kernels, T), ..." for the top 5 by measured time.
  std::string largest_undescribed() const {
    const auto v = sorted_undescribed();
    if (v.empty()) return "";
    std::string out = fmt::format(" Largest undescribed kernels (priced by {}), by launching op:", undescribed_priced_by());
    for (std::size_t i = 0; i < v.size() && i < 5; ++i)
      out += fmt::format("{} {} ({}, {})", i ? "," : "", v[i].first, count_of(v[i].second.first, "kernel"),
                         format_duration(v[i].second.second));
    out += ".";
    if (coverage_.without_shapes)
      out += fmt::format(" {} the learned model prices but the trace has no shapes for "
                         "(record with torch.profiler.profile(record_shapes=True)).",
                         coverage_.without_shapes == 1 ? std::string("1 of them is an op")
                                                       : std::to_string(coverage_.without_shapes) + " of them are ops");
    if (coverage_.without_cpu_op)
      out += fmt::format(" {} no CPU op launched in the trace, so nothing gives their op and shapes{}.",
                         coverage_.without_cpu_op == 1 ? std::string("1 kernel had")
                                                       : std::to_string(coverage_.without_cpu_op) + " kernels had",
                         !coverage_.without_cpu_op_in_capture
                             ? ""
                             : " (a dpro-profile capture of a PyTorch job has them when recorded with --nvtx and a "
                               "step runs inside torch.autograd.profiler.emit_nvtx(record_shapes=True); steps launching "
                               "the same kernels borrow its operators)");
    return out;
  }

  void count(Retimer r, Nanos measured, Nanos predicted) {
    const int i = static_cast<int>(r);
    ++coverage_.ops[i];
    coverage_.measured[i] += measured;
    coverage_.predicted[i] += predicted;
  }

  static bool is_gpu_op(graph::NodeKind k) {
    return k == graph::NodeKind::kKernel || k == graph::NodeKind::kCollective ||
           k == graph::NodeKind::kMemcpy || k == graph::NodeKind::kMemset;
  }

  static const trace::TraceRank* rank_of(const trace::TraceSet& traces, int rank) {
    for (const auto& r : traces.ranks)
      if (r.rank == rank) return &r;
    return nullptr;
  }

  // The catalog entry of the GPU the node's rank recorded (its device properties).
  static const cm::DeviceSpec* origin_of(const cm::DeviceCatalog& catalog, const trace::TraceSet& traces,
                                         const graph::Node& n) {
    const trace::TraceRank* rank = rank_of(traces, n.rank);
    if (!rank || rank->devices.empty()) return nullptr;
    std::optional<std::int64_t> device;
    if (n.event < rank->events.size())
      if (const auto* a = rank->attrs_of(rank->events[n.event])) device = a->device;
    for (const auto& d : rank->devices)
      if (!device || d.id == *device) return catalog.find(d.name);
    return catalog.find(rank->devices.front().name);
  }

  static bool is_host_copy(const trace::TraceSet& traces, const graph::Node& n) {
    if (n.kind != graph::NodeKind::kMemcpy) return false;
    const std::string_view name = traces.strings.view(n.name);
    return name.find("DtoD") == std::string_view::npos && name.find("PtoP") == std::string_view::npos;
  }

  std::string device_, origin_override_, model_path_, device_dir_, target_name_, samples_path_;
  std::optional<cm::DevicePricing> pricing_;  // how the learned model saw the target, when it priced any op
  std::size_t samples_used_ = 0;
  std::map<std::string, double> overheads_ms_;  // "target" / "origin <GPU>" -> overhead taken out (ms)
  // Per dtype of coverage_.math_ops: the target's peak for it (TFLOP/s), and whether that is above its
  // fp32 peak (arithmetic of its own for that dtype).
  std::map<cm::DType, std::pair<double, bool>> target_math_peaks_;
  Coverage coverage_;
};

}  // namespace

std::unique_ptr<WhatIfOption> make_device_whatif() { return std::make_unique<DeviceWhatIf>(); }

}  // namespace dpro::cli
