// The launcher's environment and the per-process trace naming it leads to.
#include <catch2/catch.hpp>

#include <map>

#include "profiler/launcher.h"
#include "profiler/session_config.h"

using namespace dpro::profiler;

namespace {

std::map<std::string, std::string> as_map(const EnvVars& env) {
  return {env.begin(), env.end()};
}

}  // namespace

TEST_CASE("the job environment loads the injection library and the NCCL plugin", "[launcher]") {
  LaunchOptions o;
  o.out_dir = "/tmp/traces";
  o.nvtx = true;
  o.steps = "10:20";
  o.step_name = "train_step";
  ProfilerLibraries libs{"/opt/dpro/lib/libdpro_inject.so", "/usr/local/cuda/lib64/libcupti.so", true};
  auto env = as_map(profiling_environment(o, libs));
  CHECK(env.at("CUDA_INJECTION64_PATH") == libs.inject);
  CHECK(env.at("NCCL_PROFILER_PLUGIN") == libs.inject);
  CHECK(env.at("NVTX_INJECTION64_PATH") == libs.cupti);
  CHECK(env.at("DPRO_PROFILE_OUT") == "/tmp/traces");
  CHECK(env.at("DPRO_PROFILE_STEPS") == "10:20");
  CHECK(env.at("DPRO_PROFILE_STEP_NAME") == "train_step");

  o.nccl = false;
  o.nvtx = false;
  libs.has_cupti = false;
  env = as_map(profiling_environment(o, libs));
  CHECK(env.count("NCCL_PROFILER_PLUGIN") == 0);
  CHECK(env.at("DPRO_PROFILE_NCCL") == "0");
  CHECK(env.count("CUDA_INJECTION64_PATH") == 0);  // a build without CUPTI
  // Steps are NVTX ranges: --steps and --step-name turn NVTX recording on.
  CHECK(env.at("DPRO_PROFILE_NVTX") == "1");
  o.steps.clear();
  o.step_name.clear();
  env = as_map(profiling_environment(o, libs));
  CHECK(env.count("NVTX_INJECTION64_PATH") == 0);
  CHECK(env.count("DPRO_PROFILE_NVTX") == 0);
  CHECK(env.count("DPRO_PROFILE_CUDA_API") == 0);
  o.all_cuda_calls = true;
  env = as_map(profiling_environment(o, libs));
  CHECK(env.at("DPRO_PROFILE_CUDA_API") == "all");
  CHECK(env.count("DPRO_PROFILE_CALIBRATE") == 0);  // the calibration runs unless switched off
  o.calibrate = false;
  env = as_map(profiling_environment(o, libs));
  CHECK(env.at("DPRO_PROFILE_CALIBRATE") == "0");
}

TEST_CASE("launcher options are validated", "[launcher]") {
  LaunchOptions o;
  CHECK(validate(o).find("no command") != std::string::npos);
  o.command = {"python", "train.py"};
  CHECK(validate(o).empty());
  o.steps = "3:7";
  CHECK(validate(o).empty());
  for (const char* bad : {"7:3", "3", "a:b", "-1:2", "3:", ":", "99999999999:1", "1:2:3", "+1:2", " 1:2"}) {
    o.steps = bad;
    CHECK_FALSE(validate(o).empty());
  }
}

TEST_CASE("what is recorded is read from the environment", "[launcher]") {
  std::map<std::string, std::string> vars = {{"DPRO_PROFILE_CUDA_API", "all"},
                                             {"DPRO_PROFILE_OFF", "kernel,,sync,bogus"}};
  auto lookup = [&](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
  SessionConfig c = config_from_env(lookup);
  CHECK(c.all_cuda_calls);
  CHECK(c.off == std::vector<std::string>{"kernel", "sync"});
  CHECK(c.unknown_off == std::vector<std::string>{"bogus"});
  CHECK(known_off_classes() == "kernel, runtime, driver, memcpy, memset, sync, event, correlation, nvtx, subscribe");
  CHECK(c.calibrate);
  // The classes the calibration looks at: those recorded (nvtx only with NVTX ranges).
  CHECK(recorded_classes(c) == std::vector<std::string>{"runtime", "driver", "memcpy", "memset", "event", "correlation"});
  vars = {{"DPRO_PROFILE_CUDA_API", "replay"}, {"DPRO_PROFILE_CALIBRATE", "0"}, {"DPRO_PROFILE_NVTX", "1"}};
  c = config_from_env(lookup);
  CHECK_FALSE(c.all_cuda_calls);
  CHECK(c.off.empty());
  CHECK_FALSE(c.calibrate);
  CHECK(recorded_classes(c).back() == "nvtx");
}

TEST_CASE("trace files are named from RANK, LOCAL_RANK, host, pid and restart count", "[launcher]") {
  std::map<std::string, std::string> vars = {{"RANK", "12"}, {"LOCAL_RANK", "4"}, {"WORLD_SIZE", "16"},
                                             {"DPRO_PROFILE_OUT", "/data/run1"},
                                             {"TORCHELASTIC_RESTART_COUNT", "2"},
                                             {"DPRO_PROFILE_FLUSH_MS", "250"}};
  auto lookup = [&](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
  SessionConfig c = config_from_env(lookup);
  c.host = "node/07";
  c.pid = 4711;
  CHECK(c.rank == 12);
  CHECK(c.world_size == 16);
  CHECK(c.flush_ms == 250);
  CHECK(trace_file_path(c) == "/data/run1/rank12.local4.node_07.pid4711.restart2.dpro");
  vars.clear();
  SessionConfig bare = config_from_env(lookup);
  bare.host = std::string("h");
  bare.pid = 1;
  CHECK(bare.out_dir == "dpro-traces");
  CHECK(bare.nccl);
  CHECK_FALSE(bare.nvtx);
  CHECK(trace_file_path(bare) == "dpro-traces/norank.h.pid1.dpro");
  // Numbers an int cannot hold, or with trailing text, are not taken (once cast to a wrapped int).
  vars = {{"RANK", "99999999999"}, {"WORLD_SIZE", "8x"}, {"DPRO_PROFILE_FLUSH_MS", "4294967546"}};
  SessionConfig odd = config_from_env(lookup);
  CHECK_FALSE(odd.rank);
  CHECK_FALSE(odd.world_size);
  CHECK(odd.flush_ms == bare.flush_ms);
}
