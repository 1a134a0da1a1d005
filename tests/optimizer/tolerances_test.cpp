// Per-layer tolerances: the rules file, what each rule allows, the search space they leave, and
// the planner and search honouring them on a job whose slow network makes compression pay.
#include <catch2/catch.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>

#include "core/error.h"
#include "graph/builder.h"
#include "optimizer/compression_planner.h"
#include "optimizer/optimizer_fixtures.h"
#include "optimizer/search.h"
#include "optimizer/tolerances.h"
#include "trace_fixtures.h"
#include "whatif/workload_fixtures.h"

using namespace dpro;
using namespace dpro::optimizer;

namespace {

Tolerances parse(const char* text) { return test::parse_tolerance_text(text); }
std::string error_of(const char* text) { return test::tolerance_error(text); }

SearchSpace synthetic_space() {
  SearchSpace s;
  s.variables.push_back({Strategy::kCompression, "", {}, compression_values()});
  s.variables.push_back({Strategy::kPrecision, "gemm", {}, {"as_recorded", "tf32", "bf16", "fp16", "fp8"}});
  s.variables.push_back({Strategy::kPrecision, "conv", {}, {"as_recorded", "tf32", "bf16", "fp16"}});
  s.variables.push_back({Strategy::kOpFusion, "", {"add_kernel", "layer_norm_kernel"}, {"off", "on"}});
  s.variables.push_back({Strategy::kOpFusion, "", {"add_kernel", "relu_kernel"}, {"off", "on"}});
  s.strategies = {Strategy::kCompression, Strategy::kPrecision, Strategy::kOpFusion};
  return s;
}

}  // namespace

TEST_CASE("a tolerances file: bad files name the file and the item") {
  CHECK_THAT(error_of(R"([1])"), Catch::Contains("tol.json: not a tolerances file"));
  CHECK_THAT(error_of(R"({"rules": [], "extra": 1})"), Catch::Contains("tol.json: extra: unknown key"));
  CHECK_THAT(error_of(R"({"rules": [{"match": "gemm", "precison": ["bf16"]}]})"),
             Catch::Contains("tol.json: rules[0].precison: unknown key"));
  CHECK_THAT(error_of(R"({"rules": [{"match": "gemm", "precision": ["int4"]}]})"),
             Catch::Contains("rules[0].precision: unknown dtype \"int4\""));
  CHECK_THAT(error_of(R"({"rules": [{"match": "bucket:1", "compression": ["zip"]}]})"),
             Catch::Contains("rules[0].compression: unknown method \"zip\""));
  CHECK_THAT(error_of(R"({"rules": [{"match": "bucket:x", "compression": ["none"]}]})"), Catch::Contains("rules[0].match"));
  CHECK_THAT(error_of(R"({"rules": [{"precision": ["bf16"]}]})"), Catch::Contains("rules[0].match: missing"));
  CHECK_THAT(error_of(R"({"rules": [{"match": "gemm", "compression": ["none"]}]})"),
             Catch::Contains("rules[0].compression: \"gemm\" is no bucket"));
  CHECK_THAT(error_of(R"({"rules": [{"match": "bucket:0", "precision": ["bf16"]}]})"),
             Catch::Contains("rules[0].precision: \"bucket:0\" is no op class"));
  CHECK_THAT(error_of(R"({"rules": [{"match": "layer_norm", "max_risk": 0.1}]})"), Catch::Contains("rules[0].max_risk"));
  CHECK_THAT(error_of(R"({"rules": [{"match": "gemm", "max_risk": -1}]})"), Catch::Contains("rules[0].max_risk: must be a number >= 0"));
  CHECK_THAT(error_of(R"({"rules": [{"match": "gemm"}]})"), Catch::Contains("rules[0]: limits nothing"));
  CHECK(error_of(R"({"rules": [{"match": "*", "max_risk": 0.1}, {"match": "ln", "fusion": false}]})").empty());
}

TEST_CASE("a tolerances file nested deeper than 256 levels is one InputError, not a stack overflow") {
  // Fuzzing finding 5 (docs/fuzzing.md): "precision": [[[...]]] 200,000 deep was written into the
  // message ("must be a list of strings, got ...") by nlohmann's dump, which recursed until the
  // stack overflowed.
  const auto nested = [](std::size_t levels) { return std::string(levels, '[') + std::string(levels, ']'); };
  const std::string deep = R"({"rules": [{"match": "gemm", "precision": )" + nested(200000) + "}]}";
  CHECK_THAT(error_of(deep.c_str()), Catch::Contains("tol.json: nests arrays and objects deeper than 256 levels"));
  // {"rules": [{..., "precision": 253 levels}]}: 256 levels, refused for what it holds, not its depth.
  const std::string at_limit = R"({"rules": [{"match": "gemm", "precision": )" + nested(253) + "}]}";
  CHECK_THAT(error_of(at_limit.c_str()), Catch::Contains("tol.json: rules[0].precision: must be a list of strings"));
  const std::string over = R"({"rules": [{"match": "gemm", "precision": )" + nested(254) + "}]}";
  CHECK_THAT(error_of(over.c_str()), Catch::Contains("deeper than 256 levels"));
}

TEST_CASE("a plan's recorded tolerances: a precision subject that is no part of a class is one InputError naming the plan") {
  // Fuzzing finding 4 (docs/fuzzing.md): with a part rule ("conv@-1,0") recorded, the check of a
  // decision whose subject has '@' but no positions ("conv@-1<0") threw parse_op_part's
  // OptionError ("precision_classes conv@-1<0: ..."), a line that does not name the plan file.
  graph::BuiltGraph graph;  // the check needs the job only for its bucket positions: none here
  graph.dfg.finalize();
  const trace::TraceSet traces;
  Plan plan;
  plan.tolerances_file = "tol.json";
  plan.tolerances_rules = R"([{"match": "conv@-1,0", "precision": ["fp16", "bf16"]}])";
  plan.tolerances_fingerprint = fmt::format(
      "{:016x}", parse(R"({"rules": [{"match": "conv@-1,0", "precision": ["fp16", "bf16"]}]})").fingerprint);
  plan.decisions = {{Strategy::kPrecision, "conv@-1,0", "fp16", {}}};
  CHECK_NOTHROW(check_plan_tolerances(plan, graph, traces, "plan.json"));
  for (const char* subject : {"conv@-1<0", "conv@", "conv@^", "conv@1,,2"}) {
    INFO(subject);
    plan.decisions = {{Strategy::kPrecision, subject, "fp16", {}}};
    bool thrown = false;
    try {
      check_plan_tolerances(plan, graph, traces, "plan.json");
    } catch (const OptionError& e) {
      FAIL("an OptionError: " << e.what());
    } catch (const InputError& e) {
      thrown = true;
      CHECK(e.file() == "plan.json");
      CHECK(e.item() == std::string("decisions: precision ") + subject);
      CHECK_THAT(e.what(), Catch::Contains("not a part of an op class"));
    }
    CHECK(thrown);
  }
}

TEST_CASE("a tolerance rule allows what it lists, under its risk, for what it matches") {
  const Tolerances t = parse(R"({"rules": [
      {"match": "gemm", "precision": ["tf32", "bf16"]},
      {"match": "conv", "max_risk": 0.01},
      {"match": "bucket:1", "compression": ["fp16", "powersgd"]},
      {"match": "*", "max_risk": 0.3},
      {"match": "layer_norm", "fusion": false}]})");
  CHECK(precision_allowed(t, "gemm", "bf16"));
  CHECK_FALSE(precision_allowed(t, "gemm", "fp8"));
  CHECK(precision_allowed(t, "gemm", "as_recorded"));
  CHECK(precision_allowed(t, "conv", "tf32"));
  CHECK_FALSE(precision_allowed(t, "conv", "bf16"));  // risk 0.05 > 0.01
  CHECK(compression_allowed(t, 0, "topk:0.01"));      // bucket 0: only the "*" risk limit
  CHECK_FALSE(compression_allowed(t, 0, "efsignsgd"));  // risk 0.4 > 0.3
  CHECK(compression_allowed(t, 1, "powersgd:4"));     // a bare method allows every parameter
  CHECK_FALSE(compression_allowed(t, 1, "topk:0.01"));
  CHECK_FALSE(compression_value_allowed(t, "topk:0.01", 3));  // one method for all buckets: bucket 1 forbids it
  CHECK(compression_value_allowed(t, "topk:0.01", 1));        // a job with one bucket a step has no bucket 1
  CHECK(compression_value_allowed(t, "topk:0.01,fp16,none", 3));
  CHECK_FALSE(compression_value_allowed(t, "fp16,topk:0.01", 3));
  CHECK(compression_value_allowed(t, "fp16", 3));
  CHECK_FALSE(fusion_allowed(t, {"add_kernel", "layer_norm_kernel"}));
  CHECK(fusion_allowed(t, {"add_kernel", "relu_kernel"}));
  CHECK(decisions_allowed(t, {{Strategy::kPrecision, "gemm", "bf16", {}}, {Strategy::kBuckets, "", "25", {}}}, 3));
  CHECK_FALSE(decisions_allowed(t, {{Strategy::kPrecision, "all", "bf16", {}}}, 3));  // conv at bf16
  // The fingerprint follows the rules.
  CHECK(t.fingerprint != parse(R"({"rules": [{"match": "gemm", "precision": ["tf32"]}]})").fingerprint);
  CHECK(rules_json(t).size() == 5);
}

TEST_CASE("apply_tolerances takes forbidden values and decisions out of the space, and reports rules that match nothing") {
  SearchSpace s = synthetic_space();
  const Tolerances t = parse(R"({"rules": [
      {"match": "gemm", "precision": ["tf32"]},
      {"match": "conv", "precision": ["fp32"]},
      {"match": "bucket:0", "compression": ["fp16", "bf16"]},
      {"match": "bucket:7", "compression": ["none"]},
      {"match": "layer_norm", "fusion": false},
      {"match": "no_such_kernel", "fusion": false}]})");
  const ToleranceEffect e = apply_tolerances(s, t, 3);
  REQUIRE(s.variables.size() == 3);  // conv precision and one fusion chain gone
  CHECK(s.variables[0].values == std::vector<std::string>{"none", "fp16", "bf16"});
  CHECK(s.variables[1].subject == "gemm");
  CHECK(s.variables[1].values == std::vector<std::string>{"as_recorded", "tf32"});
  CHECK(s.variables[2].chain == std::vector<std::string>{"add_kernel", "relu_kernel"});
  CHECK(e.variables_removed == 2);
  CHECK(e.unmatched == std::vector<std::string>{"rules[3] (\"bucket:7\")", "rules[5] (\"no_such_kernel\")"});
  CHECK(s.strategies.size() == 3);
  // Forbidding everything is an error, not an empty search.
  SearchSpace only = synthetic_space();
  only.variables.resize(1);
  only.strategies = {Strategy::kCompression};
  CHECK_THROWS_AS(apply_tolerances(only, parse(R"({"rules": [{"match": "*", "compression": ["none"]}]})"), 3), OptionError);
}

TEST_CASE("on a slow network the planner and the search honour per-bucket tolerances") {
  const whatif::Workload base = test::load_workload("traces/hta/a100-ws2-rank0-nccl.json.gz");
  Conditions c;
  c.settings = {"network.inter_node_gbps=0.5", "network.intra_node_gbps=0.5"};
  replayer::Simulator simulator;
  const whatif::Workload job = whatif::evaluate(base, condition_rewrites(c, test::resource_paths()), simulator, {}).workload;
  SpaceOptions o;
  o.strategies = {Strategy::kCompression};
  // Buckets 2 to 4 may not be compressed lossily; bucket 0 not at all.
  const Tolerances t = parse(R"({"rules": [{"match": "bucket:0", "compression": ["none"]},
      {"match": "bucket:2", "compression": ["fp16", "bf16"]}, {"match": "bucket:3", "compression": ["fp16", "bf16"]},
      {"match": "bucket:4", "compression": ["fp16", "bf16"]}]})");
  SearchSpace space = make_space(job, o);
  PlannerOptions po;
  po.method_allowed = [&](std::size_t p, const std::string& m) { return compression_allowed(t, p, m); };
  const auto plan = add_planned_compression(space, job, c, test::resource_paths(), po, nullptr);
  REQUIRE(plan);
  CHECK(compression_value_allowed(t, plan->value, 5));
  CHECK(plan->value.substr(0, 5) == "none,");
  const ToleranceEffect e = apply_tolerances(space, t, job);
  CHECK(e.unmatched.empty());
  // Every single method is forbidden somewhere (bucket 0 takes none): only the planned list stays.
  REQUIRE(space.variables.size() == 1);
  CHECK(space.variables[0].values == std::vector<std::string>{"none", plan->value});
  Evaluator ev(job, space, c, test::resource_paths(), 2);
  SearchOptions so;
  so.max_evaluations = 10;
  const SearchResult r = search(ev, space, so);
  CHECK(decisions_allowed(t, decisions_of(space, r.best.assignment), 5));
  for (const Scored& p : r.pareto) CHECK(decisions_allowed(t, decisions_of(space, p.assignment), 5));
  // Within the rules compression still pays on this network.
  CHECK(r.best.score.step_ns < r.baseline.score.step_ns);
}
