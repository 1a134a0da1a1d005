// Taking the profiler's own cost out of the CPU side of a graph (src/graph/profiler_cost.h), on a
// small one-rank trace whose records' owners are known: a launch inside an operator (with a
// nested driver call and its kernel), a copy call shorter than its records' cost, a leaf operator.
#include <catch2/catch.hpp>

#include "core/log.h"
#include "graph/builder.h"
#include "graph/profiler_cost.h"
#include "replayer/replay.h"
#include "trace/event.h"

using namespace dpro;
using graph::NodeKind;
using trace::EventKind;
using trace::RecordClass;

namespace {

constexpr Nanos kUs = kNanosPerMicro;

trace::TraceSet small_step() {
  trace::TraceSet set;
  trace::TraceRank r;
  r.file = "step.json";
  r.format = "native";
  const auto thread = r.intern_resource(trace::ResourceKind::kCpuThread, 10, 11);
  const auto stream = r.intern_resource(trace::ResourceKind::kGpuStream, 0, 7);
  auto add = [&](EventKind kind, Nanos start, Nanos dur, const char* name, trace::ResourceId res,
                 std::optional<std::int64_t> correlation = std::nullopt) {
    trace::Event e;
    e.kind = kind;
    e.start = start;
    e.dur = dur;
    e.name = set.strings.intern(name);
    e.resource = res;
    e.correlation = correlation;
    r.events.push_back(e);
  };
  // In (start, longer first) order, as importers leave them.
  add(EventKind::kUserAnnotation, 0, 100 * kUs, "ProfilerStep#0", thread);
  add(EventKind::kCpuOp, 1 * kUs, 29 * kUs, "aten::linear", thread);
  add(EventKind::kRuntimeCall, 2 * kUs, 10 * kUs, "cudaLaunchKernel", thread, 1);
  add(EventKind::kDriverCall, 3 * kUs, 7 * kUs, "cuLaunchKernel", thread, 2);
  add(EventKind::kKernel, 20 * kUs, 30 * kUs, "gemm", stream, 1);
  add(EventKind::kRuntimeCall, 40 * kUs, 2 * kUs, "cudaMemcpyAsync", thread, 3);
  add(EventKind::kMemcpy, 55 * kUs, 5 * kUs, "Memcpy HtoD", stream, 3);
  add(EventKind::kCpuOp, 62 * kUs, 10 * kUs, "aten::add_", thread);
  r.iterations.push_back({"ProfilerStep#0", 0, 0, 100 * kUs, 0});
  set.ranks.push_back(std::move(r));
  return set;
}

struct Built {
  trace::TraceSet traces = small_step();
  graph::BuiltGraph graph;
  Built() {
    Logger log(LogLevel::kQuiet);
    graph = graph::build_graph(traces, {}, log);
  }
  const graph::Node& node(const char* name) const {
    for (const graph::Node& n : graph.dfg.nodes())
      if (traces.strings.view(n.name) == name) return n;
    FAIL("no node " << name);
    return graph.dfg.nodes()[graph::NodeId(0)];
  }
};

trace::RecordCosts costs(const char* text) { return trace::parse_record_costs(text, "profiler_cost"); }

const graph::ClassRemoval* removal_of(const graph::ProfilerCostRemoval& p, RecordClass c) {
  for (const auto& k : p.classes)
    if (k.record_class == c) return &k;
  return nullptr;
}

}  // namespace

TEST_CASE("the profiler's cost comes out of each CPU node by the records it paid for", "[profiler-cost]") {
  Built b;
  graph::ProfilerCostOptions options;
  options.given = costs("runtime=1us,driver=500ns,kernel=2us,memcpy=3us,cpu_op=100ns");
  const auto removal = graph::remove_profiler_cost(b.traces, b.graph, options);
  REQUIRE(removal);
  // cudaLaunchKernel pays for its own record, the driver call nested in it, its kernel's
  // record and the record of aten::linear, the operator around it (which is no node).
  CHECK(b.node("cudaLaunchKernel").duration == 10 * kUs - (1000 + 500 + 2000 + 100));
  CHECK(b.node("cudaLaunchKernel").measured_duration == 10 * kUs);
  // The copy call lasted 2 us and its records cost 4 us: it goes down to 0, not below.
  CHECK(b.node("cudaMemcpyAsync").duration == 0);
  CHECK(b.node("cudaMemcpyAsync").measured_duration == 2 * kUs);
  CHECK(b.node("aten::add_").duration == 10 * kUs - 100);
  // GPU work keeps its time.
  CHECK(b.node("gemm").duration == 30 * kUs);
  CHECK(b.node("Memcpy HtoD").duration == 5 * kUs);

  CHECK(removal->source == graph::ProfilerCostRemoval::Source::kGiven);
  CHECK_FALSE(removal->kept);
  CHECK(removal->ranks_with_costs == 1);
  CHECK(removal->rank_steps == 1);
  CHECK(removal->nodes_changed == 3);
  CHECK(removal->removed == 3600 + 2000 + 100);
  CHECK(removal->clamped == 2000);
  CHECK(removal->removed_per_step() == 5700);
  const auto* runtime = removal_of(*removal, RecordClass::kRuntime);
  REQUIRE(runtime);
  CHECK(runtime->records == 2);
  CHECK(runtime->cost == 2000);
  CHECK(runtime->ns_min == 1000);
  CHECK(removal_of(*removal, RecordClass::kDriver)->records == 1);
  CHECK(removal_of(*removal, RecordClass::kKernel)->records == 1);
  CHECK(removal_of(*removal, RecordClass::kMemcpy)->cost == 3000);
  CHECK(removal_of(*removal, RecordClass::kCpuOp)->records == 2);
  CHECK_FALSE(removal_of(*removal, RecordClass::kSync));
}

TEST_CASE("a trace's own calibration is used, and given classes replace it", "[profiler-cost]") {
  Built b;
  b.traces.ranks[0].record_costs = costs("runtime=1us,driver=1us");
  SECTION("calibration alone") {
    const auto removal = graph::remove_profiler_cost(b.traces, b.graph, {});
    REQUIRE(removal);
    CHECK(removal->source == graph::ProfilerCostRemoval::Source::kCalibration);
    CHECK(b.node("cudaLaunchKernel").duration == 8 * kUs);
    CHECK(b.node("aten::add_").duration == 10 * kUs);  // no cpu_op cost in the calibration
  }
  SECTION("a given class replaces the calibration's") {
    graph::ProfilerCostOptions options;
    options.given = costs("runtime=3us");
    const auto removal = graph::remove_profiler_cost(b.traces, b.graph, options);
    REQUIRE(removal);
    CHECK(removal->source == graph::ProfilerCostRemoval::Source::kCalibrationAndGiven);
    CHECK(b.node("cudaLaunchKernel").duration == 6 * kUs);
  }
}

TEST_CASE("kept, or with no cost known, the graph is exactly as built", "[profiler-cost]") {
  Built b;
  const Built untouched;
  auto durations = [](const Built& x) {
    std::vector<Nanos> d;
    for (const graph::Node& n : x.graph.dfg.nodes()) d.push_back(n.duration);
    return d;
  };
  SECTION("no calibration, none given") {
    CHECK_FALSE(graph::remove_profiler_cost(b.traces, b.graph, {}));
    CHECK(durations(b) == durations(untouched));
  }
  SECTION("asked to keep: the figures say what was kept") {
    b.traces.ranks[0].record_costs = costs("runtime=1us");
    graph::ProfilerCostOptions options;
    options.keep = true;
    const auto removal = graph::remove_profiler_cost(b.traces, b.graph, options);
    REQUIRE(removal);
    CHECK(removal->kept);
    CHECK(removal_of(*removal, RecordClass::kRuntime)->records == 2);
    CHECK(durations(b) == durations(untouched));
  }
}

TEST_CASE("a replay with the profiler's cost taken out predicts a shorter step, and kept it stays exact", "[profiler-cost]") {
  trace::TraceSet traces = small_step();
  traces.ranks[0].record_costs = costs("runtime=1us,kernel=2us");
  Logger log(LogLevel::kQuiet);
  replayer::ReplayOptions options;
  const replayer::Report taken = replayer::replay_traces(traces, options, log).report;
  options.profiler_cost.keep = true;
  const replayer::Report kept = replayer::replay_traces(traces, options, log).report;
  REQUIRE(taken.iterations.size() == 1);
  REQUIRE(kept.iterations.size() == 1);
  CHECK(kept.iterations[0].job_predicted_ns == kept.iterations[0].job_measured_ns);
  CHECK(taken.iterations[0].job_measured_ns == kept.iterations[0].job_measured_ns);
  // 1 + 2 us off the launch (its kernel starts 8 us after the call's start and keeps that
  // delay), 1 us off the copy call: the step's ops end 4 us earlier.
  CHECK(taken.iterations[0].job_predicted_ns == taken.iterations[0].job_measured_ns - 4 * kUs);
  REQUIRE(taken.profiler_cost);
  CHECK(taken.profiler_cost->removed == 4 * kUs);
  const std::string text = replayer::render_text(taken);
  CHECK(text.find("profiler's own cost taken out of the CPU side (the traces' calibration, 1 of 1 ranks): "
                  "runtime 2 records x 1.000 us = 2.000 us per step; kernel 1 records x 2.000 us = 2.000 us per step; "
                  "removed 4.000 us per step from 2 ops") != std::string::npos);
  const auto json = replayer::to_json(taken);
  CHECK(json.at("profiler_cost").at("removed_per_step_ns") == 4000);
  CHECK(json.at("profiler_cost").at("classes").at(0).at("class") == "runtime");
  CHECK(replayer::to_json(kept).at("profiler_cost").at("kept") == true);
  traces.ranks[0].record_costs.reset();
  CHECK_FALSE(replayer::to_json(replayer::replay_traces(traces, options, log).report).contains("profiler_cost"));
}
