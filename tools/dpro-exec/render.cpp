#include "render.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/time.h"

namespace dpro::exec_cli {

namespace ex = executor;

namespace {

std::string mib(std::uint64_t bytes) { return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1 << 20)); }

double ratio(std::uint64_t a, std::uint64_t b) { return b == 0 ? 1.0 : static_cast<double>(a) / static_cast<double>(b); }

Nanos median(std::vector<Nanos> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::string window_text(const ex::Schedule& s) {
  if (s.window.empty()) return "the whole trace (no recorded iteration)";
  return fmt::format("{} (recorded {})", s.window, format_duration(s.window_end - s.window_start));
}

nlohmann::json edges_json(const ex::LoweringStats& st) {
  nlohmann::json kept = nlohmann::json::object();
  for (int k = 0; k < graph::kEdgeKindCount; ++k)
    if (st.kept[k] > 0) kept[graph::to_string(static_cast<graph::EdgeKind>(k))] = st.kept[k];
  return {{"kept", kept},
          {"outside_window", st.outside_window},
          {"other_ranks", st.other_ranks},
          {"launch_queue", st.launch_queue},
          {"cross_thread_stream_order", st.cross_thread_stream_order}};
}

Nanos spin_of(const ex::HostThread& t) {
  Nanos total = 0;
  for (const ex::HostStep& st : t.steps) total += st.kind == ex::StepKind::kSpin ? st.spin : 0;
  return total;
}

}  // namespace

nlohmann::json schedule_json(const ex::Schedule& s, const std::vector<std::string>& notes) {
  const ex::ScheduleSummary sum = ex::summarize(s);
  nlohmann::json classes = nlohmann::json::object();
  for (int c = 0; c < ex::kOpClassCount; ++c) {
    const ex::ClassCounts& n = sum.by_class[c];
    if (n.real + n.standin > 0) classes[ex::to_string(static_cast<ex::OpClass>(c))] = {{"real", n.real}, {"standin", n.standin}};
  }
  nlohmann::json reasons = nlohmann::json::array();
  for (const auto& [why, n] : sum.standin_reasons) reasons.push_back({{"reason", why}, {"launches", n}});
  nlohmann::json blocking = nlohmann::json::array();
  for (const auto& [op, n] : sum.standin_blocking_ops) blocking.push_back({{"op", op}, {"launches", n}});
  nlohmann::json threads = nlohmann::json::array(), streams = nlohmann::json::array();
  for (const ex::HostThread& t : s.threads) threads.push_back({{"name", t.name}, {"steps", t.steps.size()}, {"spin_ns", spin_of(t)}});
  for (const ex::StreamInfo& st : s.streams) streams.push_back(st.name);
  return {{"rank", s.rank},
          {"window", s.window},
          {"window_ns", s.window_end - s.window_start},
          {"launches", sum.launches},
          {"by_class", classes},
          {"standin_reasons", reasons},
          {"standin_blocking_ops", blocking},
          {"host_threads", threads},
          {"streams", streams},
          {"events", s.events},
          {"host_flags", s.flags},
          {"host_spin_ns", sum.host_spin_total},
          {"memory", {{"tensors", s.tensors.size()},
                      {"arena_bytes", s.memory.arena_bytes},
                      {"live_peak_bytes", s.memory.live_peak_bytes},
                      {"arena_over_live_peak", ratio(s.memory.arena_bytes, s.memory.live_peak_bytes)}}},
          {"edges", edges_json(s.stats)},
          {"notes", notes}};
}

std::string schedule_text(const ex::Schedule& s, const std::vector<std::string>& notes) {
  const ex::ScheduleSummary sum = ex::summarize(s);
  std::string out = fmt::format("rank {}, {}\n", s.rank, window_text(s));
  for (const std::string& n : notes) out += n + "\n";
  out += fmt::format("{} launches on {} stream(s) from {} host thread(s); {} events, {} host flags; host spins {}\n",
                     sum.launches, s.streams.size(), s.threads.size(), s.events, s.flags, format_duration(sum.host_spin_total));
  for (const ex::HostThread& t : s.threads)
    out += fmt::format("  host thread {}: {} steps, spins {}\n", t.name, t.steps.size(), format_duration(spin_of(t)));
  out += fmt::format("  {:<12} {:>8} {:>9}\n", "op class", "real", "stand-in");
  for (int c = 0; c < ex::kOpClassCount; ++c) {
    const ex::ClassCounts& n = sum.by_class[c];
    if (n.real + n.standin > 0) out += fmt::format("  {:<12} {:>8} {:>9}\n", ex::to_string(static_cast<ex::OpClass>(c)), n.real, n.standin);
  }
  if (sum.by_class[static_cast<int>(ex::OpClass::kCollective)].real > 0)
    out += "  (collectives: NCCL calls where each rank has its GPU; on one GPU the device runs them as stand-ins)\n";
  if (!sum.standin_reasons.empty()) out += "stand-ins, why:\n";
  for (const auto& [why, n] : sum.standin_reasons) out += fmt::format("  {:>8}  {}\n", n, why);
  out += fmt::format("memory: {} tensors in one arena of {}; live-tensor peak {} ({:.2f}x)\n", s.tensors.size(),
                     mib(s.memory.arena_bytes), mib(s.memory.live_peak_bytes), ratio(s.memory.arena_bytes, s.memory.live_peak_bytes));
  std::string kept;
  for (int k = 0; k < graph::kEdgeKindCount; ++k)
    if (s.stats.kept[k] > 0) kept += fmt::format("{}{} {}", kept.empty() ? "" : ", ", s.stats.kept[k], graph::to_string(static_cast<graph::EdgeKind>(k)));
  out += "dependencies kept: " + kept + "\n";
  out += fmt::format("not scheduled: {} to or from other ranks (collective peers), {} outside the window, {} launch-queue "
                     "waits (the device's own queue)\n",
                     s.stats.other_ranks, s.stats.outside_window, s.stats.launch_queue);
  return out;
}

nlohmann::json run_json(const ex::Schedule& s, const ex::RunResult& r) {
  nlohmann::json busy = nlohmann::json::array();
  for (std::size_t st = 0; st < s.streams.size(); ++st) {
    std::vector<Nanos> per_iteration;
    for (const auto& it : r.stream_busy_ns) per_iteration.push_back(it[st]);
    busy.push_back({{"stream", s.streams[st].name}, {"busy_ns_median", median(per_iteration)}});
  }
  return {{"device", r.device},
          {"rank", s.rank},
          {"window", s.window},
          {"recorded_ns", s.window_end - s.window_start},
          {"iteration_ns", r.iteration_ns},
          {"median_ns", median(r.iteration_ns)},
          {"streams", busy},
          {"arena_bytes", r.arena_bytes}};
}

std::string run_text(const ex::Schedule& s, const ex::RunResult& r) {
  std::string out = fmt::format("{}: rank {}, {}, {} iteration(s)\n", r.device, s.rank, window_text(s), r.iteration_ns.size());
  const auto [lo, hi] = std::minmax_element(r.iteration_ns.begin(), r.iteration_ns.end());
  out += fmt::format("measured iteration: median {}, min {}, max {}\n", format_duration(median(r.iteration_ns)),
                     format_duration(*lo), format_duration(*hi));
  for (std::size_t st = 0; st < s.streams.size() && !r.stream_busy_ns.empty(); ++st) {
    std::vector<Nanos> per_iteration;
    for (const auto& it : r.stream_busy_ns) per_iteration.push_back(it[st]);
    out += fmt::format("  {:<24} busy {} (median)\n", s.streams[st].name, format_duration(median(per_iteration)));
  }
  out += fmt::format("arena {}\n", mib(r.arena_bytes));
  return out;
}

}  // namespace dpro::exec_cli
