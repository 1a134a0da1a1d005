#include <cstdio>
#include <iostream>

#include "commands.h"
#include "core/json_fields.h"
#include "core/output_file.h"
#include "exec_input.h"
#include "multi_rank_cli.h"
#include "executor/validation.h"
#include "render.h"
#include "replayer/engine.h"
#include "replayer/report.h"

namespace dpro::exec_cli {
namespace {

class ValidateCommand final : public Command {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    CLI::App* sub = parent.add_subcommand(
        "validate",
        "Run one rank's iteration (or a plan's version of it) as `run` does, replay the same graph (the plan\n"
        "applied) as `dpro-replay replay` does, and print measured vs predicted: the step per iteration and its\n"
        "median, the time per op class (sum over its launches) and each stream's busy time, with errors in %.");
    flags_.add_to(*sub, /*json_flag=*/false, /*multi_rank=*/true);
    sub->add_option("--iterations", iterations_, "times to run the iteration (1 to 100000)")
        ->default_val(10)
        ->check(CLI::Range(1, 100000));
    device_.add_to(*sub, "measure on the fake device (no GPU: each launch takes its recorded or stand-in time)",
                   /*multi_rank=*/true);
    sub->add_option("--json", json_path_, "write the comparison as JSON to this file ('-': standard output, no text)");
    sub->add_flag("--force", force_, "replace an existing --json file");
    return sub;
  }

  int run() override {
    std::vector<std::string> inputs = flags_.traces;
    if (!flags_.plan_path.empty()) inputs.push_back(flags_.plan_path);
    if (!json_path_.empty()) check_output_path(json_path_, inputs, force_);
    if (!flags_.ranks.empty() || flags_.all_ranks) return validate_ranks();
    std::unique_ptr<executor::Device> device = device_.open();
    if (!device) {
      std::fprintf(stderr, "%s", kNoCudaExecutor);
      return 2;
    }
    Logger log(flags_.quiet ? LogLevel::kError : LogLevel::kWarning);
    const Job job = load_job(flags_, log);
    const executor::Schedule s = executor::build_schedule(job.workload, job.options);
    executor::RunOptions options;
    options.iterations = iterations_;
    options.time_launches = true;
    const executor::RunResult r = executor::run_schedule(*device, s, options);
    if (const int bad = fake_violations(*device)) return bad;
    const Prediction p(job);
    const executor::Validation v = executor::compare_run(s, r, p.sim, p.report);
    if (json_path_ != "-") std::cout << validation_text(v, job.notes);
    if (!json_path_.empty())
      write_output(json_path_, [&](std::ostream& out) { out << dump_output_json(validation_json(v, job.notes), 2) << "\n"; },
                   force_);
    flush_stdout();
    return 0;
  }

 private:
  // The prediction: the replay of the graph the schedules were lowered from (same nodes).
  struct Prediction {
    replayer::Simulation sim;
    replayer::Report report;
    explicit Prediction(const Job& job)
        : sim(replayer::simulate(job.workload.graph.dfg)),
          report(replayer::make_report(*job.workload.traces, job.workload.graph, sim, times_only())) {}
    static replayer::ReportOptions times_only() {
      replayer::ReportOptions o;
      o.analysis = false;
      return o;
    }
  };

  // Several ranks: each rank's comparison, in rank order (JSON: {"notes", "ranks": [...]}).
  int validate_ranks() {
    Logger log(flags_.quiet ? LogLevel::kError : LogLevel::kWarning);
    std::string error;
    const std::unique_ptr<MultiRankJob> prepared = prepare_multi_rank(flags_, device_, log, error);
    if (!prepared) {
      std::fprintf(stderr, "%s", error.c_str());
      return 2;
    }
    const Job& job = prepared->job;
    RankDevices& devices = prepared->devices;
    const executor::MultiRankSchedule& m = prepared->schedule;
    executor::RunOptions options;
    options.iterations = iterations_;
    options.time_launches = true;
    const std::vector<executor::RunResult> results = run_multi(devices, m, options);
    if (const int bad = multi_fake_violations(devices)) return bad;
    const Prediction p(job);
    std::vector<std::string> notes = job.notes;
    for (std::string& n : multi_rank_notes(devices, m)) notes.push_back(std::move(n));
    nlohmann::json out{{"notes", notes}, {"ranks", nlohmann::json::array()}};
    for (std::size_t r = 0; r < results.size(); ++r) {
      const executor::Validation v = executor::compare_run(m.ranks[r], results[r], p.sim, p.report);
      if (json_path_ != "-") std::cout << validation_text(v, r == 0 ? notes : std::vector<std::string>{});
      if (!json_path_.empty()) out["ranks"].push_back(validation_json(v, {}));
    }
    if (!json_path_.empty())
      write_output(json_path_, [&](std::ostream& o) { o << dump_output_json(out, 2) << "\n"; }, force_);
    flush_stdout();
    return 0;
  }

  ExecFlags flags_;
  int iterations_ = 10;
  DeviceFlags device_;
  std::string json_path_;
  bool force_ = false;
};

}  // namespace

std::unique_ptr<Command> make_validate_command() { return std::make_unique<ValidateCommand>(); }

}  // namespace dpro::exec_cli
