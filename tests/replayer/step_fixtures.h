#pragma once
// Small synthetic Kineto traces of one step: one CPU thread (pid 10, tid 11, unless said)
// launching onto GPU 0, written to a file and replayed.
#include <string>
#include <vector>

#include "replayer/replay.h"
#include "trace_fixtures.h"

namespace dpro::test {

inline constexpr Nanos kUs = 1000;

// Builders of Kineto events; times in us.
inline std::string cpu(const std::string& cat, const std::string& name, int ts, int dur, int correlation = 0,
                       int tid = 11) {
  std::string e = R"({"ph": "X", "cat": ")" + cat + R"(", "name": ")" + name + R"(", "pid": 10, "tid": )" +
                  std::to_string(tid) + R"(, "ts": )" + std::to_string(ts) + R"(, "dur": )" + std::to_string(dur);
  if (correlation) e += R"(, "args": {"correlation": )" + std::to_string(correlation) + "}";
  return e + "}";
}
inline std::string gpu(const std::string& cat, const std::string& name, int stream, int ts, int dur, int correlation) {
  return R"({"ph": "X", "cat": ")" + cat + R"(", "name": ")" + name + R"(", "pid": 0, "tid": )" +
         std::to_string(stream) + R"(, "ts": )" + std::to_string(ts) + R"(, "dur": )" + std::to_string(dur) +
         R"(, "args": {"correlation": )" + std::to_string(correlation) + R"(, "stream": )" + std::to_string(stream) +
         R"(, "device": 0}})";
}

// Writes one step [begin, end) us holding `events`; returns the file.
inline std::string write_step(const std::string& name, int begin, int end, const std::vector<std::string>& events) {
  std::string text = R"({"traceEvents": [)" + cpu("user_annotation", "ProfilerStep#1", begin, end - begin);
  for (const std::string& e : events) text += ", " + e;
  const std::string path = fresh_dir(name) + "/step.json";
  write_text(path, text + "]}");
  return path;
}

// Replays one step [begin, end) us holding `events`.
inline replayer::Replay replay_step(const std::string& name, int begin, int end, const std::vector<std::string>& events,
                                    const replayer::ReplayOptions& options = {}) {
  Logger quiet(LogLevel::kQuiet);
  const trace::TraceSet traces = load({write_step(name, begin, end, events)}, quiet);
  return replayer::replay_traces(traces, options, quiet);
}

inline const replayer::PathOp* find_op(const replayer::IterationReport& it, const std::string& name) {
  for (const replayer::PathOp& op : it.path_ops)
    if (op.name == name) return &op;
  return nullptr;
}

}  // namespace dpro::test
