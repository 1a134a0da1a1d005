// Precision per op class: a dtype decision for GEMMs and one for convolutions (elementwise and
// norm kernels inherit their input's dtype), their rewrites, risk and plan decisions, on the
// fp32 ResNet-50 captured on an H100 and its bf16 twin.
#include <catch2/catch.hpp>

#include <cmath>

#include "core/error.h"
#include "optimizer/optimizer_fixtures.h"
#include "optimizer/search.h"
#include "optimizer/space.h"
#include "costmodel/paths.h"
#include "whatif/workload_fixtures.h"

using namespace dpro;
using namespace dpro::optimizer;

namespace {

Decision precision(const std::string& cls, const std::string& dtype) { return {Strategy::kPrecision, cls, dtype, {}}; }

// The lowerings of `decisions`' precision rewrite (itself and its stages), as (dtype, classes).
std::vector<std::pair<std::string, std::vector<std::string>>> rewrites_of(const std::vector<Decision>& decisions) {
  std::vector<std::pair<std::string, std::vector<std::string>>> out;
  std::size_t rewrites = 0;
  for (const whatif::Rewrite& r : decision_rewrites({}, decisions, test::resource_paths())) {
    const auto* p = std::get_if<whatif::Precision>(&r);
    if (!p) continue;
    ++rewrites;
    out.emplace_back(p->dtype, p->classes);
    for (const whatif::Precision::Stage& stage : p->then) out.emplace_back(stage.dtype, stage.classes);
  }
  CHECK(rewrites <= 1);  // one precision prefix for the search's cache
  return out;
}

using Classes = std::vector<std::string>;

}  // namespace

TEST_CASE("precision per class: one rewrite per dtype, elementwise with the first 16-bit one") {
  using R = std::vector<std::pair<std::string, Classes>>;
  CHECK(rewrites_of({precision("conv", "bf16")}) == R{{"bf16", Classes{"conv", "elementwise"}}});
  // Both classes at one 16-bit dtype: the autocast-everywhere rewrite, as "all" gives it.
  CHECK(rewrites_of({precision("gemm", "bf16"), precision("conv", "bf16")}) == R{{"bf16", Classes{"all"}}});
  CHECK(rewrites_of({precision("all", "bf16")}) == R{{"bf16", Classes{"all"}}});
  CHECK(rewrites_of({precision("all", "tf32")}) == R{{"tf32", Classes{"gemm", "conv"}}});
  CHECK(rewrites_of({precision("gemm", "tf32"), precision("conv", "bf16")}) ==
        R{{"tf32", Classes{"gemm"}}, {"bf16", Classes{"conv", "elementwise"}}});
  CHECK(rewrites_of({precision("gemm", "bf16"), precision("conv", "fp16")}) ==
        R{{"bf16", Classes{"gemm", "elementwise"}}, {"fp16", Classes{"conv"}}});
  // A class's own decision overrides "all", in either order.
  CHECK(rewrites_of({precision("all", "bf16"), precision("gemm", "as_recorded")}) == R{{"bf16", Classes{"conv", "elementwise"}}});
  CHECK(rewrites_of({precision("gemm", "tf32"), precision("all", "bf16")}) ==
        R{{"tf32", Classes{"gemm"}}, {"bf16", Classes{"conv", "elementwise"}}});
  CHECK_THROWS_AS(rewrites_of({precision("softmax", "bf16")}), OptionError);
  CHECK_THROWS_AS(rewrites_of({precision("gemm", "int4")}), OptionError);
  // The plan's risk is its riskiest dtype's, not a sum over classes.
  CHECK(risk_of({precision("gemm", "bf16"), precision("conv", "bf16")}) == risk_of({precision("all", "bf16")}));
  CHECK(risk_of({precision("gemm", "tf32"), precision("conv", "fp16")}) == risk_of({precision("all", "fp16")}));
}

TEST_CASE("precision per class on the H100 ResNet-50: conv-only bf16 and bf16 everywhere differ, and everywhere predicts the bf16 job") {
  const whatif::Workload fp32 = test::load_workload("traces/h100/resnet50");
  SpaceOptions o;
  o.strategies = {Strategy::kPrecision};
  o.device_dir = costmodel::default_device_dir();
  const SearchSpace space = make_space(fp32, o);
  REQUIRE(space.variables.size() == 2);
  CHECK(space.variables[0].subject == "gemm");
  CHECK(space.variables[1].subject == "conv");
  for (const Variable& v : space.variables) {
    INFO(v.subject);
    CHECK(std::find(v.values.begin(), v.values.end(), "bf16") != v.values.end());
  }

  Evaluator ev(fp32, space, {}, test::resource_paths(), 2);
  auto assignment = [&](const std::string& gemm, const std::string& conv) {
    Assignment a(2, 0);
    for (std::size_t i = 0; i < 2; ++i) {
      const std::string& want = i == 0 ? gemm : conv;
      const auto& values = space.variables[i].values;
      a[i] = static_cast<std::uint8_t>(std::find(values.begin(), values.end(), want) - values.begin());
    }
    return a;
  };
  const std::vector<Score> s = ev.score({assignment("as_recorded", "as_recorded"), assignment("as_recorded", "bf16"),
                                         assignment("bf16", "bf16")});
  const Nanos baseline = s[0].step_ns, conv_only = s[1].step_ns, everywhere = s[2].step_ns;
  CHECK(conv_only < baseline);
  CHECK(everywhere < baseline);
  CHECK(conv_only != everywhere);

  // bf16 everywhere by class is the "all" plan of the format's first version, to the ns.
  replayer::Simulator simulator;
  // Two dtypes in one plan (TF32 GEMMs, bf16 convolutions) are one rewrite and replay.
  const whatif::Evaluation mixed = whatif::evaluate(
      fp32, decision_rewrites({}, {precision("gemm", "tf32"), precision("conv", "bf16")}, test::resource_paths()), simulator, {});
  CHECK(median_step(mixed.report) < baseline);
  const auto& change = std::get<whatif::PrecisionChange>(mixed.changes.at(0));
  CHECK(change.then_dtypes == std::vector<costmodel::DType>{costmodel::DType::kBFloat16});
  const whatif::Evaluation all =
      whatif::evaluate(fp32, decision_rewrites({}, {precision("all", "bf16")}, test::resource_paths()), simulator, {});
  CHECK(median_step(all.report) == everywhere);
  // And it predicts the bf16 job recorded on the same GPU within 10 %.
  const whatif::Workload bf16 = test::load_workload("traces/h100/resnet50-bf16");
  const Nanos measured = median_step(whatif::evaluate(bf16, {}, simulator, {}).report);
  CHECK(std::abs(static_cast<double>(everywhere) / static_cast<double>(measured) - 1) < 0.10);
}
