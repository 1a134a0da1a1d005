// Per-layer precision: parts of an op class (whatif::OpPart, "conv@0,-1") as precision subjects,
// a tolerance rule on a part splitting its class's variable, the plan's resolution into disjoint
// subjects, the activation credit per part, and the search on the fp32 ResNet-50 captured on an
// H100 keeping its first convolution out of bf16.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>

#include "core/error.h"
#include "optimizer/memory.h"
#include "optimizer/optimizer_fixtures.h"
#include "optimizer/search.h"
#include "optimizer/tolerances.h"
#include "whatif/precision.h"
#include "whatif/workload_fixtures.h"

using namespace dpro;
using namespace dpro::optimizer;

namespace {

Decision precision(const std::string& subject, const std::string& dtype) { return {Strategy::kPrecision, subject, dtype, {}}; }

Tolerances parse(const char* text) { return test::parse_tolerance_text(text); }
std::string error_of(const char* text) { return test::tolerance_error(text); }

SearchSpace synthetic_space() {
  SearchSpace s;
  s.variables.push_back({Strategy::kPrecision, "gemm", {}, {"as_recorded", "tf32", "bf16", "fp16", "fp8"}});
  s.variables.push_back({Strategy::kPrecision, "conv", {}, {"as_recorded", "tf32", "bf16", "fp16"}});
  s.strategies = {Strategy::kPrecision};
  return s;
}

std::vector<std::string> subjects(const SearchSpace& s) {
  std::vector<std::string> out;
  for (const Variable& v : s.variables) out.push_back(v.subject);
  return out;
}

using Map = std::map<std::string, std::string>;

}  // namespace

TEST_CASE("layer precision: a part of an op class parses to a canonical subject and selects by position") {
  const auto part = whatif::parse_op_part("conv@0,-1,0");
  REQUIRE(part);
  CHECK(part->to_string() == "conv@-1,0");
  CHECK(part->selects(0, 10));
  CHECK(part->selects(9, 10));
  CHECK_FALSE(part->selects(5, 10));
  const auto rest = whatif::parse_op_part("conv@^-1,0");
  REQUIRE(rest);
  CHECK(rest->complement);
  CHECK(rest->selects(5, 10));
  CHECK_FALSE(rest->selects(9, 10));
  CHECK_FALSE(whatif::parse_op_part("conv").has_value());
  CHECK_THROWS_AS(whatif::parse_op_part("softmax@0"), OptionError);
  CHECK_THROWS_AS(whatif::parse_op_part("conv@"), OptionError);
  CHECK_THROWS_AS(whatif::parse_op_part("conv@1x"), OptionError);
  // Layers: '#', the same numbers and complement.
  const auto layers = whatif::parse_op_part("gemm#0,-1");
  REQUIRE(layers);
  CHECK(layers->layers);
  CHECK(layers->to_string() == "gemm#-1,0");
  CHECK(whatif::parse_op_part("gemm#^-1")->to_string() == "gemm#^-1");
  CHECK_FALSE(whatif::parse_op_part("conv@0")->layers);
  CHECK_THROWS_WITH(whatif::parse_op_part("conv#x"), Catch::Contains("is no layer"));
  CHECK(whatif::names_part_of("conv#0", "conv"));
  CHECK(whatif::names_part_of("conv@^0", "conv"));
  CHECK_FALSE(whatif::names_part_of("conv", "conv"));
  CHECK_FALSE(whatif::names_part_of("gemm#0", "conv"));
}

TEST_CASE("layer precision: a plan's decisions resolve to disjoint subjects, a part overriding its class") {
  // No part: as before.
  CHECK(precision_of_class({precision("all", "bf16"), precision("gemm", "fp8")}) == Map{{"conv", "bf16"}, {"gemm", "fp8"}});
  // A part and its class: the class's dtype goes to the rest.
  CHECK(precision_of_class({precision("conv", "bf16"), precision("conv@0,-1", "tf32")}) ==
        Map{{"conv@-1,0", "tf32"}, {"conv@^-1,0", "bf16"}});
  CHECK(precision_of_class({precision("all", "bf16"), precision("conv@0", "as_recorded")}) ==
        Map{{"conv@0", "as_recorded"}, {"conv@^0", "bf16"}, {"gemm", "bf16"}});
  // A split space's own subjects: kept as they are.
  CHECK(precision_of_class({precision("conv@-1,0", "tf32"), precision("conv@^-1,0", "bf16")}) ==
        Map{{"conv@-1,0", "tf32"}, {"conv@^-1,0", "bf16"}});
  // Beside a complement, the class's dtype covers the positions no part names.
  CHECK(precision_of_class({precision("conv@^-1,0", "bf16"), precision("conv@0", "tf32"), precision("conv", "fp16")}) ==
        Map{{"conv@-1", "fp16"}, {"conv@0", "tf32"}, {"conv@^-1,0", "bf16"}});

  // The rewrite: one lowering per dtype over the subjects at it.
  const auto rewrites = decision_rewrites({}, {precision("conv@-1,0", "tf32"), precision("conv@^-1,0", "bf16")}, test::resource_paths());
  REQUIRE(rewrites.size() == 1);
  const auto& p = std::get<whatif::Precision>(rewrites[0]);
  CHECK(p.dtype == "tf32");
  CHECK(p.classes == std::vector<std::string>{"conv@-1,0"});
  REQUIRE(p.then.size() == 1);
  CHECK(p.then[0].dtype == "bf16");
  CHECK(p.then[0].classes == std::vector<std::string>{"conv@^-1,0", "elementwise"});
  // Overlapping parts and malformed parts are refused.
  CHECK_THROWS_AS(decision_rewrites({}, {precision("conv@0,1", "tf32"), precision("conv@1", "bf16")}, test::resource_paths()),
                  OptionError);
  CHECK_THROWS_AS(decision_rewrites({}, {precision("conv@^0", "tf32"), precision("conv@1", "bf16")}, test::resource_paths()),
                  OptionError);
  CHECK_THROWS_AS(decision_rewrites({}, {precision("conv@x", "tf32")}, test::resource_paths()), OptionError);
  CHECK_NOTHROW(decision_rewrites({}, {precision("conv@^0", "tf32"), precision("conv@0", "bf16")}, test::resource_paths()));
  // Layer parts resolve the same way, and a class's parts are all positions or all layers.
  CHECK(precision_of_class({precision("conv", "bf16"), precision("conv#0,-1", "tf32")}) ==
        Map{{"conv#-1,0", "tf32"}, {"conv#^-1,0", "bf16"}});
  CHECK_NOTHROW(decision_rewrites({}, {precision("conv#-1,0", "tf32"), precision("conv#^-1,0", "bf16")}, test::resource_paths()));
  CHECK_THROWS_WITH(decision_rewrites({}, {precision("conv#0", "tf32"), precision("conv@^0", "bf16")}, test::resource_paths()),
                    Catch::Contains("names layers (#), conv@^0 op positions (@) of the same op class"));
  CHECK_NOTHROW(decision_rewrites({}, {precision("conv#0", "tf32"), precision("gemm@0", "bf16")}, test::resource_paths()));
}

TEST_CASE("layer precision: a tolerance rule on part of a class splits the class's variable, and limits only that part") {
  const Tolerances t = parse(R"({"rules": [{"match": "conv@0,-1", "precision": ["tf32"]}]})");
  SearchSpace space = synthetic_space();
  const ToleranceEffect e = apply_tolerances(space, t, 0);
  CHECK(e.splits == 1);
  CHECK(e.unmatched.empty());
  CHECK(subjects(space) == std::vector<std::string>{"gemm", "conv@-1,0", "conv@^-1,0"});
  CHECK(space.variables[1].values == std::vector<std::string>{"as_recorded", "tf32"});
  CHECK(space.variables[2].values == std::vector<std::string>{"as_recorded", "tf32", "bf16", "fp16"});
  // The rule applies to every subject that may hold the part's ops.
  CHECK_FALSE(precision_allowed(t, "conv", "bf16"));
  CHECK_FALSE(precision_allowed(t, "conv@0", "bf16"));
  CHECK(precision_allowed(t, "conv@^-1,0", "bf16"));
  CHECK(precision_allowed(t, "conv@-1,0", "tf32"));
  CHECK_FALSE(decisions_allowed(t, {precision("all", "bf16")}, 0));
  CHECK(decisions_allowed(t, {precision("conv@^-1,0", "bf16"), precision("conv@-1,0", "tf32")}, 0));

  // A second part of the same class takes only what the first left.
  const Tolerances two = parse(R"({"rules": [{"match": "conv@0", "precision": ["tf32"]}, {"match": "conv@0,3", "max_risk": 0.05}]})");
  SearchSpace s2 = synthetic_space();
  CHECK(apply_tolerances(s2, two, 0).splits == 2);
  CHECK(subjects(s2) == std::vector<std::string>{"gemm", "conv@0", "conv@3", "conv@^0,3"});
  CHECK(s2.variables[2].values == std::vector<std::string>{"as_recorded", "tf32", "bf16"});

  // A part rule whose class the search does not decide matches nothing: reported, not an error.
  SearchSpace no_conv;
  no_conv.variables.push_back({Strategy::kPrecision, "gemm", {}, {"as_recorded", "bf16"}});
  no_conv.strategies = {Strategy::kPrecision};
  const ToleranceEffect none = apply_tolerances(no_conv, t, 0);
  CHECK(none.splits == 0);
  CHECK(none.unmatched == std::vector<std::string>{"rules[0] (\"conv@0,-1\")"});
  CHECK(subjects(no_conv) == std::vector<std::string>{"gemm"});
}

TEST_CASE("layer precision: bad part rules name the file and the item") {
  CHECK_THAT(error_of(R"({"rules": [{"match": "conv@x", "precision": ["tf32"]}]})"), Catch::Contains("tol.json: rules[0].match"));
  CHECK_THAT(error_of(R"({"rules": [{"match": "softmax@0", "precision": ["tf32"]}]})"), Catch::Contains("rules[0].match"));
  CHECK_THAT(error_of(R"({"rules": [{"match": "conv@^0", "precision": ["tf32"]}]})"), Catch::Contains("rules[0].match"));
  CHECK_THAT(error_of(R"({"rules": [{"match": "conv@0", "compression": ["none"]}]})"),
             Catch::Contains("rules[0].compression: \"conv@0\" is no bucket"));
  CHECK(error_of(R"({"rules": [{"match": "gemm@-1", "max_risk": 0.01}]})").empty());
  CHECK(error_of(R"({"rules": [{"match": "gemm#-1", "max_risk": 0.01}]})").empty());
  CHECK_THAT(error_of(R"({"rules": [{"match": "conv#0", "precision": ["tf32"]}, {"match": "conv@-1", "max_risk": 0.01}]})"),
             Catch::Contains("rules[1].match: \"conv@-1\" and rules[0]'s \"conv#0\" name one op class by op positions"));
  CHECK(error_of(R"({"rules": [{"match": "conv#0", "precision": ["tf32"]}, {"match": "gemm@-1", "max_risk": 0.01}]})").empty());
}

TEST_CASE("layer precision: a layer rule splits its class into layers") {
  const Tolerances t = parse(R"({"rules": [{"match": "conv#0,-1", "precision": ["tf32"]}]})");
  SearchSpace space = synthetic_space();
  CHECK(apply_tolerances(space, t, 0).splits == 1);
  CHECK(subjects(space) == std::vector<std::string>{"gemm", "conv#-1,0", "conv#^-1,0"});
  CHECK(space.variables[1].values == std::vector<std::string>{"as_recorded", "tf32"});
  CHECK_FALSE(precision_allowed(t, "conv", "bf16"));
  CHECK_FALSE(precision_allowed(t, "conv#0", "bf16"));
  CHECK(precision_allowed(t, "conv#^-1,0", "bf16"));
  CHECK_FALSE(precision_allowed(t, "conv@3", "bf16"));  // positions and layers: they may share an op
}

TEST_CASE("layer precision: the activation credit honours each part's dtype") {
  ActivationEstimate act;
  // Three forward convolutions (positions 0..2), each an fp32 activation of 1000 elements, each
  // but the last followed by an op autocast runs in its input's dtype (a relu of 500 elements).
  using Kind = ClassTensor::Kind;
  for (long p = 0; p < 3; ++p) {
    act.class_tensors.push_back({Kind::kConv, true, 1000, 4, p, 2 * p});
    if (p < 2) act.class_tensors.push_back({Kind::kOther, true, 500, 4, 0, 2 * p + 1});
  }
  const std::int64_t relus = 2 * 500 * 2;  // both relus at 2 bytes instead of 4
  const std::int64_t all = precision_memory(act, {precision("conv", "bf16")}).saved;
  CHECK(all == 3 * 1000 * 2 + relus);
  // The first kept as recorded: its activation is not credited, nor the relu after it (the time
  // model narrows what follows the first lowered convolution: the second relu only).
  CHECK(precision_memory(act, {precision("conv@-1,0", "tf32"), precision("conv@^-1,0", "bf16")}).saved ==
        2 * 1000 * 2 + 500 * 2);
  // A layer kept in the middle: the relu after it reads its fp32 output (the one after the first
  // convolution is still narrowed).
  CHECK(precision_memory(act, {precision("conv", "bf16"), precision("conv@1", "tf32")}).saved == 2 * 1000 * 2 + 500 * 2);
  CHECK(precision_memory(act, {precision("conv", "bf16"), precision("conv#1", "as_recorded")}).saved == 2 * 1000 * 2 + 500 * 2);
  // fp8 convolutions write 16 bits: the relus after them are at 2 bytes too.
  CHECK(precision_memory(act, {precision("conv", "bf16"), precision("conv@1", "fp8")}).saved ==
        2 * 1000 * 2 + 1000 * 3 + relus);
  // A negative position names a backward op, which saves no activation: nothing lowered in the
  // forward pass, nothing narrowed after it.
  CHECK(precision_memory(act, {precision("conv@-1", "bf16")}).saved == 0);
  CHECK(precision_memory(act, {precision("conv", "tf32")}).saved == 0);
}

TEST_CASE("layer precision on the H100 ResNet-50: the first convolution never below tf32, the rest still bf16, replay exact") {
  const whatif::Workload fp32 = test::load_workload("traces/h100/resnet50");
  SpaceOptions o;
  o.strategies = {Strategy::kPrecision};
  o.device_dir = costmodel::default_device_dir();
  SearchSpace space = make_space(fp32, o);
  const Tolerances t = parse(R"({"rules": [{"match": "conv@0,-1", "precision": ["tf32"]}]})");
  const ToleranceEffect e = apply_tolerances(space, t, fp32);
  CHECK(e.splits == 1);
  REQUIRE(subjects(space) == std::vector<std::string>{"gemm", "conv@-1,0", "conv@^-1,0"});

  Evaluator ev(fp32, space, {}, test::resource_paths(), 2);
  SearchOptions so;
  so.max_evaluations = 24;
  const SearchResult r = search(ev, space, so);
  REQUIRE(!r.pareto.empty());
  bool rest_bf16 = false;
  for (const Scored& p : r.pareto) {
    const std::vector<Decision> ds = decisions_of(space, p.assignment);
    CHECK(decisions_allowed(t, ds, 0));
    for (const Decision& d : ds) {
      if (d.subject == "conv@-1,0") CHECK(d.value == "tf32");
      if (d.subject == "conv@^-1,0" && d.value == "bf16") rest_bf16 = true;
    }
  }
  CHECK(rest_bf16);  // the rest of the class still goes to bf16
  // The chosen plan replays through decision_rewrites to its score, to the ns.
  replayer::Simulator simulator;
  const std::vector<Decision> chosen = decisions_of(space, r.best.assignment);
  const whatif::Evaluation replayed = whatif::evaluate(fp32, decision_rewrites({}, chosen, test::resource_paths()), simulator, {});
  CHECK(median_step(replayed.report) == r.best.score.step_ns);
  CHECK(r.best.score.step_ns < r.baseline.score.step_ns);

  // Keeping the first convolution out of bf16 costs little against the whole class at bf16, and
  // differs from it.
  Assignment whole_bf16 = r.best.assignment;
  for (std::size_t i = 0; i < space.variables.size(); ++i) {
    const auto& values = space.variables[i].values;
    const auto it = std::find(values.begin(), values.end(), "bf16");
    whole_bf16[i] = space.variables[i].subject == "gemm" ? 0 : static_cast<std::uint8_t>(it == values.end() ? 0 : it - values.begin());
  }
  const whatif::Evaluation conv_bf16 =
      whatif::evaluate(fp32, decision_rewrites({}, {precision("conv", "bf16")}, test::resource_paths()), simulator, {});
  Assignment kept = whole_bf16;
  kept[1] = 1;  // conv@-1,0 at tf32
  const std::vector<Score> s = ev.score({kept});
  CHECK(s[0].step_ns != median_step(conv_bf16.report));
  CHECK(std::abs(static_cast<double>(s[0].step_ns) / static_cast<double>(median_step(conv_bf16.report)) - 1) < 0.02);
}
