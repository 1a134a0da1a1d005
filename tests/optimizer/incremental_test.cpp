// Incremental evaluation (optimizer/incremental.h) against the full what-if: on real traces and
// plans drawn from the optimizer's space, every node's start, end and causes, the median step and
// the change records are identical (0 ns difference), through the reuse paths (a cached prefix
// after precision, after op fusion), with a cache too small to keep what a walk needs, and in the
// search (the same plans and scores with either mode).
#include <catch2/catch.hpp>

#include <random>

#include "costmodel/comm/calibration.h"
#include "costmodel/comm/comm_ops.h"
#include "costmodel/paths.h"
#include "optimizer/incremental.h"
#include "optimizer/optimizer_fixtures.h"
#include "optimizer/search.h"
#include "optimizer/space.h"
#include "whatif/comm_retime.h"
#include "whatif/workload_fixtures.h"

using namespace dpro;
using namespace dpro::optimizer;

namespace {

// A job under its conditions with the full space of every strategy that applies.
struct Job {
  whatif::Workload base;
  Conditions conditions;
  whatif::Workload conditioned;
  SearchSpace space;
  Job(const char* trace, std::vector<std::string> settings) : base(test::load_workload(trace)) {
    conditions.settings = std::move(settings);
    replayer::Simulator simulator;
    conditioned = whatif::evaluate(base, condition_rewrites(conditions, test::resource_paths()), simulator, {}).workload;
    SpaceOptions o;
    o.device_dir = costmodel::default_device_dir();
    o.max_fusion_chains = 6;
    space = make_space(conditioned, o);
  }
  bool has(Strategy s) const {
    return std::find(space.strategies.begin(), space.strategies.end(), s) != space.strategies.end();
  }
};

// Plans as a walk would visit them: each step sets one variable to another value, the strategy
// of the variable cycling so that every strategy is changed, and prefixes recur.
std::vector<Assignment> walk(const SearchSpace& space, std::size_t steps, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Assignment> out;
  Assignment a(space.variables.size(), 0);
  for (std::size_t k = 0; k < steps; ++k) {
    const Strategy s = space.strategies[k % space.strategies.size()];
    std::vector<std::size_t> of;
    for (std::size_t i = 0; i < a.size(); ++i)
      if (space.variables[i].strategy == s && space.variables[i].values.size() > 1) of.push_back(i);
    if (of.empty()) continue;
    const std::size_t i = of[rng() % of.size()];
    const std::size_t n = space.variables[i].values.size();
    a[i] = static_cast<std::uint8_t>((a[i] + 1 + rng() % (n - 1)) % n);
    out.push_back(a);
  }
  return out;
}

std::string plan_text(const Assignment& a) {
  std::string out;
  for (std::uint8_t v : a) out += std::to_string(v) + " ";
  return out;
}

bool same_fit(const comm::CalibrationFit& a, const comm::CalibrationFit& b) {
  for (int i = 0; i < comm::kCollectiveOpCount; ++i) {
    if (a.calibration.op[i].latency != b.calibration.op[i].latency ||
        a.calibration.op[i].byte_time != b.calibration.op[i].byte_time || a.source[i] != b.source[i] ||
        a.samples[i] != b.samples[i])
      return false;
  }
  return true;
}

// Evaluates `plans` both ways and checks them equal; returns how often a prefix was reused.
std::size_t check_equal(const Job& j, const std::vector<Assignment>& plans, std::size_t max_cached) {
  PrefixEvaluator incremental(j.conditioned, j.space, j.conditions, test::resource_paths(), max_cached);
  // As the search scores plans: a replay without causes (replayer::Record::kTimes).
  PrefixEvaluator times_only(j.conditioned, j.space, j.conditions, test::resource_paths(), max_cached);
  replayer::Simulator full_sim, incr_sim, times_sim;
  whatif::EvaluateOptions options;
  options.report.top_ops = 0;
  options.report.analysis = false;
  whatif::Workload scratch;  // handed to every other plan: exact with and without it
  for (std::size_t i = 0; i < plans.size(); ++i) {
    const Assignment& a = plans[i];
    const whatif::Evaluation full = whatif::evaluate(
        j.conditioned, decision_rewrites(j.conditions, decisions_of(j.space, a), test::resource_paths()), full_sim, options);
    const PlanOutcome incr = incremental.evaluate(a, incr_sim, i % 2 == 0 ? &scratch : nullptr);
    INFO("plan " << plan_text(a));
    REQUIRE(incr.simulation->start.size() == full.simulation.start.size());
    CHECK(incr.simulation->start == full.simulation.start);
    CHECK(incr.simulation->end == full.simulation.end);
    CHECK(incr.simulation->start_cause == full.simulation.start_cause);
    CHECK(incr.simulation->end_cause == full.simulation.end_cause);
    CHECK(incr.simulation->makespan == full.simulation.makespan);
    CHECK(median_step(incr.report) == median_step(full.report));
    const PlanOutcome fast = times_only.evaluate(a, times_sim, nullptr, replayer::Record::kTimes);
    CHECK_FALSE(fast.simulation->causes);
    CHECK(fast.simulation->start == full.simulation.start);
    CHECK(fast.simulation->end == full.simulation.end);
    CHECK(fast.simulation->makespan == full.simulation.makespan);
    CHECK(fast.simulation->events_processed == full.simulation.events_processed);
    CHECK(replayer::to_json(fast.report).dump() == replayer::to_json(incr.report).dump());
    CHECK(median_step(fast.report) == median_step(full.report));
    REQUIRE(incr.changes.size() == full.changes.size());
    for (std::size_t k = 0; k < full.changes.size(); ++k) {
      REQUIRE(incr.changes[k].index() == full.changes[k].index());
      if (const auto* f = std::get_if<whatif::OpFusionChange>(&full.changes[k])) {
        const auto& g = std::get<whatif::OpFusionChange>(incr.changes[k]);
        CHECK(g.instances == f->instances);
        CHECK(g.gpu_after == f->gpu_after);
      } else if (const auto* p = std::get_if<whatif::PrecisionChange>(&full.changes[k])) {
        CHECK(std::get<whatif::PrecisionChange>(incr.changes[k]).gpu_after == p->gpu_after);
      } else if (const auto* c = std::get_if<whatif::CommChange>(&full.changes[k])) {
        // The incremental path's fit comes from the cache's memo (whatif::CommRetimeCache::fit).
        CHECK(same_fit(std::get<whatif::CommChange>(incr.changes[k]).fit, c->fit));
      }
    }
  }
  const PrefixStats s = incremental.stats();
  CHECK(s.from_base + s.from_precision + s.from_fusion == plans.size());
  return s.from_precision + s.from_fusion;
}

}  // namespace

TEST_CASE("incremental evaluation equals the full what-if on every node, 8-rank DLRM") {
  const Job j("traces/dlrm-8xV100", {});
  REQUIRE(j.has(Strategy::kOpFusion));
  REQUIRE(j.has(Strategy::kCompression));
  CHECK(check_equal(j, walk(j.space, 24, 1), 4) > 0);
}

TEST_CASE("incremental evaluation equals the full what-if on every node, A100 job on a slow network") {
  const Job j("traces/hta/a100-ws2-rank0-nccl.json.gz", {"network.inter_node_gbps=0.5", "network.intra_node_gbps=0.5"});
  // Every level of reuse is exercised: precision, op fusion and communication all vary.
  REQUIRE(j.has(Strategy::kPrecision));
  REQUIRE(j.has(Strategy::kOpFusion));
  REQUIRE(j.has(Strategy::kBuckets));
  CHECK(check_equal(j, walk(j.space, 24, 2), 4) > 0);
  // A cache of one workload per level drops and rebuilds prefixes: still exact.
  CHECK(check_equal(j, walk(j.space, 16, 3), 1) > 0);
}

// ResNet-50 on an H100: precision's lowering is most of a plan's evaluation, and a plan that starts
// from the job lowers it with the kernels described once (whatif::PrecisionCache). With one
// workload kept per level, a walk that changes the precision variables starts from the job again
// and again.
TEST_CASE("incremental evaluation equals the full what-if on every node, H100 ResNet-50 (precision from the job)") {
  const Job j("traces/h100/resnet50", {});
  REQUIRE(j.has(Strategy::kPrecision));
  CHECK(check_equal(j, walk(j.space, 10, 4), 1) > 0);
}

TEST_CASE("the search scores the same plans the same in incremental and full mode") {
  const Job j("traces/hta/a100-ws2-rank0-nccl.json.gz", {"network.inter_node_gbps=0.5"});
  SearchOptions s;
  s.seed = 5;
  s.max_evaluations = 40;
  Evaluator full(j.conditioned, j.space, j.conditions, test::resource_paths(), 2, EvaluationMode::kFull);
  Evaluator incr(j.conditioned, j.space, j.conditions, test::resource_paths(), 2, EvaluationMode::kIncremental);
  const SearchResult a = search(full, j.space, s);
  const SearchResult b = search(incr, j.space, s);
  CHECK(a.best.assignment == b.best.assignment);
  CHECK(a.best.score.step_ns == b.best.score.step_ns);
  CHECK(a.gains_ns == b.gains_ns);
  REQUIRE(full.scored().size() == incr.scored().size());
  for (const auto& [plan, score] : full.scored()) {
    const Score& other = incr.scored().at(plan);
    CHECK(other.step_ns == score.step_ns);
    CHECK(other.risk == score.risk);
    CHECK(other.extra_memory_bytes == score.extra_memory_bytes);
  }
  const PrefixStats st = incr.prefix_stats();
  CHECK(st.from_precision + st.from_fusion > 0);
  CHECK(full.prefix_stats().from_base == 0);
}

TEST_CASE("the communication cache's fit memo gives the fit of the samples it is handed") {
  const Job j("traces/dlrm-8xV100", {});
  const whatif::CommRetimeCache cache(j.conditioned, test::resource_paths().clusters_dir, costmodel::default_device_dir());
  const auto& traces = *j.conditioned.traces;
  const comm::ClusterSpec* origin = cache.clusters.guess(traces.gpu_names());
  REQUIRE(origin);
  CHECK(cache.holds(origin));
  const comm::ClusterSpec copy = *origin;
  CHECK_FALSE(cache.holds(&copy));  // a spec of another catalog, or a changed one: no memo
  const std::vector<comm::CommSample> samples =
      comm::make_samples(comm::find_comm_ops(j.conditioned.graph.dfg, traces), *origin);
  REQUIRE(samples.size() > 4);
  const comm::CalibrationFit direct = comm::fit_calibration_detailed(*origin, samples);
  CHECK(same_fit(cache.fit(*origin, samples), direct));
  CHECK(same_fit(cache.fit(*origin, samples), direct));  // from the memo
  // Samples that differ in a time the fit reads are fitted anew, and the first are still served.
  std::vector<comm::CommSample> slower = samples;
  for (comm::CommSample& s : slower) s.time_us *= 3;
  const comm::CalibrationFit direct_slower = comm::fit_calibration_detailed(*origin, slower);
  REQUIRE_FALSE(same_fit(direct_slower, direct));
  CHECK(same_fit(cache.fit(*origin, slower), direct_slower));
  CHECK(same_fit(cache.fit(*origin, samples), direct));
  // Instance ids are node ids that other rewrites renumber; the fit does not read them.
  std::vector<comm::CommSample> renumbered = samples;
  for (comm::CommSample& s : renumbered) s.instance += 7;
  CHECK(same_fit(cache.fit(*origin, renumbered), direct));
}
