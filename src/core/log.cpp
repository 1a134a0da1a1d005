#include "core/log.h"

namespace dpro {
namespace {
const char* level_tag(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug: return "debug";
    case LogLevel::kInfo: return "info";
    case LogLevel::kWarning: return "warning";
    case LogLevel::kError: return "error";
    case LogLevel::kQuiet: return "";
  }
  return "";
}
}  // namespace

Logger::Logger(LogLevel level)
    : Logger(level, [](LogLevel l, const std::string& message) {
        std::fprintf(stderr, "dpro: %s: %s\n", level_tag(l), message.c_str());
      }) {}

Logger::Logger(LogLevel level, Sink sink) : level_(level), sink_(std::move(sink)) {}

void Logger::log(LogLevel level, const std::string& message) {
  if (level == LogLevel::kWarning) ++warnings_;
  if (level >= level_ && level != LogLevel::kQuiet && sink_) sink_(level, message);
}

}  // namespace dpro
