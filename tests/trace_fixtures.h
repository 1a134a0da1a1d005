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

inline trace::TraceSet load(const std::vector<std::string>& paths, Logger& log, bool allow_partial = false) {
  trace::LoadOptions options;
  options.allow_partial = allow_partial;
  return trace::load_traces(paths, options, log);
}

}  // namespace dpro::test
