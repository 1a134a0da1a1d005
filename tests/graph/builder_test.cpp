#include <catch2/catch.hpp>

#include <algorithm>
#include <map>

#include "core/error.h"
#include "graph/builder.h"
#include "trace_fixtures.h"

using namespace dpro;
using graph::EdgeKind;
using graph::NodeKind;

namespace {

std::size_t count_nodes(const graph::Dfg& dfg, NodeKind kind) {
  return std::count_if(dfg.nodes().begin(), dfg.nodes().end(), [&](const graph::Node& n) { return n.kind == kind; });
}

std::size_t edges_of(const graph::BuiltGraph& g, EdgeKind kind) { return g.stats.edges_by_kind[static_cast<int>(kind)]; }

}  // namespace

TEST_CASE("DLRM 8 ranks: every collective is matched across all 8 ranks") {
  test::CapturingLog log;
  const auto set = test::load({test::dlrm_dir()}, log.log);
  const auto built = graph::build_graph(set, {}, log.log);
  CHECK(built.stats.collectives_matched == 8);  // 5 SendRecv + 3 AllReduce instances
  CHECK(built.stats.collectives_unmatched == 0);
  CHECK(count_nodes(built.dfg, NodeKind::kBarrier) == 8);
  for (const graph::NodeId id : built.dfg.node_ids()) {
    if (built.dfg.node(id).kind != NodeKind::kBarrier) continue;
    std::set<int> ranks;
    built.dfg.for_each_in_edge(id, [&](graph::EdgeId e) { ranks.insert(built.dfg.node(built.dfg.edge(e).src).rank); });
    CHECK(ranks.size() == 8);
  }
  // Every GPU op whose launching call is in the trace is joined to it (ranks 1 and 3 lack the
  // runtime records of 64 GPU ops each).
  std::size_t launched = 0, unlaunched = 0;
  for (const trace::TraceRank& r : set.ranks) {
    std::set<std::int64_t> calls;
    for (const trace::Event& e : r.events) {
      if (e.kind == trace::EventKind::kRuntimeCall && e.correlation) calls.insert(*e.correlation);
    }
    for (const trace::Event& e : r.events) {
      if (trace::is_gpu_work(e.kind)) (e.correlation && calls.count(*e.correlation) ? launched : unlaunched)++;
    }
  }
  CHECK(unlaunched == 128);
  CHECK(edges_of(built, EdgeKind::kLaunch) == launched);
  CHECK(edges_of(built, EdgeKind::kStreamWait) > 0);
  CHECK(edges_of(built, EdgeKind::kCrossThread) > 0);  // main thread <-> autograd thread
  CHECK(built.stats.blocking_calls > 0);
  CHECK(built.stats.violations == 0);
}

TEST_CASE("A blocking cudaMemcpyAsync waits for its copy without making a cycle") {
  test::CapturingLog log;
  const auto set = test::load({test::dlrm_files()[0]}, log.log);
  const auto built = graph::build_graph(set, {}, log.log);
  bool found = false;
  for (const graph::Edge& e : built.dfg.edges()) {
    if (e.kind != EdgeKind::kBlockingSync) continue;
    const graph::Node& call = built.dfg.node(e.dst);
    if (set.strings.view(call.name) != "cudaMemcpyAsync") continue;
    CHECK(built.dfg.node(e.src).kind == NodeKind::kMemcpy);
    CHECK(e.dst_point == graph::Point::kEnd);
    found = true;
  }
  CHECK(found);
}

TEST_CASE("Cross-stream waits come from cuda_sync records when the trace has them") {
  test::CapturingLog log;
  const auto set = test::load({test::source_path("traces/hta/cuda-event-sync-multistream.json.gz")}, log.log);
  const auto built = graph::build_graph(set, {}, log.log);
  REQUIRE(edges_of(built, EdgeKind::kStreamWait) >= 1);
  for (const graph::Edge& e : built.dfg.edges()) {
    if (e.kind != EdgeKind::kStreamWait) continue;
    CHECK(built.dfg.node(e.src).track != built.dfg.node(e.dst).track);
    CHECK(built.dfg.node(e.src).measured_start + built.dfg.node(e.src).measured_duration <=
          built.dfg.node(e.dst).measured_start + 2000);
  }
}

TEST_CASE("Collectives that cannot be matched are an error naming the file and the collective") {
  test::CapturingLog log;
  auto set = test::load({test::dlrm_dir()}, log.log);
  // Remove the last AllReduce kernel of rank 5.
  auto& events = set.ranks[5].events;
  auto it = std::find_if(events.rbegin(), events.rend(), [&](const trace::Event& e) {
    return e.kind == trace::EventKind::kCollective && set.strings.view(e.name).find("AllReduce") != std::string_view::npos;
  });
  REQUIRE(it != events.rend());
  it->kind = trace::EventKind::kKernel;
  try {
    graph::build_graph(set, {}, log.log);
    FAIL("mismatched collectives were accepted");
  } catch (const InputError& e) {
    const std::string what = e.what();
    CHECK_THAT(what, Catch::Contains("collective allreduce #2") && Catch::Contains("cannot be matched") &&
                         Catch::Contains("rank 5") && Catch::Contains("worker"));
  }
}

TEST_CASE("A dependency cycle is reported with the names of the ops on it") {
  test::CapturingLog log;
  auto set = test::load({test::source_path("traces/hta/cuda-event-sync.json.gz")}, log.log);
  auto built = graph::build_graph(set, {}, log.log);
  // Close a loop: the last node of the thread feeds the first.
  graph::NodeId first, last;
  for (const graph::NodeId id : built.dfg.node_ids()) {
    if (built.dfg.node(id).kind != NodeKind::kRuntimeCall && built.dfg.node(id).kind != NodeKind::kCpuOp) continue;
    if (!first.valid()) first = id;
    last = id;
  }
  built.dfg.add_edge(graph::Edge{last, first, EdgeKind::kThreadOrder});
  built.dfg.finalize();
  try {
    graph::check_acyclic(built.dfg, set);
    FAIL("cycle not found");
  } catch (const InputError& e) {
    const std::string what = e.what();
    CHECK_THAT(what, Catch::Contains("dependency cycle") &&
                         Catch::Contains(std::string(set.strings.view(built.dfg.node(first).name))) &&
                         Catch::Contains(std::string(set.strings.view(built.dfg.node(last).name))));
  }
}

TEST_CASE("Enclosing CPU ops know the first and last replayed op inside them") {
  test::CapturingLog log;
  const auto set = test::load({test::dlrm_files()[0]}, log.log);
  const auto built = graph::build_graph(set, {}, log.log);
  const trace::TraceRank& r = set.ranks[0];
  const auto& step = r.iterations.at(0);
  const graph::EventRef marker{step.event};
  const graph::NodeId first = built.ranks[0].first_inside[marker];
  const graph::NodeId last = built.ranks[0].last_inside[marker];
  REQUIRE(first.valid());
  REQUIRE(last.valid());
  CHECK(built.dfg.node(first).measured_start >= step.start);
  CHECK(built.dfg.node(last).measured_start + built.dfg.node(last).measured_duration <= step.end);
  CHECK(built.ranks[0].node_of_event[marker] == graph::NodeId::none());
}

TEST_CASE("Launches are joined through ac2g / async_cpu_to_gpu flows when args lack the correlation") {
  for (const char* category : {"ac2g", "async_cpu_to_gpu"}) {
    INFO(category);
    const std::string dir = test::fresh_dir(std::string("flows_") + category);
    std::string text = R"({"traceEvents": [
      {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 10, "tid": 11, "ts": 100, "dur": 100},
      {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 11, "ts": 110, "dur": 5},
      {"ph": "s", "cat": "CAT", "name": "CAT", "id": 7, "pid": 10, "tid": 11, "ts": 110},
      {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 120, "dur": 50},
      {"ph": "f", "cat": "CAT", "name": "CAT", "id": 7, "pid": 0, "tid": 7, "ts": 120, "bp": "e"},
      {"ph": "X", "cat": "cuda_runtime", "name": "cudaDeviceSynchronize", "pid": 10, "tid": 11, "ts": 118, "dur": 55}
    ]})";
    for (std::size_t p; (p = text.find("CAT")) != std::string::npos;) text.replace(p, 3, category);
    test::write_text(dir + "/t.json", text);
    test::CapturingLog log;
    const auto set = test::load({dir + "/t.json"}, log.log);
    const auto built = graph::build_graph(set, {}, log.log);
    CHECK(edges_of(built, EdgeKind::kLaunch) == 1);
    CHECK(edges_of(built, EdgeKind::kBlockingSync) == 1);
  }
}

TEST_CASE("A collective of a smaller group whose members the trace does not list is left unmatched") {
  // Ranks 0 and 1 of a 3-rank job run an all-reduce in a group of 2 whose ranks are not
  // recorded (a list PyTorch cut at 30 that is no progression, or a trace with "Group size"
  // only). Before, its participants were taken to be the whole job, and rank 2, which is not
  // in the group, failed the build ("cannot be matched").
  const std::string dir = test::fresh_dir("unknown_group");
  auto write_job = [&](const std::string& group_args) {
    std::vector<std::string> files;
    for (int rank = 0; rank < 3; ++rank) {
      std::string text = R"({"distributedInfo": {"rank": )" + std::to_string(rank) + R"(, "world_size": 3, "backend": "nccl"}, "traceEvents": [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 10, "tid": 11, "ts": 100, "dur": 1000})";
      if (rank < 2)
        text += R"J(, {"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", "pid": 0, "tid": 7, "ts": 200, "dur": 10, "args": {"Collective name": "allreduce")J" +
                group_args + "}}";
      text += "]}";
      files.push_back(dir + "/rank" + std::to_string(rank) + ".json");
      test::write_text(files.back(), text);
    }
    return files;
  };
  test::CapturingLog log;
  const auto set = test::load(write_job(R"(, "Group size": 2)"), log.log);
  const auto built = graph::build_graph(set, {}, log.log);
  CHECK(built.stats.collectives_unmatched == 2);
  CHECK(built.stats.collectives_matched == 0);
  // With the whole job as the group (no "Group size"), rank 2's missing kernel is still an error.
  const auto whole = test::load(write_job(""), log.log);
  REQUIRE_THROWS_WITH(graph::build_graph(whole, {}, log.log), Catch::Contains("cannot be matched"));
}

TEST_CASE("Kernels that start before their stream predecessor ends keep the overlap (H100 capture)") {
  // cuDNN's sm90 kernels use programmatic dependent launch: on the H100 the next kernel of a
  // stream started 2-4 us before the previous one ended, 249 times in this capture.
  test::CapturingLog log;
  const auto set = test::load({test::source_path("traces/h100/resnet50")}, log.log);
  const auto built = graph::build_graph(set, {}, log.log);
  CHECK(built.stats.violations == 0);
  std::size_t overlapping = 0;
  for (const graph::Edge& e : built.dfg.edges()) {
    if (e.kind != EdgeKind::kStreamOrder || e.gap >= 0) continue;
    ++overlapping;
    const graph::Node& prev = built.dfg.node(e.src);
    const graph::Node& next = built.dfg.node(e.dst);
    CHECK(prev.measured_start + prev.measured_duration + e.gap == next.measured_start);
    CHECK(-e.gap <= prev.measured_duration);
  }
  CHECK(overlapping >= 249);
}

TEST_CASE("CPU ops nested 100,000 deep flatten in one pass: each knows its first and last op inside") {
  // 100,000 ops each inside the one before, then 100,000 leaves inside the innermost: the old
  // walk touched every open op for every leaf (10^10 steps); this one is linear.
  constexpr int kDepth = 100000;
  std::string text = R"({"distributedInfo": {"rank": 0, "world_size": 1}, "traceEvents": [)";
  text += R"({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 4000000})";
  for (int i = 0; i < kDepth; ++i)
    text += R"(, {"ph": "X", "cat": "cpu_op", "name": "aten::outer", "pid": 1, "tid": 1, "ts": )" + std::to_string(1 + i) +
            R"(, "dur": )" + std::to_string(3000000 - 2 * i) + "}";
  for (int j = 0; j < kDepth; ++j)
    text += R"(, {"ph": "X", "cat": "cpu_op", "name": "aten::leaf", "pid": 1, "tid": 1, "ts": )" +
            std::to_string(kDepth + 10 + 2 * j) + R"(, "dur": 1})";
  text += "]}";
  const std::string dir = test::fresh_dir("deep_nesting");
  test::write_text(dir + "/t.json", text);
  test::CapturingLog log;
  const auto set = test::load({dir + "/t.json"}, log.log);
  const auto built = graph::build_graph(set, {}, log.log);
  REQUIRE(built.dfg.node_count() >= static_cast<std::size_t>(kDepth));
  const trace::TraceRank& r = set.ranks[0];
  // Every enclosing op's first op inside is the first leaf, its last the last leaf.
  graph::NodeId first_leaf, last_leaf;
  for (const graph::NodeId id : built.dfg.node_ids()) {
    if (set.strings.view(built.dfg.node(id).name) != "aten::leaf") continue;
    if (!first_leaf.valid()) first_leaf = id;
    last_leaf = id;
  }
  REQUIRE(first_leaf.valid());
  std::size_t enclosing = 0;
  for (std::uint32_t i = 0; i < r.events.size(); ++i) {
    if (set.strings.view(r.events[i].name) != "aten::outer") continue;
    ++enclosing;
    CHECK(built.ranks[0].first_inside[graph::EventRef(i)] == first_leaf);
    CHECK(built.ranks[0].last_inside[graph::EventRef(i)] == last_leaf);
  }
  CHECK(enclosing == static_cast<std::size_t>(kDepth));
}
