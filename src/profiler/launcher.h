#pragma once
// The logic of `dpro-profile [options] -- CMD ARGS...`: which environment makes a job (and
// every process it starts: torchrun workers, multiprocessing children) load the injection
// library and the NCCL plugin, running the job, and finding the traces it wrote.
#include <string>
#include <utility>
#include <vector>

namespace dpro::profiler {

struct LaunchOptions {
  std::string out_dir = "dpro-traces";
  std::string steps;      // "A:B" or ""
  std::string step_name;  // NVTX range name marking iterations; "" = ProfilerStep#N
  bool nvtx = false;
  bool nccl = true;
  bool all_cuda_calls = false;  // record every CUDA runtime call, not only those the replay uses
  bool calibrate = true;        // measure what the records cost the host, at start (record_cost.h)
  std::vector<std::string> command;
};

struct ProfilerLibraries {
  std::string inject;  // libdpro_inject.so (InitializeInjection + ncclProfiler_v5/v4)
  std::string cupti;   // libcupti.so for NVTX_INJECTION64_PATH; "" when unknown
  bool has_cupti = false;  // whether inject exports InitializeInjection (built with CUDA)
};

using EnvVars = std::vector<std::pair<std::string, std::string>>;

// Whether the job's NVTX ranges are recorded: --nvtx, and --steps / --step-name (steps are
// NVTX ranges).
bool records_nvtx(const LaunchOptions& options);

// Checks options; returns "" or a one-line error.
std::string validate(const LaunchOptions& options);

// Variables to set for the job (absolute out_dir).
EnvVars profiling_environment(const LaunchOptions& options, const ProfilerLibraries& libs);

// Finds the libraries: $DPRO_INJECT_LIB, next to the executable, ../lib, the build tree
// (inject is "" when not found); libcupti from $DPRO_CUPTI_LIB or the build's toolkit.
ProfilerLibraries find_profiler_libraries(const std::string& executable_path);

// Runs command with env added to this process's environment; forwards SIGINT/SIGTERM to it.
// Returns its exit code (128 + signal when killed), or 127 when it cannot be started.
int run_command(const std::vector<std::string>& command, const EnvVars& env);

// Trace files (*.dpro) in dir modified at or after since (seconds since the epoch), sorted.
std::vector<std::string> traces_written(const std::string& dir, long since);

}  // namespace dpro::profiler
