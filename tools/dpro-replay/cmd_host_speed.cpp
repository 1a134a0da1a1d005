#include "cmd_host_speed.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <iostream>

#include "core/log.h"
#include "core/strings.h"
#include "graph/builder.h"
#include "output_file.h"
#include "trace/loader.h"
#include "whatif/host_speed.h"

namespace dpro::cli {
namespace {

class HostSpeedCommand final : public Command {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    CLI::App* sub = parent.add_subcommand(
        "host-speed",
        "How fast the TARGET capture's host ran the CPU ops both captures ran (framework ops, CUDA runtime\n"
        "and driver calls, without the time they waited for the GPU), relative to the ORIGIN's: the\n"
        "'--set host.cpu_speed=X' for a what-if on ORIGIN that runs its host like TARGET's.");
    sub->add_option("origin", origin_, "the origin capture (a trace file or a directory of one job's ranks)")
        ->required();
    sub->add_option("target", target_, "the target capture (same)")->required();
    sub->add_option("--min-calls", min_calls_, "an op counts when each capture ran it at least this often")
        ->default_val(whatif::kHostSpeedMinCalls)
        ->check(CLI::Range(1, 1000000000));
    sub->add_option("--top", top_, "how many ops to list (0 to 1000000)")->default_val(10)->check(CLI::Range(0, 1000000));
    sub->add_option("--json", json_path_, "also write the result as JSON to this file ('-' = stdout, no text)");
    sub->add_flag("--force", force_, "overwrite an existing --json file");
    sub->add_flag("-q,--quiet", quiet_, "print only errors on stderr");
    return sub;
  }

  int run() override {
    Logger log(quiet_ ? LogLevel::kError : LogLevel::kWarning);
    check_output_paths({{"--json", json_path_}}, {origin_, target_}, force_);
    const graph::BuiltGraph origin = build(origin_, log);
    const graph::BuiltGraph target = build(target_, log);
    const whatif::HostSpeed speed = whatif::host_speed(origin.dfg, target.dfg, min_calls_);
    if (json_path_ != "-") print(speed);
    if (!json_path_.empty())
      write_output(json_path_, [&](std::ostream& out) { out << to_json(speed).dump(2) << "\n"; }, force_);
    return 0;
  }

 private:
  static graph::BuiltGraph build(const std::string& path, Logger& log) {
    const trace::TraceSet traces = trace::load_traces({path}, trace::LoadOptions{}, log);
    return graph::build_graph(traces, graph::BuildOptions{}, log);
  }

  void print(const whatif::HostSpeed& s) const {
    if (s.ops.empty()) {
      std::cout << fmt::format(
          "No CPU op ran at least {} times in both captures: nothing to compare (host.cpu_speed=1).\n", min_calls_);
      return;
    }
    const double share = s.origin_cpu_total > 0 ? 100.0 * s.origin_total / s.origin_cpu_total : 0;
    std::cout << fmt::format(
        "host.cpu_speed={:.3f}: the target's host ran the CPU ops both captures ran {:.3f}x as fast as the origin's "
        "(median over {} ops weighted by the origin's time in them, {:.1f}% of its unblocked CPU-op time).\n",
        s.cpu_speed, s.cpu_speed, s.ops.size(), share);
    std::cout << fmt::format("A what-if on the origin with the target's host: dpro-replay replay {} --set host.cpu_speed={:.3f}\n",
                             origin_, s.cpu_speed);
    if (top_ == 0) return;
    std::cout << fmt::format("{:>10} {:>10} {:>12} {:>12} {:>7}  {}\n", "calls", "(target)", "median", "(target)",
                             "speed", "op");
    for (std::size_t i = 0; i < s.ops.size() && i < top_; ++i) {
      const whatif::HostOpRatio& r = s.ops[i];
      std::cout << fmt::format("{:>10} {:>10} {:>12} {:>12} {:>7.3f}  {}\n", r.origin_calls, r.target_calls,
                               format_duration(r.origin_median), format_duration(r.target_median), r.speed,
                               r.name.substr(0, 80));
    }
  }

  static nlohmann::json to_json(const whatif::HostSpeed& s) {
    nlohmann::json ops = nlohmann::json::array();
    for (const whatif::HostOpRatio& r : s.ops)
      ops.push_back({{"name", r.name},
                     {"origin_calls", r.origin_calls},
                     {"target_calls", r.target_calls},
                     {"origin_median_ns", r.origin_median},
                     {"target_median_ns", r.target_median},
                     {"origin_total_ns", r.origin_total},
                     {"speed", r.speed}});
    return {{"cpu_speed", s.cpu_speed},
            {"origin_shared_ns", s.origin_total},
            {"origin_cpu_ns", s.origin_cpu_total},
            {"ops", ops}};
  }

  std::string origin_, target_, json_path_;
  std::size_t min_calls_ = whatif::kHostSpeedMinCalls, top_ = 10;
  bool force_ = false, quiet_ = false;
};

}  // namespace

std::unique_ptr<Command> make_host_speed_command() { return std::make_unique<HostSpeedCommand>(); }

}  // namespace dpro::cli
