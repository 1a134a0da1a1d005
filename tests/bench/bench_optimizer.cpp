// Optimizer benchmarks; each prints JSON lines.
//   bench_optimizer eval TRACE PLANS [SET...]     time to score one plan (median over PLANS random plans)
//   bench_optimizer phases TRACE PLANS [SET...]   where one plan's evaluation spends its time (copy, each
//        rewrite kind, finalize, cycle check, replay, report, post-replay checks; medians over PLANS random plans)
//   bench_optimizer incremental TRACE PLANS [SET...]  full against incremental evaluation (optimizer/
//        incremental.h) on PLANS plans of an annealing-like walk: median time of each, their ratio, plans
//        identical to the ns (wall and CPU time), the share of the replay a snapshot restart could skip at most; then a
//        search of PLANS plans (2 threads) twice each way, the times summed per way, and how many scores
//        agree. Exit 1 on a mismatch.
//   bench_optimizer search TRACE BUDGET [SET...]  a whole search: plans replayed, seconds, plans per second
//   bench_optimizer quality MAX_PLANS BUDGET_PERCENT TRACE... [-- SET...]
//        search vs exhaustive enumeration: for each trace, spaces of at most MAX_PLANS plans made of
//        consecutive runs of its variables (cases), the search given BUDGET_PERCENT of each space;
//        one line per case with the ratio of the steps found, then a summary line.
//   bench_optimizer ranking TRACE BUDGET [SET...]  op fusion's chains ranked by slack against by saving: the
//        best step an op-fusion-only search of BUDGET plans finds over each space (BENCH_FUSION_CHAINS=N in the
//        environment: N chain variables instead of SpaceOptions' 16, as a trace with many more chains than kept)
//   bench_optimizer planner TRACE SPLIT [SET...]  the per-bucket compression planner: building its
//        model (one replay), choosing, and the verifying replays of its plan, of the best single
//        method and of none; then the choice on the trace's buckets each split SPLIT times.
// SET: --set style key=value conditions (network.inter_node_gbps=1, host.cpu_speed=2).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "bench_util.h"
#include "core/error.h"
#include "core/log.h"
#include "costmodel/paths.h"
#include "optimizer/compression_planner.h"
#include "optimizer/incremental.h"
#include "optimizer/optimizer_fixtures.h"
#include "optimizer/search.h"
#include "optimizer/space.h"
#include "replayer/replay.h"
#include "trace/loader.h"

using namespace dpro;
using namespace dpro::optimizer;

namespace {

struct Job {
  std::shared_ptr<const trace::TraceSet> traces;
  whatif::Workload conditioned;
  Conditions conditions;
};

Job load_job(const std::string& path, const std::vector<std::string>& settings) {
  Logger quiet(LogLevel::kError);
  Job job;
  job.traces = std::make_shared<const trace::TraceSet>(trace::load_traces({path}, trace::LoadOptions{}, quiet));
  replayer::ReplayOptions options;
  replayer::Replay recorded = replayer::replay_traces(*job.traces, options, quiet);
  job.conditions.settings = settings;
  replayer::Simulator simulator;
  job.conditioned = whatif::evaluate({job.traces, recorded.graph}, condition_rewrites(job.conditions, test::resource_paths()),
                                     simulator, {})
                        .workload;
  return job;
}

SpaceOptions space_options() {
  SpaceOptions o;
  o.device_dir = costmodel::default_device_dir();
  return o;
}

std::string name_of(const std::string& path) { return path.substr(path.find_last_of('/') + 1); }

int eval(const std::string& path, int plans, const std::vector<std::string>& settings) {
  const Job job = load_job(path, settings);
  const SearchSpace space = make_space(job.conditioned, space_options());
  std::mt19937_64 rng(1);
  std::vector<double> seconds;
  Evaluator ev(job.conditioned, space, job.conditions, test::resource_paths(), 1);
  for (int i = 0; i < plans; ++i) {
    Assignment a(space.variables.size(), 0);
    for (std::size_t v = 0; v < a.size(); ++v) a[v] = static_cast<std::uint8_t>(rng() % space.variables[v].values.size());
    const auto t0 = std::chrono::steady_clock::now();
    ev.score({a});
    seconds.push_back(bench::seconds_since(t0));
  }
  bench::emit("optimizer_plan_score_ms", 1e3 * bench::median(seconds), "ms",
              "\"trace\": \"" + name_of(path) + "\", \"plans\": " + std::to_string(plans) +
                  ", \"variables\": " + std::to_string(space.variables.size()) +
                  ", \"ops\": " + std::to_string(job.conditioned.graph.dfg.op_count()));
  return 0;
}

// Where one plan's evaluation spends its time: whatif::evaluate's phases, timed one by one (median
// over PLANS random plans, ms).
int phases(const std::string& path, int plans, const std::vector<std::string>& settings) {
  const Job job = load_job(path, settings);
  const SearchSpace space = make_space(job.conditioned, space_options());
  std::mt19937_64 rng(1);
  replayer::Simulator simulator;
  std::vector<std::vector<double>> ms(7);
  std::vector<std::vector<double>> by_kind(std::variant_size_v<whatif::Rewrite>);
  std::vector<std::vector<double>> scratch(2);
  const char* names[] = {"copy", "rewrites", "finalize", "cycle_check", "simulate", "report", "after_steps"};
  for (int i = 0; i < plans; ++i) {
    Assignment a(space.variables.size(), 0);
    for (std::size_t v = 0; v < a.size(); ++v) a[v] = static_cast<std::uint8_t>(rng() % space.variables[v].values.size());
    const auto rewrites = decision_rewrites(job.conditions, decisions_of(space, a), test::resource_paths());
    auto t = std::chrono::steady_clock::now();
    auto lap = [&](std::size_t k) {
      ms[k].push_back(1e3 * bench::seconds_since(t));
      t = std::chrono::steady_clock::now();
    };
    whatif::Workload w = job.conditioned;
    lap(0);
    {
      const auto t1 = std::chrono::steady_clock::now();
      const graph::OpTable ops = job.conditioned.graph.dfg.ops();
      scratch[0].push_back(1e3 * bench::seconds_since(t1));
      const auto t2 = std::chrono::steady_clock::now();
      const auto ranks = job.conditioned.graph.ranks;
      scratch[1].push_back(1e3 * bench::seconds_since(t2));
      t = std::chrono::steady_clock::now();
    }
    for (const whatif::Rewrite& r : rewrites) {
      const auto t1 = std::chrono::steady_clock::now();
      whatif::apply(w, r);
      by_kind[r.index()].push_back(1e3 * bench::seconds_since(t1));
    }
    lap(1);
    if (!w.graph.dfg.finalized()) w.graph.dfg.finalize();
    lap(2);
    graph::check_acyclic(w.graph.dfg, *w.traces);
    lap(3);
    const replayer::Simulation& sim = simulator.run(w.graph.dfg);
    lap(4);
    replayer::ReportOptions ro;
    ro.top_ops = 0;
    ro.analysis = false;
    const replayer::Report report = replayer::make_report(*w.traces, w.graph, sim, ro);
    lap(5);
    whatif::gpu_work_after_steps(*w.traces, w.graph.dfg, sim, report);
    lap(6);
  }
  std::string extra = "\"trace\": \"" + name_of(path) + "\", \"plans\": " + std::to_string(plans);
  for (std::size_t k = 0; k < ms.size(); ++k) extra += ", \"" + std::string(names[k]) + "_ms\": " + std::to_string(bench::median(ms[k]));
  extra += ", \"copy_op_table_ms\": " + std::to_string(bench::median(scratch[0])) + ", \"copy_rank_maps_ms\": " + std::to_string(bench::median(scratch[1]));
  const char* kinds[] = {"host", "device", "comm", "op_fusion", "precision"};
  for (std::size_t k = 0; k < by_kind.size(); ++k)
    if (!by_kind[k].empty())
      extra += ", \"" + std::string(kinds[k]) + "_rewrite_ms\": " + std::to_string(bench::median(by_kind[k]));
  double total = 0;
  for (const auto& m : ms) total += bench::median(m);
  bench::emit("optimizer_plan_phases_ms", total, "ms", extra);
  return 0;
}

// Full against incremental evaluation (optimizer/incremental.h) on PLANS plans drawn as the
// annealing draws them (from the current plan, one variable set to another value, one time in four
// two), each evaluated both ways: the median time of each, their ratio, and how many plans gave
// identical results (every node's start and end, the makespan, the event count and the median
// step, 0 ns difference; and the causes where both runs recorded them). The incremental path
// replays as the search does, without causes (replayer::Record::kTimes).
bool same_times(const replayer::Simulation& x, const replayer::Simulation& y) {
  return x.start == y.start && x.end == y.end && x.makespan == y.makespan && x.events_processed == y.events_processed &&
         (!x.causes || !y.causes || (x.start_cause == y.start_cause && x.end_cause == y.end_cause));
}

// The nodes of a graph that have a trace event, by (rank, event): how a plan's nodes are matched
// with the baseline's.
std::map<std::pair<int, std::uint32_t>, graph::NodeId> nodes_by_event(const graph::Dfg& dfg) {
  std::map<std::pair<int, std::uint32_t>, graph::NodeId> out;
  for (const graph::NodeId v : dfg.node_ids())
    if (dfg.node(v).event.valid()) out.emplace(std::make_pair(dfg.node(v).rank, dfg.node(v).event.value), v);
  return out;
}

// How much of the baseline replay a restart from a snapshot could skip for one plan, at most: the
// share of the baseline's nodes that start before the first time at which the plan's replay
// differs from the baseline's, over nodes with a trace event (matched by it; a baseline node the
// plan removed, e.g. a fused part, differs at its start). A snapshot must precede the earliest
// changed input, which is no later than that time; leaving out nodes without an event (untraced
// work, barriers, inserted and fused nodes) can only make the bound larger.
double unchanged_prefix_share(const graph::Dfg& base, const replayer::Simulation& base_sim, const graph::Dfg& plan,
                              const replayer::Simulation& plan_sim) {
  const auto by_event = nodes_by_event(base);
  Nanos first = INT64_MAX;
  std::vector<char> seen(base.node_count(), 0);
  for (const graph::NodeId v : plan.node_ids()) {
    const graph::Node& n = plan.node(v);
    if (!n.event.valid()) continue;
    const auto it = by_event.find({n.rank, n.event.value});
    if (it == by_event.end()) {
      first = std::min(first, plan_sim.start[v]);
      continue;
    }
    seen[it->second.value] = 1;
    if (base_sim.start[it->second] != plan_sim.start[v] || base_sim.end[it->second] != plan_sim.end[v])
      first = std::min({first, base_sim.start[it->second], plan_sim.start[v]});
  }
  for (const graph::NodeId v : base.node_ids())
    if (!seen[v.value] && base.node(v).event.valid()) first = std::min(first, base_sim.start[v]);
  std::size_t before = 0;
  for (const graph::NodeId v : base.node_ids()) before += base_sim.start[v] < first ? 1 : 0;
  return static_cast<double>(before) / static_cast<double>(base.node_count());
}

// How much of the baseline replay any exact incremental replay could leave alone for one plan, at
// most: the share of the baseline's nodes with a trace event that the plan keeps, matched by that
// event, with the same start and end. A replay that re-times only what a plan changes must still
// visit every other node. Nodes without an event (untraced work, barriers, inserted and fused
// nodes) are left out of both counts.
double unchanged_node_share(const graph::Dfg& base, const replayer::Simulation& base_sim, const graph::Dfg& plan,
                            const replayer::Simulation& plan_sim) {
  const auto by_event = nodes_by_event(plan);
  std::size_t with_event = 0, same = 0;
  for (const graph::NodeId v : base.node_ids()) {
    const graph::Node& n = base.node(v);
    if (!n.event.valid()) continue;
    ++with_event;
    const auto it = by_event.find({n.rank, n.event.value});
    same += it != by_event.end() && base_sim.start[v] == plan_sim.start[it->second] && base_sim.end[v] == plan_sim.end[it->second];
  }
  return with_event == 0 ? 0.0 : static_cast<double>(same) / static_cast<double>(with_event);
}

int incremental(const std::string& path, int plans, const std::vector<std::string>& settings) {
  const Job job = load_job(path, settings);
  const SearchSpace space = make_space(job.conditioned, space_options());
  std::mt19937_64 rng(1);
  replayer::Simulator full_sim, incr_sim;
  whatif::Workload scratch;  // the incremental path's, as each search thread has one
  PrefixEvaluator prefix(job.conditioned, space, job.conditions, test::resource_paths());
  whatif::EvaluateOptions full_options;
  full_options.report.top_ops = 0;
  full_options.report.analysis = false;
  std::vector<double> full_ms, incr_ms, full_cpu_ms, incr_cpu_ms, prefix_share, unchanged_share;
  std::size_t matched = 0;
  const replayer::Simulation base_sim = replayer::simulate(job.conditioned.graph.dfg);
  Assignment a(space.variables.size(), 0);
  for (int i = 0; i < plans; ++i) {
    for (int m = rng() % 4 == 0 ? 2 : 1; m > 0; --m) {
      const std::size_t v = rng() % a.size(), n = space.variables[v].values.size();
      if (n > 1) a[v] = static_cast<std::uint8_t>((a[v] + 1 + rng() % (n - 1)) % n);
    }
    auto t0 = std::chrono::steady_clock::now();
    double c0 = bench::cpu_seconds();
    const whatif::Evaluation full =
        whatif::evaluate(job.conditioned, decision_rewrites(job.conditions, decisions_of(space, a), test::resource_paths()), full_sim, full_options);
    const Nanos full_step = median_step(full.report);
    full_ms.push_back(1e3 * bench::seconds_since(t0));
    full_cpu_ms.push_back(1e3 * (bench::cpu_seconds() - c0));
    t0 = std::chrono::steady_clock::now();
    c0 = bench::cpu_seconds();
    const PlanOutcome incr = prefix.evaluate(a, incr_sim, &scratch, replayer::Record::kTimes);
    const Nanos incr_step = median_step(incr.report);
    incr_ms.push_back(1e3 * bench::seconds_since(t0));
    incr_cpu_ms.push_back(1e3 * (bench::cpu_seconds() - c0));
    if (same_times(full.simulation, *incr.simulation) && full_step == incr_step) ++matched;
    prefix_share.push_back(unchanged_prefix_share(job.conditioned.graph.dfg, base_sim, full.workload.graph.dfg, full.simulation));
    unchanged_share.push_back(unchanged_node_share(job.conditioned.graph.dfg, base_sim, full.workload.graph.dfg, full.simulation));
  }
  const double full = bench::median(full_ms), incr = bench::median(incr_ms);
  const PrefixStats& st = prefix.stats();
  const std::string extra = "\"trace\": \"" + name_of(path) + "\", \"plans\": " + std::to_string(plans) +
                            ", \"nodes\": " + std::to_string(job.conditioned.graph.dfg.node_count()) +
                            ", \"full_ms\": " + std::to_string(full) + ", \"incremental_ms\": " + std::to_string(incr) +
                            ", \"full_cpu_ms\": " + std::to_string(bench::median(full_cpu_ms)) +
                            ", \"incremental_cpu_ms\": " + std::to_string(bench::median(incr_cpu_ms)) +
                            ", \"matched\": " + std::to_string(matched) + ", \"checks\": " + std::to_string(plans) +
                            ", \"from_base\": " + std::to_string(st.from_base) + ", \"from_precision\": " +
                            std::to_string(st.from_precision) + ", \"from_fusion\": " + std::to_string(st.from_fusion) +
                            ", \"replay_prefix_unchanged_percent_median\": " + std::to_string(100 * bench::median(prefix_share)) +
                            ", \"replay_prefix_unchanged_percent_max\": " +
                            std::to_string(100 * *std::max_element(prefix_share.begin(), prefix_share.end())) +
                            ", \"nodes_unchanged_percent_median\": " + std::to_string(100 * bench::median(unchanged_share)) +
                            ", \"nodes_unchanged_percent_max\": " +
                            std::to_string(100 * *std::max_element(unchanged_share.begin(), unchanged_share.end()));
  bench::emit("optimizer_full_eval_ms", full, "ms", extra);
  bench::emit("optimizer_incremental_eval_ms", incr, "ms", extra);
  bench::emit("optimizer_incremental_speedup", full / incr, "full/incremental", extra);
  // The same on CPU time (this process's; the walk runs on one thread): a shared machine's other
  // work stretches wall time, not this.
  bench::emit("optimizer_incremental_speedup_cpu", bench::median(full_cpu_ms) / bench::median(incr_cpu_ms),
              "full/incremental", extra);
  bench::emit("optimizer_incremental_exact_checks", static_cast<double>(matched), "plans", extra);
  // A whole search (PLANS plans, 2 threads) each way, twice, in the order full, incremental,
  // incremental, full (a shared machine's load drifts): the time of each way summed over its two
  // runs, and whether every plan's score agrees.
  double seconds[2] = {0, 0};
  std::map<Assignment, Score, AssignmentLess> scored[2];
  PrefixStats stats;
  for (const int m : {0, 1, 1, 0}) {
    Evaluator ev(job.conditioned, space, job.conditions, test::resource_paths(), 2, m == 0 ? EvaluationMode::kFull : EvaluationMode::kIncremental);
    SearchOptions o;
    o.max_evaluations = static_cast<std::size_t>(plans);
    const auto t0 = std::chrono::steady_clock::now();
    search(ev, space, o);
    seconds[m] += bench::seconds_since(t0);
    scored[m] = ev.scored();
    if (m == 1) stats = ev.prefix_stats();
  }
  std::size_t same = 0;
  for (const auto& [a, score] : scored[0]) {
    const auto it = scored[1].find(a);
    same += it != scored[1].end() && it->second.step_ns == score.step_ns && it->second.risk == score.risk &&
            it->second.extra_memory_bytes == score.extra_memory_bytes;
  }
  const bool all_same = same == scored[0].size() && scored[0].size() == scored[1].size();
  bench::emit("optimizer_search_incremental_speedup", seconds[0] / seconds[1], "full/incremental",
              "\"trace\": \"" + name_of(path) + "\", \"threads\": 2, \"full_s\": " + std::to_string(seconds[0]) +
                  ", \"incremental_s\": " + std::to_string(seconds[1]) + ", \"plans\": " + std::to_string(scored[0].size()) +
                  ", \"same_scores\": " + std::to_string(same) + ", \"from_base\": " + std::to_string(stats.from_base) +
                  ", \"from_precision\": " + std::to_string(stats.from_precision) +
                  ", \"from_fusion\": " + std::to_string(stats.from_fusion));
  return matched == static_cast<std::size_t>(plans) && all_same ? 0 : 1;
}

int run_search(const std::string& path, std::size_t budget, const std::vector<std::string>& settings) {
  const Job job = load_job(path, settings);
  const SearchSpace space = make_space(job.conditioned, space_options());
  Evaluator ev(job.conditioned, space, job.conditions, test::resource_paths(), 2);
  SearchOptions o;
  o.max_evaluations = budget;
  const auto t0 = std::chrono::steady_clock::now();
  const SearchResult r = search(ev, space, o);
  const double s = bench::seconds_since(t0);
  const std::string extra = "\"trace\": \"" + name_of(path) + "\", \"plans\": " + std::to_string(r.evaluations) +
                            ", \"variables\": " + std::to_string(space.variables.size()) + ", \"threads\": 2" +
                            ", \"speedup_percent\": " +
                            std::to_string(100.0 * static_cast<double>(r.baseline.score.step_ns - r.best.score.step_ns) /
                                           static_cast<double>(r.baseline.score.step_ns));
  bench::emit("optimizer_search_seconds", s, "s", extra);
  bench::emit("optimizer_search_plans_per_second", static_cast<double>(r.evaluations) / s, "plans/s", extra);
  return 0;
}

// Op fusion's chains ranked by what they save on or near the critical path (SpaceOptions::
// rank_fusion_by_slack) against whatif's ranking by predicted saving wherever they run: the same
// search (op fusion only, BUDGET plans, seed 1, 2 threads) over each space; the best step each
// finds and how many chain variables the two spaces share.
int ranking(const std::string& path, std::size_t budget, const std::vector<std::string>& settings) {
  const Job job = load_job(path, settings);
  std::vector<SearchResult> found;
  std::vector<SearchSpace> spaces;
  for (const bool by_slack : {true, false}) {
    SpaceOptions so = space_options();
    so.strategies = {Strategy::kOpFusion};
    so.rank_fusion_by_slack = by_slack;
    if (const char* chains = std::getenv("BENCH_FUSION_CHAINS")) so.max_fusion_chains = std::strtoul(chains, nullptr, 10);
    spaces.push_back(make_space(job.conditioned, so));
    Evaluator ev(job.conditioned, spaces.back(), job.conditions, test::resource_paths(), 2);
    SearchOptions o;
    o.max_evaluations = budget;
    found.push_back(search(ev, spaces.back(), o));
  }
  std::size_t shared = 0;
  for (const Variable& v : spaces[0].variables)
    shared += std::any_of(spaces[1].variables.begin(), spaces[1].variables.end(),
                          [&v](const Variable& w) { return w.chain == v.chain; });
  const auto pct = [](const SearchResult& r) {
    return 100.0 * static_cast<double>(r.baseline.score.step_ns - r.best.score.step_ns) /
           static_cast<double>(r.baseline.score.step_ns);
  };
  bench::emit("optimizer_fusion_ranking_gain_points", pct(found[0]) - pct(found[1]), "percentage points",
              fmt::format("\"trace\": \"{}\", \"budget\": {}, \"chains\": {}, \"chains_shared\": {}, "
                          "\"baseline_ms\": {:.4f}, \"by_slack_ms\": {:.4f}, \"by_saving_ms\": {:.4f}, "
                          "\"by_slack_speedup_percent\": {:.4f}, \"by_saving_speedup_percent\": {:.4f}",
                          name_of(path), budget, spaces[0].variables.size(), shared, 1e-6 * found[0].baseline.score.step_ns,
                          1e-6 * found[0].best.score.step_ns, 1e-6 * found[1].best.score.step_ns, pct(found[0]), pct(found[1])));
  return 0;
}

int quality(std::size_t max_plans, double budget_percent, const std::vector<std::string>& traces,
            const std::vector<std::string>& settings) {
  std::vector<double> ratios;
  std::size_t within3 = 0;
  for (const std::string& path : traces) {
    const Job job = load_job(path, settings);
    const SearchSpace full = make_space(job.conditioned, space_options());
    // Cases: windows of consecutive variables whose spaces have at most max_plans plans.
    for (std::size_t first = 0; first < full.variables.size(); ++first) {
      SearchSpace space;
      space.strategies = full.strategies;
      std::size_t plans = 1;
      for (std::size_t i = first; i < full.variables.size(); ++i) {
        if (plans * full.variables[i].values.size() > max_plans) break;
        plans *= full.variables[i].values.size();
        space.variables.push_back(full.variables[i]);
      }
      if (space.variables.size() < 2) continue;
      Evaluator all_ev(job.conditioned, space, job.conditions, test::resource_paths(), 2);
      const SearchResult all = exhaustive(all_ev, space, Limits{}, max_plans);
      Evaluator ev(job.conditioned, space, job.conditions, test::resource_paths(), 2);
      SearchOptions o;
      o.max_evaluations = std::max<std::size_t>(2, static_cast<std::size_t>(budget_percent / 100.0 * static_cast<double>(plans)));
      const SearchResult found = search(ev, space, o);
      const double ratio = static_cast<double>(found.best.score.step_ns) / static_cast<double>(all.best.score.step_ns);
      ratios.push_back(ratio);
      within3 += ratio <= 1.03 ? 1 : 0;
      bench::emit("optimizer_quality_ratio", ratio, "found/exhaustive",
                  "\"trace\": \"" + name_of(path) + "\", \"first_variable\": " + std::to_string(first) +
                      ", \"variables\": " + std::to_string(space.variables.size()) + ", \"plans\": " +
                      std::to_string(plans) + ", \"budget\": " + std::to_string(o.max_evaluations) +
                      ", \"exhaustive_gain_percent\": " +
                      std::to_string(100.0 * (1.0 - static_cast<double>(all.best.score.step_ns) /
                                                        static_cast<double>(all.baseline.score.step_ns))));
      if (first + space.variables.size() >= full.variables.size()) break;
    }
  }
  if (ratios.empty()) {
    std::fprintf(stderr, "bench_optimizer quality: no case (no trace has 2 variables within %zu plans)\n", max_plans);
    return 1;
  }
  double worst = 0;
  for (double r : ratios) worst = std::max(worst, r);
  bench::emit("optimizer_quality_cases_within_3_percent", static_cast<double>(within3), "cases",
              "\"cases\": " + std::to_string(ratios.size()) + ", \"worst_ratio\": " + std::to_string(worst) +
                  ", \"median_ratio\": " + std::to_string(bench::median(ratios)));
  return 0;
}

// The model of `real` with each bucket split into `parts` consecutive buckets (bytes and transfer
// divided, ready times spread over the time since the rank's previous bucket was ready), priced
// again by compress.h: a bucket list as fine as `parts` times the recorded one.
PlannerModel split_buckets(const PlannerModel& real, std::size_t parts) {
  PlannerModel m = real;
  m.positions = real.positions * parts;
  for (PlannerModel::Step& step : m.steps) {
    std::vector<PlannerModel::Bucket> buckets;
    std::vector<std::size_t> last_part(step.buckets.size());
    std::vector<Nanos> previous_ready(step.ranks, 0);
    for (std::size_t k = 0; k < step.buckets.size(); ++k) {
      const PlannerModel::Bucket& b = step.buckets[k];
      const Nanos from = std::min(previous_ready[b.rank] ? previous_ready[b.rank] : b.ready, b.ready);
      previous_ready[b.rank] = b.ready;
      for (std::size_t j = 0; j < parts; ++j) {
        PlannerModel::Bucket part = b;
        part.position = b.position * parts + j;
        part.ready = from + (b.ready - from) * static_cast<Nanos>(j + 1) / static_cast<Nanos>(parts);
        part.shape.bytes = std::max<std::int64_t>(1, b.shape.bytes / static_cast<std::int64_t>(parts));
        part.shape.transfer = b.shape.transfer / static_cast<Nanos>(parts);
        part.fixed = j + 1 == parts ? b.fixed : 0;
        part.cost.clear();
        for (const comm::CompressionSpec& spec : m.specs) part.cost.push_back(comm::price_method(spec, part.shape, *m.target, m.rates));
        buckets.push_back(std::move(part));
      }
      last_part[k] = buckets.size() - 1;
    }
    // Buckets in (position, rank) order, as the model keeps them; consumers wait for the last part.
    std::vector<std::size_t> order(buckets.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
      return std::tie(buckets[x].position, buckets[x].rank) < std::tie(buckets[y].position, buckets[y].rank);
    });
    std::vector<std::size_t> where(order.size());
    step.buckets.clear();
    for (std::size_t i = 0; i < order.size(); ++i) where[order[i]] = i, step.buckets.push_back(buckets[order[i]]);
    for (PlannerModel::Consumer& c : step.consumers)
      for (PlannerModel::Wait& w : c.waits) w.bucket = where[last_part[w.bucket]];
    for (PlannerModel::Bucket& b : step.buckets)
      if (b.follows) b.follows = where[last_part[*b.follows]];
  }
  set_consumer_baselines(m);  // their times under the split list with no compression
  return m;
}

double median_ms_of(const std::function<void()>& f, int runs) {
  std::vector<double> seconds;
  for (int i = 0; i < runs; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    seconds.push_back(bench::seconds_since(t0));
  }
  return 1e3 * bench::median(seconds);
}

// The compression planner: on the trace itself (model from one replay, the choice, and the
// verifying replays of the plan, the best single method and none), then on the same buckets split
// `parts` times (the choice's time and the model's predictions).
int planner(const std::string& path, std::size_t parts, const std::vector<std::string>& settings) {
  const Job job = load_job(path, settings);
  const PlannerOptions options;
  PlannerModel model;
  const double build_ms = median_ms_of([&] { model = build_model(job.conditioned, job.conditions, {}, test::resource_paths(), options); }, 3);
  CompressionPlan plan;
  const double choose_ms = median_ms_of([&] { plan = choose(model, options); }, 5);
  auto replayed = [&](const std::string& value) {
    std::vector<Decision> d;
    if (value != "none") d.push_back({Strategy::kCompression, "", value, {}});
    return replay_step(job.conditioned, job.conditions, d, test::resource_paths());
  };
  const Nanos none = replayed("none"), single = replayed(plan.best_single), planned = replayed(plan.value);
  // Espresso's upper bound: compression that costs nothing (no transfer, no kernels), by the model.
  PlannerModel free = model;
  for (PlannerModel::Step& step : free.steps)
    for (PlannerModel::Bucket& b : step.buckets) b.cost.back() = comm::MethodCost{};
  const Nanos bound = choose(free, options).planned.median_ns;
  const std::string common = "\"trace\": \"" + name_of(path) + "\", \"positions\": " + std::to_string(model.positions) +
                             ", \"buckets\": " + std::to_string(plan.buckets);
  bench::emit("planner_build_model_ms", build_ms, "ms", common + ", \"what\": \"one baseline replay and the pricing\"");
  bench::emit("planner_choose_ms", choose_ms, "ms", common + ", \"evaluations\": " + std::to_string(plan.evaluations));
  bench::emit("planner_planned_step_ms", 1e-6 * static_cast<double>(planned), "ms",
              common + fmt::format(", \"model_ms\": {:.4f}, \"best_single\": \"{}\", \"best_single_replayed_ms\": {:.4f}, "
                                   "\"best_single_model_ms\": {:.4f}, \"none_replayed_ms\": {:.4f}, \"none_model_ms\": {:.4f}, "
                                   "\"free_compression_model_ms\": {:.4f}, \"plan\": \"{}\"",
                                   1e-6 * plan.planned.median_ns, plan.best_single, 1e-6 * single,
                                   1e-6 * plan.best_single_score.median_ns, 1e-6 * none, 1e-6 * plan.none.median_ns,
                                   1e-6 * bound,
                                   describe({Strategy::kCompression, "", plan.value, {}})));
  if (parts <= 1) return 0;
  const PlannerModel fine = split_buckets(model, parts);
  CompressionPlan fine_plan;
  const double fine_ms = median_ms_of([&] { fine_plan = choose(fine, options); }, 7);
  bench::emit("planner_choose_ms", fine_ms, "ms",
              "\"trace\": \"" + name_of(path) + "\", \"positions\": " + std::to_string(fine.positions) +
                  ", \"buckets\": " + std::to_string(fine_plan.buckets) + ", \"split\": " + std::to_string(parts) +
                  ", \"evaluations\": " + std::to_string(fine_plan.evaluations) +
                  fmt::format(", \"planned_model_ms\": {:.4f}, \"best_single\": \"{}\", \"best_single_model_ms\": {:.4f}, \"none_model_ms\": {:.4f}",
                              1e-6 * fine_plan.planned.median_ns, fine_plan.best_single,
                              1e-6 * fine_plan.best_single_score.median_ns, 1e-6 * fine_plan.none.median_ns));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string mode = argc > 1 ? argv[1] : "";
    std::vector<std::string> rest(argv + std::min(argc, 2), argv + argc);
    if (mode == "eval" && rest.size() >= 2)
      return eval(rest[0], std::atoi(rest[1].c_str()), {rest.begin() + 2, rest.end()});
    if (mode == "phases" && rest.size() >= 2)
      return phases(rest[0], std::atoi(rest[1].c_str()), {rest.begin() + 2, rest.end()});
    if (mode == "incremental" && rest.size() >= 2)
      return incremental(rest[0], std::atoi(rest[1].c_str()), {rest.begin() + 2, rest.end()});
    if (mode == "search" && rest.size() >= 2)
      return run_search(rest[0], static_cast<std::size_t>(std::atol(rest[1].c_str())), {rest.begin() + 2, rest.end()});
    if (mode == "ranking" && rest.size() >= 2)
      return ranking(rest[0], static_cast<std::size_t>(std::atol(rest[1].c_str())), {rest.begin() + 2, rest.end()});
    if (mode == "planner" && rest.size() >= 2)
      return planner(rest[0], static_cast<std::size_t>(std::atol(rest[1].c_str())), {rest.begin() + 2, rest.end()});
    if (mode == "quality" && rest.size() >= 3) {
      const auto dashes = std::find(rest.begin(), rest.end(), "--");
      return quality(static_cast<std::size_t>(std::atol(rest[0].c_str())), std::atof(rest[1].c_str()),
                     {rest.begin() + 2, dashes}, {dashes == rest.end() ? dashes : dashes + 1, rest.end()});
    }
    std::fprintf(stderr, "usage: bench_optimizer eval TRACE PLANS [SET...] | phases TRACE PLANS [SET...] | "
                         "incremental TRACE PLANS [SET...] | search TRACE BUDGET [SET...] | "
                         "quality MAX_PLANS BUDGET_PERCENT TRACE... [-- SET...] | planner TRACE SPLIT [SET...] | "
                         "ranking TRACE BUDGET [SET...]\n");
    return 2;
  } catch (const InputError& e) {
    std::fprintf(stderr, "bench_optimizer: %s\n", e.what());
    return 2;
  }
}
