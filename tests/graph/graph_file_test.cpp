#include <catch2/catch.hpp>

#include <array>

#include "core/error.h"
#include "graph/builder.h"
#include "graph/editor.h"
#include "graph/graph_file.h"
#include "replayer/engine.h"
#include "fusable_kernels.h"
#include "trace_fixtures.h"

using namespace dpro;

namespace {

void check_same(const graph::Dfg& a, const graph::Dfg& b) {
  REQUIRE(a.node_count() == b.node_count());
  REQUIRE(a.edge_count() == b.edge_count());
  CHECK(a.origin() == b.origin());
  REQUIRE(a.tracks().size() == b.tracks().size());
  for (const graph::TrackId t : a.track_ids()) {
    CHECK(a.track(t).name == b.track(t).name);
    CHECK(a.track(t).rank == b.track(t).rank);
    CHECK(a.track(t).tid == b.track(t).tid);
  }
  REQUIRE(a.ops().size() == b.ops().size());
  for (std::uint32_t i = 0; i < a.ops().size(); ++i) CHECK(a.ops().op(graph::OpId{i}) == b.ops().op(graph::OpId{i}));
  REQUIRE(a.ops().name_count() == b.ops().name_count());
  for (std::uint32_t i = 0; i < a.ops().name_count(); ++i) CHECK(a.ops().name({i}) == b.ops().name({i}));
  for (const graph::NodeId id : a.node_ids()) {
    const graph::Node& x = a.node(id);
    const graph::Node& y = b.node(id);
    CHECK((x.kind == y.kind && x.rank == y.rank && x.track == y.track && x.name == y.name &&
           x.measured_start == y.measured_start && x.measured_duration == y.measured_duration &&
           x.duration == y.duration && x.delay == y.delay && x.release == y.release && x.event == y.event &&
           x.parent_op == y.parent_op && a.op_of(id) == b.op_of(id)));
  }
  for (const graph::EdgeId e : a.edge_ids()) {
    const graph::Edge& x = a.edge(e);
    const graph::Edge& y = b.edge(e);
    CHECK((x.src == y.src && x.dst == y.dst && x.kind == y.kind && x.src_point == y.src_point &&
           x.dst_point == y.dst_point && x.gap == y.gap));
  }
  const auto ra = replayer::simulate(a);
  const auto rb = replayer::simulate(b);
  CHECK(ra.start == rb.start);
  CHECK(ra.end == rb.end);
  CHECK(ra.start_cause == rb.start_cause);
  CHECK(ra.makespan == rb.makespan);
}

}  // namespace

TEST_CASE("A saved graph loads without its trace and replays identically") {
  test::CapturingLog log;
  const std::string dir = test::fresh_dir("graph_file");
  graph::Dfg saved;
  {
    const auto set = test::load({test::dlrm_dir()}, log.log);
    saved = graph::build_graph(set, {}, log.log).dfg;
  }  // the trace is gone
  const std::string path = dir + "/dlrm.dprograph";
  graph::save_graph(saved, path);
  const graph::Dfg loaded = graph::load_graph(path);
  REQUIRE(loaded.finalized());
  check_same(saved, loaded);
  // The loaded graph names its ops itself.
  bool named_barrier = false;
  for (const graph::NodeId id : loaded.node_ids()) {
    if (loaded.node(id).kind == graph::NodeKind::kBarrier) named_barrier = named_barrier || !loaded.op_name(id).empty();
  }
  CHECK(named_barrier);
}

TEST_CASE("An edited graph (a fused op and its parts) round-trips") {
  test::CapturingLog log;
  const auto set = test::load({test::source_path("traces/hta/alexnet-a100-single.json.gz")}, log.log);
  auto built = graph::build_graph(set, {}, log.log);
  const auto parts = test::fusable_kernels(built.dfg, replayer::simulate(built.dfg));
  REQUIRE(parts);
  const graph::NodeId a = (*parts)[0], b = (*parts)[1];
  {
    graph::Editor editor(built);
    editor.fuse(std::array<graph::NodeId, 2>{a, b});
  }
  const graph::Dfg loaded = graph::graph_from_bytes(graph::graph_to_bytes(built.dfg), "memory");
  check_same(built.dfg, loaded);
  CHECK(loaded.op(a)->parts.size() == 2);
}

TEST_CASE("Bad graph files are refused naming the file and the offending item") {
  test::CapturingLog log;
  const auto set = test::load({test::source_path("traces/hta/alexnet-a100-single.json.gz")}, log.log);
  const auto built = graph::build_graph(set, {}, log.log);
  const std::string good = graph::graph_to_bytes(built.dfg);
  const std::string dir = test::fresh_dir("graph_file_bad");
  auto load_text = [&](const std::string& name, const std::string& bytes) {
    test::write_text(dir + "/" + name, bytes);
    return graph::load_graph(dir + "/" + name);
  };
  CHECK_THROWS_WITH(load_text("magic", "not a graph at all"), Catch::Contains("/magic: header: not a dpro graph file"));
  std::string version = good;
  version[8] = 7;
  CHECK_THROWS_WITH(load_text("version", version), Catch::Contains("version: header: version 7 is not supported"));
  CHECK_THROWS_WITH(load_text("truncated", good.substr(0, good.size() - 5)),
                    Catch::Contains("truncated: edges: count " + std::to_string(built.dfg.edge_count()) +
                                    " is larger than the rest of the file can hold"));
  CHECK_THROWS_WITH(load_text("short", good.substr(0, 14)), Catch::Contains("short: header: the file ends early"));
  // The last edge's destination (bytes 4..7 of its 19-byte record) out of range.
  std::string dst = good;
  for (std::size_t i = good.size() - 15; i < good.size() - 11; ++i) dst[i] = '\xff';
  CHECK_THROWS_WITH(load_text("dst", dst), Catch::Contains("dst: edge " + std::to_string(built.dfg.edge_count() - 1) +
                                                           ": dst 4294967295 is not a node"));
  CHECK_THROWS_WITH(load_text("trailing", good + "x"), Catch::Contains("trailing: end: unexpected bytes"));
  CHECK_THROWS_AS(graph::load_graph(dir + "/missing"), InputError);
  CHECK_NOTHROW(load_text("good", good));
}

TEST_CASE("Graph files keep untraced work, and version-1 files (before it) are still read") {
  test::CapturingLog log;
  const auto set = test::load({test::source_path("traces/hta/alexnet-a100-single.json.gz")}, log.log);
  const auto built = graph::build_graph(set, {}, log.log);
  REQUIRE(built.stats.untraced_nodes > 0);
  const graph::Dfg loaded = graph::graph_from_bytes(graph::graph_to_bytes(built.dfg), "memory");
  check_same(built.dfg, loaded);
  std::size_t untraced = 0;
  for (const graph::Node& n : loaded.nodes()) untraced += n.kind == graph::NodeKind::kUntraced;
  CHECK(untraced == built.stats.untraced_nodes);

  // A version-1 file: the same layout, kinds up to kBarrier (untraced time in the ops' delays).
  graph::BuildOptions as_delays;
  as_delays.untraced_min = INT64_MAX;
  const auto old_built = graph::build_graph(set, as_delays, log.log);
  std::string v1 = graph::graph_to_bytes(old_built.dfg);
  REQUIRE(v1[8] == 2);
  v1[8] = 1;
  const graph::Dfg old = graph::graph_from_bytes(v1, "v1");
  check_same(old_built.dfg, old);
  // ... in which an untraced node cannot appear.
  const std::string v1_untraced = [&] {
    std::string b = graph::graph_to_bytes(built.dfg);
    b[8] = 1;
    return b;
  }();
  CHECK_THROWS_WITH(graph::graph_from_bytes(v1_untraced, "v1u"), Catch::Contains("bad kind 7"));
}
