#include "profiler/launcher.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "core/install_layout.h"
#include "profiler/step_window.h"

namespace fs = std::filesystem;

namespace dpro::profiler {

bool records_nvtx(const LaunchOptions& o) { return o.nvtx || !o.steps.empty() || !o.step_name.empty(); }

std::string validate(const LaunchOptions& o) {
  if (o.command.empty()) return "no command given (usage: dpro-profile [options] -- CMD ARGS...)";
  if (!o.steps.empty()) {
    const auto range = parse_step_range(o.steps);
    if (!range) return "--steps must be A:B with whole numbers 0 <= A <= B < 2^31, got '" + o.steps + "'";
    if (range->first > range->second) return "--steps " + o.steps + ": first step is after the last";
  }
  if (o.out_dir.empty()) return "--out must not be empty";
  return "";
}

EnvVars profiling_environment(const LaunchOptions& o, const ProfilerLibraries& libs) {
  EnvVars env;
  env.emplace_back("DPRO_PROFILE_OUT", fs::absolute(o.out_dir).string());
  if (libs.has_cupti) env.emplace_back("CUDA_INJECTION64_PATH", libs.inject);
  if (o.nccl) env.emplace_back("NCCL_PROFILER_PLUGIN", libs.inject);
  env.emplace_back("DPRO_PROFILE_NCCL", o.nccl ? "1" : "0");
  if (records_nvtx(o)) {
    env.emplace_back("DPRO_PROFILE_NVTX", "1");
    if (!libs.cupti.empty()) env.emplace_back("NVTX_INJECTION64_PATH", libs.cupti);
  }
  if (o.all_cuda_calls) env.emplace_back("DPRO_PROFILE_CUDA_API", "all");
  if (!o.calibrate) env.emplace_back("DPRO_PROFILE_CALIBRATE", "0");
  if (!o.steps.empty()) env.emplace_back("DPRO_PROFILE_STEPS", o.steps);
  if (!o.step_name.empty()) env.emplace_back("DPRO_PROFILE_STEP_NAME", o.step_name);
  return env;
}

ProfilerLibraries find_profiler_libraries(const std::string& executable_path) {
  ProfilerLibraries libs;
  libs.has_cupti = DPRO_PROFILER_WITH_CUPTI;
  libs.cupti = DPRO_CUPTI_LIBRARY;
  if (const char* env = std::getenv("DPRO_CUPTI_LIB")) libs.cupti = env;
  std::vector<fs::path> candidates;
  if (const char* env = std::getenv("DPRO_INJECT_LIB")) candidates.emplace_back(env);
  fs::path dir = fs::path(executable_path).parent_path();
  candidates.push_back(dir / "libdpro_inject.so");
  candidates.push_back(dir / ".." / "lib" / "libdpro_inject.so");
  // lib/dpro/ at or above the launcher's folder: the build tree's, or <prefix>/lib/dpro installed.
  if (const fs::path at = install::find_upward(dir, "lib/dpro/libdpro_inject.so"); !at.empty())
    candidates.push_back(at / "lib/dpro/libdpro_inject.so");
  for (const auto& c : candidates) {
    std::error_code ec;
    if (!c.empty() && fs::is_regular_file(c, ec)) {
      libs.inject = fs::absolute(c).lexically_normal().string();
      break;
    }
  }
  return libs;
}

namespace {

volatile sig_atomic_t g_child_pid = 0;  // for the signal forwarder only

void forward_signal(int sig) {
  if (g_child_pid > 0) ::kill(g_child_pid, sig);
}

}  // namespace

int run_command(const std::vector<std::string>& command, const EnvVars& env) {
  pid_t pid = ::fork();
  if (pid < 0) return 127;
  if (pid == 0) {
    for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
    std::vector<char*> argv;
    for (const auto& a : command) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    std::fprintf(stderr, "dpro-profile: cannot run %s: %s\n", argv[0], std::strerror(errno));
    ::_exit(127);
  }
  g_child_pid = pid;
  struct sigaction sa {};
  sa.sa_handler = forward_signal;
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  g_child_pid = 0;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

std::vector<std::string> traces_written(const std::string& dir, long since) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().extension() != ".dpro") continue;
    auto mtime = fs::last_write_time(entry.path(), ec);
    auto secs = std::chrono::duration_cast<std::chrono::seconds>(
                    std::chrono::file_clock::to_sys(mtime).time_since_epoch()).count();
    if (secs >= since) out.push_back(entry.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace dpro::profiler
