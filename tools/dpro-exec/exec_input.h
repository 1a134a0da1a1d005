#pragma once
// What `schedule` and `run` share: the traces, the rank and iteration, an optional plan; loaded
// into the workload the executor lowers (the plan's decisions applied through the optimizer's
// rewrites, as `dpro-replay replay --plan` applies them).
#include <CLI/CLI.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/log.h"
#include "executor/device.h"
#include "executor/schedule.h"
#include "whatif/workload.h"

namespace dpro::exec_cli {

struct ExecFlags {
  std::vector<std::string> traces;
  std::optional<int> rank;
  std::string ranks;       // --ranks "0-3", "0,2,5" (run, validate)
  bool all_ranks = false;  // --all-ranks
  std::optional<std::int64_t> iteration;
  std::string plan_path;
  bool json = false;
  bool quiet = false;
  // json_flag: a --json flag (print JSON); validate gives its own --json FILE instead.
  // multi_rank: --ranks and --all-ranks (multi_rank_cli.h).
  void add_to(CLI::App& sub, bool json_flag = true, bool multi_rank = false);
};

struct Job {
  whatif::Workload workload;
  executor::ScheduleOptions options;
  std::vector<std::string> notes;  // what a reader should know (the plan applied, conditions not run)
};

// Throws InputError (a trace, the plan file) and OptionError (--rank, --iteration).
Job load_job(const ExecFlags& flags, Logger& log);

// The fake device, or the CUDA device `gpu` (InputError naming --gpu when it cannot be opened);
// nullptr when this build has no CUDA executor.
std::unique_ptr<executor::Device> open_device(bool fake, int gpu);

// --gpu and --fake, which run, validate and calibrate share; `fake_help` says what --fake does there.
struct DeviceFlags {
  int gpu = 0;
  int gpus = 0;  // several ranks: 0 = one GPU per rank (multi_rank_cli.h)
  bool fake = false;
  void add_to(CLI::App& sub, const std::string& fake_help, bool multi_rank = false);
  std::unique_ptr<executor::Device> open() const { return open_device(fake, gpu); }
};

// The fake keeps what a GPU would have done wrong (a wait on an event never recorded): a bug. 1
// (with a line on stderr) when `device` is the fake and saw any; else 0.
int fake_violations(const executor::Device& device);

// What run, validate and calibrate print when open_device gave nothing (exit 2).
inline constexpr const char* kNoCudaExecutor =
    "dpro-exec: this build has no CUDA executor (built without the CUDA toolkit); "
    "`dpro-exec schedule` shows what would run, `--fake` runs it on the fake device\n";

}  // namespace dpro::exec_cli
