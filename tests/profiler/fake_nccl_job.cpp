// A stand-in for a training process, for the process-level tests: loads the injection
// library the way the CUDA driver and NCCL would (from CUDA_INJECTION64_PATH /
// NCCL_PROFILER_PLUGIN), runs a few allreduces through the v5 plugin, then ends as asked.
//   fake_nccl_job [--colls N] [--inject] [--cuda-only] [--fork-child] [--spawn K] [--code C]
//                 [--end exit|flush-kill|sleep-kill|abandon]
#include <dlfcn.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "profiler/nccl_profiler_abi.h"

namespace abi = dpro::profiler::nccl_abi;

// As libnccl exports it; the plugin looks it up to record the NCCL version.
extern "C" __attribute__((visibility("default"))) int ncclGetVersion(int* version) {
  *version = 22809;
  return 0;
}

namespace {

abi::ProfilerV5* g_plugin = nullptr;

void allreduce(void* ctx, std::uint64_t seq, const char* func) {
  abi::EventDescrV5 g{};
  g.type = abi::kGroupApi;
  void* group = nullptr;
  g_plugin->startEvent(ctx, &group, &g);
  abi::EventDescrV5 c{};
  c.type = abi::kColl;
  c.parentObj = group;
  c.coll.func = func;
  c.coll.seqNumber = seq;
  c.coll.count = 256;
  c.coll.datatype = "ncclFloat32";
  void* coll = nullptr;
  g_plugin->startEvent(ctx, &coll, &c);
  g_plugin->stopEvent(coll);
  g_plugin->stopEvent(group);
}

int spawn_workers(const char* self, int k, const std::vector<std::string>& pass) {
  std::vector<pid_t> pids;
  for (int i = 0; i < k; ++i) {
    pid_t pid = fork();
    if (pid == 0) {
      setenv("RANK", std::to_string(i).c_str(), 1);
      setenv("LOCAL_RANK", std::to_string(i).c_str(), 1);
      setenv("WORLD_SIZE", std::to_string(k).c_str(), 1);
      std::vector<char*> argv = {const_cast<char*>(self)};
      for (const auto& a : pass) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execv(self, argv.data());
      _exit(127);
    }
    pids.push_back(pid);
  }
  int worst = 0;
  for (pid_t pid : pids) {
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) worst = 1;
  }
  return worst;
}

}  // namespace

int main(int argc, char** argv) {
  int colls = 3, spawn = 0, code = 0;
  bool inject = false, fork_child = false, cuda_only = false;
  std::string end = "exit";
  std::vector<std::string> pass;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&] { return std::string(argv[++i]); };
    if (a == "--colls") pass.push_back(a), colls = std::stoi(pass.emplace_back(next()));
    else if (a == "--inject") inject = true, pass.push_back(a);
    else if (a == "--cuda-only") cuda_only = true, pass.push_back(a);  // InitializeInjection, no NCCL
    else if (a == "--fork-child") fork_child = true, pass.push_back(a);
    else if (a == "--end") end = next(), pass.push_back("--end"), pass.push_back(end);
    else if (a == "--spawn") spawn = std::stoi(next());
    else if (a == "--code") code = std::stoi(next());
  }
  if (spawn > 0) {  // a launcher process (torchrun agent / multiprocessing parent): no CUDA
    int rc = spawn_workers(argv[0], spawn, pass);
    return rc ? rc : code;
  }
  const char* lib_path = std::getenv("NCCL_PROFILER_PLUGIN");
  if (!lib_path) lib_path = std::getenv("CUDA_INJECTION64_PATH");
  if (!lib_path) return 0;  // not profiled: nothing to do
  void* lib = dlopen(lib_path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    std::fprintf(stderr, "fake_nccl_job: %s\n", dlerror());
    return 90;
  }
  if (inject) {  // what cuInit does with CUDA_INJECTION64_PATH
    auto init = reinterpret_cast<int (*)()>(dlsym(lib, "InitializeInjection"));
    if (init && init() != 1) return 91;
  }
  if (cuda_only) return code;
  g_plugin = static_cast<abi::ProfilerV5*>(dlsym(lib, "ncclProfiler_v5"));
  auto flush = reinterpret_cast<int (*)()>(dlsym(lib, "dproProfilerFlush"));
  if (!g_plugin || !flush) return 92;
  void* ctx = nullptr;
  int mask = 0;
  const char* rank = std::getenv("RANK");
  g_plugin->init(&ctx, 0x5000 + static_cast<std::uint64_t>(rank ? std::atoi(rank) : 0), &mask, "job", 1, 2,
                 rank ? std::atoi(rank) : 0, nullptr);
  for (int k = 0; k < colls; ++k) allreduce(ctx, static_cast<std::uint64_t>(k), "AllReduce");
  if (fork_child) {
    pid_t pid = fork();
    if (pid == 0) {  // the child inherits the parent's unflushed records: it must write none
      allreduce(ctx, 999, "ChildOp");
      std::exit(flush() == -1 ? 0 : 93);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 94;
  }
  if (end == "flush-kill") {
    flush();
    raise(SIGKILL);
  } else if (end == "sleep-kill") {  // relies on the periodic flush (DPRO_PROFILE_FLUSH_MS)
    usleep(600 * 1000);
    raise(SIGKILL);
  } else if (end == "abandon") {
    _exit(0);  // skips atexit: only what was flushed survives
  }
  return code;
}
