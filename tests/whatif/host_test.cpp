// The host what-if (whatif/host_retime.h) and the host speed between two captures
// (whatif/host_speed.h), called as a library.
#include <catch2/catch.hpp>

#include <memory>

#include "core/error.h"
#include "replayer/replay.h"
#include "test_paths.h"
#include "trace_fixtures.h"
#include "whatif/evaluate.h"
#include "workload_fixtures.h"
#include "whatif/host_speed.h"

using namespace dpro;
using test::load_workload;

namespace {


// Median over the iterations of the job's predicted time.
Nanos median_step(const replayer::Report& r) {
  std::vector<Nanos> t;
  for (const auto& it : r.iterations) t.push_back(it.job_predicted_ns);
  std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
  return t[t.size() / 2];
}

// GPT-2 on an H100, steps 10..15 recorded by dpro-profile (traces/SOURCES.md): bound by its host.
const char* kGpt2H100 = "traces/h100/gpt2-emit-nvtx-step";
const char* kGpt2H200 = "traces/h200/gpt2-emit-nvtx-step";

}  // namespace

TEST_CASE("host what-if: a host twice as fast halves every CPU op and the untraced time before it, nothing else") {
  const whatif::Workload base = load_workload(kGpt2H100);
  whatif::Workload w = base;
  const whatif::HostChange c = whatif::host_retime(w, whatif::HostRetime{2.0});
  std::size_t cpu = 0, untraced = 0;
  for (graph::NodeId id : base.graph.dfg.node_ids()) {
    const graph::Node& before = base.graph.dfg.node(id);
    const graph::Node& after = w.graph.dfg.node(id);
    if (graph::is_cpu_op(before.kind) || before.kind == graph::NodeKind::kUntraced) {
      (before.kind == graph::NodeKind::kUntraced ? untraced : cpu) += 1;
      CHECK(std::llabs(after.duration * 2 - before.duration) <= 1);
      CHECK(std::llabs(after.delay * 2 - before.delay) <= 1);
    } else {
      CHECK(after.duration == before.duration);
      CHECK(after.delay == before.delay);
    }
  }
  CHECK(c.cpu_ops == cpu);  // untraced work is no op
  CHECK(cpu > 5000);
  CHECK(untraced > 200);
  CHECK(std::llabs(c.op_time_after * 2 - c.op_time_before) <= static_cast<Nanos>(cpu));
  CHECK(c.untraced_after < c.untraced_before);
}

TEST_CASE("host what-if: speed 1 replays the base exactly, a faster host shortens a host-bound step and never lengthens it") {
  const whatif::Workload base = load_workload(kGpt2H100);
  replayer::Simulator simulator;
  const Nanos measured = median_step(whatif::evaluate(base, {}, simulator, {}).report);
  CHECK(median_step(whatif::evaluate(base, {whatif::HostRetime{1.0}}, simulator, {}).report) == measured);
  Nanos previous = measured;
  for (double speed : {1.25, 1.5, 2.0, 4.0}) {
    INFO(speed);
    const Nanos t = median_step(whatif::evaluate(base, {whatif::HostRetime{speed}}, simulator, {}).report);
    CHECK(t <= previous);
    previous = t;
  }
  // Twice as fast a host: the host-bound GPT-2 step gains, down to about its GPU time (no less).
  const Nanos twice = median_step(whatif::evaluate(base, {whatif::HostRetime{2.0}}, simulator, {}).report);
  CHECK(twice < measured * 85 / 100);
  // A slower host lengthens it.
  CHECK(median_step(whatif::evaluate(base, {whatif::HostRetime{0.5}}, simulator, {}).report) > measured);
}

TEST_CASE("host what-if: --set host.* values are the host's and the others the cluster's, bad ones name the setting") {
  std::vector<std::string> rest;
  const auto host = whatif::host_retime_from_settings(
      {"network.inter_node_gbps=50", "host.cpu_speed=1.5", "cluster.gpus_per_node=4"}, &rest);
  REQUIRE(host);
  CHECK(host->cpu_speed == 1.5);
  CHECK(rest == std::vector<std::string>{"network.inter_node_gbps=50", "cluster.gpus_per_node=4"});
  CHECK_FALSE(whatif::host_retime_from_settings({"network.inter_node_gbps=50"}, nullptr));
  for (const char* bad : {"host.cpu_speed=0", "host.cpu_speed=-2", "host.cpu_speed=fast", "host.cpu_speed=",
                          "host.cpu_speed=1.5x", "host.cpu_speed=nan", "host.cpu_speed=inf", "host.gpu_speed=2"}) {
    INFO(bad);
    try {
      whatif::host_retime_from_settings({bad}, nullptr);
      FAIL("no error");
    } catch (const OptionError& e) {
      CHECK(e.option() == "set");
      CHECK(e.value() == bad);
    }
  }
}

TEST_CASE("host speed: a capture against itself is 1, against its host made twice as fast 2") {
  const whatif::Workload a = load_workload(kGpt2H100);
  const whatif::HostSpeed same = whatif::host_speed(a.graph.dfg, a.graph.dfg);
  CHECK(same.cpu_speed == 1.0);
  REQUIRE(same.ops.size() >= 5);
  CHECK(same.ops[0].name == "cudaLaunchKernel");  // the most origin time
  graph::Dfg faster = a.graph.dfg;
  for (graph::Node& n : faster.nodes())
    if (graph::is_cpu_op(n.kind)) n.measured_duration /= 2;
  CHECK(whatif::host_speed(a.graph.dfg, faster).cpu_speed == Approx(2.0).epsilon(0.02));
  CHECK(whatif::host_speed(faster, a.graph.dfg).cpu_speed == Approx(0.5).epsilon(0.02));
  // No op run often enough in both: nothing to compare, speed 1.
  const whatif::HostSpeed none = whatif::host_speed(a.graph.dfg, faster, 1'000'000);
  CHECK(none.ops.empty());
  CHECK(none.cpu_speed == 1.0);
}

TEST_CASE("host speed: the H200 machine ran GPT-2's host side faster than the H100 machine", "[h100]") {
  // The two captures of one job (traces/SOURCES.md): the H200 capture's steps are shorter
  // although GPT-2 is bound by its host; its runtime calls and operators took less time.
  const whatif::Workload h100 = load_workload(kGpt2H100);
  const whatif::Workload h200 = load_workload(kGpt2H200);
  const whatif::HostSpeed s = whatif::host_speed(h100.graph.dfg, h200.graph.dfg);
  CHECK(s.cpu_speed > 1.2);
  CHECK(whatif::host_speed(h200.graph.dfg, h100.graph.dfg).cpu_speed < 1 / 1.2);
  CHECK(s.origin_total > s.origin_cpu_total * 9 / 10);  // the shared ops are most of the CPU time
}
