// The what-if library as the optimizer will call it: plain option structs, no command line.
#include <catch2/catch.hpp>

#include <memory>

#include "core/error.h"
#include "costmodel/hw.h"
#include "costmodel/paths.h"
#include "replayer/replay.h"
#include "test_paths.h"
#include "trace_fixtures.h"
#include "whatif/evaluate.h"
#include "workload_fixtures.h"

using namespace dpro;
using test::device;
using test::load_workload;

namespace {

whatif::CommRetime comm_options() {
  whatif::CommRetime c;
  c.clusters_dir = test::source_path("configs/clusters");
  return c;
}

Nanos job_ns(const replayer::Report& r) { return r.iterations.at(0).job_predicted_ns; }
Nanos gpu_ns(const graph::Dfg& dfg) {
  Nanos t = 0;
  for (const graph::Node& n : dfg.nodes())
    if (graph::on_gpu(n.kind) && n.kind != graph::NodeKind::kCollective) t += n.duration;
  return t;
}

}  // namespace

TEST_CASE("whatif: an evaluation without rewrites replays the base exactly") {
  const whatif::Workload base = load_workload("traces/dlrm-8xV100");
  Logger quiet(LogLevel::kQuiet);
  const replayer::Replay measured = replayer::replay_traces(*base.traces, replayer::ReplayOptions{}, quiet);
  replayer::Simulator simulator;
  const whatif::Evaluation e = whatif::evaluate(base, {}, simulator, whatif::EvaluateOptions{});
  CHECK(e.changes.empty());
  CHECK(job_ns(e.report) == job_ns(measured.report));
  CHECK(e.simulation.end == measured.simulation.end);
  CHECK(e.gpu_work_after_steps.cases.empty());
  CHECK(e.gpu_work_after_steps.steps == 8);  // one step, eight ranks
}

TEST_CASE("whatif: device_retime re-times every GPU op and leaves the base workload alone") {
  const whatif::Workload base = load_workload("traces/hta/alexnet-a100-single.json.gz");
  whatif::Workload w = base;
  const whatif::DeviceChange c = whatif::device_retime(w, device("T4"));
  CHECK(c.target == "T4");
  // Every GPU op is counted once, by one rule.
  std::size_t gpu_ops = 0;
  for (const graph::Node& n : w.graph.dfg.nodes()) gpu_ops += graph::on_gpu(n.kind) && n.kind != graph::NodeKind::kBarrier;
  CHECK(c.coverage.total_ops() == gpu_ops);
  // A T4 is slower than the A100 at everything: the GPU work grows (by a half: 66 -> 103 ms), and
  // the base is untouched.
  CHECK(gpu_ns(w.graph.dfg) > gpu_ns(base.graph.dfg) * 5 / 4);
  CHECK(gpu_ns(base.graph.dfg) == [&] {
    Nanos t = 0;
    for (const graph::Node& n : base.graph.dfg.nodes())
      if (graph::on_gpu(n.kind) && n.kind != graph::NodeKind::kCollective) t += n.measured_duration;
    return t;
  }());
  CHECK(c.coverage.ops[static_cast<int>(costmodel::PricedBy::kSameChip)] == 0);
}

TEST_CASE("whatif: device_retime between GPUs of one chip uses the same-chip rule and never slows a kernel") {
  whatif::Workload w = load_workload("traces/h100/gpt2-emit-nvtx-step");
  const whatif::DeviceChange c = whatif::device_retime(w, device("H200-SXM-141GB"));
  const int same = static_cast<int>(costmodel::PricedBy::kSameChip);
  CHECK(c.coverage.ops[same] > 0);
  CHECK(c.coverage.predicted[same] < c.coverage.measured[same]);
  for (const graph::Node& n : w.graph.dfg.nodes())
    if (n.kind == graph::NodeKind::kKernel) REQUIRE(n.duration <= n.measured_duration);
}

TEST_CASE("whatif: option errors name the library's option, not a flag") {
  whatif::Workload w = load_workload("traces/dlrm-8xV100");
  try {
    whatif::device_retime(w, device("Voodoo5"));
    FAIL("no error");
  } catch (const OptionError& e) {
    CHECK(e.option() == "device");
    CHECK(e.value() == "Voodoo5");
    CHECK(std::string(e.what()).find("--") == std::string::npos);
  }
  whatif::CommRetime bad = comm_options();
  bad.ranks = 0;
  CHECK_THROWS_MATCHES(whatif::comm_retime(w, bad), OptionError,
                       Catch::Predicate<OptionError>([](const OptionError& e) { return e.option() == "ranks"; }));
  bad = comm_options();
  bad.bucket_mb = -1;
  CHECK_THROWS_MATCHES(whatif::comm_retime(w, bad), OptionError,
                       Catch::Predicate<OptionError>([](const OptionError& e) { return e.option() == "bucket_mb"; }));
}

TEST_CASE("whatif: comm_retime with a slower network lengthens the DLRM step; buckets fuse its all-reduces") {
  const whatif::Workload base = load_workload("traces/dlrm-8xV100");
  replayer::Simulator simulator;
  const Nanos before = job_ns(whatif::evaluate(base, {}, simulator, {}).report);

  whatif::CommRetime slow = comm_options();
  slow.cluster = "dgx1-v100";
  slow.settings = {"network.intra_node_gbps=5"};
  const whatif::Evaluation e = whatif::evaluate(base, {slow}, simulator, {});
  REQUIRE(e.changes.size() == 1);
  const auto& c = std::get<whatif::CommChange>(e.changes[0]);
  CHECK(c.origin == std::optional<std::string>("dgx1-v100"));
  CHECK(c.origin_guessed);
  CHECK(c.retimed.ops == c.nccl_ops);
  CHECK(c.retimed.after > c.retimed.before);
  CHECK(job_ns(e.report) > before);

  whatif::CommRetime buckets = comm_options();
  buckets.bucket_mb = 25;
  const whatif::Evaluation b = whatif::evaluate(base, {buckets}, simulator, {});
  const auto& bc = std::get<whatif::CommChange>(b.changes[0]);
  REQUIRE(bc.buckets);
  CHECK(bc.buckets->buckets <= bc.buckets->allreduces);
}

TEST_CASE("whatif: scale_ranks below the trace's ranks replays the graph of the first N ranks") {
  const whatif::Workload base = load_workload("traces/dlrm-8xV100");
  whatif::CommRetime four = comm_options();
  four.ranks = 4;
  replayer::Simulator simulator;
  const whatif::Evaluation e = whatif::evaluate(base, {four}, simulator, {});
  const auto& c = std::get<whatif::CommChange>(e.changes[0]);
  CHECK(c.scaled_in);
  CHECK(c.world == 8);
  CHECK(c.nodes < base.graph.dfg.node_count());
  CHECK(e.report.iterations.at(0).ranks.size() == 4);
}

TEST_CASE("whatif: evaluate applies rewrites in order and reports each change as it is applied") {
  const whatif::Workload base = load_workload("traces/dlrm-8xV100");
  whatif::EvaluateOptions options;
  std::string seen;  // h(ost), d(evice), c(ommunication), in the order reported
  options.on_applied = [&](const whatif::Change& c) {
    seen += std::holds_alternative<whatif::HostChange>(c) ? 'h' : std::holds_alternative<whatif::DeviceChange>(c) ? 'd' : 'c';
  };
  whatif::CommRetime net = comm_options();
  net.settings = {"network.intra_node_gbps=300"};  // faster than the DGX-1's 150, like the H100
  replayer::Simulator simulator;
  const whatif::Evaluation e =
      whatif::evaluate(base, {device("H100-SXM5-80GB"), net, whatif::HostRetime{1.0}}, simulator, options);
  CHECK(seen == "dch");
  REQUIRE(e.changes.size() == 3);
  CHECK(std::holds_alternative<whatif::DeviceChange>(e.changes[0]));
  CHECK(std::holds_alternative<whatif::CommChange>(e.changes[1]));
  CHECK(std::get<whatif::HostChange>(e.changes[2]).op_time_after == std::get<whatif::HostChange>(e.changes[2]).op_time_before);
  // The H100 shortens the GPU work and the fabric is faster; the DLRM step, bound by its CPU, is not lengthened.
  CHECK(gpu_ns(e.workload.graph.dfg) < gpu_ns(base.graph.dfg));
  CHECK(job_ns(e.report) <= job_ns(whatif::evaluate(base, {}, simulator, {}).report));
}

TEST_CASE("whatif: collectives whose peers are outside the trace keep their waiting, only their transfer is re-timed") {
  // Rank 0 of a 2-rank A100 job: each NCCL kernel's time is mostly waiting for rank 1.
  const whatif::Workload base = load_workload("traces/hta/a100-ws2-rank0-nccl.json.gz");
  auto nccl_ns = [](const graph::Dfg& dfg) {
    Nanos t = 0;
    for (const graph::Node& n : dfg.nodes())
      if (n.kind == graph::NodeKind::kCollective) t += n.duration;
    return t;
  };
  replayer::Simulator simulator;
  for (const char* setting : {"network.intra_node_gbps=10", "network.intra_node_gbps=1000"}) {
    INFO(setting);
    whatif::CommRetime net = comm_options();
    net.settings = {setting};
    const whatif::Evaluation e = whatif::evaluate(base, {net}, simulator, {});
    const auto& c = std::get<whatif::CommChange>(e.changes[0]);
    CHECK(c.samples == 0);  // their times are no transfer times to calibrate on
    CHECK(c.peer_waiting_ops == 21);
    CHECK(c.peer_waiting > 40 * kNanosPerMilli);
    CHECK(c.retimed.before + c.peer_waiting == nccl_ns(base.graph.dfg));
    // The kernels change by exactly their transfers' change; the waiting stays.
    CHECK(nccl_ns(e.workload.graph.dfg) - nccl_ns(base.graph.dfg) == c.retimed.after - c.retimed.before);
    CHECK(nccl_ns(e.workload.graph.dfg) >= c.peer_waiting);
  }
}
