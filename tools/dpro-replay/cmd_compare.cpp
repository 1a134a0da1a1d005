#include "cmd_compare.h"

#include <cmath>
#include <iostream>

#include "core/error.h"
#include "core/json_fields.h"
#include "output_file.h"
#include "render_compare.h"
#include "replayer/compare.h"

namespace dpro::cli {
namespace {

class CompareCommand final : public Command {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    CLI::App* sub = parent.add_subcommand(
        "compare",
        "Compare two replay reports (JSON of 'dpro-replay replay --json'): the job's iteration time (median over\n"
        "iterations; a report with a what-if gives its prediction, otherwise the measured time) and where on the\n"
        "critical path it changed. With --max-slowdown it is a CI check: exit 1 if the job's or a rank's median step\n"
        "is slower by more than that and by more than the noise (the larger spread of the two reports' steady steps:\n"
        "1.4826 x their median absolute deviation), or if the reports describe different recorded jobs; 0 otherwise,\n"
        "2 on bad input.");
    sub->add_option("base", base_, "the reference report (JSON, or .json.gz)")->required();
    sub->add_option("new", next_, "the report to check against it")->required();
    sub->add_option("--max-slowdown", max_slowdown_pct_,
                    "percent: exit 1 if the new median iteration time exceeds the base's by more than this");
    sub->add_option("--top", top_, "how many changed ops of the critical path to list (0 to 1000000)")
        ->default_val(10)
        ->check(CLI::Range(0, 1000000));
    sub->add_option("--json", json_path_, "also write the comparison as JSON to this file ('-' = stdout, no text; a name\n"
                    "ending in .gz is gzip-compressed)");
    sub->add_option("--junit", junit_path_, "also write the checks as JUnit XML to this file (one testcase per check: the job's\n"
                    "step time, each rank's, the same job)");
    sub->add_option("--markdown", markdown_path_, "also write a Markdown summary (a table of the checks and the ops that changed\n"
                    "most, for a pull-request comment) to this file ('-' = stdout, no text)");
    sub->add_flag("--job-only", job_only_, "only the job's step time (and the same job) decides; the ranks' checks are listed\n"
                  "without the limit");
    sub->add_flag("--force", force_, "overwrite existing output files");
    return sub;
  }

  int run() override {
    if (max_slowdown_pct_ && (!std::isfinite(*max_slowdown_pct_) || *max_slowdown_pct_ < 0))
      throw InputError("", "--max-slowdown " + std::to_string(*max_slowdown_pct_), "must be a percentage >= 0");
    check_output_paths({{"--json", json_path_}, {"--junit", junit_path_}, {"--markdown", markdown_path_}}, {base_, next_}, force_);
    std::optional<double> limit;
    if (max_slowdown_pct_) limit = *max_slowdown_pct_ / 100.0;
    replayer::ReportSummary base = replayer::read_report_summary(base_);
    // A change relative to 0 ns is no percentage (it once printed +0.00% and passed any limit).
    if (base.median_job_ns == 0)
      throw InputError(base_, base.whatif ? "whatif.iterations[].job.predicted_ns" : "iterations[].job.measured_ns",
                       "the base's median job time is 0 ns (a ProfilerStep of length 0?): there is no time to "
                       "compare against");
    const replayer::Comparison c =
        replayer::compare_reports(std::move(base), replayer::read_report_summary(next_), limit, top_, !job_only_);
    if (json_path_ != "-" && junit_path_ != "-" && markdown_path_ != "-") std::cout << replayer::render_text(c);
    flush_stdout();  // a text report that went nowhere is an error, not exit 0
    if (!json_path_.empty())
      write_output(json_path_, [&](std::ostream& out) { out << dump_output_json(replayer::to_json(c), 2) << "\n"; }, force_);
    if (!junit_path_.empty()) write_output(junit_path_, [&](std::ostream& out) { out << compare_junit(c); }, force_);
    if (!markdown_path_.empty())
      write_output(markdown_path_, [&](std::ostream& out) { out << compare_markdown(c, top_); }, force_);
    return c.failed() ? 1 : 0;
  }

 private:
  std::string base_, next_, json_path_, junit_path_, markdown_path_;
  bool job_only_ = false;
  std::optional<double> max_slowdown_pct_;
  std::size_t top_ = 10;
  bool force_ = false;
};

}  // namespace

std::unique_ptr<Command> make_compare_command() { return std::make_unique<CompareCommand>(); }

}  // namespace dpro::cli
