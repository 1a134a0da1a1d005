#include <catch2/catch.hpp>

#include <boost/graph/compressed_sparse_row_graph.hpp>

#include <algorithm>
#include <array>
#include <optional>
#include <set>
#include <tuple>

#include "core/error.h"
#include "graph/builder.h"
#include "graph/editor.h"
#include "replayer/engine.h"
#include "fusable_kernels.h"
#include "id_printing.h"
#include "trace_fixtures.h"

using namespace dpro;
using graph::Edge;
using graph::EdgeKind;
using graph::NodeId;
using graph::NodeKind;
using graph::Point;

namespace {

graph::BuiltGraph build(const std::string& relative) {
  test::CapturingLog log;
  const auto set = test::load({test::source_path(relative)}, log.log);
  return graph::build_graph(set, {}, log.log);
}

// The alexnet trace's graph, its replay, and three back-to-back kernels of one stream
// (test::fusable_kernels).
struct ThreeKernels {
  graph::BuiltGraph built;
  replayer::Simulation before;
  NodeId a, b, c;
};
ThreeKernels alexnet_with_three_kernels() {
  ThreeKernels t{build("traces/hta/alexnet-a100-single.json.gz"), {}, {}, {}, {}};
  t.before = replayer::simulate(t.built.dfg);
  const auto triple = test::fusable_kernels(t.built.dfg, t.before);
  REQUIRE(triple);
  t.a = (*triple)[0];
  t.b = (*triple)[1];
  t.c = (*triple)[2];
  return t;
}

}  // namespace

TEST_CASE("Fusing three kernels of one stream keeps every other node's replayed times when the fused node's duration is the sum of the three") {
  auto [built, before, a, b, c] = alexnet_with_three_kernels();
  const Nanos sum = built.dfg.node(a).duration + built.dfg.node(b).duration + built.dfg.node(c).duration;
  const graph::EventRef event_b = built.dfg.node(b).event;
  const std::size_t nodes_before = built.dfg.node_count();

  graph::Editor editor(built);
  const std::array<NodeId, 3> parts{c, a, b};  // any order: the editor follows the stream
  const NodeId fused = editor.fuse(parts);
  CHECK(fused == a);
  const graph::Renumbering map = editor.commit();
  const graph::Dfg& dfg = built.dfg;
  REQUIRE(dfg.finalized());
  CHECK(dfg.node_count() == nodes_before - 2);
  const NodeId f = map.node[a];
  CHECK(map.node[b] == f);
  CHECK(map.node[c] == f);
  CHECK(dfg.node(f).duration == sum);
  CHECK(dfg.node(f).event == graph::EventRef::none());

  // The op table names the fused op and lists its parts.
  const graph::OpDesc* op = dfg.op(f);
  REQUIRE(op);
  CHECK(op->parts.size() == 3);
  CHECK(dfg.op_name(f).starts_with("fused("));
  // The builder's event map follows the fusion.
  const auto& rank = built.ranks[0];
  CHECK(rank.node_of_event[event_b] == f);

  // No self-loop, no duplicate edge at the fused node (the builder's own parallel edges elsewhere
  // are left as they are).
  std::set<std::tuple<NodeId, NodeId, Point, Point>> seen;
  for (const Edge& e : dfg.edges()) {
    CHECK(e.src != e.dst);
    if (e.src == f || e.dst == f) CHECK(seen.emplace(e.src, e.dst, e.src_point, e.dst_point).second);
  }

  const replayer::Simulation after = replayer::simulate(dfg);
  std::size_t compared = 0;
  for (const NodeId old : IdRange<NodeId>(nodes_before)) {
    if (old == a || old == b || old == c) continue;
    const NodeId now = map.node[old];
    REQUIRE(now.valid());
    INFO("node " << old << " (" << dfg.op_name(now) << ")");
    CHECK(after.start[now] == before.start[old]);
    CHECK(after.end[now] == before.end[old]);
    ++compared;
  }
  CHECK(compared == nodes_before - 3);
  // It waits for what its parts waited for between one another, and ends when c did.
  CHECK(after.start[f] == before.end[c] - sum);
  CHECK(after.end[f] == before.end[c]);
  CHECK(after.makespan == before.makespan);
}

TEST_CASE("Fusing ops of different streams, out of order or twice is refused with a clear error") {
  auto built = build("traces/hta/alexnet-a100-single.json.gz");
  const graph::Dfg& dfg = built.dfg;
  // Three kernels of one stream that can be fused, and a kernel of another stream.
  const auto triple = test::fusable_kernels(dfg, replayer::simulate(dfg));
  REQUIRE(triple);
  const auto [on_one, next, after_next] = *triple;
  NodeId on_other;
  for (const NodeId n : dfg.node_ids()) {
    if (dfg.node(n).kind == NodeKind::kKernel && dfg.node(n).track != dfg.node(on_one).track) on_other = n;
  }
  REQUIRE(on_other.valid());
  const auto edges_before = dfg.edges();

  graph::Editor editor(built);
  const std::array<NodeId, 2> mixed{on_one, on_other};
  CHECK_THROWS_WITH(editor.fuse(mixed), Catch::Contains("nodes of different tracks cannot be fused") &&
                                            Catch::Contains("node " + to_string(on_other) + " on "));
  const std::array<NodeId, 2> gap{on_one, after_next};
  CHECK_THROWS_WITH(editor.fuse(gap), Catch::Contains("not consecutive on their track"));
  const std::array<NodeId, 1> single{on_one};
  CHECK_THROWS_WITH(editor.fuse(single), Catch::Contains("at least two nodes"));
  const std::array<NodeId, 2> twice{on_one, on_one};
  CHECK_THROWS_WITH(editor.fuse(twice), Catch::Contains("given twice"));
  CHECK_THROWS_AS(editor.set_duration(on_one, -1), InputError);
  // Nothing changed.
  CHECK(dfg.edges().size() == edges_before.size());
  const std::array<NodeId, 2> pair{on_one, next};
  editor.fuse(pair);
  CHECK_THROWS_WITH(editor.fuse(std::array<NodeId, 2>{next, after_next}), Catch::Contains("node " + to_string(next) + " is not in the graph"));
  editor.commit();
  replayer::simulate(dfg);
}

TEST_CASE("A fusion that would make the fused op wait for itself is refused") {
  // a -> b on a stream, a -> x -> b through another node: fusing a and b would make a cycle.
  graph::Dfg dfg;
  const auto stream = dfg.add_track({0, trace::ResourceKind::kGpuStream, 0, 7, "stream 7"});
  const auto thread = dfg.add_track({0, trace::ResourceKind::kCpuThread, 1, 1, "main"});
  graph::Node k;
  k.kind = NodeKind::kKernel;
  k.track = stream;
  k.duration = 10;
  k.release = 0;
  const NodeId a = dfg.add_node(k);
  k.release.reset();
  const NodeId b = dfg.add_node(k);
  graph::Node cpu;
  cpu.track = thread;
  cpu.duration = 5;
  const NodeId x = dfg.add_node(cpu);
  dfg.add_edge(Edge{a, b, EdgeKind::kStreamOrder});
  dfg.add_edge(Edge{a, x, EdgeKind::kBlockingSync, Point::kEnd, Point::kEnd});
  dfg.add_edge(Edge{x, b, EdgeKind::kLaunch, Point::kStart, Point::kStart});
  dfg.finalize();
  graph::Editor editor(dfg);
  // a.end -> x.end, but x.start -> b.start: x starts before a ends, no cycle either way...
  CHECK_NOTHROW(editor.fuse(std::array<NodeId, 2>{a, b}));
  editor.commit();

  graph::Dfg cyclic;
  cyclic.add_track({0, trace::ResourceKind::kGpuStream, 0, 7, "stream 7"});
  cyclic.add_track({0, trace::ResourceKind::kCpuThread, 1, 1, "main"});
  k.release = 0;
  const NodeId p = cyclic.add_node(k);
  k.release.reset();
  const NodeId q = cyclic.add_node(k);
  const NodeId y = cyclic.add_node(cpu);
  cyclic.add_edge(Edge{p, q, EdgeKind::kStreamOrder});
  cyclic.add_edge(Edge{p, y, EdgeKind::kBlockingSync, Point::kEnd, Point::kEnd});
  cyclic.add_edge(Edge{y, q, EdgeKind::kThreadOrder});  // y's end -> q's start: q waits for p's end via y
  cyclic.finalize();
  graph::Editor cyclic_editor(cyclic);
  CHECK_THROWS_WITH(cyclic_editor.fuse(std::array<NodeId, 2>{p, q}), Catch::Contains("would depend on itself"));
  CHECK_THROWS_WITH(cyclic_editor.redirect(graph::EdgeId{1}, q, std::nullopt), Catch::Contains("dependency cycle"));
  CHECK_THROWS_WITH(cyclic_editor.redirect(graph::EdgeId{0}, q, std::nullopt), Catch::Contains("to itself"));
}

TEST_CASE("Removing an edge drops its dependency without a bridge, and track-order edges are refused") {
  graph::Dfg dfg;
  const auto stream = dfg.add_track({0, trace::ResourceKind::kGpuStream, 0, 7, "stream 7"});
  const auto thread = dfg.add_track({0, trace::ResourceKind::kCpuThread, 1, 1, "main"});
  graph::Node call;
  call.track = thread;
  call.kind = NodeKind::kRuntimeCall;
  call.duration = 5;
  call.release = 0;
  const NodeId first = dfg.add_node(call);
  call.release.reset();
  const NodeId second = dfg.add_node(call);
  graph::Node k;
  k.kind = NodeKind::kKernel;
  k.track = stream;
  k.duration = 10;
  const NodeId a = dfg.add_node(k);
  const NodeId b = dfg.add_node(k);
  const graph::EdgeId thread_order = dfg.add_edge(Edge{first, second, EdgeKind::kThreadOrder});
  dfg.add_edge(Edge{first, a, EdgeKind::kLaunch, Point::kStart, Point::kStart});
  const graph::EdgeId launch = dfg.add_edge(Edge{second, b, EdgeKind::kLaunch, Point::kStart, Point::kStart});
  dfg.add_edge(Edge{a, b, EdgeKind::kStreamOrder});
  dfg.finalize();
  graph::Editor editor(dfg);
  CHECK_THROWS_WITH(editor.remove_edge(thread_order), Catch::Contains("track-order"));
  editor.remove_edge(launch);
  CHECK_FALSE(editor.edge_alive(launch));
  CHECK_THROWS_WITH(editor.remove_edge(launch), Catch::Contains("not in the graph"));
  editor.remove(second);  // no launch edge left to bridge: b waits for a only
  editor.fuse(std::array<NodeId, 2>{a, b});
  editor.commit();
  CHECK(dfg.node_count() == 2);
  CHECK(dfg.edge_count() == 1);
  const replayer::Simulation after = replayer::simulate(dfg);
  CHECK(after.end[NodeId{1}] == 20);
}

TEST_CASE("Removing a kernel keeps its stream's order and its neighbours' event ranges") {
  auto [built, before, a, b, c] = alexnet_with_three_kernels();
  graph::Editor editor(built);
  editor.remove(b);
  CHECK_FALSE(editor.alive(b));
  CHECK_THROWS_WITH(editor.set_duration(b, 5), Catch::Contains("not in the graph"));
  const graph::Renumbering map = editor.commit();
  CHECK(map.node[b] == NodeId::none());
  const graph::Dfg& dfg = built.dfg;
  CHECK(test::stream_next(dfg, map.node[a]) == map.node[c]);
  for (const auto& r : built.ranks) {
    for (NodeId v : r.node_of_event) CHECK((!v.valid() || v.below(dfg.node_count())));
    for (NodeId v : r.first_inside) CHECK((!v.valid() || v.below(dfg.node_count())));
  }
  const replayer::Simulation after = replayer::simulate(dfg);
  // c now follows a directly: it starts no later than before, and never before a ends.
  CHECK(after.start[map.node[c]] >= after.end[map.node[a]]);
  CHECK(after.start[map.node[c]] <= before.start[c]);
}

TEST_CASE("Inserted nodes and redirected edges replay; durations can be set") {
  auto [built, before, a, b, c] = alexnet_with_three_kernels();
  graph::Editor editor(built);
  graph::Node extra = built.dfg.node(b);
  extra.duration = 1000;
  extra.delay = 0;
  extra.event = graph::EventRef::none();
  graph::OpDesc desc;
  desc.kind = NodeKind::kKernel;
  desc.name = built.dfg.ops().intern("inserted_kernel");
  const graph::OpId op = built.dfg.ops().add(desc);
  // Between b and c on the stream: b -> extra -> c, and the old b -> c edge moves to extra.
  graph::EdgeId b_to_c;
  for (graph::EdgeId e : editor.out_edges(b)) {
    if (built.dfg.edge(e).dst == c) b_to_c = e;
  }
  REQUIRE(b_to_c.valid());
  const std::array<Edge, 1> edges{Edge{b, NodeId::none(), EdgeKind::kStreamOrder}};
  const NodeId x = editor.insert(extra, edges, op);
  editor.redirect(b_to_c, x, std::nullopt);
  editor.set_duration(a, built.dfg.node(a).duration + 500);
  const auto map = editor.commit();
  const replayer::Simulation after = replayer::simulate(built.dfg);
  CHECK(built.dfg.op_name(map.node[x]) == "inserted_kernel");
  CHECK(after.start[map.node[x]] == after.end[map.node[b]]);
  CHECK(after.start[map.node[c]] >= after.end[map.node[x]]);
  CHECK(after.end[map.node[c]] >= before.end[c] + 1500);
}

TEST_CASE("Removing a CPU op moves the event ranges that began or ended with it to its thread neighbours") {
  auto built = build("traces/hta/alexnet-a100-single.json.gz");
  const graph::RankNodes& rank = built.ranks[0];
  // An enclosing event with several nodes inside; its first node, and the node after it.
  graph::EventRef outer;
  for (const graph::EventRef e : rank.first_inside.ids()) {
    const NodeId first = rank.first_inside[e];
    if (!first.valid() || rank.last_inside[e] == first || rank.node_of_event[e].valid()) continue;
    if (built.dfg.node(first).kind != NodeKind::kCpuOp) continue;
    outer = e;
    break;
  }
  REQUIRE(rank.first_inside.contains(outer));
  const NodeId first = rank.first_inside[outer];
  const NodeId last = rank.last_inside[outer];
  NodeId second;
  built.dfg.for_each_out_edge(first, [&](graph::EdgeId e) {
    if (built.dfg.edge(e).kind == EdgeKind::kThreadOrder) second = built.dfg.edge(e).dst;
  });
  REQUIRE(second.valid());
  const graph::EventRef first_event = built.dfg.node(first).event;

  graph::Editor editor(built);
  editor.remove(first);
  const auto map = editor.commit();
  CHECK(rank.first_inside[outer] == map.node[second]);
  CHECK(rank.last_inside[outer] == map.node[last]);
  // The removed op's own event has no node left.
  CHECK(rank.node_of_event[first_event] == NodeId::none());
  CHECK(rank.first_inside[first_event] == NodeId::none());
  CHECK(rank.last_inside[first_event] == NodeId::none());
  replayer::simulate(built.dfg);
}

TEST_CASE("The editor's lists are the graph's, an insert beside a node keeps every id, a cycle is still refused, and the editor goes on after a commit") {
  auto [built, before, a, b, c] = alexnet_with_three_kernels();
  graph::Editor editor(built);
  // Lists made on first use equal the graph's own (in id order).
  for (const NodeId v : {a, b, c, NodeId(0), NodeId(static_cast<std::uint32_t>(built.dfg.node_count() - 1))}) {
    std::vector<graph::EdgeId> in, out;
    built.dfg.for_each_in_edge(v, [&](graph::EdgeId e) { in.push_back(e); });
    built.dfg.for_each_out_edge(v, [&](graph::EdgeId e) { out.push_back(e); });
    std::sort(in.begin(), in.end());
    std::sort(out.begin(), out.end());
    CHECK(std::vector<graph::EdgeId>(editor.in_edges(v).begin(), editor.in_edges(v).end()) == in);
    CHECK(std::vector<graph::EdgeId>(editor.out_edges(v).begin(), editor.out_edges(v).end()) == out);
  }
  // Beside b with b's start-side in-edges, and before it on its stream (as compression's kernel).
  std::vector<Edge> edges;
  for (const graph::EdgeId e : editor.in_edges(b)) {
    Edge edge = built.dfg.edge(e);
    if (edge.dst_point != Point::kStart) continue;
    edge.dst = NodeId::none();
    edges.push_back(edge);
  }
  edges.push_back(Edge{NodeId::none(), b, EdgeKind::kStreamOrder});
  graph::Node extra = built.dfg.node(b);
  extra.duration = 700;
  extra.delay = 0;
  extra.event = graph::EventRef::none();
  const std::size_t nodes = built.dfg.node_count();
  const NodeId x = editor.insert(extra, edges);
  // c's end before a's start closes a -> b -> c -> new -> a: refused, the graph unchanged.
  const std::array<Edge, 2> cycle{Edge{c, NodeId::none(), EdgeKind::kStreamOrder},
                                  Edge{NodeId::none(), a, EdgeKind::kStreamOrder}};
  CHECK_THROWS_AS(editor.insert(extra, cycle), InputError);
  const auto map = editor.commit();
  for (const NodeId v : built.dfg.node_ids())
    if (v.value < nodes) REQUIRE(map.node[v] == v);  // nothing was renumbered but the refused node
  const replayer::Simulation after = replayer::simulate(built.dfg);
  CHECK(after.start[b] >= after.end[map.node[x]]);
  CHECK(after.end[b] >= before.end[b] + 700);
  // The same editor fuses on the committed graph (its index reopens on the new ids); a fused op
  // that costs what its parts cost leaves the next kernel's times as they were.
  const std::array<NodeId, 2> xb{map.node[x], b};
  editor.fuse(xb);
  const auto again = editor.commit();
  CHECK(built.dfg.node_count() == nodes);  // the refused node and b, a part, are gone
  const replayer::Simulation fused = replayer::simulate(built.dfg);
  CHECK(fused.start[again.node[c]] == after.start[c]);
  CHECK(fused.end[again.node[c]] == after.end[c]);
}

TEST_CASE("A commit that dropped only edges keeps every node, its op and the rank maps as they were") {
  graph::BuiltGraph built = build("traces/hta/alexnet-a100-single.json.gz");
  graph::Dfg& dfg = built.dfg;
  const std::vector<graph::RankNodes> ranks_before = built.ranks;
  const std::size_t nodes = dfg.node_count(), edges = dfg.edge_count();
  std::vector<graph::OpId> ops_before;
  for (const NodeId v : dfg.node_ids()) ops_before.push_back(dfg.op_of(v));
  // The first launch edge: not track order, so the Editor may drop it.
  graph::EdgeId launch = graph::EdgeId::none();
  for (const graph::EdgeId e : dfg.edge_ids())
    if (dfg.edge(e).kind == EdgeKind::kLaunch && !launch.valid()) launch = e;
  REQUIRE(launch.valid());
  const graph::Edge dropped = dfg.edge(launch);
  graph::Editor editor(built);
  editor.remove_edge(launch);
  const graph::Renumbering map = editor.commit();
  REQUIRE(dfg.node_count() == nodes);
  CHECK(dfg.edge_count() == edges - 1);
  for (const NodeId v : dfg.node_ids()) {
    CHECK(map.node[v] == v);
    CHECK(dfg.op_of(v) == ops_before[v.value]);
  }
  CHECK(map.edge[launch] == graph::EdgeId::none());
  REQUIRE(built.ranks.size() == ranks_before.size());
  for (std::size_t r = 0; r < ranks_before.size(); ++r) {
    CHECK(built.ranks[r].node_of_event == ranks_before[r].node_of_event);
    CHECK(built.ranks[r].first_inside == ranks_before[r].first_inside);
    CHECK(built.ranks[r].last_inside == ranks_before[r].last_inside);
  }
  bool still_there = false;
  for (const graph::EdgeId e : dfg.edge_ids()) {
    const graph::Edge& x = dfg.edge(e);
    still_there |= x.src == dropped.src && x.dst == dropped.dst && x.kind == EdgeKind::kLaunch;
  }
  CHECK_FALSE(still_there);
  CHECK(replayer::simulate(dfg).start.size() == nodes);
}

namespace {

// Each node's in- and out-edge ids as boost's CSR graph (the view Dfg::finalize made before it
// built its own) lists them, made from the edge table the way Dfg::finalize used to.
using BoostCsr = boost::compressed_sparse_row_graph<boost::bidirectionalS, boost::no_property, std::uint32_t,
                                                    boost::no_property, std::uint32_t, std::uint32_t>;
void require_boost_order(const graph::Dfg& dfg) {
  std::vector<std::pair<std::uint32_t, std::uint32_t>> pairs;
  std::vector<std::uint32_t> ids;
  for (const graph::EdgeId e : dfg.edge_ids()) {
    pairs.emplace_back(dfg.edge(e).src.value, dfg.edge(e).dst.value);
    ids.push_back(e.value);
  }
  const BoostCsr g(boost::edges_are_unsorted_multi_pass, pairs.begin(), pairs.end(), ids.begin(), dfg.node_count());
  std::size_t mismatched = 0;
  for (const NodeId v : dfg.node_ids()) {
    std::vector<graph::EdgeId> in, out;
    for (auto [it, end] = boost::in_edges(v.value, g); it != end; ++it) in.push_back(graph::EdgeId(g[*it]));
    for (auto [it, end] = boost::out_edges(v.value, g); it != end; ++it) out.push_back(graph::EdgeId(g[*it]));
    const auto mine_in = dfg.in_edges(v), mine_out = dfg.out_edges(v);
    mismatched += !std::equal(in.begin(), in.end(), mine_in.begin(), mine_in.end()) ||
                  !std::equal(out.begin(), out.end(), mine_out.begin(), mine_out.end());
  }
  REQUIRE(mismatched == 0);
}

}  // namespace

TEST_CASE("The CSR view lists each node's edges in the order boost's CSR graph did, also when finalized again") {
  SECTION("a random multigraph with parallel edges and self-loops") {
    graph::Dfg dfg;
    for (int i = 0; i < 300; ++i) dfg.add_node(graph::Node{});
    std::uint32_t x = 12345;
    auto next = [&] { return x = x * 1103515245u + 12345u, (x >> 8) % 300; };
    for (int i = 0; i < 2000; ++i) dfg.add_edge(Edge{NodeId(next()), NodeId(next())});
    dfg.finalize();
    require_boost_order(dfg);
    REQUIRE(dfg.out_edges(NodeId(0)).size() + dfg.in_edges(NodeId(0)).size() > 0);
    for (int i = 0; i < 500; ++i) dfg.add_edge(Edge{NodeId(next()), NodeId(next())});  // finalized again, in place
    dfg.finalize();
    require_boost_order(dfg);
  }
  SECTION("a trace's graph, before and after a fusion's commit") {
    ThreeKernels t = alexnet_with_three_kernels();
    require_boost_order(t.built.dfg);
    graph::Editor editor(t.built);
    const std::array<NodeId, 3> parts{t.a, t.b, t.c};
    editor.fuse(parts);
    editor.commit();
    require_boost_order(t.built.dfg);
  }
}

namespace {

// Every node's in- and out-lists of two finalized graphs, equal entry for entry.
void require_same_view(const graph::Dfg& a, const graph::Dfg& b) {
  REQUIRE(a.node_count() == b.node_count());
  for (const NodeId v : a.node_ids()) {
    const auto ai = a.in_edges(v), bi = b.in_edges(v), ao = a.out_edges(v), bo = b.out_edges(v);
    REQUIRE(std::vector<graph::EdgeId>(ai.begin(), ai.end()) == std::vector<graph::EdgeId>(bi.begin(), bi.end()));
    REQUIRE(std::vector<graph::EdgeId>(ao.begin(), ao.end()) == std::vector<graph::EdgeId>(bo.begin(), bo.end()));
  }
}

}  // namespace

// Dfg::finalize_appended (the Editor's commit of inserts) must give finalize()'s view: added edges
// after the old ones of their source, and in a target's in-list between the old ones by source.
TEST_CASE("A view extended with appended nodes and edges equals the one finalize builds") {
  std::uint64_t seed = 12345;
  auto next = [&](std::uint32_t below) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<std::uint32_t>((seed >> 33) % below);
  };
  for (int round = 0; round < 40; ++round) {
    graph::Dfg dfg;
    const std::uint32_t n0 = 1 + next(30), m0 = next(80);
    for (std::uint32_t i = 0; i < n0; ++i) dfg.add_node(graph::Node{});
    auto edge = [&](std::uint32_t n) {
      Edge e;
      e.src = NodeId(next(n));
      e.dst = NodeId(next(n));
      e.dst_point = next(2) ? Point::kStart : Point::kEnd;
      return e;
    };
    for (std::uint32_t i = 0; i < m0; ++i) dfg.add_edge(edge(n0));
    dfg.finalize();
    // Some rounds add no node or no edge; added edges join old and new nodes alike.
    const std::uint32_t added_nodes = next(4), added_edges = next(25);
    for (std::uint32_t i = 0; i < added_nodes; ++i) dfg.add_node(graph::Node{});
    for (std::uint32_t i = 0; i < added_edges; ++i) dfg.add_edge(edge(n0 + added_nodes));
    graph::Dfg extended = dfg, rebuilt = dfg;
    extended.finalize_appended(n0, m0);
    rebuilt.finalize();
    INFO("round " << round << ": " << n0 << " + " << added_nodes << " nodes, " << m0 << " + " << added_edges << " edges");
    CHECK(extended.finalized());
    require_same_view(extended, rebuilt);
  }
}

// Inserts only: the commit extends the view, also when an inserted edge merged into a parallel one
// (dropped: the added edges are renumbered); a moved edge makes it rebuild the view whole. Either
// way the view is the one a fresh finalize builds.
TEST_CASE("A commit of inserts extends the CSR view as finalize would build it") {
  const graph::BuiltGraph built = build("traces/hta/alexnet-a100-single.json.gz");
  const graph::Dfg& dfg = built.dfg;
  REQUIRE(dfg.node_count() > 4);
  for (const int variant : {0, 1, 2}) {
    const bool duplicate = variant == 1, redirect = variant == 2;
    graph::BuiltGraph copy = built;
    {
      graph::Editor editor(copy);
      // A node put beside node 1 and another beside node 2, with their edges (graph/editor.h).
      for (const NodeId beside : {NodeId(1), NodeId(2)}) {
        std::vector<Edge> edges;
        for (const graph::EdgeId e : copy.dfg.in_edges(beside)) {
          Edge x = copy.dfg.edge(e);
          x.dst = NodeId::none();
          edges.push_back(x);
        }
        for (const graph::EdgeId e : copy.dfg.out_edges(beside)) {
          Edge x = copy.dfg.edge(e);
          x.src = NodeId::none();
          edges.push_back(x);
        }
        REQUIRE(!edges.empty());
        if (duplicate) edges.insert(edges.begin(), edges.back());  // merges into its twin
        const std::size_t before = copy.dfg.edge_count();
        editor.insert(copy.dfg.node(beside), edges);
        std::size_t alive = 0;
        for (std::size_t i = before; i < copy.dfg.edge_count(); ++i) alive += editor.edge_alive(graph::EdgeId::at(i));
        CHECK(alive == edges.size() - (duplicate ? 1 : 0));
      }
      if (redirect) {
        const graph::EdgeId e = copy.dfg.out_edges(NodeId(0)).front();
        editor.redirect(e, std::nullopt, copy.dfg.edge(e).dst);
      }
      editor.commit();
    }
    REQUIRE(copy.dfg.node_count() == dfg.node_count() + 2);
    graph::Dfg rebuilt = copy.dfg;
    rebuilt.finalize();
    require_same_view(copy.dfg, rebuilt);
  }
}
