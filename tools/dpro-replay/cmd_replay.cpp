#include "cmd_replay.h"

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>

#include "core/error.h"
#include "core/json_fields.h"
#include "core/log.h"
#include "costmodel/hw.h"
#include "costmodel/op_desc_from_graph.h"
#include "optimizer/plan.h"
#include "optimizer/tolerances.h"
#include "optimizer/search.h"
#include "optimizer/space.h"
#include "output_file.h"
#include "replayer/advice.h"
#include "replayer/replay.h"
#include "replayer/step_stats.h"
#include "replayer/tables.h"
#include "replayer/timeline.h"
#include "trace/loader.h"
#include "trace/record_cost.h"
#include "render_whatif.h"
#include "report_html/html_report.h"
#include "whatif/evaluate.h"
#include "whatif_flags.h"

namespace dpro::cli {
namespace {

class ReplayCommand final : public Command {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    CLI::App* sub = parent.add_subcommand(
        "replay",
        "Replay the traces of one job (files, or a directory with one file per rank) and report measured vs\n"
        "predicted ProfilerStep times per rank and for the job, the critical path and a time breakdown\n"
        "(traces without ProfilerStep#N: of the whole trace).");
    sub->add_option("traces", traces_, "trace files (.json, .json.gz, .dpro) or directories of them")->required();
    sub->add_option("--iteration", iteration_, "report only iteration N (ProfilerStep#N, or the N-th --iteration-marker); --timeline then\n"
                    "holds that iteration's window only");
    sub->add_option("--iteration-marker", iteration_marker_,
                    "a CPU annotation or operator whose occurrences are the iterations, instead of\n"
                    "ProfilerStep#N (a record_function or NVTX range such as 'train_step'; '*' matches any characters)");
    sub->add_option("--json", json_path_,
                    "also write the report as JSON to this file ('-' = stdout, no text report; a name ending in .gz\n"
                    "is gzip-compressed)");
    sub->add_option("--timeline", timeline_path_,
                    "write the simulated timeline as Chrome/Perfetto JSON to this file ('-' = stdout, no text\n"
                    "report; a name ending in .gz is gzip-compressed)");
    sub->add_option("--html", html_path_,
                    "also write the report as one self-contained HTML page to this file (verdicts, breakdown and\n"
                    "step-time charts, top ops, the tables; with a what-if or --plan, baseline and prediction side by side)");
    sub->add_option("--top", top_ops_, "how many ops of the critical path to list (0 to 1000000)")
        ->default_val(10)
        ->check(CLI::Range(0, 1000000));
    sub->add_option("--table", tables_,
                    "also print tables, comma-separated (docs/replay.md): gpu_ops (kernels, copies, sets by name and\n"
                    "rank: count, time per iteration, measured, longest, share), collectives (op, bytes, replayed\n"
                    "transfer, measured time with waiting, NCCL bus bandwidth), operators (CPU ops: count, self and\n"
                    "total time, GPU time launched, shapes), overlap (communication vs computation: exposed, hidden),\n"
                    "idle (GPU idle by cause: host wait, kernel wait, peer wait, other), memory (peak allocated and\n"
                    "reserved per rank and step), phases (forward / backward / optimizer and other step annotations:\n"
                    "CPU span, GPU time). With a what-if, the what-if's tables follow. --json then holds them under\n"
                    "\"tables\"; --per-step adds a line per step to overlap, idle and phases")
        ->delimiter(',');  // names checked in check_option_combinations: one line, exit 2
    sub->add_option("--csv", csv_path_, "write the one --table asked for as CSV to this file (of the what-if's replay with a what-if)");
    sub->add_flag("--per-step", per_step_,
                  "a block per iteration in the text report also when there are more than 3 (by default: a summary\n"
                  "across them: step-time statistics, warm-up and outliers, mean critical path, top ops)");
    sub->add_flag("--allow-partial", allow_partial_,
                  "accept a multi-rank set that lacks some ranks (their collectives keep measured durations)");
    sub->add_flag("--force", force_, "overwrite existing output files");
    sub->add_flag("-q,--quiet", quiet_, "print nothing but errors: no text report, no warnings (--json and --timeline files\n"
                                     "are still written)");
    sub->add_flag("-v,--verbose", verbose_, "print progress and graph details on stderr");
    sub->add_flag("--debug", debug_, "also print every inferred dependency that the measured times contradict");
    CLI::Option* keep = sub->add_flag(
        "--keep-profiler-cost", keep_profiler_cost_,
        "keep CPU-side durations as recorded; by default the cost of the profiler's records that a trace's\n"
        "calibration gives (dpro-profile measures it at start) is taken out of them before the replay");
    sub->add_option("--profiler-cost", profiler_cost_,
                    "what each profiler record cost the traced job's host, for traces without a calibration (or\n"
                    "replacing its classes): CLASS=TIME,... with classes runtime, driver (API call records),\n"
                    "kernel, memcpy, memset, sync (activity records, paid by the call that caused them), cpu_op;\n"
                    "e.g. runtime=2.2us,kernel=2us")
        ->excludes(keep);
    sub->add_option("--plan", plan_path_,
                    "apply a plan written by `dpro-replay optimize --plan-out` as the what-if (its decisions under\n"
                    "the conditions it was searched for; no other what-if flag)");
    whatifs_.add_to(*sub);
    command_ = sub;
    return sub;
  }

  int run() override {
    Logger log(quiet_ ? LogLevel::kError : debug_ ? LogLevel::kDebug : verbose_ ? LogLevel::kInfo : LogLevel::kWarning);
    check_option_combinations();
    graph::ProfilerCostOptions profiler_cost;  // checked before the traces load
    profiler_cost.keep = keep_profiler_cost_;
    if (command_->get_option("--profiler-cost")->count() > 0)
      profiler_cost.given = trace::parse_record_costs(profiler_cost_, "profiler_cost");
    if (!csv_path_.empty() && tables_.size() != 1)
      throw InputError("", "--csv", "writes one table: give exactly one --table");
    check_output_paths({{"--json", json_path_}, {"--timeline", timeline_path_}, {"--csv", csv_path_}, {"--html", html_path_}},
                       command_line_values(*command_, {"--json", "--timeline", "--csv", "--html"}), force_);
    trace::LoadOptions load;
    load.allow_partial = allow_partial_;
    load.iteration_marker = iteration_marker_;
    if (!quiet_ && isatty(STDERR_FILENO)) {
      load.progress = [](std::size_t index, std::size_t total, const std::string& file) {
        if (index < total) std::fprintf(stderr, "\rloading traces: %zu/%zu %s\033[K", index + 1, total, file.c_str());
        else std::fprintf(stderr, "\rloaded %zu trace file(s)\033[K\n", total);
      };
    }
    const auto t0 = std::chrono::steady_clock::now();
    const auto traces_ptr = std::make_shared<const trace::TraceSet>(trace::load_traces(traces_, load, log));
    const trace::TraceSet& traces = *traces_ptr;
    const auto t1 = std::chrono::steady_clock::now();
    log.info(fmt::format("loaded {} rank(s) in {:.3f} s", traces.ranks.size(), std::chrono::duration<double>(t1 - t0).count()));

    replayer::ReplayOptions options;
    options.profiler_cost = profiler_cost;
    options.report.iteration = iteration_;
    options.report.top_ops = top_ops_;
    options.report.per_step = per_step_;
    replayer::Replay baseline = replayer::replay_traces(traces, options, log);
    log.info(fmt::format("replayed {} ops in {:.3f} s", baseline.report.nodes, baseline.report.replay_seconds));
    warn_zero_length_steps(baseline.report, log);

    std::optional<whatif::Evaluation> whatif = run_whatifs(traces_ptr, baseline, options, log);
    const std::optional<whatif::Unmoved> unmoved =
        whatif ? whatif::why_unmoved(baseline.graph.dfg, baseline.report, whatif->workload.graph.dfg, whatif->report)
               : std::nullopt;
    if (unmoved) {
      log.info(unmoved_note(*unmoved));
      whatif->report.notes.push_back(unmoved_note(*unmoved));
    }

    // The baseline's tables always: the advice reads some of them; every one where they are shown.
    const bool show_tables = !tables_.empty() || !html_path_.empty();
    std::optional<replayer::Tables> base_tables =
        replayer::make_tables(traces, baseline.graph, baseline.simulation, baseline.report,
                              show_tables ? std::vector<std::string>{} : replayer::advice_tables());
    std::optional<replayer::Tables> whatif_tables;
    const std::vector<replayer::Advice> advice =
        replayer::advise(baseline.report, replayer::step_stats(baseline.report), *base_tables);
    if (show_tables) {
      if (whatif)
        whatif_tables = replayer::make_tables(*whatif->workload.traces, whatif->workload.graph, whatif->simulation, whatif->report);
    }
    const bool stdout_is_json = json_path_ == "-" || timeline_path_ == "-" || csv_path_ == "-" || html_path_ == "-";
    if (!stdout_is_json && !quiet_) {
      std::cout << replayer::render_text(baseline.report);
      if (!tables_.empty()) std::cout << "\n" << render_tables(*base_tables);
      if (whatif) std::cout << "\n" << render_comparison(baseline.report, whatif->report);
      if (whatif_tables && !tables_.empty()) std::cout << "\nwhat-if:\n" << render_tables(*whatif_tables);
      if (!advice.empty()) std::cout << "\n" << replayer::render_advice(advice);
    }
    flush_stdout();  // a text report that went nowhere is an error, not exit 0
    if (!json_path_.empty()) {
      nlohmann::json j = replayer::to_json(baseline.report);
      j["provenance"]["dpro_version"] = DPRO_VERSION;
      if (!tables_.empty()) j["tables"] = replayer::to_json(*base_tables);
      j["advice"] = replayer::to_json(advice);
      if (whatif) {
        j["whatif"] = replayer::to_json(whatif->report);
        for (const whatif::Change& change : whatif->changes) j["whatif"]["changes"][key(change)] = details(change);
        j["whatif"]["gpu_work_after_step"] = to_json(whatif->gpu_work_after_steps);
        if (unmoved) j["whatif"]["unmoved"] = to_json(*unmoved);
        if (whatif_tables && !tables_.empty()) j["whatif"]["tables"] = replayer::to_json(*whatif_tables);
      }
      write_output(json_path_, [&](std::ostream& out) { out << dump_output_json(j, 2) << "\n"; }, force_);
    }
    if (!html_path_.empty()) write_html(baseline.report, *base_tables, advice, whatif ? &whatif->report : nullptr, whatif_tables);
    if (!csv_path_.empty()) {
      const replayer::Tables& t = whatif_tables ? *whatif_tables : *base_tables;
      const std::string csv = replayer::table_csv(t, tables_.front());
      write_output(csv_path_, [&](std::ostream& out) { out << csv; }, force_);
    }
    if (!timeline_path_.empty()) {
      // With a what-if, the baseline and the what-if side by side; --iteration N: that step's
      // window of each.
      auto window_of = [&](const replayer::Report& r) -> std::optional<std::pair<Nanos, Nanos>> {
        if (iteration_ && r.iterations.size() == 1) return replayer::predicted_window(r.iterations.front());
        return std::nullopt;
      };
      // Each GPU op's type (costmodel::kernel_types) as its op_type arg.
      using Types = IdVector<graph::NodeId, std::optional<costmodel::KernelType>>;
      auto type_of = [](std::shared_ptr<const Types> types) {
        return [types](graph::NodeId id) -> std::string_view {
          const auto& t = (*types)[id];
          return t ? costmodel::to_string(*t) : "";
        };
      };
      std::vector<replayer::TimelineView> views;
      views.push_back({&traces, &baseline.graph, &baseline.simulation, whatif ? "baseline" : "predicted", window_of(baseline.report),
                       type_of(std::make_shared<const Types>(costmodel::kernel_types(traces, baseline.graph.dfg)))});
      if (whatif)
        views.push_back({whatif->workload.traces.get(), &whatif->workload.graph, &whatif->simulation, "what-if", window_of(whatif->report),
                         type_of(std::make_shared<const Types>(
                             costmodel::kernel_types(*whatif->workload.traces, whatif->workload.graph.dfg)))});
      write_output(timeline_path_, [&](std::ostream& out) { replayer::write_timeline(out, views); }, force_);
      log.info("timeline written to " + timeline_path_ + " (open it in ui.perfetto.dev)");
    }
    return 0;
  }

 private:
  // The what-ifs the flags ask for, replayed on a copy of the baseline's graph; their summaries
  // and warnings join the report's notes.
  std::optional<whatif::Evaluation> run_whatifs(const std::shared_ptr<const trace::TraceSet>& traces,
                                                const replayer::Replay& baseline,
                                                const replayer::ReplayOptions& options, Logger& log) const {
    std::optional<optimizer::Plan> plan;
    std::vector<whatif::Rewrite> rewrites;
    if (!plan_path_.empty()) {
      plan = optimizer::read_plan(plan_path_);
      optimizer::check_plan_matches(*plan, baseline.graph, plan_path_);
      optimizer::check_plan_tolerances(*plan, baseline.graph, *traces, plan_path_);
      rewrites = optimizer::condition_rewrites(plan->conditions, whatifs_.paths());
      try {
        for (whatif::Rewrite& r : optimizer::decision_rewrites(plan->conditions, plan->decisions, whatifs_.paths()))
          rewrites.push_back(std::move(r));
      } catch (const OptionError& e) {
        throw optimizer::plan_decision_error(plan_path_, e);
      }
    } else {
      rewrites = whatifs_.rewrites();
    }
    if (rewrites.empty() && !plan) return std::nullopt;
    whatif::EvaluateOptions evaluate;
    evaluate.report = options.report;
    evaluate.on_applied = [&](const whatif::Change& change) {
      log_warnings(change, log);
      log.info(summary(change));
    };
    replayer::Simulator simulator;
    whatif::Evaluation e;
    try {
      e = whatif::evaluate({traces, baseline.graph}, rewrites, simulator, evaluate);
    } catch (const OptionError& err) {
      // A partition's boundaries are checked against the job's steps only when applied.
      if (!plan || err.option() != "partition") throw;
      throw InputError(plan_path_, "decisions: partition " + err.value(), err.message());
    }
    for (const whatif::Change& change : e.changes) e.report.notes.push_back(summary(change));
    if (plan) {
      e.report.notes.push_back(fmt::format(
          "plan {}: {} decision(s); predicted median step {} (the plan file says {}; baseline under its conditions {})",
          plan_path_, plan->decisions.size(), format_duration(optimizer::median_step(e.report)),
          format_duration(plan->step_ns), format_duration(plan->baseline_ns)));
      for (const optimizer::Decision& d : plan->decisions) e.report.notes.push_back("  " + optimizer::describe(d));
    }
    if (const std::string warning = gpu_work_warning(e.gpu_work_after_steps); !warning.empty()) {
      log.warn(warning);
      e.report.notes.push_back("Warning: " + warning + ".");
    }
    return e;
  }

  // An option that only changes another one's work does nothing alone: an error rather than a
  // silently ignored flag. (--costmodel and --device-specs have defaults: only a given one counts.)
  void check_option_combinations() const {
    const std::vector<std::string>& names = replayer::table_names();
    for (const std::string& name : tables_) {
      if (std::find(names.begin(), names.end(), name) != names.end()) continue;
      std::string known;
      for (const std::string& n : names) known += (known.empty() ? "" : ", ") + n;
      throw InputError("", "--table " + name, "no such table; the tables are " + known);
    }
    auto given = [&](const char* name) {
      const CLI::Option* o = command_->get_option_no_throw(name);
      DPRO_CHECK(o);  // the table below names only options of this command
      return o->count() > 0;
    };
    static const std::vector<std::pair<const char*, std::vector<const char*>>> kNeeds = {
        {"--origin-cluster", {"--cluster", "--set", "--ranks", "--bucket-mb", "--compress"}},
        {"--clusters-dir", {"--cluster", "--set", "--ranks", "--bucket-mb", "--compress"}},
        {"--comm-sizes", {"--cluster", "--set", "--ranks", "--bucket-mb", "--compress"}},
        {"--origin-device", {"--device"}},
        {"--device-samples", {"--device"}},
        {"--origin-samples", {"--device"}},
        {"--costmodel", {"--device"}},
        {"--device-specs", {"--device", "--compress", "--precision-dtype"}},
        {"--precision-classes", {"--precision-dtype"}},
        {"--device-profile", {"--device", "--precision-dtype", "--compress", "--plan"}},
    };
    for (const auto& [option, needs] : kNeeds) {
      if (!given(option) || std::any_of(needs.begin(), needs.end(), given)) continue;
      std::string names;
      for (std::size_t i = 0; i < needs.size(); ++i)
        names += (i == 0 ? "" : i + 1 == needs.size() ? " or " : ", ") + std::string(needs[i]);
      throw InputError("", option, "does nothing without " + names + " (the what-if it belongs to)");
    }
    if (given("--iteration-marker") && iteration_marker_.empty())
      throw InputError("", "--iteration-marker", "empty: name the annotation or operator that marks the iterations");
    check_device_names();
    if (given("--plan") && whatifs_.any())
      throw InputError("", "--plan", "a plan carries its own what-if conditions: give no other what-if flag with it");
  }

  // The device names, checked before the traces load (the what-if checks them again when it runs).
  void check_device_names() const {
    if (device_option("--device").empty()) return;
    const auto catalog = costmodel::DeviceCatalog::load_directory(device_option("--device-specs"));
    for (const auto& [flag, option] : {std::pair{"--device", "device"}, std::pair{"--origin-device", "origin_device"}})
      if (const std::string name = device_option(flag); !name.empty()) catalog.get(name, option);
  }
  std::string device_option(const char* name) const {
    const CLI::Option* o = command_->get_option(name);
    return o->count() > 0 || !o->get_default_str().empty() ? o->as<std::string>() : std::string();
  }

  // A ProfilerStep of length 0 (a broken or hand-edited trace) gives no time to compare
  // against: said here, and refused as the base of `compare`.
  static void warn_zero_length_steps(const replayer::Report& report, Logger& log) {
    std::string steps;
    for (const auto& it : report.iterations) {
      if (it.whole_trace) continue;
      for (const auto& r : it.ranks)
        if (r.measured_ns == 0) steps += fmt::format("{}{} on rank {}", steps.empty() ? "" : ", ", it.name, r.rank);
    }
    if (!steps.empty())
      log.warn("measured step length 0 ns: " + steps +
               "; its times are no iteration time (a `compare` against a job time of 0 is refused)");
  }

  void write_html(const replayer::Report& base, const replayer::Tables& base_tables, const std::vector<replayer::Advice>& advice,
                  const replayer::Report* prediction, const std::optional<replayer::Tables>& prediction_tables) const {
    report_html::HtmlReport page;
    page.advice = advice;
    page.title = "dpro replay report";
    page.top = top_ops_;
    page.baseline = {"baseline: replay of the trace as measured", &base, replayer::to_json(base_tables)};
    if (prediction) {
      page.prediction = report_html::ReportView{plan_path_.empty() ? "what-if: predicted" : "plan " + plan_path_ + ": predicted",
                                                prediction, std::nullopt};
      if (prediction_tables) page.prediction->tables = replayer::to_json(*prediction_tables);
    }
    write_output(html_path_, [&](std::ostream& out) { out << report_html::render_html(page); }, force_);
  }

  std::string render_tables(const replayer::Tables& t) const {
    std::string out;
    for (const std::string& name : tables_)
      out += replayer::render_table(t, name, top_ops_, per_step_);
    return out;
  }

  std::string render_comparison(const replayer::Report& base, const replayer::Report& whatif) const {
    std::string out = "what-if: baseline (replay of the trace as measured) vs predicted\n";
    if (whatif.iterations.size() > 1) {
      const replayer::StepStats b = replayer::step_stats(base), w = replayer::step_stats(whatif);
      const replayer::SteadyChange c = replayer::steady_change(base, b, whatif);
      const Nanos from = c.baseline_median, to = c.whatif_median;
      out += fmt::format("  median step over the baseline's {} steady iterations: {} -> {} ({:+.2f}%); over all {}: {} -> {}\n",
                         c.steps, format_duration(from), format_duration(to),
                         100.0 * static_cast<double>(to - from) / static_cast<double>(std::max<Nanos>(1, from)),
                         w.iterations, format_duration(b.predicted.median), format_duration(w.predicted.median));
    }
    const bool blocks = per_step_ || whatif.iterations.size() <= replayer::kStepBlocks;
    for (const auto& it : whatif.iterations) {
      if (!blocks) break;
      const auto b = std::find_if(base.iterations.begin(), base.iterations.end(),
                                  [&](const auto& x) { return x.number == it.number && x.whole_trace == it.whole_trace; });
      if (b == base.iterations.end()) continue;
      out += fmt::format("{}\n  {:>6}  {:>12}  {:>12}  {:>8}\n", it.name, "rank", "baseline", "what-if", "change");
      for (const auto& r : it.ranks) {
        const auto br = std::find_if(b->ranks.begin(), b->ranks.end(), [&](const auto& x) { return x.rank == r.rank; });
        if (br == b->ranks.end()) continue;
        out += fmt::format("  {:>6}  {:>12}  {:>12}  {:>+7.2f}%\n", r.rank, format_duration(br->predicted_ns),
                           format_duration(r.predicted_ns),
                           100.0 * static_cast<double>(r.predicted_ns - br->predicted_ns) / static_cast<double>(std::max<Nanos>(1, br->predicted_ns)));
      }
      out += fmt::format("  {:>6}  {:>12}  {:>12}  {:>+7.2f}%\n", "job", format_duration(b->job_predicted_ns),
                         format_duration(it.job_predicted_ns),
                         100.0 * static_cast<double>(it.job_predicted_ns - b->job_predicted_ns) /
                             static_cast<double>(std::max<Nanos>(1, b->job_predicted_ns)));
      out += "  critical path, baseline -> what-if:";
      for (int c = 0; c < replayer::kCategoryCount; ++c) {
        out += fmt::format(" {} {} -> {};", replayer::to_string(static_cast<replayer::Category>(c)),
                           format_duration(b->job_critical_path.by_category[c]),
                           format_duration(it.job_critical_path.by_category[c]));
      }
      out += "\n";
    }
    for (const std::string& note : whatif.notes) out += note + "\n";
    return out;
  }

  std::vector<std::string> traces_;
  std::optional<std::int64_t> iteration_;
  std::string iteration_marker_;
  std::string json_path_;
  std::string timeline_path_;
  std::string html_path_;
  std::size_t top_ops_ = 10;
  bool allow_partial_ = false;
  bool per_step_ = false;
  std::vector<std::string> tables_;
  std::string csv_path_;
  bool force_ = false;
  bool quiet_ = false;
  bool verbose_ = false;
  bool debug_ = false;
  bool keep_profiler_cost_ = false;
  std::string profiler_cost_;
  std::string plan_path_;
  WhatIfFlags whatifs_;
  CLI::App* command_ = nullptr;  // this subcommand: its option values name the inputs to protect
};

}  // namespace

std::unique_ptr<Command> make_replay_command() { return std::make_unique<ReplayCommand>(); }

}  // namespace dpro::cli
