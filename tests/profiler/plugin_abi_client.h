#pragma once
// Loads the built injection library with dlopen, as NCCL and the CUDA driver do, and exposes
// its entry points. The ABI structs come from src/profiler/nccl_profiler_abi.h.
#include <dlfcn.h>

#include <stdexcept>
#include <string>

#include "profiler/nccl_profiler_abi.h"

namespace dpro::test {

struct InjectedLibrary {
  void* handle = nullptr;
  profiler::nccl_abi::ProfilerV5* v5 = nullptr;
  profiler::nccl_abi::ProfilerV4* v4 = nullptr;
  int (*flush)() = nullptr;
  int (*shutdown)() = nullptr;
  const char* (*trace_path)() = nullptr;
  int (*initialize_injection)() = nullptr;  // null when built without CUDA

  explicit InjectedLibrary(const std::string& path) {
    handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) throw std::runtime_error(std::string("dlopen: ") + ::dlerror());
    v5 = static_cast<profiler::nccl_abi::ProfilerV5*>(::dlsym(handle, "ncclProfiler_v5"));
    v4 = static_cast<profiler::nccl_abi::ProfilerV4*>(::dlsym(handle, "ncclProfiler_v4"));
    flush = reinterpret_cast<int (*)()>(::dlsym(handle, "dproProfilerFlush"));
    shutdown = reinterpret_cast<int (*)()>(::dlsym(handle, "dproProfilerShutdown"));
    trace_path = reinterpret_cast<const char* (*)()>(::dlsym(handle, "dproProfilerTracePath"));
    initialize_injection = reinterpret_cast<int (*)()>(::dlsym(handle, "InitializeInjection"));
    if (!v5 || !v4 || !flush || !shutdown || !trace_path)
      throw std::runtime_error("injection library lacks an entry point");
  }
};

}  // namespace dpro::test
