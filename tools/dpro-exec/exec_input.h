#pragma once
// What `schedule` and `run` share: the traces, the rank and iteration, an optional plan; loaded
// into the workload the executor lowers (the plan's decisions applied through the optimizer's
// rewrites, as `dpro-replay replay --plan` applies them).
#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <vector>

#include "core/log.h"
#include "executor/schedule.h"
#include "whatif/workload.h"

namespace dpro::exec_cli {

struct ExecFlags {
  std::vector<std::string> traces;
  std::optional<int> rank;
  std::optional<std::int64_t> iteration;
  std::string plan_path;
  bool json = false;
  bool quiet = false;
  void add_to(CLI::App& sub);
};

struct Job {
  whatif::Workload workload;
  executor::ScheduleOptions options;
  std::vector<std::string> notes;  // what a reader should know (the plan applied, conditions not run)
};

// Throws InputError (a trace, the plan file) and OptionError (--rank, --iteration).
Job load_job(const ExecFlags& flags, Logger& log);

}  // namespace dpro::exec_cli
