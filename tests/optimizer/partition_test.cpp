// Tensor partition: gradient bucket boundaries placed one by one over a step's all-reduces (in
// backward order), priced by the bucket rewrite of whatif/comm, searched with the bucket sizes,
// and carried by the plan file. Real traces: the 8-rank DLRM job and rank 0 of a 2-rank A100 DDP
// job, on networks slow enough for buckets to matter.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <set>

#include "core/error.h"
#include "optimizer/plan.h"
#include "optimizer/optimizer_fixtures.h"
#include "optimizer/search.h"
#include "optimizer/space.h"
#include "costmodel/paths.h"
#include "whatif/workload_fixtures.h"

using namespace dpro;
using namespace dpro::optimizer;

namespace {

struct Job {
  whatif::Workload base;
  Conditions conditions;
  whatif::Workload conditioned;
  Job(const std::string& trace, std::vector<std::string> settings) : base(test::load_workload(trace)) {
    conditions.settings = std::move(settings);
    replayer::Simulator simulator;
    conditioned = whatif::evaluate(base, condition_rewrites(conditions, test::resource_paths()), simulator, {}).workload;
  }
  SearchSpace space(std::vector<Strategy> strategies) const {
    SpaceOptions o;
    o.strategies = std::move(strategies);
    o.device_dir = costmodel::default_device_dir();
    return make_space(conditioned, o);
  }
  // The median step and the bucket ends of `decisions` replayed.
  std::pair<Nanos, std::vector<std::size_t>> replay(const std::vector<Decision>& decisions) const {
    replayer::Simulator simulator;
    const whatif::Evaluation e =
        whatif::evaluate(conditioned, decision_rewrites(conditions, decisions, test::resource_paths()), simulator, {});
    std::vector<std::size_t> ends;
    for (const whatif::Change& c : e.changes)
      if (const auto* comm = std::get_if<whatif::CommChange>(&c); comm && comm->buckets) ends = comm->buckets->bucket_end;
    return {median_step(e.report), ends};
  }
};

const std::vector<std::string> kSlowA100 = {"network.inter_node_gbps=0.5", "network.intra_node_gbps=0.5"};
const std::vector<std::string> kSlowDlrm = {"cluster.gpus_per_node=1", "network.inter_node_gbps=1.25"};
const char* kA100 = "traces/hta/a100-ws2-rank0-nccl.json.gz";

Decision partition(std::vector<std::size_t> boundaries) {
  Decision d{Strategy::kPartition, "", "", {}};
  d.boundaries = std::move(boundaries);
  return d;
}

// Every partition of the space's boundary variables (each merged or split).
std::vector<Assignment> all_partitions(const SearchSpace& space) {
  std::vector<std::size_t> vars;
  for (std::size_t i = 0; i < space.variables.size(); ++i)
    if (space.variables[i].strategy == Strategy::kPartition) vars.push_back(i);
  std::vector<Assignment> out;
  for (std::size_t bits = 0; bits < (std::size_t{1} << vars.size()); ++bits) {
    Assignment a(space.variables.size(), 0);
    for (std::size_t k = 0; k < vars.size(); ++k) a[vars[k]] = static_cast<std::uint8_t>((bits >> k) & 1);
    out.push_back(std::move(a));
  }
  return out;
}

}  // namespace

TEST_CASE("partition: one boundary variable per step position, searched with the bucket sizes") {
  const Job a100(kA100, kSlowA100);
  const SearchSpace s = a100.space({Strategy::kPartition});
  // The A100 rank runs 5 gradient all-reduces a step: 4 boundaries, after the size variable.
  REQUIRE(s.variables.size() == 5);
  CHECK(s.variables[0].strategy == Strategy::kBuckets);
  for (std::size_t i = 1; i < 5; ++i) {
    CHECK(s.variables[i].strategy == Strategy::kPartition);
    CHECK(s.variables[i].subject == std::to_string(i));
  }
  CHECK(s.strategies == std::vector<Strategy>{Strategy::kBuckets, Strategy::kPartition});
  // Boundaries 1 and 3 merged: buckets begin at 0, 2 and 4.
  Assignment a(5, 0);
  a[1] = a[3] = 1;
  const std::vector<Decision> d = decisions_of(s, a);
  REQUIRE(d.size() == 1);
  CHECK(d[0].boundaries == std::vector<std::size_t>{2, 4});
  CHECK(d[0].value == "2,4");
  CHECK(describe(d[0]) == "partition: 3 gradient buckets per step, beginning at positions 0, 2, 4");
  CHECK(decision_variables(s, a) == std::vector<std::vector<std::size_t>>{{1, 3}});
  CHECK(risk_of(d) == 0);
}

TEST_CASE("partition: every single bucket size is a partition, replayed to the same nanosecond") {
  for (const auto& [trace, settings] : {std::pair{std::string(kA100), kSlowA100},
                                        std::pair{std::string("traces/dlrm-8xV100"), kSlowDlrm}}) {
    const Job job(trace, settings);
    const SearchSpace s = job.space({Strategy::kPartition});
    std::vector<std::pair<Nanos, std::vector<std::size_t>>> partitions;
    for (const Assignment& a : all_partitions(s)) {
      std::vector<Decision> d = decisions_of(s, a);
      if (d.empty()) {  // every boundary kept, stated as a decision so that the buckets are reported
        d.push_back(partition({}));
        for (std::size_t i = 1; i < s.variables.size(); ++i) d[0].boundaries.push_back(std::stoul(s.variables[i].subject));
      }
      partitions.push_back(job.replay(d));
    }
    std::set<Nanos> steps;
    for (const auto& p : partitions) steps.insert(p.first);
    CHECK(steps.size() > 1);  // the boundaries matter on this network
    for (const std::string& mb : s.variables[0].values) {
      if (mb == "off") continue;
      const auto size = job.replay({{Strategy::kBuckets, "", mb, {}}});
      const auto same = std::find_if(partitions.begin(), partitions.end(), [&](const auto& p) { return p.second == size.second; });
      INFO(trace << ": buckets of " << mb << " MiB");
      std::string ends;
      for (std::size_t e : size.second) ends += std::to_string(e) + " ";
      INFO("size's ends: " << ends);
      REQUIRE(same != partitions.end());
      CHECK(same->first == size.first);
    }
  }
}

TEST_CASE("partition: the search reaches at least the best single bucket size, on DLRM and the A100 rank") {
  for (const auto& [trace, settings] : {std::pair{std::string(kA100), kSlowA100},
                                        std::pair{std::string("traces/dlrm-8xV100"), kSlowDlrm}}) {
    const Job job(trace, settings);
    const SearchSpace sizes = job.space({Strategy::kBuckets});
    Evaluator by_size(job.conditioned, sizes, job.conditions, test::resource_paths(), 2);
    const SearchResult best_size = exhaustive(by_size, sizes, Limits{});
    const SearchSpace s = job.space({Strategy::kPartition});
    Evaluator ev(job.conditioned, s, job.conditions, test::resource_paths(), 2);
    SearchOptions o;
    o.max_evaluations = 30;
    const SearchResult found = search(ev, s, o);
    INFO(trace);
    CHECK(found.best.score.step_ns <= best_size.best.score.step_ns);
    CHECK(found.best.score.step_ns < found.baseline.score.step_ns);
    CHECK(found.gains_ns.size() == decisions_of(s, found.best.assignment).size());
  }
}

TEST_CASE("partition: the same seed gives the same plan bytes, on 1 thread or 2") {
  const Job a100(kA100, kSlowA100);
  const SearchSpace s = a100.space({Strategy::kPartition, Strategy::kCompression});
  std::vector<std::string> bytes;
  for (int threads : {1, 2}) {
    Evaluator ev(a100.conditioned, s, a100.conditions, test::resource_paths(), threads);
    SearchOptions o;
    o.seed = 11;
    o.max_evaluations = 40;
    const SearchResult r = search(ev, s, o);
    Plan p;
    p.decisions = decisions_of(s, r.best.assignment);
    p.step_ns = r.best.score.step_ns;
    p.gains_ns = r.gains_ns;
    bytes.push_back(to_json(p).dump());
  }
  CHECK(bytes[0] == bytes[1]);
}

TEST_CASE("partition: the plan file carries the boundaries, and refuses bad ones") {
  Plan p;
  p.decisions = {{Strategy::kBuckets, "", "25", {}}, partition({1, 3})};
  p.decisions[1].value = "1,3";
  const nlohmann::json j = to_json(p);
  CHECK(j["decisions"][1]["boundaries"] == nlohmann::json::array({1, 3}));
  CHECK(plan_from_json(nlohmann::json::parse(j.dump()), "p.json").decisions == p.decisions);
  // One bucket per step: no boundary at all.
  nlohmann::json one = j;
  one["decisions"][1]["boundaries"] = nlohmann::json::array();
  CHECK(plan_from_json(one, "p.json").decisions[1].boundaries.empty());
  auto fails_with = [&](const nlohmann::json& boundaries, const std::string& text) {
    nlohmann::json bad = j;
    if (boundaries.is_null()) bad["decisions"][1].erase("boundaries");
    else bad["decisions"][1]["boundaries"] = boundaries;
    CHECK_THROWS_WITH(plan_from_json(bad, "p.json"), Catch::Contains("p.json: decisions[1].boundaries") && Catch::Contains(text));
  };
  fails_with(nullptr, "missing");
  fails_with(nlohmann::json::array({0, 2}), "position 0 always begins a bucket");
  fails_with(nlohmann::json::array({3, 2}), "strictly increasing");
  fails_with(nlohmann::json::array({-1}), "a boundary is a step position");
  fails_with("1,3", "must be a list");
}

TEST_CASE("partition: a boundary beyond the steps' all-reduces is an OptionError naming it") {
  const Job a100(kA100, kSlowA100);
  CHECK_THROWS_MATCHES(a100.replay({partition({2, 5})}), OptionError, Catch::Predicate<OptionError>([](const OptionError& e) {
                         return e.option() == "partition" && e.value() == "5" &&
                                std::string(e.what()).find("at most 5 all-reduces") != std::string::npos;
                       }));
  CHECK_THROWS_AS(decision_rewrites({}, {partition({1}), partition({2})}, test::resource_paths()), OptionError);
  // One bucket per step: fewer all-reduces than buckets of 1 MiB leave.
  const auto merged = a100.replay({partition({})});
  const auto split = a100.replay({{Strategy::kBuckets, "", "1", {}}});
  CHECK(merged.second.size() < split.second.size());
}
