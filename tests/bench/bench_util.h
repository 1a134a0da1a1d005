#pragma once
// Small helpers shared by the benchmark programs.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <ctime>
#include <string>
#include <vector>

#include "core/stats.h"

namespace dpro::bench {

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

using dpro::median;

// CPU time (user + system) this process has used so far, in seconds: less sensitive than wall
// time to other work on a shared machine.
inline double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// CPU seconds of the calling thread alone.
inline double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// Peak resident memory of this process so far, in MiB (VmHWM).
inline double peak_rss_mib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  }
  return 0.0;
}

inline void emit(const std::string& bench, double value, const std::string& unit, const std::string& extra = "") {
  std::printf("{\"bench\": \"%s\", \"value\": %.6g, \"unit\": \"%s\"%s%s}\n", bench.c_str(), value, unit.c_str(),
              extra.empty() ? "" : ", ", extra.c_str());
  std::fflush(stdout);
}

}  // namespace dpro::bench
