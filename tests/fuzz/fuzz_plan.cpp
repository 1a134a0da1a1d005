// Fuzz target: an optimizer plan file (optimizer/plan.h), what `optimize --plan-out` writes and
// `replay --plan FILE` reads. Runs parse_plan (the bytes version of read_plan), describe() of each
// decision (its messages), then check_plan_tolerances (what `replay --plan` runs next) on an empty
// job, twice: as the plan is, and with its tolerances' fingerprint made right (so that mutations of
// the rules and decisions get past the fingerprint to the check of each decision). Oracles: an
// accepted plan has its documented shape (a fusion chain of at least 2 kernels, partition
// boundaries >= 1 and strictly increasing, a precision decision with a subject, a non-negative
// step and baseline, ranks >= 1 where given); written back as `optimize --plan-out` writes it
// (dump_output_json(to_json(plan), 2)), read again and written again, it gives the same text.
// Bad input is an InputError naming the file, never another exception, a crash or a hang.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

#include "core/error.h"
#include "core/json_fields.h"
#include "fuzz_support.h"
#include "graph/builder.h"
#include "optimizer/plan.h"
#include "optimizer/tolerances.h"
#include "trace/event.h"

namespace {

namespace opt = dpro::optimizer;

std::string written(const opt::Plan& plan) { return dpro::dump_output_json(opt::to_json(plan), 2) + "\n"; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  opt::Plan plan;
  try {
    plan = opt::parse_plan(text, "fuzz-plan.json");
    for (const opt::Decision& d : plan.decisions) (void)opt::describe(d);
    static const dpro::graph::BuiltGraph graph = [] {
      dpro::graph::BuiltGraph g;
      g.dfg.finalize();
      return g;
    }();
    static const dpro::trace::TraceSet traces;
    if (!plan.tolerances_rules.empty()) {
      try {
        opt::check_plan_tolerances(plan, graph, traces, "fuzz-plan.json");
      } catch (const dpro::InputError&) {
      }
      nlohmann::json recorded;
      recorded["rules"] = nlohmann::json::parse(plan.tolerances_rules);
      opt::Plan fixed = plan;
      fixed.tolerances_fingerprint = fmt::format("{:016x}", opt::parse_tolerances(recorded, "fuzz-plan.json").fingerprint);
      opt::check_plan_tolerances(fixed, graph, traces, "fuzz-plan.json");
    }
  } catch (const dpro::InputError& e) {
    dpro::fuzz::note(e.what());
    // One line naming the file (an OptionError names a command-line option instead: not this file's).
    DPRO_FUZZ_CHECK(e.file().rfind("fuzz-plan.json", 0) == 0, e.what());
    return 0;
  }
  dpro::fuzz::note("accepted");
  for (const opt::Decision& d : plan.decisions) {
    const std::string what = opt::to_string(d.strategy);
    if (d.strategy == opt::Strategy::kOpFusion) DPRO_FUZZ_CHECK(d.chain.size() >= 2, what);
    if (d.strategy == opt::Strategy::kPrecision) DPRO_FUZZ_CHECK(!d.subject.empty(), what);
    for (std::size_t i = 0; i < d.boundaries.size(); ++i)
      DPRO_FUZZ_CHECK(d.boundaries[i] >= 1 && (i == 0 || d.boundaries[i] > d.boundaries[i - 1]), what);
  }
  DPRO_FUZZ_CHECK(plan.baseline_ns >= 0 && plan.step_ns >= 0, "predicted times");
  DPRO_FUZZ_CHECK(!plan.conditions.ranks || *plan.conditions.ranks >= 1, "conditions.ranks");
  const std::string once = written(plan);
  std::string twice;
  try {
    twice = written(opt::parse_plan(once, "fuzz-plan-written.json"));
  } catch (const dpro::InputError& e) {
    DPRO_FUZZ_CHECK(false, std::string("its own JSON refused: ") + e.what());
  }
  DPRO_FUZZ_CHECK(once == twice, once + "\n-- read back and written again --\n" + twice);
  return 0;
}
