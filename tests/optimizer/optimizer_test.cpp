// The optimizer as a library: plans and their file format, the search space, the search
// (determinism, budget, quality against exhaustive enumeration), and that a plan's score is what
// replaying its rewrites in one what-if gives.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <set>

#include "core/error.h"
#include "optimizer/plan.h"
#include "optimizer/optimizer_fixtures.h"
#include "optimizer/search.h"
#include "optimizer/space.h"
#include "costmodel/paths.h"
#include "replayer/slack.h"
#include "whatif/op_fusion.h"
#include "whatif/workload_fixtures.h"

using namespace dpro;
using namespace dpro::optimizer;

namespace {

// Rank 0 of a 2-rank A100 job with DDP all-reduces (torch.profiler, HTA's test data).
const char* kAllReduceTrace = "traces/hta/a100-ws2-rank0-nccl.json.gz";

// The job under `conditions` (condition_rewrites applied), as the optimize command builds it.
whatif::Workload conditioned(const whatif::Workload& base, const Conditions& conditions) {
  replayer::Simulator simulator;
  return whatif::evaluate(base, condition_rewrites(conditions, test::resource_paths()), simulator, {}).workload;
}

// The A100 job on a slow network (all-reduces then matter) and the space of `strategies` on it.
struct SlowJob {
  whatif::Workload base = test::load_workload(kAllReduceTrace);
  Conditions conditions;
  whatif::Workload job;
  SearchSpace space;
  explicit SlowJob(std::vector<Strategy> strategies) {
    conditions.settings = {"network.inter_node_gbps=0.5", "network.intra_node_gbps=0.5"};
    job = conditioned(base, conditions);
    SpaceOptions o;
    o.strategies = std::move(strategies);
    o.device_dir = costmodel::default_device_dir();
    space = make_space(job, o);
  }
};

Plan sample_plan() {
  Plan p;
  p.trace = {0x0123456789abcdefull, 2, 1000};
  p.conditions.cluster = "dgx-a100";
  p.conditions.settings = {"network.inter_node_gbps=1.25", "host.cpu_speed=2"};
  p.conditions.ranks = 64;
  p.decisions = {{Strategy::kBuckets, "", "25", {}},
                 {Strategy::kCompression, "", "fp16", {}},
                 {Strategy::kPrecision, "gemm", "bf16", {}},
                 {Strategy::kOpFusion, "", "", {"vectorized_elementwise_kernel", "reduce_kernel"}}};
  p.baseline_ns = 2000;
  p.step_ns = 1500;
  p.risk = 0.07;
  p.gains_ns = {10, 20, 30, 40};
  p.seed = 7;
  p.evaluations = 99;
  p.strategies = {Strategy::kBuckets, Strategy::kOpFusion};
  return p;
}

}  // namespace

TEST_CASE("a plan survives its JSON file format") {
  const Plan p = sample_plan();
  const Plan q = plan_from_json(nlohmann::json::parse(to_json(p).dump()), "plan.json");
  CHECK(q.trace == p.trace);
  CHECK(q.conditions == p.conditions);
  CHECK(q.decisions == p.decisions);
  CHECK(q.baseline_ns == p.baseline_ns);
  CHECK(q.step_ns == p.step_ns);
}

TEST_CASE("a bad plan file is one InputError naming the file and the item") {
  const nlohmann::json good = to_json(sample_plan());
  auto fails_with = [](const nlohmann::json& j, const std::string& text) {
    try {
      plan_from_json(j, "p.json");
      FAIL("accepted: " << j.dump());
    } catch (const InputError& e) {
      CHECK(e.file() == "p.json");
      CHECK_THAT(e.what(), Catch::Contains(text));
    }
  };
  fails_with(nlohmann::json::array(), "not a dpro plan");
  nlohmann::json j = good;
  j["format"] = "dpro-report";
  fails_with(j, "format");
  j = good;
  j["version"] = 2;
  fails_with(j, "version 2 is not supported");
  j = good;
  j["decisions"][0]["strategy"] = "pruning";
  fails_with(j, "decisions[0].strategy: unknown strategy");
  j = good;
  j["decisions"][3]["chain"] = {"one_kernel"};
  fails_with(j, "decisions[3].chain");
  j = good;
  j["decisions"][2].erase("subject");
  fails_with(j, "decisions[2].subject");
  j = good;
  j["trace"]["fingerprint"] = "xyz";
  fails_with(j, "trace.fingerprint");
  j = good;
  j["conditions"]["ranks"] = -3;
  fails_with(j, "conditions.ranks");
  j = good;
  j["predicted"]["step_ns"] = "fast";
  fails_with(j, "predicted.step_ns");
}

TEST_CASE("a plan file's text: not JSON, or nested deeper than 256 levels, is one InputError naming the file") {
  // Fuzzing finding 5 (docs/fuzzing.md): a value nested 200,000 deep was written into a message
  // (or, in "tolerances.rules", kept as text) by nlohmann's dump, which recursed until the stack
  // overflowed.
  const auto nested = [](std::size_t levels) { return std::string(levels, '[') + std::string(levels, ']'); };
  nlohmann::json without_tolerances = to_json(sample_plan());
  without_tolerances.erase("tolerances");
  const std::string good = without_tolerances.dump();
  const auto with = [&](const std::string& key, const std::string& value) {
    return good.substr(0, good.rfind('}')) + ", \"" + key + "\": " + value + "}";
  };
  const auto error_of = [](const std::string& text) -> std::string {
    try {
      parse_plan(text, "p.json");
    } catch (const InputError& e) {
      CHECK(e.file() == "p.json");
      return e.what();
    }
    return "";
  };
  CHECK(error_of(good).empty());
  CHECK(parse_plan(good, "p.json").decisions == sample_plan().decisions);
  CHECK_THAT(error_of(R"({"format": "dpro-plan", "version": 1e999})"), Catch::Contains("p.json: not valid JSON"));
  CHECK_THAT(error_of(R"({"format": )"), Catch::Contains("p.json: not valid JSON"));
  CHECK_THAT(error_of(with("later", nested(200000))), Catch::Contains("p.json: nests arrays and objects deeper than 256 levels"));
  CHECK_THAT(error_of(with("tolerances", R"({"file": "t", "fingerprint": "", "rules": [)" + nested(200000) + "]}")),
             Catch::Contains("deeper than 256 levels"));
  CHECK(error_of(with("later", nested(255))).empty());  // the plan's object and 255 more: 256 levels
  CHECK_THAT(error_of(with("later", nested(256))), Catch::Contains("deeper than 256 levels"));
}

TEST_CASE("a plan made for one job is refused for another") {
  const whatif::Workload dlrm = test::load_workload("traces/dlrm-8xV100");
  const whatif::Workload a100 = test::load_workload(kAllReduceTrace);
  Plan p;
  p.trace = identify(dlrm.graph);
  CHECK(p.trace.ranks == 8);
  CHECK(p.trace.ops > 1000);
  CHECK_NOTHROW(check_plan_matches(p, dlrm.graph, "p.json"));
  CHECK_THROWS_WITH(check_plan_matches(p, a100.graph, "p.json"), Catch::Contains("p.json: trace: the plan was made for another job"));
}

TEST_CASE("an unknown strategy is an OptionError, and a job with nothing to decide says why") {
  CHECK_THROWS_MATCHES(parse_strategy("pruning", "strategies"), OptionError,
                       Catch::Predicate<OptionError>([](const OptionError& e) { return e.option() == "strategies"; }));
  // A single-GPU trace has no all-reduce: nothing for buckets or compression.
  const whatif::Workload w = test::load_workload("traces/hta/simple-add-kineto.json.gz");
  SpaceOptions o;
  o.strategies = {Strategy::kBuckets, Strategy::kCompression};
  CHECK_THROWS_WITH(make_space(w, o), Catch::Contains("nothing to search") && Catch::Contains("no all-reduce"));
}

TEST_CASE("the search is deterministic for a seed, whatever the number of threads, and keeps its budget") {
  const SlowJob j({Strategy::kBuckets, Strategy::kCompression, Strategy::kOpFusion});
  REQUIRE(j.space.variables.size() > 2);
  SearchOptions s;
  s.seed = 3;
  s.max_evaluations = 24;
  Evaluator one(j.job, j.space, j.conditions, test::resource_paths(), 1);
  Evaluator two(j.job, j.space, j.conditions, test::resource_paths(), 2);
  const SearchResult a = search(one, j.space, s);
  const SearchResult b = search(two, j.space, s);
  CHECK(a.evaluations == s.max_evaluations);
  CHECK(a.best.assignment == b.best.assignment);
  CHECK(a.best.score.step_ns == b.best.score.step_ns);
  CHECK(a.pareto.size() == b.pareto.size());
  CHECK(a.best.score.step_ns <= a.baseline.score.step_ns);
  CHECK(a.gains_ns.size() == decisions_of(j.space, a.best.assignment).size());
}

TEST_CASE("the search finds what exhaustive enumeration finds on a small space") {
  const SlowJob j({Strategy::kBuckets, Strategy::kCompression});
  Evaluator ev(j.job, j.space, j.conditions, test::resource_paths(), 2);
  const SearchResult all = exhaustive(ev, j.space, Limits{});
  CHECK(all.evaluations == 64);
  Evaluator ev2(j.job, j.space, j.conditions, test::resource_paths(), 2);
  SearchOptions s;
  s.max_evaluations = 24;
  const SearchResult found = search(ev2, j.space, s);
  CHECK(found.best.score.step_ns == all.best.score.step_ns);
  // The space is not flat: its plans differ in step.
  std::set<Nanos> steps;
  for (const auto& [a, score] : ev.scored()) steps.insert(score.step_ns);
  CHECK(steps.size() > 1);
}

TEST_CASE("a risk or memory limit keeps the chosen plan within it") {
  const SlowJob j({Strategy::kCompression});
  Evaluator ev(j.job, j.space, j.conditions, test::resource_paths(), 2);
  const SearchResult free = exhaustive(ev, j.space, Limits{});
  REQUIRE(free.best.score.risk > 0.1);  // a lossy method is fastest here
  Limits careful;
  careful.max_risk = 0.05;
  const SearchResult safe = exhaustive(ev, j.space, careful);
  CHECK(safe.best.score.risk <= 0.05);
  CHECK(safe.best.score.step_ns >= free.best.score.step_ns);
  Limits no_memory;
  no_memory.max_extra_memory_bytes = 0;
  const SearchResult lean = exhaustive(ev, j.space, no_memory);
  CHECK(lean.best.score.extra_memory_bytes == 0);
  // Error feedback costs memory: the fastest plan needed some.
  CHECK(free.best.score.extra_memory_bytes > 0);
  // The Pareto set holds the fastest plan and the risk-free one.
  CHECK(free.pareto.front().score.step_ns == free.best.score.step_ns);
  CHECK(free.pareto.back().score.risk == 0);
}

TEST_CASE("a plan's score is the replay of its rewrites in one what-if, as replay --plan applies them") {
  const whatif::Workload base = test::load_workload(kAllReduceTrace);
  Conditions c;
  c.settings = {"network.inter_node_gbps=0.5"};
  c.ranks = 16;
  const whatif::Workload job = conditioned(base, c);
  SpaceOptions o;
  o.strategies = {Strategy::kBuckets};
  const SearchSpace space = make_space(job, o);
  Evaluator ev(job, space, c, test::resource_paths(), 1);
  for (std::uint8_t v = 0; v < space.variables[0].values.size(); v += 3) {
    const Assignment a = {v};
    std::vector<whatif::Rewrite> rewrites = condition_rewrites(c, test::resource_paths());
    for (whatif::Rewrite& r : decision_rewrites(c, decisions_of(space, a), test::resource_paths())) rewrites.push_back(std::move(r));
    replayer::Simulator simulator;
    const whatif::Evaluation one_go = whatif::evaluate(base, rewrites, simulator, {});
    CHECK(ev.score({a})[0].step_ns == median_step(one_go.report));
  }
}

TEST_CASE("the risk proxy is 0 for the empty plan and adds up over decisions") {
  CHECK(risk_of(std::vector<Decision>{}) == 0);
  const double fp16 = risk_of({{Strategy::kCompression, "", "fp16", {}}});
  const double both = risk_of({{Strategy::kCompression, "", "fp16", {}}, {Strategy::kPrecision, "gemm", "bf16", {}}});
  CHECK(fp16 > 0);
  CHECK(both > fp16);
  CHECK(risk_of({{Strategy::kBuckets, "", "25", {}}}) == 0);
}

TEST_CASE("a GPU the catalog does not know leaves precision out, with the reason, and the rest is searched") {
  // An AMD MI250 toy job (HTA's test data): its GPU is no catalog entry, so no dtype can be priced.
  const whatif::Workload w = test::load_workload("traces/hta/amd-mi250-toy.json.gz");
  SpaceOptions o;
  o.device_dir = costmodel::default_device_dir();
  const SearchSpace space = make_space(w, o);
  CHECK(std::find(space.strategies.begin(), space.strategies.end(), Strategy::kPrecision) == space.strategies.end());
  const auto it = std::find_if(space.not_applicable.begin(), space.not_applicable.end(),
                               [](const auto& p) { return p.first == Strategy::kPrecision; });
  REQUIRE(it != space.not_applicable.end());
  CHECK_THAT(it->second, Catch::Contains("does not know the GPU"));
  CHECK(!space.variables.empty());
}

TEST_CASE("a fusion decision names its kernels by their short function names") {
  const Decision d{Strategy::kOpFusion, "", "",
                   {"void (anonymous namespace)::elementwise_kernel_with_index<int, at::native::arange_cuda_out>(int)",
                    "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>(int)"}};
  CHECK(describe(d) == "op_fusion of 2 kernels (elementwise_kernel_with_index -> vectorized_elementwise_kernel)");
  // An anonymous namespace inside the name (PyTorch's dropout, cat, layer norm kernels) is no end
  // of it: these two were "?" until 2026-11-28.
  const Decision inner{Strategy::kOpFusion, "", "",
                       {"void at::native::(anonymous namespace)::fused_dropout_kernel_vec<float, float, unsigned int, 1, 4, "
                        "bool>(at::cuda::detail::TensorInfo<float const, unsigned int>, float)",
                        "void at::native::(anonymous namespace)::CatArrayBatchedCopy<at::native::(anonymous "
                        "namespace)::OpaqueType<4u>, unsigned int, 1, 128, 1>(int)"}};
  CHECK(describe(inner) == "op_fusion of 2 kernels (fused_dropout_kernel_vec -> CatArrayBatchedCopy)");
}

TEST_CASE("a fusion chain's critical saving counts what each occurrence saves beyond its slack") {
  graph::Dfg g;
  for (const Nanos d : {10, 20, 30, 40, 25, 7}) {
    graph::Node n;
    n.kind = d == 25 || d == 7 ? graph::NodeKind::kRuntimeCall : graph::NodeKind::kKernel;
    n.duration = d;
    g.add_node(n);
  }
  IdVector<graph::NodeId, Nanos> slack(6, 0);
  const Nanos slacks[] = {5, 0, 80, 60, 3, 100};
  for (std::uint32_t i = 0; i < 6; ++i) slack[graph::NodeId(i)] = slacks[i];
  whatif::FusionCandidate c;
  c.occurrences = {{graph::NodeId(0), graph::NodeId(1)}, {graph::NodeId(2), graph::NodeId(3)}};
  c.occurrence_gpu_saving = {12, 50};
  c.occurrence_launches = {{graph::NodeId(4)}, {graph::NodeId(5)}};
  // First: 12 of GPU time at slack 0 (its second kernel is critical), a 25 ns launch at slack 3.
  // Second: 50 at slack 60 and a 7 ns launch at slack 100 count nothing.
  CHECK(fusion_critical_saving(c, g, slack) == 12 + 22);
  c.occurrence_gpu_saving = {-4, 75};  // a slower fused kernel counts 0, not less
  CHECK(fusion_critical_saving(c, g, slack) == 0 + 22 + 15);
}

TEST_CASE("the search keeps the fusion chains that save most on or near the critical path") {
  const whatif::Workload job = conditioned(test::load_workload(kAllReduceTrace), Conditions{});
  SpaceOptions o;
  o.strategies = {Strategy::kOpFusion};
  o.device_dir = costmodel::default_device_dir();
  o.max_fusion_chains = 4;
  o.max_epilogue_chains = 0;
  const SearchSpace by_slack = make_space(job, o);
  o.rank_fusion_by_slack = false;
  const SearchSpace by_saving = make_space(job, o);
  // The candidates as the space finds them, and their critical savings on the job's replay.
  whatif::CandidateOptions co;
  co.intermediates_kept = true;
  co.device.device_dir = costmodel::default_device_dir();
  const std::vector<whatif::FusionCandidate> found = whatif::find_fusion_candidates(job, co);
  const auto slack = replayer::start_slack(job.graph.dfg, replayer::simulate(job.graph.dfg));
  std::vector<std::pair<Nanos, std::vector<std::string>>> ranked;
  for (const whatif::FusionCandidate& c : found)
    if (c.gpu_saving() > 0 || c.launch_time_saved > 0) ranked.emplace_back(fusion_critical_saving(c, job.graph.dfg, slack), c.kernels);
  REQUIRE(ranked.size() > 8);
  std::vector<std::vector<std::string>> saving_order;
  for (const auto& [key, chain] : ranked) saving_order.push_back(chain);
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  REQUIRE(by_slack.variables.size() == 4);
  REQUIRE(by_saving.variables.size() == 4);
  for (std::size_t i = 0; i < 4; ++i) {
    CHECK(by_slack.variables[i].chain == ranked[i].second);
    CHECK(by_saving.variables[i].chain == saving_order[i]);
  }
  CHECK(ranked[3].first > ranked[4].first);  // the fourth chain is kept for its saving, not a tie
  // On this job the two rankings keep different chains (the bench measures what that is worth).
  CHECK(by_slack.variables[0].chain != by_saving.variables[0].chain);
}
