#include "cmd_costmodel.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <cmath>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/byte_source.h"
#include "core/error.h"
#include "core/json_fields.h"
#include "core/log.h"
#include "core/strings.h"
#include "costmodel/csv.h"
#include "costmodel/dataset.h"
#include "costmodel/eval/evaluate.h"
#include "costmodel/eval/table_tools.h"
#include "costmodel/learned_model.h"
#include "costmodel/model_file.h"
#include "costmodel/paths.h"
#include "costmodel/eval/report.h"
#include "costmodel/eval/share_eval.h"
#include "costmodel/roofline_share.h"
#include "costmodel/share_profile.h"
#include "costmodel/residual_correction.h"
#include "costmodel/roofline.h"
#include "output_file.h"
#include "resource_paths.h"

namespace dpro::cli {

namespace cm = dpro::costmodel;

namespace {

// A device profile's samples for the roofline-share fit (costmodel/share_profile.h): its notes on
// stderr, its empty-kernel time as the kernel floors' lower bound, its samples appended to
// `samples` (which then point into `profile`).
void add_profile_samples(const std::string& path, const cm::DeviceSpec& device, const cm::DeviceCatalog& catalog,
                         cm::ProfileSamples& profile, cm::DeviceFitOptions& options,
                         std::vector<const cm::Measurement*>& samples) {
  profile = cm::load_share_profile(path, device, catalog);
  for (const auto& note : profile.notes) std::cerr << path << ": " << note << "\n";
  options.min_kernel_floor_ms = profile.min_kernel_floor_ms;
  cm::append_samples(samples, profile);
}

class CostModelCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    app_ = parent.add_subcommand("costmodel", "Cost models: train, evaluate, predict op latencies on a GPU");
    app_->require_subcommand(1);
    app_->add_option("--devices", device_dir_, "Directory of device spec JSON files")->default_val(resource_paths().device_dir);
    app_->add_option("--model", model_path_, "Learned cost model file")->default_val(resource_paths().model_path);
    app_->add_flag("-v,--verbose", verbose_, "Log progress and details of every subcommand");
    app_->add_flag("-q,--quiet", quiet_,
                   "Print no progress (train, eval and adapt, which take minutes, log their stages and epochs "
                   "on stderr unless -q)");

    train_ = app_->add_subcommand("train", "Train the learned model on measured op latencies (shared-data CSV schema)");
    train_->add_option("--data", data_, "CSV file or directory (searched recursively)")->default_val(resource_paths().data_dir);
    train_->add_option("-o,--output", model_output_, "Model file to write")->default_val(resource_paths().model_path);
    train_->add_flag("--all-rows", all_rows_, "Train on every row instead of the training side of the 80/20 split");
    train_->add_flag("--force", force_, "Overwrite an existing model file (the default -o is the shipped model)");
    add_training_flags(train_);

    eval_ = app_->add_subcommand("eval", "MAPE tables: roofline, scaling, learned; 80/20 split and leave-one-GPU-out");
    eval_->add_option("--data", data_, "CSV file or directory")->default_val(resource_paths().data_dir);
    eval_->add_flag("--retrain", retrain_, "Train the split model here instead of loading --model");
    eval_->add_flag("--no-leave-one-out", no_logo_, "Only the 80/20 split (fast)");
    eval_->add_flag("--no-split", no_split_, "Only leave-one-GPU-out (the shipped model is not loaded)");
    eval_->add_option("--gpus", options_.only_gpus, "Leave-one-out only these GPU models (e.g. V100 T4; the models of the data's GPUs)");
    eval_->add_option("--samples", options_.few_shot_samples, "k-means samples of the held-out GPU")->default_val(200);
    eval_->add_option("--markdown", markdown_out_, "Also write the tables as Markdown to this file");
    eval_->add_option("--json", json_out_, "Also write the tables as JSON to this file");
    eval_->add_flag("--force", force_, "Overwrite existing --markdown/--json files");
    add_training_flags(eval_);

    predict_ = app_->add_subcommand("predict", "Add a predicted_ms column to operator rows of a CSV for one GPU");
    predict_->add_option("--device", device_, "Target GPU (see `costmodel devices`)")->required();
    predict_->add_option("file", predict_input_, "CSV with OPName and the op's dimension columns")->required();
    predict_->add_option("-o,--output", output_, "Output CSV (default: stdout)");
    predict_->add_flag("--force", force_, "Overwrite an existing output file");
    predict_->add_option("--samples,--device-samples", samples_path_,
                         "Ops measured on the --device GPU (same schema), few-shot: correct the learned model by "
                         "them, or fit the roofline-share model's device scalars on them");
    predict_->add_option("--pricer", pricer_, "learned (the learned model, the roofline where it has no price) or "
                                              "roofline-share (the analytic model of --shares)")
        ->default_val("learned")
        ->check(CLI::IsMember({"learned", "roofline-share"}));
    predict_->add_flag("--kernel-column", kernel_column_,
                       "Also a predicted_kernel_ms column: the op's kernel time on the GPU alone (roofline-share: "
                       "its kernel part; learned: its latency less the overhead the model's predictions carry)");
    predict_->add_option("--shares", shares_path_, "Share table of the roofline-share model")
        ->default_val(resource_paths().shares_path);
    predict_->add_option("--device-profile", profile_path_,
                         "A device profile of the --device GPU (`dpro-exec calibrate`): its GEMM, cast and launch "
                         "figures as samples of the roofline-share model's device scalars (with --device-samples: "
                         "both)");

    fit_shares_ = app_->add_subcommand(
        "fit-shares", "Fit the roofline-share model's table on measured op latencies (each GPU weighs the same)");
    fit_shares_
        ->add_option("--data", share_data_,
                     "CSV files or directories (repeatable: --data A --data B); rows with a Kernel Time column give "
                     "their kernels' GPU time, the others their host-timed latency")
        ->default_val(resource_paths().data_dir);
    fit_shares_->add_option("-o,--output", shares_output_, "Share table to write (JSON)")
        ->default_val(resource_paths().shares_path);
    fit_shares_->add_flag("--force", force_, "Overwrite an existing output file");
    fit_shares_->add_flag("--logo", shares_logo_,
                          "Write nothing: print the leave-one-GPU-out MAPE of the form the options give instead");
    fit_shares_->add_option("--bucket-width", share_options_.bucket_width, "Decades of roofline time per bucket")
        ->default_val(share_options_.bucket_width)
        ->check(CLI::Range(0.05, 5.0));
    fit_shares_->add_option("--intensity-width", share_options_.intensity_width,
                            "Decades of arithmetic intensity against the ridge point per curve (0: one curve per family)")
        ->default_val(share_options_.intensity_width)
        ->check(CLI::Range(0.0, 4.0));
    fit_shares_->add_option("--floor-margin", share_options_.floor_margin,
                            "Rows under this factor of their machine's host floor do not shape the curves (0: all do)")
        ->default_val(share_options_.floor_margin)
        ->check(CLI::Range(0.0, 100.0));
    fit_shares_->add_option("--floor-quantile", share_options_.floor_quantile,
                            "Quantile of a machine's elementwise latencies taken as its host floor")
        ->default_val(share_options_.floor_quantile)
        ->check(CLI::Range(0.0, 1.0));
    fit_shares_->add_option("--min-rows", share_options_.min_rows, "Rows a GPU needs in a bucket to count there")
        ->default_val(share_options_.min_rows)
        ->check(CLI::Range(1, 1000000));
    fit_shares_->add_flag("--no-host-floor", no_host_floor_, "Latency = host overhead + kernel (no host floor)");
    fit_shares_->add_flag("--latency-only", shares_latency_only_,
                          "Read every row's Latency, also where a Kernel Time is given (the fit before GPU time was read)");
    fit_shares_->add_flag("--no-hold-large", no_hold_large_,
                          "Beyond a GPU's largest ops of a family, do not count the GPU at their share (only GPUs "
                          "with rows in a bucket shape it)");
    fit_shares_->add_flag("--no-family-host", no_family_host_,
                          "Every family's host is the elementwise ops' (no per-family host factor from rows with a "
                          "Latency and a Kernel Time)");
    fit_shares_->add_option("--timed-floor-margin", share_options_.timed_floor_margin,
                            "Where a family has GPU-timed rows, its host-timed rows under this factor of their machine's "
                            "host floor do not shape the curves")
        ->default_val(share_options_.timed_floor_margin)
        ->check(CLI::Range(0.0, 100.0));
    fit_shares_->add_option("--gemm-waves", gemm_waves_,
                            "GEMM kernel-choice features (roofline over tile x wave efficiency): none, tile, wave, "
                            "tile+wave, each optionally +conv (conv's wave efficiency too)")
        ->default_val("none")
        ->check(CLI::IsMember({"none", "tile", "wave", "tile+wave", "none+conv", "tile+conv", "wave+conv",
                               "tile+wave+conv"}));
    fit_shares_->add_option("--gemm-blocks-per-sm", share_options_.gemm.blocks_per_sm,
                            "Resident blocks per SM a GEMM's waves are counted with")
        ->default_val(share_options_.gemm.blocks_per_sm)
        ->check(CLI::Range(1, 64));
    fit_shares_->add_flag("--gemm-likely-split-k", share_options_.gemm.likely_split_k,
                          "An op whose kernel is unknown: its likely kernel fills at least one wave (split-K)");
    fit_shares_->add_flag("--logo-blank-kernels", logo_blank_kernels_,
                          "With --logo: score each held-out GPU's rows without their kernel name and grid");
    fit_shares_->add_option("--gemm-exponent", share_options_.gemm.exponent,
                            "The compute bound is divided by (tile x wave efficiency) to this power")
        ->default_val(share_options_.gemm.exponent)
        ->check(CLI::Range(0.0, 4.0));

    pick_ = app_->add_subcommand("pick", "Choose which ops of a CSV to measure on a new GPU (k-means over op features)");
    pick_->add_option("file", pick_input_, "CSV with OPName and the op's dimension columns (e.g. your workload's ops)")
        ->required();
    pick_->add_option("-n,--count", pick_count_, "How many ops to choose")->default_val(200)->check(CLI::Range(1, 1000000));
    pick_->add_option("-o,--output", pick_output_, "Output CSV of the chosen rows (default: stdout)");
    pick_->add_flag("--force", force_, "Overwrite an existing output file");
    pick_->add_option("--pricer", pick_pricer_, "learned (k-means over op features) or roofline-share (per family "
                                                "group, spread over the ops' roofline time on --device)")
        ->default_val("learned")
        ->check(CLI::IsMember({"learned", "roofline-share"}));
    pick_->add_option("--device", pick_device_, "The GPU to measure on (--pricer roofline-share)");
    pick_->add_option("--seed", pick_seed_, "Seed of the draw within each stratum (--pricer roofline-share)")
        ->default_val(1);

    few_shot_ = app_->add_subcommand(
        "few-shot-shares", "Score the roofline-share model's few-shot fit on a GPU's measured rows: per seed, -n rows "
                           "drawn as `pick --pricer roofline-share` draws them, the device's scalars fitted on them, "
                           "the MAPE of the other rows only");
    few_shot_->add_option("--device", few_shot_device_, "The GPU the rows were measured on")->required();
    few_shot_->add_option("file", few_shot_input_, "Measured rows (CSV or directory, shared-data schema)")->required();
    few_shot_->add_option("-n,--samples", few_shot_n_, "Rows drawn as samples per seed")
        ->default_val(50)
        ->check(CLI::Range(0, 100000));
    few_shot_->add_option("--seeds", few_shot_seeds_, "Seeds of the draws (default: 1 2 3 4 5)");
    few_shot_->add_option("--device-profile", few_shot_profile_,
                          "A device profile of the GPU: its samples join every draw's (-n 0: the profile alone)");
    few_shot_->add_option("--shares", few_shot_shares_, "Share table (the prior)")->default_val(resource_paths().shares_path);
    few_shot_->add_option("--min-family-rows", few_shot_options_.min_family_rows,
                          "Samples a family needs for a multiplier of its own (more than -n: group multipliers only)")
        ->default_val(few_shot_options_.min_family_rows);
    few_shot_->add_option("--min-slope-rows", few_shot_options_.min_slope_rows,
                          "Samples a multiplier needs to follow the roofline time (more than -n: levels only)")
        ->default_val(few_shot_options_.min_slope_rows);
    few_shot_->add_option("--min-kernel-class-rows", few_shot_options_.min_kernel_class_rows,
                          "Samples a GEMM kernel class (its Kernel Name, alignment cut) needs for a multiplier of "
                          "its own on top of its family's (0: none)")
        ->default_val(few_shot_options_.min_kernel_class_rows);
    few_shot_->add_option("--kernel-class-shrink", few_shot_options_.kernel_class_shrink_rows,
                          "Pseudo-rows shrinking a kernel class's multiplier toward its family's: rows / (rows + this)")
        ->default_val(few_shot_options_.kernel_class_shrink_rows)
        ->check(CLI::NonNegativeNumber);
    few_shot_->add_flag("--latency-only", few_shot_latency_only_,
                        "Fit the multipliers on the samples' Latency even where they record a Kernel Time (the fit "
                        "before it read kernel times; for comparison)");

    adapt_ = app_->add_subcommand("adapt", "Fine-tune the learned model on ops measured on a new GPU (few-shot)");
    adapt_->add_option("--device", adapt_device_, "The GPU the samples were measured on")->required();
    adapt_->add_option("--samples", adapt_samples_, "Measured ops of that GPU (shared-data CSV schema)")->required();
    adapt_->add_option("--data", adapt_data_,
                       "Original training data mixed in against forgetting (default: the shared data, or the "
                       "bundled subset when that is absent)");
    adapt_->add_option("-o,--output", adapt_output_, "Adapted model file to write")->required();
    adapt_->add_flag("--force", force_, "Overwrite an existing output file");

    retime_ = app_->add_subcommand(
        "retime", "Score replay --device's kernel re-timing on ops measured on two GPUs (their Kernel Time)");
    retime_->add_option("origin", retime_origin_,
                        "Ops measured on the GPU a trace comes from (CSV or directory, shared-data schema with a "
                        "Kernel Time column, as tools/gpu/measure_ops.py writes)")
        ->required();
    retime_->add_option("target", retime_target_, "The same ops measured on the GPU asked about (one GPU)")->required();
    retime_->add_option("--pricer", retime_pricer_,
                        "What the last column prices with: learned (what --device uses by default) or "
                        "roofline-share (--device --pricer roofline-share, the share table of --shares)")
        ->default_val("learned")
        ->check(CLI::IsMember({"learned", "roofline-share"}));
    retime_->add_option("--shares", shares_path_, "Share table of the roofline-share model")
        ->default_val(resource_paths().shares_path);
    retime_->add_option("--json", retime_json_, "Also write the table as JSON to this file");
    retime_->add_flag("--force", force_, "Overwrite an existing --json file");

    devices_ = app_->add_subcommand("devices", "List the known GPUs");
    devices_->add_option("--shares", shares_path_, "Share table of the roofline-share model (its GPUs are listed)")
        ->default_val(resource_paths().shares_path);

    upgrade_ = app_->add_subcommand(
        "upgrade", "Rewrite the --model file in this build's format (the same figures and weights; a version 5 "
                   "file gains the header checksum)");
    upgrade_->add_option("-o,--output", upgrade_output_, "Model file to write")->required();
    upgrade_->add_flag("--force", force_, "Overwrite an existing output file");
    return app_;
  }

  int run() override {
    // Training takes minutes (eval: one model per held-out GPU, about 17): say where it is.
    const bool long_running = train_->parsed() || adapt_->parsed() || eval_->parsed();
    Logger log(!quiet_ && (verbose_ || long_running) ? LogLevel::kInfo : LogLevel::kWarning);
    const auto catalog = cm::DeviceCatalog::load_directory(device_dir_);
    if (devices_->parsed()) return list_devices(catalog);
    if (upgrade_->parsed()) return upgrade();
    if (predict_->parsed()) return pricer_ == "learned" ? predict(catalog, log) : predict_by_shares(catalog);
    if (fit_shares_->parsed()) return fit_shares(catalog);
    if (pick_->parsed()) return pick_pricer_ == "learned" ? pick() : pick_for_shares(catalog);
    if (few_shot_->parsed()) return few_shot_shares(catalog);
    if (retime_->parsed()) return retime(catalog);
    if (adapt_->parsed()) return adapt(catalog, log);
    if (train_->parsed()) return train(catalog, log);
    return evaluate(catalog, log);
  }

 private:
  void add_training_flags(CLI::App* app) {
    app->add_option("--epochs", options_.train.epochs, "Training epochs")->default_val(options_.train.epochs);
    app->add_option("--unseen-epochs", options_.train.unseen_epochs,
                    "Epochs of the separate network for GPUs not in the training data (0 or equal to "
                    "--epochs: the main network serves them)")
        ->default_val(options_.train.unseen_epochs)
        ->check(CLI::NonNegativeNumber);
    app->add_option("--threads", options_.train.threads, "CPU threads for LibTorch")->default_val(1);
    app->add_option("--batch", options_.train.batch_size, "Minibatch size")->default_val(options_.train.batch_size);
    app->add_option("--lr", options_.train.learning_rate, "Peak learning rate")->default_val(options_.train.learning_rate);
    app->add_option("--seed", options_.train.seed, "Training seed")->default_val(1);
    app->add_option("--token-hidden", options_.train.token_hidden, "Width of the per-node encoder")
        ->default_val(options_.train.token_hidden);
    app->add_option("--head-hidden", options_.train.head_hidden, "Width of the prediction head")
        ->default_val(options_.train.head_hidden);
    app->add_option("--split-seed", options_.split_seed, "80/20 split seed")->default_val(7);
  }

  int list_devices(const cm::DeviceCatalog& catalog) {
    // How the learned model prices each GPU, from its file's header (no LibTorch): a GPU of its
    // training data, a twin or sibling of one, or outside the data (its unseen-GPU network).
    std::optional<cm::ModelFileHeader> header;
    try {
      cm::ModelPayload payload;
      header = cm::parse_model_file(read_whole_file(model_path_), model_path_, payload);
    } catch (const InputError& e) {
      std::fprintf(stderr, "dpro-replay: warning: %s; the learned-model column is left out\n", e.what());
    }
    // Which GPUs the roofline-share table was fitted on (its curve_gpus).
    std::optional<cm::ShareTable> shares;
    try {
      shares = cm::load_share_table(shares_path_);
    } catch (const InputError& e) {
      if (devices_->get_option("--shares")->count() > 0) throw;  // the user's file: an error, not a gap
      std::fprintf(stderr, "dpro-replay: warning: %s; the roofline-share column is left out\n", e.what());
    }
    // "prior"; "fitted", "fitted (GPU time)" (its rows gave kernel times); or, where only some
    // families' curves took its rows, "fitted: conv" / "fitted (15 of 16)".
    auto fitted_on = [&](const cm::DeviceSpec& d) -> std::string {
      if (!shares) return "";
      const auto it = shares->curve_gpus.find(d.name);
      if (it != shares->curve_gpus.end() && it->second.size() < shares->families.size()) {
        if (it->second.size() > 2) return fmt::format("fitted ({} of {})", it->second.size(), shares->families.size());
        std::vector<std::string> names;
        for (cm::OpFamily f : it->second) names.push_back(cm::to_string(f));
        return fmt::format("fitted: {}", fmt::join(names, ", "));
      }
      // A table written before curve_gpus was recorded: the GPUs with host figures of their own.
      const bool fitted = it != shares->curve_gpus.end() ||
                          (shares->curve_gpus.empty() && shares->gpu_host_overhead_ms.contains(d.name));
      if (!fitted) return "prior";
      return shares->gpu_timed.contains(d.name) ? "fitted (GPU time)" : "fitted";
    };
    // The peaks the cost models price with: a narrower float without faster arithmetic of its own
    // on that GPU is at its fp32 peak (DeviceSpec::peak_flops).
    std::cout << fmt::format("{:<16} {:>9} {:>8} {:>6} {:>6} {:>6} {:>6}  {:<24}{:<20}{}\n", "GPU", "memory", "SMs", "fp32",
                             "tf32", "fp16", "power", "CUDA device name", shares ? "roofline share" : "",
                             header ? "learned model" : "");
    for (const auto& d : catalog.devices()) {
      auto peak = [&](cm::DType t) { return d.peak_flops(t) / 1e12; };
      std::string learned;
      if (header) {
        const cm::DevicePricing p = cm::device_pricing(header->known_devices, header->known_features, d);
        learned = p.kind == cm::DevicePricing::kTrained ? "in the data"
                  : p.kind == cm::DevicePricing::kTwin  ? "twin of " + p.as
                  : p.kind == cm::DevicePricing::kSibling ? "sibling of " + p.as
                                                          : "outside the data";
      }
      std::cout << fmt::format("{:<16} {:>4.0f} GB/s {:>4} SMs {:>6.1f} {:>6.1f} {:>6.1f} {:>6}  {:<24}{:<20}{}\n", d.name,
                               d.memory_bandwidth_gbs, d.sms, peak(cm::DType::kFloat32),
                               peak(cm::DType::kTensorFloat32), peak(cm::DType::kFloat16),
                               d.power_limit_w ? fmt::format("{:.0f} W", *d.power_limit_w) : "-",
                               d.aliases.empty() ? "" : d.aliases[0], fitted_on(d), learned);
    }
    std::cout << "peaks in TFLOP/s (dense); power: the board's power limit (datasheet maximum TDP or board power; - where none is published)";
    if (shares)
      std::cout << "; roofline share: whether " << shares_path_
                << " was fitted on the GPU's measurements (GPU time: its kernels' own times, else host-timed latencies; "
                   "\"fitted: conv\", \"fitted (15 of 16)\": on those op families only, the prior for the rest) or prices it by the prior, the "
                   "training GPUs' median share (docs/costmodel.md \"Roofline share\")";
    if (header)
      std::cout << "; learned model: how " << model_path_
                << " prices the GPU (in the data: trained on it; a twin: the same datasheet figures; a sibling: the same "
                   "chip, its own figures; outside the data: its unseen-GPU network, docs/costmodel.md \"Unseen GPUs\")";
    std::cout << "\n";
    return 0;
  }

  int train(const cm::DeviceCatalog& catalog, Logger& log) {
    require_torch("costmodel train");
    check_output_path(model_output_, {data_}, force_);  // before minutes of training, not after
    const auto data = cm::load_measurements(data_, catalog);
    const auto rows = all_rows_ ? cm::all_rows(data) : cm::split_training_rows(data, options_.test_fraction, options_.split_seed);
    const auto t0 = std::chrono::steady_clock::now();
    auto model = cm::LearnedModel::train(rows, options_.train, log);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    model.set_provenance(model.provenance() + "; data " + data_ + (all_rows_ ? " (all rows)" :
        fmt::format(" (training side of split seed {}, test fraction {})", options_.split_seed, options_.test_fraction)));
    write_model(model, model_output_);
    std::cout << fmt::format("wrote {} ({} rows, {:.1f} s)\n", model_output_, rows.size(), s);
    std::cout << fmt::format("{{\"bench\": \"costmodel_train_seconds\", \"value\": {:.1f}, \"unit\": \"s\", \"rows\": {}, \"threads\": {}}}\n",
                             s, rows.size(), options_.train.threads);
    return 0;
  }

  // --gpus names GPU models (V100, not V100-PCIE-32GB); each must be one of the data's.
  void check_held_out_gpus(const std::vector<cm::Measurement>& data) const {
    const std::set<std::string> models = cm::gpu_models(data);
    for (const auto& g : options_.only_gpus)
      if (!models.count(g))
        throw InputError(data_, "--gpus " + g,
                         "no GPU of the data is of that model; give one of: " + fmt::format("{}", fmt::join(models, ", ")));
  }

  int evaluate(const cm::DeviceCatalog& catalog, Logger& log) {
    if (no_logo_ && no_split_)
      throw InputError("", "eval --no-leave-one-out --no-split",
                       "nothing to evaluate: the two flags leave out both experiments; give at most one");
    for (const std::string* out : {&markdown_out_, &json_out_})
      if (!out->empty()) check_output_path(*out, {data_, model_path_}, force_);
    const auto data = cm::load_measurements(data_, catalog);
    if (!no_logo_) check_held_out_gpus(data);  // a name that matches no GPU would be left out silently
    cm::EvalReport report;
    std::optional<cm::LearnedModel> model;
    if (cm::LearnedModel::available() && !retrain_ && !no_split_) model = cm::LearnedModel::load(model_path_);
    if (!cm::LearnedModel::available())
      report.notes.push_back(cm::LearnedModel::unavailable_reason() + ": learned columns are empty");
    if (!no_split_) cm::evaluate_split(data, options_, model ? &*model : nullptr, report, log);
    if (!no_logo_) cm::evaluate_leave_one_out(data, options_, report, log);
    const std::string md = cm::render_markdown(report);
    std::cout << md;
    if (!markdown_out_.empty()) write_output(markdown_out_, [&](std::ostream& out) { out << md; }, force_);
    if (!json_out_.empty())
      write_output(json_out_, [&](std::ostream& out) {
        out << dump_output_json(cm::to_json(report), 1) << "\n";
      }, force_);
    return 0;
  }

  int retime(const cm::DeviceCatalog& catalog) {
    if (!retime_json_.empty()) check_output_path(retime_json_, {retime_origin_, retime_target_}, force_);
    const auto origin = cm::load_measurements(retime_origin_, catalog);
    const auto target = cm::load_measurements(retime_target_, catalog);
    std::optional<cm::LearnedModel> model;
    if (cm::LearnedModel::available()) model = cm::LearnedModel::load(model_path_);
    std::optional<cm::ShareTable> shares;
    if (retime_pricer_ == "roofline-share") shares = cm::load_share_table(shares_path_);
    const auto report = cm::kernel_retime_report(origin, target, model ? &*model : nullptr, retime_origin_,
                                                 retime_target_, shares ? &*shares : nullptr);
    std::cout << cm::render_markdown(report);
    if (!retime_json_.empty())
      write_output(retime_json_, [&](std::ostream& out) { out << dump_output_json(cm::to_json(report), 1) << "\n"; }, force_);
    return 0;
  }

  int pick() {
    const cm::CsvTable table = cm::read_csv_file(pick_input_);
    if (pick_output_.empty()) pick_output_ = "-";
    check_output_path(pick_output_, {pick_input_}, force_);
    const cm::PickedRows picked = cm::pick_rows(table, pick_input_, pick_count_, options_.split_seed);
    write_output(pick_output_, [&](std::ostream& out) {
      out << cm::format_csv_row(table.header) << "\n";
      for (auto r : picked.rows) out << cm::format_csv_row(table.rows[r]) << "\n";
    }, force_);
    std::cerr << fmt::format("chose {} of {} rows ({} not describable{}){}: measure these on the new GPU, then "
                             "pass them to `replay --device-samples` or `costmodel adapt`\n",
                             picked.rows.size(), table.rows.size(), picked.not_describable,
                             picked.repeats ? fmt::format(", {} repeating the configuration of an earlier row", picked.repeats) : "",
                             picked.rows.size() < static_cast<std::size_t>(pick_count_)
                                 ? fmt::format("; fewer than the {} asked for: the file has only {} distinct "
                                               "configuration{}", pick_count_, picked.configurations,
                                               picked.configurations == 1 ? "" : "s")
                                 : "");
    return 0;
  }

  // pick --pricer roofline-share: rows spread over family groups and roofline time on --device.
  int pick_for_shares(const cm::DeviceCatalog& catalog) {
    if (pick_device_.empty()) throw OptionError("--pricer roofline-share", "", "needs --device (the GPU to measure on)");
    const cm::DeviceSpec& device = catalog.get(pick_device_);
    const cm::CsvTable table = cm::read_csv_file(pick_input_);
    if (pick_output_.empty()) pick_output_ = "-";
    check_output_path(pick_output_, {pick_input_}, force_);
    const cm::OpRowReader reader(table, pick_input_);
    reader.require_names();
    std::vector<cm::OpDesc> ops;
    for (std::size_t r = 0; r < table.rows.size(); ++r) ops.push_back(reader.read(r));
    const auto picked = cm::pick_share_samples(ops, device, static_cast<std::size_t>(pick_count_), pick_seed_);
    write_output(pick_output_, [&](std::ostream& out) {
      out << cm::format_csv_row(table.header) << "\n";
      for (auto r : picked) out << cm::format_csv_row(table.rows[r]) << "\n";
    }, force_);
    std::cerr << fmt::format("chose {} of {} rows for the roofline-share model on {}: measure these there, then pass "
                             "them to `costmodel predict --pricer roofline-share --device-samples`\n",
                             picked.size(), table.rows.size(), device.name);
    return 0;
  }

  // Markdown: per seed the MAPE of the rows not drawn, overall and per family group; then the
  // mean and the range over the seeds, beside the zero-shot MAPE of all the rows.
  int few_shot_shares(const cm::DeviceCatalog& catalog) {
    const cm::DeviceSpec& device = catalog.get(few_shot_device_);
    const auto data = cm::load_samples_of(few_shot_input_, catalog, device);
    const auto rows = cm::all_rows(data);
    if (few_shot_n_ >= rows.size())
      throw OptionError("-n", std::to_string(few_shot_n_),
                        fmt::format("leaves no row to score: the file has {}", count_of(rows.size(), "row")),
                        few_shot_input_);
    if (few_shot_n_ == 0 && few_shot_profile_.empty())
      throw OptionError("-n", "0", "leaves nothing to fit without --device-profile", few_shot_input_);
    const cm::ShareTable prior = cm::load_share_table(few_shot_shares_);
    if (few_shot_seeds_.empty()) few_shot_seeds_ = {1, 2, 3, 4, 5};
    std::vector<const cm::Measurement*> extra;
    cm::ProfileSamples profile;
    few_shot_options_.read_kernel_time = !few_shot_latency_only_;
    if (!few_shot_profile_.empty()) add_profile_samples(few_shot_profile_, device, catalog, profile, few_shot_options_, extra);
    const auto runs =
        cm::share_few_shot(prior, rows, device, few_shot_n_, few_shot_seeds_, few_shot_options_, extra);
    const std::vector<cm::ShareGroup> groups = {cm::ShareGroup::kGemm, cm::ShareGroup::kConv, cm::ShareGroup::kNorm,
                                                cm::ShareGroup::kElementwise};
    std::cout << fmt::format("{} rows of {} ({}); zero-shot MAPE {:.1f} %\n\n", rows.size(), device.name,
                             few_shot_input_, cm::score_share_table(prior, rows).latency.mape_percent());
    std::cout << "| seed | samples | MAPE % (other rows) | GEMM | conv | ln/softmax | elementwise | host overhead us | "
                 "host floor us | share multipliers (at the samples' median roofline time; slope per decade) |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n";
    for (const auto& run : runs) {
      const auto by_group = cm::latency_by_group(run.score);
      std::string cells, multipliers;
      for (auto g : groups) {
        const auto c = by_group.find(g);
        cells += c != by_group.end() && c->second.count ? fmt::format(" {:.1f} |", c->second.mape_percent()) : " |";
      }
      for (const auto& u : run.scalars.shares)
        multipliers += fmt::format("{}{} x{:.3g} {:+.2f}", multipliers.empty() ? "" : "; ", u.label,
                                   std::pow(10.0, u.multiplier.log10_at_centre), u.multiplier.slope);
      if (!run.scalars.kernel_classes.empty())
        multipliers += fmt::format("; {} GEMM kernel class{} of its own", run.scalars.kernel_classes.size(),
                                   run.scalars.kernel_classes.size() == 1 ? "" : "es");
      std::cout << fmt::format("| {} | {} | {:.1f} |{} {:.1f} | {:.1f} | {} |\n", run.seed, run.samples,
                               run.score.latency.mape_percent(), cells, run.scalars.host_overhead_ms * 1e3,
                               run.scalars.host_floor_ms * 1e3, multipliers);
      for (const auto& note : run.scalars.notes) std::cerr << fmt::format("seed {}: {}\n", run.seed, note);
    }
    const cm::FewShotSummary summary = cm::summarize(runs);
    std::string group_means;
    for (const auto& [g, m] : summary.group_mean)
      group_means += fmt::format("{}{} {:.1f}", group_means.empty() ? "" : ", ", cm::to_string(g), m);
    std::cout << fmt::format("\nfew-shot {} samples on {}: MAPE of the other rows {:.1f} % (mean of {} seeds; {:.1f}-{:.1f}; {})\n",
                             few_shot_n_, device.name, summary.mean, runs.size(), summary.min, summary.max, group_means);
    if (summary.kernel_runs) {  // rows with a Kernel Time: the predicted kernel time against it
      std::string kernel_means;
      for (const auto& [g, m] : summary.kernel_group_mean)
        kernel_means += fmt::format("{}{} {:.1f}", kernel_means.empty() ? "" : ", ", cm::to_string(g), m);
      std::cout << fmt::format("few-shot {} samples on {}: Kernel Time MAPE of the other rows {:.1f} % (mean of {} "
                               "seeds; {:.1f}-{:.1f}; {})\n",
                               few_shot_n_, device.name, summary.kernel_mean, summary.kernel_runs, summary.kernel_min,
                               summary.kernel_max, kernel_means);
    }
    return 0;
  }

  // Loading checks the file as it is (a version 5 file without the header checksum field by
  // field); saving writes this build's format. The figures and weights are the same.
  int upgrade() {
    require_torch("costmodel upgrade");
    check_output_path(upgrade_output_, {model_path_}, force_);
    write_model(cm::LearnedModel::load(model_path_), upgrade_output_);
    std::cout << fmt::format("wrote {} (from {})\n", upgrade_output_, model_path_);
    return 0;
  }

  int adapt(const cm::DeviceCatalog& catalog, Logger& log) {
    require_torch("costmodel adapt");
    const cm::DeviceSpec& device = catalog.get(adapt_device_);
    check_output_path(adapt_output_, {model_path_, adapt_samples_}, force_);
    const auto samples = cm::load_samples_of(adapt_samples_, catalog, device);
    std::string data = adapt_data_;
    if (data.empty()) {
      data = resource_paths().data_dir;
      if (!std::filesystem::exists(data)) {
        data = cm::test_subset_dir();
        log.warn("shared training data not found; mixing in the bundled subset " + data);
      }
    }
    auto model = cm::LearnedModel::load(model_path_);
    if (const cm::DevicePricing p = model.pricing_of(device); p.kind != cm::DevicePricing::kUnseen)
      throw InputError(model_path_, device.name,
                       (p.kind == cm::DevicePricing::kTrained
                            ? std::string("the model was trained on this GPU")
                            : "the model prices it with the identity of " + p.as + ", a GPU it was trained on with " +
                                  (p.kind == cm::DevicePricing::kTwin ? "the same datasheet figures" : "the same chip")) +
                           "; adapt is for a GPU it has not seen (to correct a known GPU by measured ops, use "
                           "--samples / --device-samples)");
    const auto replay = cm::load_measurements(data, catalog);
    const std::vector<const cm::Measurement*> target = cm::all_rows(samples);
    std::vector<const cm::Measurement*> mix;
    for (const auto& m : replay)
      if (m.device != &device) mix.push_back(&m);
    const auto t0 = std::chrono::steady_clock::now();
    model.fine_tune(target, mix, options_.few_shot, log);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    model.set_provenance(model.provenance() + " (" + device.name + ", " + adapt_samples_ + ")");
    write_model(model, adapt_output_);
    std::cout << fmt::format("wrote {}: fine-tuned on {} samples of {} ({:.1f} s); use it with --model/--costmodel, "
                             "and the same samples as --samples/--device-samples\n",
                             adapt_output_, samples.size(), device.name, s);
    return 0;
  }

  int predict(const cm::DeviceCatalog& catalog, Logger& /*log*/) {
    if (!profile_path_.empty())
      throw OptionError("--device-profile", profile_path_, "needs --pricer roofline-share (the learned model reads no profile)");
    const cm::DeviceSpec& device = catalog.get(device_);
    if (!output_.empty()) check_output_path(output_, {predict_input_, samples_path_, model_path_}, force_);
    const cm::CsvTable table = cm::read_csv_file(predict_input_);
    std::optional<cm::LearnedModel> model;
    if (cm::LearnedModel::available()) model = cm::LearnedModel::load(model_path_);
    const cm::TablePrices prices =
        cm::price_table(table, predict_input_, catalog, device, model ? &*model : nullptr, samples_path_);
    write_predictions(table, prices);
    const std::string pricing = model && prices.learned ? cm::pricing_note(*model, device) : "";
    std::cerr << fmt::format("{} on {}{}: {} learned{}, {} roofline{}, {} not describable (empty)\n",
                             count_of(prices.ops.size(), "row"), device.name, pricing, prices.learned,
                             prices.corrected_by ? fmt::format(" (corrected by {} measured samples where the model "
                                                               "did not use the row's own kernel)", prices.corrected_by)
                                                 : "",
                             prices.roofline, model ? "" : " (" + cm::LearnedModel::unavailable_reason() + ")",
                             prices.none);
    if (const auto error = cm::error_against_latency(table, prices)) {
      const std::string measured = latency_note(*error, prices.has_device_column, device);
      if (!measured.empty()) std::cerr << measured << "\n";
    }
    if (const auto error = model ? cm::error_against_kernel_time(table, prices) : std::nullopt) {
      const std::string measured = latency_note(*error, prices.has_device_column, device, "Kernel Time",
                                                fmt::format(", the learned latency less its overhead of {:.4g} ms",
                                                            model->measurement_overhead_ms(device, true)));
      if (!measured.empty()) std::cerr << measured << "\n";
    }
    return 0;
  }

  // predict --pricer roofline-share: the latency in predicted_ms; MAPE against the Latency and
  // the Kernel Time columns (the kernel time predicted for the latter).
  int predict_by_shares(const cm::DeviceCatalog& catalog) {
    const cm::DeviceSpec& device = catalog.get(device_);
    if (!output_.empty())
      check_output_path(output_, {predict_input_, shares_path_, samples_path_, profile_path_}, force_);
    const cm::CsvTable table = cm::read_csv_file(predict_input_);
    cm::ShareTable shares = cm::load_share_table(shares_path_);
    std::vector<const cm::Measurement*> fit_on;
    cm::ProfileSamples profile;
    cm::DeviceFitOptions fit_options;
    if (!profile_path_.empty()) add_profile_samples(profile_path_, device, catalog, profile, fit_options, fit_on);
    std::vector<cm::Measurement> samples;
    if (!samples_path_.empty()) {
      samples = cm::load_samples_of(samples_path_, catalog, device);
      for (const auto* m : cm::all_rows(samples)) fit_on.push_back(m);
    }
    if (!fit_on.empty()) {
      const cm::DeviceScalars scalars = cm::fit_device_scalars(shares, fit_on, device, fit_options);
      const std::string from = samples_path_.empty()   ? profile_path_
                               : profile_path_.empty() ? samples_path_
                                                       : samples_path_ + " + " + profile_path_;
      for (const auto& line : cm::describe(scalars)) std::cerr << from << ": " << line << "\n";
      shares = cm::with_device_scalars(shares, scalars);
    }
    const cm::TablePrices prices = cm::price_table_by_shares(table, predict_input_, catalog, device, shares);
    write_predictions(table, prices);
    std::cerr << fmt::format("{} on {}: {} roofline-share ({}), {} not priced (empty)\n",
                             count_of(prices.ops.size(), "row"), device.name, prices.by_shares, shares_path_,
                             prices.none);
    if (const auto error = cm::error_against_latency(table, prices)) {
      const std::string measured = latency_note(*error, prices.has_device_column, device);
      if (!measured.empty()) std::cerr << measured << "\n";
    }
    if (const auto error = cm::error_against_kernel_time(table, prices)) {
      const std::string measured =
          latency_note(*error, prices.has_device_column, device, "Kernel Time", ", the predicted kernel time");
      if (!measured.empty()) std::cerr << measured << "\n";
    }
    return 0;
  }

  int fit_shares(const cm::DeviceCatalog& catalog) {
    share_options_.host_floor = !no_host_floor_;
    share_options_.use_kernel_time = !shares_latency_only_;
    share_options_.family_host = !no_family_host_;
    share_options_.hold_large = !no_hold_large_;
    if (!shares_logo_) check_output_path(shares_output_, share_data_, force_);
    std::vector<cm::Measurement> rows;
    for (const std::string& path : share_data_) {
      auto more = cm::load_measurements(path, catalog);
      rows.insert(rows.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
    }
    std::vector<const cm::Measurement*> data;
    std::set<std::string> gpus, timed;
    for (const auto& m : rows) {
      data.push_back(&m);
      gpus.insert(m.device->name);
      if (m.kernel_ms > 0 && share_options_.use_kernel_time) timed.insert(m.device->name);
    }
    share_options_.gemm.tile = gemm_waves_.find("tile") != std::string::npos;
    share_options_.gemm.wave = gemm_waves_.find("wave") != std::string::npos;
    share_options_.gemm.conv_wave = gemm_waves_.find("conv") != std::string::npos;
    if (shares_logo_) {
      print_share_logo(cm::share_leave_one_gpu_out(data, share_options_, logo_blank_kernels_));
      return 0;
    }
    cm::ShareTable table = cm::fit_share_table(data, share_options_);
    table.provenance = fmt::format(
        "dpro-replay costmodel fit-shares --data {} --bucket-width {} --intensity-width {} --floor-margin {} --floor-quantile {} "
        "--min-rows {}{}{}{}: {} rows of {}{}",
        fmt::join(share_data_, " --data "), share_options_.bucket_width, share_options_.intensity_width, share_options_.floor_margin, share_options_.floor_quantile,
        share_options_.min_rows, std::string(no_host_floor_ ? " --no-host-floor" : "") + (no_hold_large_ ? " --no-hold-large" : ""),
        timed.empty() ? (shares_latency_only_ ? " --latency-only" : "")
                      : fmt::format(" --timed-floor-margin {}{}", share_options_.timed_floor_margin,
                                    no_family_host_ ? " --no-family-host" : ""),
        share_options_.gemm.any() ? fmt::format(" --gemm-waves {} --gemm-blocks-per-sm {} --gemm-exponent {}{}",
                                                share_options_.gemm.form(), share_options_.gemm.blocks_per_sm,
                                                share_options_.gemm.exponent,
                                                share_options_.gemm.likely_split_k ? " --gemm-likely-split-k" : "")
                                  : "",
        rows.size(), fmt::join(gpus, ", "),
        timed.empty() ? "" : fmt::format("; GPU time (Kernel Time) of {}", fmt::join(timed, ", ")));
    const std::string json = cm::share_table_to_json(table);
    write_output(shares_output_, [&](std::ostream& out) { out << json; }, force_);
    std::cerr << fmt::format("{}: {} op families fitted on {} rows of {} GPUs\n", shares_output_,
                             table.families.size(), rows.size(), gpus.size());
    return 0;
  }

  // Markdown: MAPE % per held-out GPU (latency; the kernel time where its rows have a Kernel
  // Time), then per op family (held-out GPUs pooled).
  static void print_share_logo(const std::map<std::string, cm::ShareScore>& logo) {
    bool kernel = false;
    for (const auto& [gpu, s] : logo) kernel = kernel || s.kernel.count > 0;
    const auto cell = [](const cm::MapeCell& c) { return c.count ? fmt::format("{:.1f}", c.mape_percent()) : std::string("-"); };
    std::cout << (kernel ? "| held-out GPU | rows | roofline-share latency MAPE % | rows with a Kernel Time | kernel time MAPE % |\n"
                           "|---|---:|---:|---:|---:|\n"
                         : "| held-out GPU | rows | roofline-share latency MAPE % |\n|---|---:|---:|\n");
    double sum = 0;
    std::map<std::string, cm::MapeCell> families, kernel_families;
    for (const auto& [gpu, s] : logo) {
      std::cout << fmt::format("| {} | {} | {:.1f} |", gpu, s.latency.count, s.latency.mape_percent())
                << (kernel ? fmt::format(" {} | {} |", s.kernel.count, cell(s.kernel)) : "") << "\n";
      sum += s.latency.mape_percent();
      for (const auto& [family, c] : s.latency_by_family) {
        families[family].sum_ape += c.sum_ape;
        families[family].count += c.count;
      }
      for (const auto& [family, c] : s.kernel_by_family) {
        kernel_families[family].sum_ape += c.sum_ape;
        kernel_families[family].count += c.count;
      }
    }
    std::cout << fmt::format("| **mean of the GPUs** | | **{:.1f}** |{}\n\n", logo.empty() ? 0.0 : sum / logo.size(),
                             kernel ? " | |" : "");
    std::cout << (kernel ? "| op family | rows | roofline-share latency MAPE % | kernel time MAPE % |\n|---|---:|---:|---:|\n"
                         : "| op family | rows | roofline-share latency MAPE % |\n|---|---:|---:|\n");
    for (const auto& [family, c] : families) {
      const auto k = kernel_families.find(family);
      std::cout << fmt::format("| {} | {} | {:.1f} |", family, c.count, c.mape_percent())
                << (kernel ? fmt::format(" {} |", k == kernel_families.end() ? "-" : cell(k->second)) : "") << "\n";
    }
  }

  // "against the Latency column (N rows measured on GPU): MAPE x % (family y, ...)".
  static std::string latency_note(const cm::LatencyError& e, bool has_device_column, const cm::DeviceSpec& device,
                                  const std::string& column = "Latency", const std::string& what = "") {
    if (!e.all.count && !e.not_a_time) return "";
    std::string families;
    for (const auto& [family, cell] : e.by_family)
      families += fmt::format("{}{} {:.1f}", families.empty() ? "" : ", ", family, cell.mape_percent());
    return fmt::format("against the {} column ({} measured on {}{}{}): MAPE {:.1f} %{}{}", column,
                       count_of(e.all.count, "row"), device.name, what,
                       has_device_column ? "" : ", taken as such: the file has no Device column", e.all.mape_percent(),
                       families.empty() ? "" : " (" + families + ")",
                       e.not_a_time ? fmt::format("; {} left out ({} not a time in milliseconds)",
                                                  count_of(e.not_a_time, "row"), column)
                                    : "");
  }

  // As every output: through a temporary file renamed into place (output_file.h).
  void write_model(const cm::LearnedModel& model, const std::string& path) const {
    const std::string bytes = model.serialise();
    write_output(path, [&](std::ostream& out) { out << bytes; }, force_);
  }

  // `predict`'s output: the input's rows with a predicted_ms column (the latency) and, with
  // --kernel-column or where the input has one, a predicted_kernel_ms column; empty cells where an
  // op has no price. A file that has the columns (an earlier predict's output) gets their values
  // replaced, not second ones.
  void write_predictions(const cm::CsvTable& table, const cm::TablePrices& prices) const {
    const int latency_col = table.column("predicted_ms"), kernel_col = table.column("predicted_kernel_ms");
    const bool kernel = kernel_column_ || kernel_col >= 0;
    for (const int col : {latency_col, kernel ? kernel_col : -1})
      if (col >= 0) std::cerr << fmt::format("{}: replacing the values of its {} column\n", predict_input_, table.header[col]);
    auto cell = [](double ms) { return std::isfinite(ms) ? fmt::format("{:.6g}", ms) : std::string(); };
    std::vector<std::string> header = with_column(table.header, latency_col, "predicted_ms");
    if (kernel) header = with_column(std::move(header), kernel_col, "predicted_kernel_ms");  // -1: after predicted_ms
    std::string out = cm::format_csv_row(header) + "\n";
    for (size_t i = 0; i < prices.ms.size(); ++i) {
      std::vector<std::string> row = with_column(table.rows[i], latency_col, cell(prices.ms[i]));
      if (kernel) row = with_column(std::move(row), kernel_col, cell(prices.kernel_ms[i]));
      out += cm::format_csv_row(row) + "\n";
    }
    write_output(output_.empty() ? "-" : output_, [&](std::ostream& stream) { stream << out; }, force_);
  }

  // `row` with `value` in column `at`, or appended when `at` is -1.
  static std::vector<std::string> with_column(std::vector<std::string> row, int at, std::string value) {
    if (at >= 0) row[at] = std::move(value);
    else row.push_back(std::move(value));
    return row;
  }
  static void require_torch(const char* command) {
    if (!cm::LearnedModel::available()) throw InputError("", command, cm::LearnedModel::unavailable_reason());
  }

  CLI::App* app_ = nullptr;
  CLI::App* train_ = nullptr;
  CLI::App* eval_ = nullptr;
  CLI::App* predict_ = nullptr;
  CLI::App* devices_ = nullptr;
  CLI::App* pick_ = nullptr;
  CLI::App* adapt_ = nullptr;
  CLI::App* retime_ = nullptr;
  CLI::App* upgrade_ = nullptr;
  CLI::App* fit_shares_ = nullptr;
  CLI::App* few_shot_ = nullptr;
  std::string pick_pricer_ = "learned", pick_device_, few_shot_device_, few_shot_input_, few_shot_shares_;
  std::uint64_t pick_seed_ = 1;
  std::size_t few_shot_n_ = 50;
  std::vector<std::uint64_t> few_shot_seeds_;
  cm::DeviceFitOptions few_shot_options_;
  bool few_shot_latency_only_ = false;
  std::string pricer_ = "learned", shares_path_, shares_output_;
  bool shares_logo_ = false, no_host_floor_ = false, logo_blank_kernels_ = false, shares_latency_only_ = false,
       no_family_host_ = false, no_hold_large_ = false, kernel_column_ = false;
  std::vector<std::string> share_data_;
  std::string gemm_waves_ = "none";
  cm::ShareFitOptions share_options_;
  // Each subcommand has its own variables: CLI11 writes default values at declaration.
  std::string device_dir_, model_path_, data_, model_output_, predict_input_, output_, device_,
      markdown_out_, json_out_;
  bool verbose_ = false, quiet_ = false, all_rows_ = false, retrain_ = false, no_logo_ = false, no_split_ = false;
  std::string profile_path_, few_shot_profile_;
  std::string samples_path_, pick_input_, pick_output_, adapt_device_, adapt_samples_, adapt_data_, adapt_output_;
  std::string retime_origin_, retime_target_, retime_json_, upgrade_output_, retime_pricer_ = "learned";
  int pick_count_ = 200;
  bool force_ = false;
  cm::EvalOptions options_;
};

}  // namespace

std::unique_ptr<Command> make_costmodel_command() { return std::make_unique<CostModelCommand>(); }

}  // namespace dpro::cli
