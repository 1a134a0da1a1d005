// dpro-profile [--out DIR] [--steps A:B] [--nvtx] [--step-name NAME] [--no-nccl] [--all-cuda-calls]
//              [--no-calibration] [--json]
//              -- CMD ARGS...
// Runs CMD with the dpro injection library and NCCL profiler plugin enabled, so that every
// CUDA process of the job (torchrun workers, multiprocessing children) writes one native
// trace; returns CMD's exit code and says where the traces are.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "profiler/launcher.h"

namespace {

std::string json_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace dpro::profiler;
  std::vector<std::string> own_args = {argv[0]};
  LaunchOptions options;
  int i = 1;
  for (; i < argc && std::string(argv[i]) != "--"; ++i) own_args.push_back(argv[i]);
  for (++i; i < argc; ++i) options.command.push_back(argv[i]);

  CLI::App app{"Profile a CUDA/NCCL job into per-rank dpro native traces.\n"
               "usage: dpro-profile [options] -- CMD ARGS..."};
  bool no_nccl = false, no_calibration = false, json = false;
  app.add_option("--out", options.out_dir, "Directory for the trace files")->capture_default_str();
  app.add_option("--steps", options.steps,
                 "Record only iterations A..B (inclusive), e.g. 10:20: CUDA activity is recorded from the NVTX range of "
                 "step A to the end of step B, and the rest of the job runs untraced (implies --nvtx)");
  app.add_flag("--nvtx", options.nvtx,
               "Record NVTX ranges (ProfilerStep#N marks iterations). A PyTorch job run inside "
               "torch.autograd.profiler.emit_nvtx(record_shapes=True) then records each operator with its "
               "shapes, which `dpro-replay replay --device` needs to price ops with the learned model (one step "
               "inside it is enough: steps launching the same kernels borrow its operators)");
  app.add_option("--step-name", options.step_name, "NVTX range name that marks one iteration");
  app.add_flag("--no-nccl", no_nccl, "Do not load the NCCL profiler plugin");
  app.add_flag("--all-cuda-calls", options.all_cuda_calls,
               "Record every CUDA runtime call (cudaGetDevice, cudaPeekAtLastError, ...), not only the "
               "launches, copies, syncs, events and allocations the replay uses; traces are about 4x larger");
  app.add_flag("--no-calibration", no_calibration,
               "Do not measure, at start, what each record class costs the job's host (a few milliseconds; "
               "the replay takes that cost out of the CPU side: dpro-replay replay --keep-profiler-cost)");
  app.add_flag("--json", json, "Print the result as one JSON object");
  std::vector<const char*> cargv;
  for (auto& a : own_args) cargv.push_back(a.c_str());
  try {
    app.parse(static_cast<int>(cargv.size()), cargv.data());
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  options.nccl = !no_nccl;
  options.calibrate = !no_calibration;
  if (auto error = validate(options); !error.empty()) {
    std::fprintf(stderr, "dpro-profile: %s\n", error.c_str());
    return 2;
  }
  ProfilerLibraries libs = find_profiler_libraries(argv[0]);
  if (libs.inject.empty()) {
    std::fprintf(stderr, "dpro-profile: libdpro_inject.so not found (set DPRO_INJECT_LIB)\n");
    return 2;
  }
  if (!libs.has_cupti)
    std::fprintf(stderr, "dpro-profile: this build has no CUPTI support; only NCCL operations are recorded\n");
  if (records_nvtx(options) && libs.cupti.empty())
    std::fprintf(stderr, "dpro-profile: libcupti not known to this build; NVTX ranges are not recorded\n");

  auto env = profiling_environment(options, libs);
  std::string out_dir = env.front().second;
  long started = static_cast<long>(std::chrono::duration_cast<std::chrono::seconds>(
                     std::chrono::system_clock::now().time_since_epoch()).count()) - 1;
  // Earlier runs' traces in the folder would replay together with this run's as one job.
  if (const auto earlier = traces_written(out_dir, 0); !earlier.empty())
    std::fprintf(stderr,
                 "dpro-profile: warning: %s already holds %zu trace file(s) of earlier runs (%s%s); replaying the "
                 "folder would take them and this run's as one job: give each run its own --out\n",
                 out_dir.c_str(), earlier.size(), earlier.front().c_str(), earlier.size() > 1 ? ", ..." : "");
  int code = run_command(options.command, env);
  auto traces = traces_written(out_dir, started);
  if (json) {
    std::printf("{\"exit_code\": %d, \"out_dir\": \"%s\", \"traces\": [", code, json_escape(out_dir).c_str());
    for (std::size_t k = 0; k < traces.size(); ++k)
      std::printf("%s\"%s\"", k ? ", " : "", json_escape(traces[k]).c_str());
    std::printf("]}\n");
  } else {
    std::fprintf(stderr, "dpro-profile: job exited with code %d; %zu trace file(s) in %s\n", code,
                 traces.size(), out_dir.c_str());
    for (const auto& t : traces) std::fprintf(stderr, "  %s\n", t.c_str());
    if (!traces.empty())
      std::fprintf(stderr, "  view: dpro-replay convert %s -o trace.json.gz  (opens in ui.perfetto.dev)\n",
                   traces.front().c_str());
    else if (code != 127)  // 127: the command did not start (said above)
      std::fprintf(stderr,
                   "  no trace was written: the job made no CUDA or NCCL calls the profiler saw (a launcher that "
                   "starts the job in a container or over ssh does not pass the injection on; see "
                   "docs/profiler.md)\n");
  }
  return code;
}
