#include "whatif/host_retime.h"

#include <cmath>

#include "core/error.h"

namespace dpro::whatif {

namespace {

constexpr std::string_view kHostPrefix = "host.";

Nanos scaled(Nanos t, double speed) { return nanos_from_double(static_cast<double>(t) / speed); }

}  // namespace

bool is_host_setting(const std::string& setting) { return setting.rfind(kHostPrefix, 0) == 0; }

std::optional<HostRetime> host_retime_from_settings(const std::vector<std::string>& settings,
                                                    std::vector<std::string>* rest) {
  std::optional<HostRetime> host;
  for (const std::string& s : settings) {
    if (!is_host_setting(s)) {
      if (rest) rest->push_back(s);
      continue;
    }
    const auto eq = s.find('=');
    const std::string key = s.substr(0, eq);
    if (key != "host.cpu_speed") throw OptionError("set", s, "unknown host setting (known: host.cpu_speed)");
    const std::string value = eq == std::string::npos ? "" : s.substr(eq + 1);
    std::size_t used = 0;
    double speed = 0;
    try {
      speed = std::stod(value, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != value.size() || !std::isfinite(speed) || speed <= 0 || speed > 1e6)
      throw OptionError("set", s, "host.cpu_speed must be a positive number up to 1000000 (2: a host twice as fast)");
    if (!host) host.emplace();
    host->cpu_speed = speed;
  }
  return host;
}

HostChange host_retime(Workload& workload, const HostRetime& options) {
  if (!std::isfinite(options.cpu_speed) || options.cpu_speed <= 0)
    throw OptionError("set", "host.cpu_speed=" + std::to_string(options.cpu_speed), "must be a positive number");
  HostChange change;
  change.options = options;
  for (graph::Node& n : workload.graph.dfg.nodes()) {
    if (n.kind == graph::NodeKind::kUntraced) {  // the thread's untraced work: its duration
      change.untraced_before = saturating_add(change.untraced_before, n.duration);
      n.duration = scaled(n.duration, options.cpu_speed);
      change.untraced_after = saturating_add(change.untraced_after, n.duration);
      continue;
    }
    if (!graph::is_cpu_op(n.kind)) continue;
    ++change.cpu_ops;
    change.op_time_before = saturating_add(change.op_time_before, n.duration);
    change.untraced_before = saturating_add(change.untraced_before, std::max<Nanos>(n.delay, 0));
    n.duration = scaled(n.duration, options.cpu_speed);
    n.delay = scaled(n.delay, options.cpu_speed);
    change.op_time_after = saturating_add(change.op_time_after, n.duration);
    change.untraced_after = saturating_add(change.untraced_after, std::max<Nanos>(n.delay, 0));
  }
  return change;
}

}  // namespace dpro::whatif
