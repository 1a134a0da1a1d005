#include <iostream>

#include "commands.h"
#include "core/json_fields.h"
#include "exec_input.h"
#include "render.h"

namespace dpro::exec_cli {
namespace {

class ScheduleCommand final : public Command {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    CLI::App* sub = parent.add_subcommand(
        "schedule",
        "Print what `run` would run for one rank's iteration, without a GPU: launches per op class as real\n"
        "kernels or stand-ins (and why), streams, host threads, events, the memory arena against the\n"
        "live-tensor peak, the graph's dependencies kept and those not scheduled.");
    flags_.add_to(*sub);
    return sub;
  }

  int run() override {
    Logger log(flags_.quiet ? LogLevel::kError : LogLevel::kWarning);
    const Job job = load_job(flags_, log);
    const executor::Schedule s = executor::build_schedule(job.workload, job.options);
    if (flags_.json) std::cout << dump_output_json(schedule_json(s, job.notes), 2) << "\n";
    else std::cout << schedule_text(s, job.notes);
    return std::cout.good() ? 0 : 1;
  }

 private:
  ExecFlags flags_;
};

}  // namespace

std::unique_ptr<Command> make_schedule_command() { return std::make_unique<ScheduleCommand>(); }

}  // namespace dpro::exec_cli
