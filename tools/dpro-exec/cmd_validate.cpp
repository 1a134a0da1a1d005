#include <cstdio>
#include <iostream>

#include "commands.h"
#include "core/json_fields.h"
#include "core/output_file.h"
#include "exec_input.h"
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
    flags_.add_to(*sub, /*json_flag=*/false);
    sub->add_option("--iterations", iterations_, "times to run the iteration (1 to 100000)")
        ->default_val(10)
        ->check(CLI::Range(1, 100000));
    device_.add_to(*sub, "measure on the fake device (no GPU: each launch takes its recorded or stand-in time)");
    sub->add_option("--json", json_path_, "write the comparison as JSON to this file ('-': standard output, no text)");
    sub->add_flag("--force", force_, "replace an existing --json file");
    return sub;
  }

  int run() override {
    std::vector<std::string> inputs = flags_.traces;
    if (!flags_.plan_path.empty()) inputs.push_back(flags_.plan_path);
    if (!json_path_.empty()) check_output_path(json_path_, inputs, force_);
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
    // The prediction: the replay of the graph the schedule was lowered from (same nodes).
    const replayer::Simulation sim = replayer::simulate(job.workload.graph.dfg);
    replayer::ReportOptions report_options;
    report_options.analysis = false;
    const replayer::Report report = replayer::make_report(*job.workload.traces, job.workload.graph, sim, report_options);
    const executor::Validation v = executor::compare_run(s, r, sim, report);
    if (json_path_ != "-") std::cout << validation_text(v, job.notes);
    if (!json_path_.empty())
      write_output(json_path_, [&](std::ostream& out) { out << dump_output_json(validation_json(v, job.notes), 2) << "\n"; },
                   force_);
    flush_stdout();
    return 0;
  }

 private:
  ExecFlags flags_;
  int iterations_ = 10;
  DeviceFlags device_;
  std::string json_path_;
  bool force_ = false;
};

}  // namespace

std::unique_ptr<Command> make_validate_command() { return std::make_unique<ValidateCommand>(); }

}  // namespace dpro::exec_cli
