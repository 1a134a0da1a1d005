// The launch queue (graph/launch_queue.h) on a synthetic GPU-bound step: one thread launches
// 300 kernels of 50 us on one stream of a GPU whose queue holds 100; from the 101st on, each
// launch blocks until the kernel 100 places before it finishes. The recorded launch calls are
// then mostly waiting, as cudaLaunchKernel's are on a job whose CPU runs ahead of its GPU.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "graph/builder.h"
#include "graph/launch_queue.h"
#include "replayer/engine.h"
#include "trace_fixtures.h"

using namespace dpro;

namespace {

constexpr int kKernels = 300, kDepth = 100;
constexpr std::int64_t kKernelUs = 50, kCallUs = 5, kWakeUs = 2, kLaunchLatencyUs = 3;

struct Step {
  std::string path;
  std::vector<std::int64_t> call_start, call_end, kernel_start, kernel_end;  // us
  std::int64_t end = 0;
};

Step write_step(const std::string& dir) {
  Step s;
  std::string events;
  std::int64_t t = 100;
  for (int i = 0; i < kKernels; ++i) {
    const std::int64_t start = t;
    std::int64_t end = start + kCallUs;
    if (i >= kDepth) end = std::max(end, s.kernel_end[i - kDepth] + kWakeUs);  // blocked on a full queue
    const std::int64_t ks = std::max(start + kLaunchLatencyUs, i > 0 ? s.kernel_end[i - 1] : 0);
    s.call_start.push_back(start);
    s.call_end.push_back(end);
    s.kernel_start.push_back(ks);
    s.kernel_end.push_back(ks + kKernelUs);
    const std::string corr = std::to_string(1000 + i);
    events += R"(, {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 11, "ts": )" +
              std::to_string(start) + R"(, "dur": )" + std::to_string(end - start) + R"(, "args": {"correlation": )" +
              corr + "}}";
    events += R"(, {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": )" + std::to_string(ks) +
              R"(, "dur": )" + std::to_string(kKernelUs) + R"(, "args": {"correlation": )" + corr +
              R"(, "stream": 7, "device": 0}})";
    t = end + 1;
  }
  // The step ends with a synchronisation that waits for the last kernel.
  const std::int64_t sync_end = s.kernel_end.back() + kWakeUs;
  events += R"(, {"ph": "X", "cat": "cuda_runtime", "name": "cudaDeviceSynchronize", "pid": 10, "tid": 11, "ts": )" +
            std::to_string(t) + R"(, "dur": )" + std::to_string(sync_end - t) + "}";
  s.end = sync_end + 1;
  const std::string text = R"({"traceEvents": [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 10, "tid": 11, "ts": 90, "dur": )" +
                           std::to_string(s.end - 90) + "}" + events + "]}";
  s.path = dir + "/step.json";
  test::write_text(s.path, text);
  return s;
}

struct Built {
  trace::TraceSet traces;
  graph::BuiltGraph graph;
};

Built build(const Step& s, graph::BuildOptions options = {}) {
  Logger quiet(LogLevel::kQuiet);
  Built b{test::load({s.path}, quiet), {}};
  b.graph = graph::build_graph(b.traces, options, quiet);
  return b;
}

// The kernels and their launch calls, in launch order.
std::pair<std::vector<graph::NodeId>, std::vector<graph::NodeId>> kernels_and_calls(const graph::Dfg& dfg) {
  std::vector<std::pair<Nanos, graph::Edge>> launches;
  for (const graph::Edge& e : dfg.edges())
    if (e.kind == graph::EdgeKind::kLaunch) launches.push_back({dfg.node(e.src).measured_start, e});
  std::sort(launches.begin(), launches.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<graph::NodeId> kernels, calls;
  for (const auto& [t, e] : launches) {
    calls.push_back(e.src);
    kernels.push_back(e.dst);
  }
  return {kernels, calls};
}

Nanos makespan_with_kernels_at(graph::Dfg dfg, double factor) {
  for (graph::Node& n : dfg.nodes())
    if (n.kind == graph::NodeKind::kKernel) n.duration = static_cast<Nanos>(n.duration * factor);
  const replayer::Simulation sim = replayer::simulate(dfg);
  return sim.makespan;
}

}  // namespace

TEST_CASE("launch queue: its depth is estimated from the launches that blocked, and the baseline stays exact") {
  const Step s = write_step(test::fresh_dir("launch_queue_depth"));
  const Built b = build(s);
  CHECK(b.graph.stats.launch_queue_estimated);
  CHECK(b.graph.stats.launch_queue_depth == kDepth);
  // Those that waited at least the 20 us a blocked launch must (the first ones, as the queue
  // filled, waited less).
  CHECK(b.graph.stats.launches_blocked >= 150);
  CHECK(b.graph.stats.launches_blocked <= kKernels - kDepth);
  CHECK(b.graph.stats.launch_queue_contradicted == 0);
  CHECK(b.graph.stats.edges_by_kind[static_cast<int>(graph::EdgeKind::kLaunchQueue)] == kKernels - kDepth);
  // Replayed with what was measured, every op keeps its measured times.
  const replayer::Simulation sim = replayer::simulate(b.graph.dfg);
  for (graph::NodeId id : b.graph.dfg.node_ids()) {
    const graph::Node& n = b.graph.dfg.node(id);
    INFO(id.value);
    CHECK(sim.start[id] + b.graph.dfg.origin() == n.measured_start);
    CHECK(sim.end[id] + b.graph.dfg.origin() == n.measured_start + n.measured_duration);
  }
  // A blocked launch costs its wake-up, not its wait.
  const auto [kernels, calls] = kernels_and_calls(b.graph.dfg);
  REQUIRE(calls.size() == kKernels);
  CHECK(b.graph.dfg.node(calls[kKernels - 1]).duration == kWakeUs * kNanosPerMicro);
  CHECK(b.graph.dfg.node(calls[10]).duration == kCallUs * kNanosPerMicro);
}

TEST_CASE("launch queue: a faster GPU frees the CPU that waited for it, and a launch still waits for its slot") {
  const Step s = write_step(test::fresh_dir("launch_queue_faster"));
  const Built b = build(s);
  const Nanos measured = replayer::simulate(b.graph.dfg).makespan;
  // Kernels twice as fast: the GPU-bound step takes about half as long.
  const Nanos faster = makespan_with_kernels_at(b.graph.dfg, 0.5);
  CHECK(faster < measured * 6 / 10);
  CHECK(faster > measured * 4 / 10);
  // Without the queue (launch calls booked at their measured, mostly waiting, durations), the
  // CPU issues the launches as late as it did, and only the kernels launched last gain.
  graph::BuildOptions no_queue;
  no_queue.launch_queue_depth = 1'000'000;
  const Built frozen = build(s, no_queue);
  CHECK(frozen.graph.stats.edges_by_kind[static_cast<int>(graph::EdgeKind::kLaunchQueue)] == 0);
  CHECK(makespan_with_kernels_at(frozen.graph.dfg, 0.5) > faster * 12 / 10);
  // Back-pressure in the faster replay: no launch returns before the kernel whose slot it takes ends.
  graph::Dfg dfg = b.graph.dfg;
  for (graph::Node& n : dfg.nodes())
    if (n.kind == graph::NodeKind::kKernel) n.duration /= 2;
  const replayer::Simulation sim = replayer::simulate(dfg);
  const auto [kernels, calls] = kernels_and_calls(dfg);
  for (int i = kDepth; i < kKernels; ++i) CHECK(sim.end[calls[i]] >= sim.end[kernels[i - kDepth]]);
  // A slower GPU lengthens the GPU-bound step by as much.
  CHECK(makespan_with_kernels_at(b.graph.dfg, 2.0) > measured * 19 / 10);
}

TEST_CASE("launch queue: a given depth is used as given, the measured times contradicting it are counted") {
  const Step s = write_step(test::fresh_dir("launch_queue_given"));
  graph::BuildOptions options;
  options.launch_queue_depth = 50;
  const Built b = build(s, options);
  CHECK_FALSE(b.graph.stats.launch_queue_estimated);
  CHECK(b.graph.stats.launch_queue_depth == 50);
  // 100 kernels were in flight: launch i returned before kernel i - 50 finished.
  CHECK(b.graph.stats.launch_queue_contradicted > 0);
  CHECK(replayer::simulate(b.graph.dfg).makespan == replayer::simulate(build(s).graph.dfg).makespan);
}

TEST_CASE("launch queue: a job whose GPU keeps up gets the default depth, and its launches cost what they took") {
  // The same launches, each kernel 2 us: the queue never fills.
  const std::string dir = test::fresh_dir("launch_queue_cpu_bound");
  std::string events;
  for (int i = 0; i < 200; ++i) {
    const std::string corr = std::to_string(1000 + i), start = std::to_string(100 + 10 * i);
    events += R"(, {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 11, "ts": )" + start +
              R"(, "dur": 5, "args": {"correlation": )" + corr + "}}";
    events += R"(, {"ph": "X", "cat": "kernel", "name": "add", "pid": 0, "tid": 7, "ts": )" +
              std::to_string(100 + 10 * i + 4) + R"(, "dur": 2, "args": {"correlation": )" + corr +
              R"(, "stream": 7, "device": 0}})";
  }
  test::write_text(dir + "/t.json", R"({"traceEvents": [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 10, "tid": 11, "ts": 90, "dur": 2100})" +
                                        events + "]}");
  Logger quiet(LogLevel::kQuiet);
  const auto traces = test::load({dir + "/t.json"}, quiet);
  const graph::BuiltGraph g = graph::build_graph(traces, {}, quiet);
  CHECK_FALSE(g.stats.launch_queue_estimated);
  CHECK(g.stats.launch_queue_depth == graph::kDefaultLaunchQueueDepth);
  CHECK(g.stats.launches_blocked == 0);
  for (const graph::Node& n : g.dfg.nodes())
    if (n.kind == graph::NodeKind::kRuntimeCall) CHECK(n.duration == 5 * kNanosPerMicro);
}
