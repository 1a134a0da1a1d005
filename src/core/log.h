#pragma once
// A logger owned by the caller's context object (no global mutable state). Warnings are
// printed to the sink (stderr by default) and counted, so reports can say how many there were.
#include <cstdio>
#include <functional>
#include <string>

namespace dpro {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3, kQuiet = 4 };

class Logger {
 public:
  using Sink = std::function<void(LogLevel, const std::string&)>;

  explicit Logger(LogLevel level = LogLevel::kWarning);
  Logger(LogLevel level, Sink sink);

  void debug(const std::string& message) { log(LogLevel::kDebug, message); }
  void info(const std::string& message) { log(LogLevel::kInfo, message); }
  void warn(const std::string& message) { log(LogLevel::kWarning, message); }
  void log(LogLevel level, const std::string& message);

  LogLevel level() const { return level_; }
  void set_level(LogLevel level) { level_ = level; }
  int warning_count() const { return warnings_; }

 private:
  LogLevel level_;
  Sink sink_;
  int warnings_ = 0;
};

}  // namespace dpro
