#include <catch2/catch.hpp>

#include <cstdint>
#include <functional>
#include <type_traits>
#include <unordered_set>
#include <vector>

#include "graph/dfg.h"
#include "id_printing.h"

using namespace dpro;
using graph::EdgeId;
using graph::EventRef;
using graph::NodeId;
using graph::OpId;
using graph::TrackId;

namespace {

// Whether `From` converts to `To` implicitly or explicitly (a static_cast or a brace).
template <class From, class To>
constexpr bool converts = std::is_convertible_v<From, To> || std::is_constructible_v<To, From>;

template <class A, class B>
concept comparable = requires(A a, B b) { a == b; };

// No id converts to another id, in either direction, and no two compare.
template <class A, class... Others>
constexpr bool distinct_from_all() {
  return ((!converts<A, Others> && !converts<Others, A> && !comparable<A, Others>) && ...);
}

// No id converts to an integer, nor implicitly from one; none compares with one.
template <class Id>
constexpr bool no_integer_conversions() {
  return !converts<Id, std::uint32_t> && !converts<Id, std::size_t> && !converts<Id, int> &&
         !converts<Id, bool> && !std::is_convertible_v<std::uint32_t, Id> &&
         !std::is_convertible_v<int, Id> && !std::is_convertible_v<std::size_t, Id> &&
         !std::is_assignable_v<Id&, std::uint32_t> && !comparable<Id, std::uint32_t> && !comparable<Id, int>;
}

// Each id is a 32-bit value, copied as one.
template <class Id>
constexpr bool plain_32_bits() {
  return sizeof(Id) == 4 && std::is_trivially_copyable_v<Id> && std::is_nothrow_constructible_v<Id, std::uint32_t>;
}

static_assert(distinct_from_all<NodeId, EdgeId, TrackId, EventRef, OpId>());
static_assert(distinct_from_all<EdgeId, TrackId, EventRef, OpId>());
static_assert(distinct_from_all<TrackId, EventRef, OpId>());
static_assert(distinct_from_all<EventRef, OpId>());
static_assert(no_integer_conversions<NodeId>() && no_integer_conversions<EdgeId>() &&
              no_integer_conversions<TrackId>() && no_integer_conversions<EventRef>() &&
              no_integer_conversions<OpId>());
static_assert(plain_32_bits<NodeId>() && plain_32_bits<EdgeId>() && plain_32_bits<TrackId>() &&
              plain_32_bits<EventRef>() && plain_32_bits<OpId>());
// A table indexed by one id takes that id (the first check: the others are not vacuous), no
// other id and no integer.
template <class Table, class Index>
concept indexes = requires(Table t, Index i) { t[i]; };
static_assert(indexes<IdVector<NodeId, int>, NodeId>);
static_assert(!indexes<IdVector<NodeId, int>, EdgeId> && !indexes<IdVector<NodeId, int>, std::uint32_t> &&
              !indexes<IdVector<NodeId, int>, int>);

}  // namespace

TEST_CASE("A default id is its type's none, and ids compare and order by their index") {
  CHECK_FALSE(NodeId().valid());
  CHECK(NodeId() == NodeId::none());
  CHECK(EdgeId::none().value == 0xffffffffu);
  CHECK(NodeId{0}.valid());
  CHECK(NodeId{3} == NodeId::at(std::size_t{3}));
  CHECK(NodeId{2} < NodeId{3});
  CHECK(NodeId{3} < NodeId::none());
  CHECK(NodeId{2}.below(3));
  CHECK_FALSE(NodeId{3}.below(3));
  CHECK_FALSE(NodeId::none().below(0xffffffffu));
  CHECK(to_string(TrackId{12}) == "12");
}

TEST_CASE("An id hashes as its integer, so unordered containers keep the order they had with integers") {
  for (std::uint32_t v : {0u, 1u, 77u, 0xffffffffu}) {
    CHECK(std::hash<TrackId>{}(TrackId{v}) == std::hash<std::uint32_t>{}(v));
  }
  const std::unordered_set<TrackId> set{TrackId{1}, TrackId{5}, TrackId{2}};
  CHECK(set.count(TrackId{5}) == 1);
  CHECK(set.count(TrackId{3}) == 0);
}

TEST_CASE("An IdVector is indexed by its id type, and an IdRange counts the ids in order") {
  IdVector<EdgeId, int> v;
  CHECK(v.next_id() == EdgeId{0});
  v.push_back(10);
  v.push_back(20);
  CHECK(v.next_id() == EdgeId{2});
  CHECK(v[EdgeId{1}] == 20);
  CHECK(v.contains(EdgeId{1}));
  CHECK_FALSE(v.contains(EdgeId{2}));
  CHECK_FALSE(v.contains(EdgeId::none()));
  std::vector<EdgeId> ids;
  for (const EdgeId e : v.ids()) ids.push_back(e);
  CHECK(ids == std::vector<EdgeId>{EdgeId{0}, EdgeId{1}});
  CHECK(IdRange<NodeId>(0).begin() == IdRange<NodeId>(0).end());
}

TEST_CASE("A graph hands out its ids by type") {
  graph::Dfg dfg;
  const TrackId track = dfg.add_track({0, trace::ResourceKind::kGpuStream, 0, 7, "stream 7"});
  graph::Node n;
  n.track = track;
  const NodeId a = dfg.add_node(n);
  const NodeId b = dfg.add_node(n);
  const EdgeId e = dfg.add_edge(graph::Edge{a, b, graph::EdgeKind::kStreamOrder});
  dfg.finalize();
  CHECK(track == TrackId{0});
  CHECK(b == NodeId{1});
  std::vector<EdgeId> into_b;
  dfg.for_each_in_edge(b, [&](EdgeId in) { into_b.push_back(in); });
  CHECK(into_b == std::vector<EdgeId>{e});
  CHECK_FALSE(graph::Node().track.valid());
  CHECK_FALSE(graph::Node().event.valid());
  CHECK_FALSE(graph::Node().parent_op.valid());
}
