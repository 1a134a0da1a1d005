#pragma once
// Helpers for tests that need real traces, or real traces with one thing broken.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/byte_source.h"
#include "core/log.h"
#include "test_paths.h"
#include "trace/loader.h"

namespace dpro::test {

inline std::string dlrm_dir() { return source_path("traces/dlrm-8xV100"); }

inline std::vector<std::string> dlrm_files() {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dlrm_dir())) files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

// A fresh, empty directory under the system temp dir, private to this process (ctest runs
// test cases in parallel processes).
inline std::string fresh_dir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("dpro_test_" + name + "_" + std::to_string(static_cast<long>(::getpid())));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

inline void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

// A quiet logger that keeps what it was told, for assertions.
struct CapturingLog {
  std::vector<std::string> lines;
  Logger log{LogLevel::kInfo, [this](LogLevel, const std::string& m) { lines.push_back(m); }};
  bool contains(const std::string& part) const {
    for (const auto& l : lines) {
      if (l.find(part) != std::string::npos) return true;
    }
    return false;
  }
};

// One collective call of write_nccl_trace: a "nccl:<op>" range on the rank's main thread (none
// when `range` is empty) launching `kernels` NCCL kernels named `kernel`; the range's "Input Dims"
// and "Input type" JSON text, each left out when empty.
struct NcclCall {
  std::string range;   // "nccl:all_to_all", or "" for a launch outside any range
  std::string kernel;  // "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)"
  std::string dims;    // "[[6144]]"
  std::string types;   // "[\"float\"]"
  int kernels = 1;     // 1 to 3
};

// A small Kineto trace of rank `rank` of a `world`-rank job on V100s (one ProfilerStep#1 holding
// the calls, 200 us apart; a rank's kernels run 5 us x rank longer, so that the last to arrive
// differs by rank), written to DIR/rank<rank>.json; returns its path.
inline std::string write_nccl_trace(const std::string& dir, int rank, int world, const std::vector<NcclCall>& calls) {
  const std::string kernel_pid = "0", pid = std::to_string(100 + rank);
  std::string text = R"({"schemaVersion": 1, "distributedInfo": {"backend": "nccl", "rank": )" + std::to_string(rank) +
                     R"(, "world_size": )" + std::to_string(world) +
                     R"(}, "deviceProperties": [{"id": 0, "name": "Tesla V100-SXM2-32GB", "computeMajor": 7, "computeMinor": 0, "numSms": 80}],
  "traceEvents": [
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": )" + pid + R"(, "tid": 1, "ts": 1000, "dur": )" +
                     std::to_string(200 * calls.size() + 300) + "}";
  int correlation = 1;
  for (std::size_t i = 0; i < calls.size(); ++i) {
    const NcclCall& c = calls[i];
    const int t = 1100 + 200 * static_cast<int>(i);
    if (!c.range.empty()) {
      std::string args;
      if (!c.dims.empty()) args += R"("Input Dims": )" + c.dims;
      if (!c.types.empty()) args += std::string(args.empty() ? "" : ", ") + R"("Input type": )" + c.types;
      text += R"(,
  {"ph": "X", "cat": "user_annotation", "name": ")" + c.range + R"(", "pid": )" + pid + R"(, "tid": 1, "ts": )" +
              std::to_string(t) + R"(, "dur": 60, "args": {)" + args + "}}";
    }
    for (int k = 0; k < c.kernels; ++k, ++correlation) {
      text += R"(,
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": )" + pid + R"(, "tid": 1, "ts": )" +
              std::to_string(t + 10 + 10 * k) + R"(, "dur": 5, "args": {"correlation": )" + std::to_string(correlation) +
              R"(, "cbid": 211}},
  {"ph": "X", "cat": "kernel", "name": ")" + c.kernel + R"(", "pid": )" + kernel_pid + R"(, "tid": 7, "ts": )" +
              std::to_string(t + 20 + 45 * k) + R"(, "dur": )" + std::to_string(30 + 5 * rank) +
              R"(, "args": {"correlation": )" + std::to_string(correlation) + R"(, "device": 0, "stream": 7}})";
    }
  }
  text += "]}\n";
  const std::string path = dir + "/rank" + std::to_string(rank) + ".json";
  write_text(path, text);
  return path;
}

inline trace::TraceSet load(const std::vector<std::string>& paths, Logger& log, bool allow_partial = false) {
  trace::LoadOptions options;
  options.allow_partial = allow_partial;
  return trace::load_traces(paths, options, log);
}

}  // namespace dpro::test
