#include <cstdio>
#include <iostream>

#include "commands.h"
#include "core/error.h"
#include "core/json_fields.h"
#include "exec_input.h"
#include "multi_rank_cli.h"
#include "render.h"

namespace dpro::exec_cli {
namespace {

class RunCommand final : public Command {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    CLI::App* sub = parent.add_subcommand(
        "run",
        "Run one rank's recorded iteration (or a plan's version of it) on a GPU, repeated --iterations times:\n"
        "host threads spend the recorded CPU costs and issue the launches, streams and events keep the graph's\n"
        "dependencies; prints the measured iteration times and each stream's busy time.");
    flags_.add_to(*sub, /*json_flag=*/true, /*multi_rank=*/true);
    sub->add_option("--iterations", iterations_, "times to run the iteration (1 to 100000)")
        ->default_val(10)
        ->check(CLI::Range(1, 100000));
    device_.add_to(*sub,
                   "run on the fake device instead (no GPU: a logical clock where each launch takes its recorded\n"
                   "or stand-in time; checks a schedule end to end)",
                   /*multi_rank=*/true);
    return sub;
  }

  int run() override {
    if (!flags_.ranks.empty() || flags_.all_ranks) return run_ranks();
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
    const executor::RunResult r = executor::run_schedule(*device, s, options);
    if (flags_.json) std::cout << dump_output_json(run_json(s, r), 2) << "\n";
    else std::cout << run_text(s, r);
    if (const int bad = fake_violations(*device)) return bad;
    return std::cout.good() ? 0 : 1;
  }

 private:
  int run_ranks() {
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
    const std::vector<executor::RunResult> results = run_multi(devices, m, options);
    std::vector<std::string> notes = job.notes;
    for (std::string& n : multi_rank_notes(devices, m)) notes.push_back(std::move(n));
    if (flags_.json) {
      nlohmann::json out{{"notes", notes}, {"ranks", nlohmann::json::array()}};
      for (std::size_t r = 0; r < results.size(); ++r) out["ranks"].push_back(run_json(m.ranks[r], results[r]));
      std::cout << dump_output_json(out, 2) << "\n";
    } else {
      for (const std::string& n : notes) std::cout << n << "\n";
      for (std::size_t r = 0; r < results.size(); ++r) std::cout << run_text(m.ranks[r], results[r]);
    }
    if (const int bad = multi_fake_violations(devices)) return bad;
    return std::cout.good() ? 0 : 1;
  }

  ExecFlags flags_;
  int iterations_ = 10;
  DeviceFlags device_;
};

}  // namespace

std::unique_ptr<Command> make_run_command() { return std::make_unique<RunCommand>(); }

}  // namespace dpro::exec_cli
