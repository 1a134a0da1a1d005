// A CPU thread's untraced work as nodes of its own, and the late GPU starts the builder explains
// (slow launch calls, stream waits the calls do not name), on small synthetic Kineto steps
// (step_fixtures.h) and on bundled traces (docs/replay.md, section 2).
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "graph/editor.h"
#include "replayer/replay.h"
#include "step_fixtures.h"
#include "trace_fixtures.h"

using namespace dpro;
using graph::EdgeKind;
using graph::NodeKind;
using replayer::Category;
using test::cpu;
using test::gpu;
using test::kUs;

namespace {

// One thread: aten::add, 5 us, aten::mul, 200 us, aten::relu, 150 us, a launch, 40 us, a sync
// that waits for the kernel; the step [0, 770) us.
std::vector<std::string> gappy_thread() {
  return {cpu("cpu_op", "aten::add", 10, 20),
          cpu("cpu_op", "aten::mul", 35, 20),
          cpu("cpu_op", "aten::relu", 255, 20),
          cpu("cuda_runtime", "cudaLaunchKernel", 425, 5, 1),
          gpu("kernel", "gemm", 7, 433, 50, 1),
          cpu("cuda_runtime", "cudaDeviceSynchronize", 470, 20)};
}

struct Loaded {
  trace::TraceSet traces;
  replayer::Replay replay;
};

Loaded replay_file(const std::string& path, const replayer::ReplayOptions& options = {}) {
  Logger quiet(LogLevel::kQuiet);
  Loaded l{test::load({path}, quiet), {}};
  l.replay = replayer::replay_traces(l.traces, options, quiet);
  return l;
}

std::vector<graph::NodeId> nodes_of(const graph::Dfg& dfg, NodeKind kind) {
  std::vector<graph::NodeId> out;
  for (const graph::NodeId id : dfg.node_ids())
    if (dfg.node(id).kind == kind) out.push_back(id);
  return out;
}

// The node `id` replays at its measured times.
void check_exact(const graph::Dfg& dfg, const replayer::Simulation& sim) {
  for (const graph::NodeId id : dfg.node_ids()) {
    const graph::Node& n = dfg.node(id);
    if (n.kind == NodeKind::kBarrier) continue;
    INFO(id.value << " " << graph::to_string(n.kind));
    CHECK(sim.start[id] + dfg.origin() == n.measured_start);
    CHECK(sim.end[id] + dfg.origin() == n.measured_start + n.measured_duration);
  }
}

}  // namespace

TEST_CASE("Untraced work: a thread's gaps of at least 100 us are nodes of their own between its ops, shorter ones stay delays, replayed exactly") {
  const Loaded l = replay_file(test::write_step("untraced_nodes", 0, 770, gappy_thread()));
  const graph::Dfg& dfg = l.replay.graph.dfg;
  const auto untraced = nodes_of(dfg, NodeKind::kUntraced);
  REQUIRE(untraced.size() == 2);
  CHECK(l.replay.graph.stats.untraced_nodes == 2);
  CHECK(l.replay.graph.stats.untraced_total == 350 * kUs);
  std::vector<std::string> after;
  for (const graph::NodeId u : untraced) {
    const graph::Node& work = dfg.node(u);
    CHECK_FALSE(dfg.op_of(u).valid());
    // One way out: the thread's next op, which starts as the work ends, without delay of its own.
    std::vector<graph::EdgeId> out;
    dfg.for_each_out_edge(u, [&](graph::EdgeId e) { out.push_back(e); });
    REQUIRE(out.size() == 1);
    const graph::Edge& e = dfg.edge(out[0]);
    CHECK(e.kind == EdgeKind::kThreadOrder);
    const graph::Node& op = dfg.node(e.dst);
    CHECK(op.track == work.track);
    CHECK(op.delay == 0);
    CHECK(work.measured_start + work.measured_duration == op.measured_start);
    after.push_back(std::string(l.traces.strings.view(op.name)));
  }
  std::sort(after.begin(), after.end());
  CHECK(after == std::vector<std::string>{"aten::relu", "cudaLaunchKernel"});
  // The gaps under 100 us stay the next op's delay.
  for (const graph::NodeId id : dfg.node_ids()) {
    const std::string_view name = l.traces.strings.view(dfg.node(id).name);
    if (name == "aten::mul") CHECK(dfg.node(id).delay == 5 * kUs);
    if (name == "cudaDeviceSynchronize") CHECK(dfg.node(id).delay == 40 * kUs);
  }
  check_exact(dfg, l.replay.simulation);
  CHECK(l.replay.report.iterations.at(0).job_error() == 0.0);
  // Reports count ops, not untraced work.
  CHECK(l.replay.report.untraced_nodes == 2);
  CHECK(l.replay.report.nodes == 6);
  CHECK(dfg.node_count() == 8);
  CHECK_THAT(replayer::render_text(l.replay.report), Catch::Contains("-> 6 ops and 2 stretches of untraced CPU work"));
  CHECK(replayer::to_json(l.replay.report)["graph"]["untraced_ns"] == 350 * kUs);
}

TEST_CASE("Untraced work: the critical path charges it to cpu_untraced and the top ops to the gap before the next op, as when it was a delay") {
  const std::string path = test::write_step("untraced_path", 0, 770, gappy_thread());
  const Loaded nodes = replay_file(path);
  replayer::ReplayOptions as_delays;
  as_delays.build.untraced_min = INT64_MAX;
  const Loaded delays = replay_file(path, as_delays);
  CHECK(nodes_of(delays.replay.graph.dfg, NodeKind::kUntraced).empty());
  const auto& it = nodes.replay.report.iterations.at(0);
  const auto& old = delays.replay.report.iterations.at(0);
  CHECK(it.job_predicted_ns == old.job_predicted_ns);
  // The engine sends untraced work's end with its start: the same events, no more.
  CHECK(nodes.replay.simulation.events_processed == delays.replay.simulation.events_processed);
  // 5 + 200 + 150 us of gaps and the 280 us tail after the sync (the sync's return waited for
  // the kernel: the 40 us before it are off the path).
  CHECK(it.job_critical_path[Category::kCpuUntraced] == (5 + 200 + 150 + 280) * kUs);
  for (int c = 0; c < replayer::kCategoryCount; ++c) {
    INFO(replayer::to_string(static_cast<Category>(c)));
    CHECK(it.job_critical_path.by_category[c] == old.job_critical_path.by_category[c]);
  }
  const replayer::PathOp* relu = test::find_op(it, "aten::relu");
  REQUIRE(relu);
  CHECK(relu->gap_before == 200 * kUs);
  CHECK(relu->own == 20 * kUs);
  CHECK(relu->calls == 1);
  CHECK(relu->category == Category::kCpuOp);
  const replayer::PathOp* launch = test::find_op(it, "cudaLaunchKernel");
  REQUIRE(launch);
  CHECK(launch->gap_before == 150 * kUs);
  CHECK(launch->calls == 1);
  CHECK_FALSE(test::find_op(it, ""));  // untraced work is no op of the table
  REQUIRE(it.path_ops.size() == old.path_ops.size());
  for (std::size_t i = 0; i < it.path_ops.size(); ++i) {
    CHECK(it.path_ops[i].name == old.path_ops[i].name);
    CHECK(it.path_ops[i].own == old.path_ops[i].own);
    CHECK(it.path_ops[i].gap_before == old.path_ops[i].gap_before);
  }
}

TEST_CASE("Untraced work: fusing two ops of a thread takes the untraced work between them as their waiting, not their cost") {
  const Loaded l = replay_file(test::write_step("untraced_fuse", 0, 770, gappy_thread()));
  graph::BuiltGraph built = l.replay.graph;
  graph::NodeId mul, relu;
  for (const graph::NodeId id : built.dfg.node_ids()) {
    const std::string_view name = l.traces.strings.view(built.dfg.node(id).name);
    if (name == "aten::mul") mul = id;
    if (name == "aten::relu") relu = id;
  }
  const Nanos relu_end = l.replay.simulation.end[relu];
  graph::NodeId fused;
  {
    graph::Editor editor(built);
    const std::vector<graph::NodeId> parts{mul, relu};
    fused = editor.fuse(parts);
    const graph::Renumbering map = editor.commit();
    fused = map.node[fused];
  }
  CHECK(nodes_of(built.dfg, NodeKind::kUntraced).size() == 1);  // the one before the launch
  CHECK(built.dfg.node(fused).duration == 40 * kUs);
  CHECK(built.dfg.node(fused).delay == (5 + 200) * kUs);
  CHECK(built.dfg.op_name(fused) == "fused(aten::mul + aten::relu)");
  const replayer::Simulation sim = replayer::simulate(built.dfg);
  CHECK(sim.end[fused] == relu_end);
}

TEST_CASE("Late starts: a kernel that started as its 3 ms launch call returned, and a copy staged by its call, are slow launches, no unresolved wait") {
  const auto r = test::replay_step("slow_launch", 95, 4000,
                                   {cpu("cuda_runtime", "cudaLaunchKernel", 100, 3000, 1), gpu("kernel", "gemm", 7, 3095, 50, 1),
                                    cpu("cuda_runtime", "cudaMemcpyAsync", 3150, 700, 2),
                                    gpu("gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", 7, 3300, 540, 2),
                                    cpu("cuda_runtime", "cudaDeviceSynchronize", 3900, 10)});
  const graph::Dfg& dfg = r.graph.dfg;
  CHECK(r.graph.stats.slow_launches == 2);
  std::vector<Nanos> gaps;
  for (const graph::Edge& e : dfg.edges())
    if (e.kind == EdgeKind::kLaunch) gaps.push_back(e.gap);
  std::sort(gaps.begin(), gaps.end());
  CHECK(gaps == std::vector<Nanos>{150 * kUs, 2995 * kUs});  // how far into its call each op was enqueued
  check_exact(dfg, r.simulation);
  const auto& it = r.report.iterations.at(0);
  CHECK(it.unresolved.count == 0);
  CHECK(it.job_critical_path[Category::kUnresolvedWait] == 0);
  CHECK(replayer::to_json(r.report)["graph"]["slow_launches"] == 2);
}

TEST_CASE("Late starts: a kernel that started as another stream's ended, after an unrecorded event wait from another thread, waited for it") {
  // Kernel A on stream 7 runs 300 us; thread 12 makes stream 13 wait for it (no cudaEventRecord,
  // no CUPTI record: as DDP's hooks on the DLRM trace); kernel B, launched at 115 us, starts 2 us
  // after A ends.
  auto step = [](const std::string& name, const std::string& wait) {
    std::vector<std::string> events = {cpu("cuda_runtime", "cudaLaunchKernel", 100, 5, 1), gpu("kernel", "A", 7, 108, 300, 1),
                                       cpu("cuda_runtime", "cudaLaunchKernel", 115, 5, 2), gpu("kernel", "B", 13, 410, 50, 2),
                                       cpu("cuda_runtime", "cudaDeviceSynchronize", 130, 332)};
    if (!wait.empty()) events.push_back(wait);
    return test::replay_step(name, 95, 470, events);
  };
  auto stream_waits = [](const replayer::Replay& r) {
    const auto& edges = r.graph.dfg.edges();
    return std::count_if(edges.begin(), edges.end(), [](const graph::Edge& e) { return e.kind == EdgeKind::kStreamWait; });
  };
  SECTION("resolved") {
    const auto r = step("timing_wait", cpu("cuda_runtime", "cudaStreamWaitEvent", 110, 2, 0, 12));
    CHECK(r.graph.stats.stream_waits_by_timing == 1);
    CHECK(stream_waits(r) == 1);
    check_exact(r.graph.dfg, r.simulation);
    CHECK(r.report.iterations.at(0).unresolved.count == 0);
  }
  SECTION("no wait call: nothing says B waited, it stays an unresolved wait") {
    const auto r = step("timing_no_wait", "");
    CHECK(r.graph.stats.stream_waits_by_timing == 0);
    CHECK(stream_waits(r) == 0);
    CHECK(r.report.iterations.at(0).unresolved.count == 1);
  }
  SECTION("the wait came before A was launched: it cannot have waited for A") {
    const auto r = step("timing_wait_before", cpu("cuda_runtime", "cudaStreamWaitEvent", 96, 2, 0, 12));
    CHECK(r.graph.stats.stream_waits_by_timing == 0);
    CHECK(r.report.iterations.at(0).unresolved.count == 1);
  }
}

TEST_CASE("Late starts on bundled traces: slow launches and unrecorded stream waits explained, far fewer unresolved waits") {
  // Before the builder explained them (commit 80b7f0a): DLRM 6 unresolved waits, the H100
  // ResNet-50 step window 34, the H100 GPT-2 one 3.
  struct Case {
    const char* trace;
    std::size_t before, at_most;
  };
  for (const Case c : {Case{"traces/dlrm-8xV100", 6, 1}, Case{"traces/h100/resnet50-emit-nvtx-step", 34, 3},
                       Case{"traces/h100/gpt2-emit-nvtx-step", 3, 1}}) {
    INFO(c.trace);
    const Loaded l = replay_file(test::source_path(c.trace));
    std::size_t unresolved = 0;
    for (const auto& it : l.replay.report.iterations) {
      unresolved += it.unresolved.count;
      CHECK(it.job_error() == 0.0);
    }
    CHECK(unresolved <= c.at_most);
    CHECK(unresolved < c.before);
    CHECK(l.replay.graph.stats.slow_launches + l.replay.graph.stats.stream_waits_by_timing > 0);
    CHECK(l.replay.graph.stats.untraced_nodes > 0);
  }
}
