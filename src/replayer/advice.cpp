#include "replayer/advice.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>

#include "replayer/verdict.h"

namespace dpro::replayer {
namespace {

double share(Nanos part, Nanos whole) { return whole > 0 ? static_cast<double>(part) / static_cast<double>(whole) : 0.0; }

std::string percent(double x) { return fmt::format("{:.1f}%", 100.0 * x); }

// The steady steps' mean job critical path (every step when none is steady).
struct Path {
  Nanos by[kCategoryCount] = {};
  Nanos total = 0;
  double of(Category c) const { return share(by[static_cast<int>(c)], total); }
};

Path path_of(const Report& report, const StepStats& stats) {
  Path p;
  if (!stats.steady.empty()) {
    std::copy(std::begin(stats.critical_path), std::end(stats.critical_path), p.by);
  } else {
    for (const IterationReport& it : report.iterations)
      for (int c = 0; c < kCategoryCount; ++c) p.by[c] += it.job_critical_path.by_category[c];
  }
  for (Nanos v : p.by) p.total += v;
  return p;
}

// Kernel launches per step of kernels whose mean measured time is under kSmallKernel.
std::size_t small_kernels_per_step(const Tables& t) {
  std::size_t n = 0;
  for (const GpuOpRow& r : t.gpu_ops)
    if (r.kind == graph::NodeKind::kKernel && r.count > 0 && r.measured / static_cast<Nanos>(r.count) < kSmallKernel) n += r.count;
  return n / std::max<std::size_t>(1, t.iterations);
}

// The rank most steady steps' job verdict waits for, with how many; {-1, 0} for none.
std::pair<int, std::size_t> straggler(const Report& report, const StepStats& stats) {
  std::map<int, std::size_t> waits;
  for (std::size_t i : stats.steady)
    if (report.iterations[i].verdict.bound == Verdict::Bound::kPeer) ++waits[report.iterations[i].verdict.peer];
  std::pair<int, std::size_t> best{-1, 0};
  for (const auto& [rank, n] : waits)
    if (n > best.second) best = {rank, n};
  return best;
}

void cpu_rules(const Path& p, const Tables& t, const std::string& bound, std::vector<Advice>& out) {
  if (const double x = p.of(Category::kLaunch); x >= kLaunchShare) {
    const std::size_t small = small_kernels_per_step(t);
    out.push_back({"launch_overhead",
                   fmt::format("{}launch overhead {} of the critical path{}", bound == "CPU-bound" ? "CPU-bound: " : "", percent(x),
                               small > 0 ? fmt::format("; {} kernel launches per step under 10 us", small) : ""),
                   "capture the step in CUDA graphs or torch.compile(mode=\"reduce-overhead\"); fuse small kernels "
                   "(`dpro-replay optimize --strategies op_fusion`)"});
  }
  if (const double x = p.of(Category::kCpuUntraced); x >= kUntracedShare)
    out.push_back({"untraced_cpu",
                   fmt::format("{}untraced host work (Python, framework code between ops) {} of the critical path",
                               bound == "CPU-bound" ? "CPU-bound: " : "", percent(x)),
                   "profile the host (py-spy, torch.profiler with_stack=True); move input work to DataLoader workers "
                   "(num_workers, pin_memory)"});
  if (const double x = p.of(Category::kBlockedOnGpu); x >= kBlockedShare)
    out.push_back({"blocked_on_gpu", fmt::format("host blocked on the GPU {} of the critical path (syncs, a full launch queue)", percent(x)),
                   "remove synchronisations from the step (.item(), .cpu(), torch.cuda.synchronize())"});
}

void gpu_rules(const Path& p, std::vector<Advice>& out) {
  if (const double x = p.of(Category::kCompute); x >= kComputeShare)
    out.push_back({"gpu_bound", fmt::format("GPU-bound: kernels {} of the critical path", percent(x)),
                   "lower precision or fuse ops (`dpro-replay optimize --strategies precision,op_fusion`); the top kernels' "
                   "occupancy is in `--table gpu_ops`"});
  if (const double x = p.of(Category::kCopies); x >= kCopiesShare)
    out.push_back({"copies", fmt::format("copies {} of the critical path", percent(x)),
                   "pin host memory and copy with non_blocking=True, or keep the data on the GPU"});
}

// The steps (a table row's `step`: the ProfilerStep number, -1 for a whole-trace window) the rules
// read: the steady ones, as the path rules do (every step when none is steady). A warm-up step
// of seconds (cuDNN's autotuning, allocations) would otherwise outweigh every steady step, and
// its idle GPU tell a GPU-bound job that it starves.
std::set<std::int64_t> rule_steps(const Report& report, const StepStats& stats) {
  std::set<std::int64_t> steps;
  auto add = [&](const IterationReport& it) { steps.insert(it.whole_trace ? -1 : it.number); };
  if (stats.steady.empty())
    for (const IterationReport& it : report.iterations) add(it);
  for (std::size_t i : stats.steady) add(report.iterations[i]);
  return steps;
}

void job_rules(const Report& report, const StepStats& stats, const Tables& t, std::vector<Advice>& out) {
  const std::set<std::int64_t> steps = rule_steps(report, stats);
  Nanos span = 0, communication = 0, exposed = 0, idle_span = 0, host_wait = 0;
  for (const OverlapRow& r : t.overlap)
    if (steps.contains(r.step)) span += r.span, communication += r.communication, exposed += r.exposed();
  for (const IdleRow& r : t.idle)
    if (steps.contains(r.step)) idle_span += r.span, host_wait += r.host_wait;
  if (const double x = share(exposed, span); x >= kExposedShare)
    out.push_back({"exposed_communication",
                   fmt::format("exposed communication {} of the step ({} of the communication hidden behind compute)", percent(x),
                               percent(share(communication - exposed, communication))),
                   "overlap it with backward or shrink it: try `dpro-replay optimize --strategies buckets,compression`"});
  if (const auto [rank, steps] = straggler(report, stats); rank >= 0 && share(steps, stats.steady.size()) >= kStragglerSteps)
    out.push_back({"straggler", fmt::format("{} of {} steady step(s) wait for rank {}", steps, stats.steady.size(), rank),
                   fmt::format("look at rank {}'s own verdict and tables (`--table idle,operators`): balance its load or its host", rank)});
  if (const double x = share(host_wait, idle_span); x >= kHostStarvedShare)
    out.push_back({"host_starved_gpu", fmt::format("GPU idle waiting for the host to launch {} of the step", percent(x)),
                   "the GPU starves: launch ahead (fewer syncs, more DataLoader workers) or shrink the host's work per step"});
}

}  // namespace

const std::vector<std::string>& advice_tables() {
  static const std::vector<std::string> names{"gpu_ops", "overlap", "idle"};
  return names;
}

std::vector<Advice> advise(const Report& report, const StepStats& stats, const Tables& tables) {
  std::vector<Advice> out;
  if (!report.analysed || report.iterations.empty()) return out;
  const Path p = path_of(report, stats);
  std::string bound;
  std::size_t most = 0;
  for (const auto& [name, n] : stats.verdicts)
    if (n > most) most = n, bound = name;
  cpu_rules(p, tables, bound, out);
  gpu_rules(p, out);
  job_rules(report, stats, tables, out);
  return out;
}

std::string render_advice(const std::vector<Advice>& advice) {
  if (advice.empty()) return "";
  std::string out = "advice (from the steady steps; rules, see docs/replay.md):\n";
  for (const Advice& a : advice) out += fmt::format("  - {} -> {}\n", a.evidence, a.action);
  return out;
}

nlohmann::json to_json(const std::vector<Advice>& advice) {
  nlohmann::json j = nlohmann::json::array();
  for (const Advice& a : advice) j.push_back({{"rule", a.rule}, {"evidence", a.evidence}, {"action", a.action}});
  return j;
}

}  // namespace dpro::replayer
