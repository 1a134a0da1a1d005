// compare_run: a schedule's run on the fake device against the replay of the same graph. The
// fake gives each launch a known time (a stand-in its duration, a collective its stand-in
// duration, any other kernel FakeDevice::Options::kernel_ns), so the measured side is checkable.
#include <catch2/catch.hpp>

#include <numeric>
#include <set>
#include <stdexcept>

#include "executor/validation.h"
#include "executor_fixtures.h"
#include "replayer/engine.h"
#include "replayer/report.h"

using namespace dpro;

namespace {

struct Validated {
  test::FakeRun run;
  executor::Validation v;
};

void validate_on_fake(const char* path, Validated& out) {
  const whatif::Workload w = test::load_workload(path);
  out.run.schedule = executor::build_schedule(w, {});
  test::run_on_fake(out.run, 2);
  const replayer::Simulation sim = replayer::simulate(w.graph.dfg);
  replayer::ReportOptions options;
  options.analysis = false;
  const replayer::Report report = replayer::make_report(*w.traces, w.graph, sim, options);
  out.v = executor::compare_run(out.run.schedule, out.run.result, sim, report);
}

Nanos sum(const std::vector<Nanos>& v) { return std::accumulate(v.begin(), v.end(), Nanos{0}); }

}  // namespace

TEST_CASE("validation: every class and stream is reported and the class sums are the per-launch sums") {
  for (const char* path : {"traces/h100/gpt2-emit-nvtx-step", "traces/dlrm-8xV100"}) {
    SECTION(path) {
      Validated x;
      validate_on_fake(path, x);
      const executor::Schedule& s = x.run.schedule;
      REQUIRE(x.v.launch_measured_ns.size() == s.launches.size());
      REQUIRE(x.v.streams.size() == s.streams.size());
      std::set<std::string> names;
      Nanos class_measured = 0, class_predicted = 0;
      std::size_t class_launches = 0;
      for (const executor::ClassComparison& c : x.v.classes) {
        names.insert(executor::to_string(c.cls));
        class_measured += c.time.measured;
        class_predicted += c.time.predicted;
        class_launches += c.launches;
      }
      CHECK(names.size() == executor::kValidationClassCount);
      CHECK(class_launches == s.launches.size());
      CHECK(class_measured == sum(x.v.launch_measured_ns));
      CHECK(class_predicted == sum(x.v.launch_predicted_ns));
      Nanos stream_predicted = 0;
      for (const executor::StreamComparison& st : x.v.streams) stream_predicted += st.busy.predicted;
      CHECK(stream_predicted == class_predicted);
      // Per launch, the fake's time is the one it was asked for.
      for (std::size_t i = 0; i < s.launches.size(); ++i) {
        const executor::Launch& l = s.launches[i].lowered.launch;
        Nanos expected = executor::FakeDevice::Options{}.kernel_ns;
        if (const auto* k = std::get_if<executor::StandinKernel>(&l)) expected = k->duration;
        if (const auto* c = std::get_if<executor::CollectiveCall>(&l)) expected = c->standin_duration;
        INFO("launch " << i);
        CHECK(x.v.launch_measured_ns[i] == expected);
      }
      CHECK(x.v.step.measured == x.v.measured_step_ns.back());  // two equal-length fake iterations: the median
      CHECK(x.v.step.predicted > 0);
    }
  }
}

TEST_CASE("validation: on the fake device a host-bound step matches the replay's prediction within 10%") {
  // GPT-2's step is host-bound: the fake reproduces its recorded pacing and the replay predicts it
  // (both within a few % of the recorded step); a wrong window or rank would be far off.
  Validated x;
  validate_on_fake("traces/h100/gpt2-emit-nvtx-step", x);
  INFO("measured " << x.v.step.measured << " ns, predicted " << x.v.step.predicted << " ns");
  REQUIRE(x.v.step.error());
  CHECK(std::abs(*x.v.step.error()) < 0.10);
  // Stand-ins are asked for the node's duration, which the replay also gives them.
  const auto& standin = x.v.classes[static_cast<int>(executor::ValidationClass::kStandin)];
  REQUIRE(standin.launches > 0);
  CHECK(standin.time.measured == standin.time.predicted);
}

TEST_CASE("validation: a run without per-launch times is refused") {
  Validated x;
  validate_on_fake("traces/h100/gpt2-emit-nvtx-step", x);
  executor::RunResult r = x.run.result;
  r.launch_end_ns.clear();
  const whatif::Workload w = test::load_workload("traces/h100/gpt2-emit-nvtx-step");
  const replayer::Simulation sim = replayer::simulate(w.graph.dfg);
  CHECK_THROWS_AS(executor::compare_run(x.run.schedule, r, sim, replayer::Report{}), std::invalid_argument);
}
