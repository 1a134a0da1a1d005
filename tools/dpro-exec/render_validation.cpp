#include <fmt/format.h>

#include "core/time.h"
#include "render.h"

namespace dpro::exec_cli {

namespace ex = executor;

namespace {

nlohmann::json error_json(const ex::Compared& c) {
  const auto e = c.error();
  return e ? nlohmann::json(100.0 * *e) : nlohmann::json(nullptr);
}

nlohmann::json compared_json(const ex::Compared& c) {
  return {{"measured_ns", c.measured}, {"predicted_ns", c.predicted}, {"error_pct", error_json(c)}};
}

std::string error_text(const ex::Compared& c) {
  const auto e = c.error();
  return e ? fmt::format("{:+.1f}%", 100.0 * *e) : std::string("n/a");
}

std::string row(const std::string& name, std::size_t launches, const ex::Compared& c) {
  return fmt::format("  {:<24} {:>8} {:>12} {:>12} {:>9}\n", name, launches, format_duration(c.measured),
                     format_duration(c.predicted), error_text(c));
}

}  // namespace

nlohmann::json validation_json(const ex::Validation& v, const std::vector<std::string>& notes) {
  nlohmann::json classes = nlohmann::json::array(), streams = nlohmann::json::array();
  for (const ex::ClassComparison& c : v.classes) {
    nlohmann::json j = compared_json(c.time);
    j["class"] = ex::to_string(c.cls);
    j["launches"] = c.launches;
    classes.push_back(j);
  }
  for (const ex::StreamComparison& st : v.streams) {
    nlohmann::json j = compared_json(st.busy);
    j["stream"] = st.name;
    j["launches"] = st.launches;
    streams.push_back(j);
  }
  nlohmann::json step = compared_json(v.step);
  step["measured_per_iteration_ns"] = v.measured_step_ns;
  return {{"device", v.device},   {"rank", v.rank},       {"window", v.window}, {"recorded_ns", v.recorded_ns},
          {"step", step},         {"classes", classes},   {"streams", streams}, {"launches", v.launch_measured_ns.size()},
          {"notes", notes}};
}

std::string validation_text(const ex::Validation& v, const std::vector<std::string>& notes) {
  std::string out = fmt::format("{}: rank {}, {} (recorded {}), {} iteration(s)\n", v.device, v.rank,
                                v.window.empty() ? "the whole trace" : v.window, format_duration(v.recorded_ns),
                                v.measured_step_ns.size());
  for (const std::string& n : notes) out += n + "\n";
  out += fmt::format("  {:<24} {:>8} {:>12} {:>12} {:>9}\n", "", "launches", "measured", "predicted", "error");
  out += row("step (median)", v.launch_measured_ns.size(), v.step);
  for (std::size_t i = 0; i < v.measured_step_ns.size(); ++i)
    out += row(fmt::format("  iteration {}", i + 1), v.launch_measured_ns.size(), {v.measured_step_ns[i], v.step.predicted});
  out += "per op class (kernel time, summed over launches; last iteration):\n";
  for (const ex::ClassComparison& c : v.classes) out += row(ex::to_string(c.cls), c.launches, c.time);
  out += "per stream (busy time; measured: median over iterations):\n";
  for (const ex::StreamComparison& st : v.streams) out += row(st.name, st.launches, st.busy);
  return out;
}

}  // namespace dpro::exec_cli
