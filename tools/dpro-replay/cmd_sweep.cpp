#include "cmd_sweep.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>

#include "core/error.h"
#include "core/json_fields.h"
#include "core/log.h"
#include "costmodel/csv.h"
#include "output_file.h"
#include "replayer/replay.h"
#include "replayer/step_stats.h"
#include "replayer/verdict.h"
#include "report_html/sweep_page.h"
#include "trace/loader.h"
#include "whatif/evaluate.h"
#include "whatif/sweep.h"
#include "whatif_flags.h"

namespace dpro::cli {
namespace {

using nlohmann::json;

std::string flag_of(const std::string& axis) {
  return axis == "device" ? "--device" : axis == "ranks" ? "--ranks" : "--set " + axis;
}

// The two categories of the critical path with the most time, as shares of the step.
std::string top_categories(const whatif::SweepRow& row) {
  Nanos total = 0;
  for (Nanos v : row.critical_path) total += v;
  std::vector<int> order;
  for (int c = 0; c < replayer::kCategoryCount; ++c) order.push_back(c);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return row.critical_path[a] > row.critical_path[b]; });
  std::string out;
  for (int k = 0; k < 2 && total > 0; ++k)
    out += fmt::format("{}{} {:.0f}%", k ? ", " : "", replayer::to_string(static_cast<replayer::Category>(order[k])),
                       100.0 * static_cast<double>(row.critical_path[order[k]]) / static_cast<double>(total));
  return out;
}

class SweepCommand final : public Command {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    CLI::App* sub = parent.add_subcommand(
        "sweep",
        "Predict the job at every combination of several settings in one run: --device A,B,C (GPUs),\n"
        "--ranks 8,16,64 (job sizes), --set KEY=V1,V2 (a cluster or host setting); one row per point with the\n"
        "median step over the baseline's steady iterations, its change, the verdict and where the critical\n"
        "path goes. Settings given one value apply to every point; the other what-if flags of `replay` too.");
    sub->add_option("traces", traces_, "trace files (.json, .json.gz, .dpro) or directories of them")->required();
    sub->add_option("--iteration-marker", iteration_marker_,
                    "a CPU annotation or operator whose occurrences are the iterations, instead of ProfilerStep#N");
    sub->add_option("--json", json_path_, "also write the table as JSON to this file ('-' = stdout, no text)");
    sub->add_option("--csv", csv_path_, "also write the table as CSV to this file ('-' = stdout, no text)");
    sub->add_option("--html", html_path_,
                    "also write one self-contained HTML page to this file: a chart of every point's median step\n"
                    "against the baseline (bars grouped by the first swept setting when there are several) and the table");
    sub->add_option("--max-points", max_points_, "refuse a sweep of more points than this (each is one what-if replay)")
        ->default_val(64)
        ->check(CLI::Range(1, 4096));
    sub->add_flag("--allow-partial", allow_partial_, "accept a multi-rank set that lacks some ranks");
    sub->add_flag("--force", force_, "overwrite existing output files");
    sub->add_flag("-q,--quiet", quiet_, "print nothing but errors (--json, --csv and --html files are still written)");
    whatifs_.add_to(*sub, WhatIfFlags::Flags::kSweep);
    command_ = sub;
    return sub;
  }

  int run() override {
    Logger log(quiet_ ? LogLevel::kError : LogLevel::kWarning);
    const std::vector<whatif::SweepAxis> axes = whatifs_.sweep_axes();
    if (axes.empty())
      throw InputError("", "sweep", "nothing to sweep: give one setting several values (--device A,B, --ranks 8,16, --set KEY=V1,V2)");
    std::vector<whatif::SweepPoint> points;
    try {
      points = whatif::sweep_grid(axes, max_points_);
    } catch (const OptionError& e) {
      throw InputError("", flag_of(e.value()), e.message() + (e.message().find("points") != std::string::npos
                                                                   ? " (--max-points raises the limit)" : ""));
    }
    check_output_paths({{"--json", json_path_}, {"--csv", csv_path_}, {"--html", html_path_}},
                       command_line_values(*command_, {"--json", "--csv", "--html"}), force_);
    for (const whatif::SweepPoint& p : points) whatifs_.at(p).rewrites();  // every point's flags checked before the replays

    trace::LoadOptions load;
    load.allow_partial = allow_partial_;
    load.iteration_marker = iteration_marker_;
    const auto traces = std::make_shared<const trace::TraceSet>(trace::load_traces(traces_, load, log));
    replayer::ReplayOptions options;
    const replayer::Replay baseline = replayer::replay_traces(*traces, options, log);
    const replayer::StepStats stats = replayer::step_stats(baseline.report);

    std::vector<whatif::SweepRow> rows;
    replayer::Simulator simulator;
    const bool progress = !quiet_ && isatty(STDERR_FILENO);
    for (std::size_t i = 0; i < points.size(); ++i) {
      if (progress) std::fprintf(stderr, "\rsweep: point %zu/%zu %s\033[K", i + 1, points.size(), label(points[i]).c_str());
      whatif::EvaluateOptions evaluate;
      evaluate.report = options.report;
      evaluate.on_applied = [&](const whatif::Change&) {};
      whatif::Evaluation e = whatif::evaluate({traces, baseline.graph}, whatifs_.at(points[i]).rewrites(), simulator, evaluate);
      rows.push_back(whatif::sweep_row(points[i], baseline.report, stats, e.report));
    }
    if (progress) std::fprintf(stderr, "\rsweep: %zu points replayed\033[K\n", points.size());

    const bool stdout_taken = json_path_ == "-" || csv_path_ == "-" || html_path_ == "-";
    if (!quiet_ && !stdout_taken) std::cout << render(axes, rows);
    flush_stdout();
    if (!json_path_.empty()) {
      json j = to_json(axes, rows, baseline.report);
      write_output(json_path_, [&](std::ostream& out) { out << dump_output_json(j, 2) << "\n"; }, force_);
    }
    if (!csv_path_.empty()) write_output(csv_path_, [&](std::ostream& out) { out << to_csv(axes, rows); }, force_);
    if (!html_path_.empty())
      write_output(html_path_, [&](std::ostream& out) { out << report_html::render_sweep_html(page_of(axes, rows, baseline.report)); },
                   force_);
    return 0;
  }

 private:
  static std::string label(const whatif::SweepPoint& p) {
    std::string out;
    for (const auto& [name, value] : p) out += fmt::format("{}{}={}", out.empty() ? "" : " ", name, value);
    return out;
  }

  static std::string render(const std::vector<whatif::SweepAxis>& axes, const std::vector<whatif::SweepRow>& rows) {
    std::string out = fmt::format("sweep of {} points", rows.size());
    if (!rows.empty())
      out += fmt::format(" (baseline: median step {} over its {} steady iteration(s))", format_duration(rows.front().baseline_ns),
                         rows.front().steps);
    out += "\n  ";
    std::vector<std::size_t> widths;
    for (const whatif::SweepAxis& a : axes) {
      std::size_t w = a.name.size();
      for (const std::string& v : a.values) w = std::max(w, v.size());
      widths.push_back(w);
      out += fmt::format("{:<{}}  ", a.name, w);
    }
    out += fmt::format("{:>12}  {:>9}  {:<28}  {}\n", "median step", "change", "verdict", "critical path");
    for (const whatif::SweepRow& r : rows) {
      out += "  ";
      for (std::size_t k = 0; k < r.point.size(); ++k) out += fmt::format("{:<{}}  ", r.point[k].second, widths[k]);
      out += fmt::format("{:>12}  {:>+8.2f}%  {:<28}  {}\n", format_duration(r.predicted_ns), 100.0 * r.change,
                         r.verdict.substr(0, 28), top_categories(r));
    }
    return out;
  }

  static json to_json(const std::vector<whatif::SweepAxis>& axes, const std::vector<whatif::SweepRow>& rows,
                      const replayer::Report& baseline) {
    json j;
    j["provenance"] = {{"inputs", baseline.provenance.inputs}, {"gpus", baseline.provenance.gpus}};
    j["axes"] = json::array();
    for (const whatif::SweepAxis& a : axes) j["axes"].push_back({{"name", a.name}, {"values", a.values}});
    j["baseline"] = {{"median_ns", rows.empty() ? 0 : rows.front().baseline_ns}, {"steps", rows.empty() ? 0 : rows.front().steps}};
    j["points"] = json::array();
    for (const whatif::SweepRow& r : rows) {
      json settings = json::object(), path = json::object();
      for (const auto& [name, value] : r.point) settings[name] = value;
      for (int c = 0; c < replayer::kCategoryCount; ++c)
        path[std::string(replayer::to_string(static_cast<replayer::Category>(c))) + "_ns"] = r.critical_path[c];
      j["points"].push_back({{"settings", settings}, {"median_ns", r.predicted_ns}, {"change", r.change},
                             {"steps", r.steps}, {"verdict", r.verdict}, {"critical_path", path}});
    }
    return j;
  }

  static report_html::SweepPage page_of(const std::vector<whatif::SweepAxis>& axes, const std::vector<whatif::SweepRow>& rows,
                                       const replayer::Report& baseline) {
    report_html::SweepPage page;
    page.title = "dpro sweep";
    page.provenance = baseline.provenance;
    for (const whatif::SweepAxis& a : axes) page.axes.push_back(a.name);
    if (!rows.empty()) page.baseline_ns = rows.front().baseline_ns, page.baseline_steps = rows.front().steps;
    for (const whatif::SweepRow& r : rows) {
      report_html::SweepPagePoint p{{}, r.predicted_ns, r.change, r.steps, r.verdict, {}};
      for (const auto& [name, value] : r.point) p.values.push_back(value);
      std::copy(std::begin(r.critical_path), std::end(r.critical_path), p.critical_path.by_category);
      page.points.push_back(std::move(p));
    }
    return page;
  }

  static std::string to_csv(const std::vector<whatif::SweepAxis>& axes, const std::vector<whatif::SweepRow>& rows) {
    std::vector<std::string> header;
    for (const whatif::SweepAxis& a : axes) header.push_back(a.name);
    for (const char* h : {"median_ns", "baseline_median_ns", "change_percent", "verdict"}) header.emplace_back(h);
    std::string out = costmodel::format_csv_row(header) + "\n";
    for (const whatif::SweepRow& r : rows) {
      std::vector<std::string> f;
      for (const auto& [name, value] : r.point) f.push_back(value);
      f.push_back(std::to_string(r.predicted_ns));
      f.push_back(std::to_string(r.baseline_ns));
      f.push_back(fmt::format("{:.4f}", 100.0 * r.change));
      f.push_back(r.verdict);
      out += costmodel::format_csv_row(f) + "\n";
    }
    return out;
  }

  std::vector<std::string> traces_;
  std::string iteration_marker_, json_path_, csv_path_, html_path_;
  std::size_t max_points_ = 64;
  bool allow_partial_ = false, force_ = false, quiet_ = false;
  WhatIfFlags whatifs_;
  CLI::App* command_ = nullptr;
};

}  // namespace

std::unique_ptr<Command> make_sweep_command() { return std::make_unique<SweepCommand>(); }

}  // namespace dpro::cli
