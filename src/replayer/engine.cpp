#include "replayer/engine.h"

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>

#include "core/error.h"
#include "core/time.h"

namespace dpro::replayer {
namespace {

using graph::EdgeId;
using graph::NodeId;
using graph::Point;

// An edge as the engine walks it: 16 bytes. A node's out-edges are stored in two runs, those
// sent when it starts, then those sent when it ends.
struct OutEdge {
  NodeId dst;
  std::uint32_t id_to_end;  // edge id << 1 | (dst_point == kEnd)
  Nanos gap;
  static OutEdge of(EdgeId id, const graph::Edge& e) {
    return OutEdge{e.dst, (id.value << 1) | (e.dst_point == Point::kEnd ? 1u : 0u), e.gap};
  }
  EdgeId id() const { return EdgeId(id_to_end >> 1); }
  bool to_end() const { return id_to_end & 1; }
};

// Everything the event loop touches for one node, in one 64-byte cache line. Times and causes
// are copied into the Simulation when the run ends.
struct alignas(64) NodeState {
  Nanos delay;
  Nanos duration;
  Nanos start;  // first the latest start-dependency seen (INT64_MIN: none yet), then the start
  Nanos end;    // likewise for end-dependencies, then the end
  std::uint32_t out_begin, out_mid, out_end;  // out-edges: [begin, mid) leave from the start, [mid, end) from the end
  std::uint32_t remaining_start;  // start-edges not yet satisfied
  std::uint32_t remaining_end;    // end-edges not yet satisfied
  EdgeId start_cause;
  EdgeId end_cause;
  std::uint8_t started;
  std::uint8_t start_is_event;  // something observes the start: it is queued as an event
  // The end is queued as an event; else it is sent when the start is known. That is so for a
  // thread's untraced work (graph::NodeKind::kUntraced) whose start nothing observes, whose end
  // nothing but its duration decides and whose successors wait for nothing else: they are then
  // scheduled exactly as when the work was their delay (the same events, in the same order), and
  // the work costs the replay no queue operation.
  std::uint8_t end_is_event;
};
static_assert(sizeof(NodeState) == 64);

// A scheduled event, 16 bytes, ordered by (key, insertion sequence) as one 128-bit integer:
// the high half is the event time (offset to be unsigned), raised to the time it was scheduled
// at if earlier (a rounding-sized negative delay), so the queue never goes back in time; the
// low half is insertion sequence << 32 | node << 1 | is_end. The event's own time is kept in
// the node's state.
struct Pending {
  unsigned __int128 order;
  static Pending make(Nanos key, std::uint64_t seq_node) {
    const auto high = static_cast<std::uint64_t>(key) ^ (std::uint64_t{1} << 63);
    return Pending{(static_cast<unsigned __int128>(high) << 64) | seq_node};
  }
  NodeId node() const { return NodeId(static_cast<std::uint32_t>(static_cast<std::uint64_t>(order) & 0xffffffffu) >> 1); }
  bool is_end() const { return static_cast<std::uint64_t>(order) & 1; }
  Nanos key() const { return static_cast<Nanos>(static_cast<std::uint64_t>(order >> 64) ^ (std::uint64_t{1} << 63)); }
  bool operator>(const Pending& o) const { return order > o.order; }
};

// A 4-ary min-heap: shallower than a binary heap, fewer cache misses on large queues.
class EventQueue {
 public:
  bool empty() const { return heap_.empty(); }
  void push(Pending p) {
    std::size_t i = heap_.size();
    heap_.push_back(p);
    while (i > 0) {
      const std::size_t parent = (i - 1) / 4;
      if (!(heap_[parent] > p)) break;
      heap_[i] = heap_[parent];
      i = parent;
    }
    heap_[i] = p;
  }
  Pending pop() {
    const Pending top = heap_.front();
    const Pending last = heap_.back();
    heap_.pop_back();
    const std::size_t n = heap_.size();
    if (n == 0) return top;
    std::size_t i = 0;
    for (;;) {
      const std::size_t first = 4 * i + 1;
      if (first >= n) break;
      std::size_t best = first;
      const std::size_t stop = std::min(first + 4, n);
      for (std::size_t c = first + 1; c < stop; ++c) {
        if (heap_[best] > heap_[c]) best = c;
      }
      if (!(last > heap_[best])) break;
      heap_[i] = heap_[best];
      i = best;
    }
    heap_[i] = last;
    return top;
  }

 private:
  std::vector<Pending> heap_;
};

}  // namespace

class Simulator::Engine {
 public:
  const Simulation& run(const graph::Dfg& dfg, Record record) {
    dfg_ = &dfg;
    ordered_ = record == Record::kTimesAndCauses;
    prepare();
    // The roots are found before any is scheduled: scheduling one may send an end at once (see
    // end_is_event) and so complete another node's dependencies.
    roots_.clear();
    for (const NodeId v : dfg.node_ids()) {
      if (state_[v].remaining_start == 0) roots_.push_back(v);
    }
    for (const NodeId v : roots_) schedule_start(v, dfg_->node(v).release.value_or(0) + state_[v].delay);
    if (ordered_) {
      while (!queue_.empty()) {
        const Pending p = queue_.pop();
        ++sim_.events_processed;
        now_ = p.key();
        p.is_end() ? on_end(p.node()) : on_start(p.node());
      }
    } else {
      // Times only: any order that handles an event after the notifications it waits for gives
      // the same times (see Record::kTimes), so the events are taken last in, first out.
      while (!stack_.empty()) {
        const std::uint32_t p = stack_.back();
        stack_.pop_back();
        ++sim_.events_processed;
        (p & 1) ? on_end(NodeId(p >> 1)) : on_start(NodeId(p >> 1));
      }
    }
    if (ended_ != n_) throw InputError("", "replay", std::to_string(n_ - ended_) + " ops never ran (dependency cycle)");
    finish();
    return sim_;
  }

  Simulation take() { return std::move(sim_); }

 private:
  // Two passes over the nodes, reading the graph's CSR view: a node's in-edges give its counts of
  // start- and end-edges, then its out-edges are placed, those leaving from its start first,
  // each run in edge-id order (the view's out-edge order), as the engine walks them.
  void prepare() {
    n_ = static_cast<std::uint32_t>(dfg_->node_count());
    DPRO_CHECK(n_ < (1u << 31) && dfg_->edge_count() < (1u << 31));
    const auto& edges = dfg_->edges();
    state_.resize(n_);  // every field of every node is set below
    ClockReach reach;  // summed in the first pass, checked before the edges are placed
    for (const NodeId v : dfg_->node_ids()) {
      NodeState& st = state_[v];
      std::uint32_t to_start = 0, to_end = 0;
      for (const EdgeId id : dfg_->in_edges(v)) {
        const graph::Edge& e = edges[id];
        reach.add(e.gap);
        ++(e.dst_point == Point::kEnd ? to_end : to_start);
      }
      const graph::Node& node = dfg_->node(v);
      st.remaining_start = to_start;
      st.remaining_end = to_end;
      st.delay = node.delay;
      st.duration = node.duration;
      reach.add(node.duration);
      reach.add(node.delay);
      if (node.release) reach.release = std::max(reach.release, magnitude(*node.release));
      st.start = st.end = INT64_MIN;
      st.start_cause = st.end_cause = EdgeId::none();
      st.started = 0;
    }
    check_clock_reach(reach);
    out_.resize(edges.size());
    std::uint32_t offset = 0;
    for (const NodeId v : dfg_->node_ids()) {
      NodeState& st = state_[v];
      const std::span<const EdgeId> out = dfg_->out_edges(v);
      st.out_begin = offset;
      for (const EdgeId id : out) {
        const graph::Edge& e = edges[id];
        if (e.src_point == Point::kStart) out_[offset++] = OutEdge::of(id, e);
      }
      st.out_mid = offset;
      st.start_is_event = st.remaining_end > 0 || st.out_mid > st.out_begin;
      // Untraced work whose start nothing observes and whose end nothing but its duration decides
      // may send its end with its start, unless an edge from its end reaches an end, or a start
      // that waits for more than this edge.
      bool end_is_event = !(dfg_->node(v).kind == graph::NodeKind::kUntraced && !st.start_is_event && st.remaining_end == 0);
      for (const EdgeId id : out) {
        const graph::Edge& e = edges[id];
        if (e.src_point != Point::kEnd) continue;
        out_[offset++] = OutEdge::of(id, e);
        end_is_event = end_is_event || e.dst_point == Point::kEnd || state_[e.dst].remaining_start != 1;
      }
      st.out_end = offset;
      st.end_is_event = end_is_event;
    }
    sim_.events_processed = 0;
    sim_.makespan = 0;
    seq_ = 0;
    now_ = INT64_MIN;
    ended_ = 0;
  }

  // Every time the replay computes is a release time plus durations, delays and edge gaps along
  // a path, so their magnitudes summed over the graph bound the clock. Above kMaxReplayNanos
  // the graph is refused, before any addition could overflow (a what-if that made ops absurdly
  // slow, or traces whose times add up to centuries).
  struct ClockReach {
    std::uint64_t sum = 0, release = 0;  // of every duration, delay and gap; the latest release
    bool over = false;
    void add(Nanos t) { over |= __builtin_add_overflow(sum, magnitude(t), &sum); }
  };
  static void check_clock_reach(ClockReach r) {
    std::uint64_t reach = 0;
    const bool over = r.over || __builtin_add_overflow(r.sum, r.release, &reach);
    if (over || reach > static_cast<std::uint64_t>(kMaxReplayNanos))
      throw InputError("", "replay",
                       "the graph's op times, delays and release times add up to " +
                           (over || reach > static_cast<std::uint64_t>(INT64_MAX) ? std::string("more than 292 years")
                                                                       : format_duration(static_cast<Nanos>(reach))) +
                           ", beyond the replay clock's bound of " + format_duration(kMaxReplayNanos) +
                           " (about 95 years): a what-if made ops that slow (e.g. --set host.cpu_speed far below 1), "
                           "or the traces hold times no job took");
  }

  void finish() {
    sim_.causes = ordered_;  // a times-only run leaves the cause vectors empty
    sim_.start.resize(n_);
    sim_.end.resize(n_);
    sim_.start_cause.resize(ordered_ ? n_ : 0);
    sim_.end_cause.resize(ordered_ ? n_ : 0);
    for (const NodeId v : dfg_->node_ids()) {
      const NodeState& st = state_[v];
      sim_.start[v] = st.start;
      sim_.end[v] = st.end;
      if (ordered_) {
        sim_.start_cause[v] = st.start_cause;
        sim_.end_cause[v] = st.end_cause;
      }
    }
  }

  void push(NodeId v, const NodeState& st, bool is_end, Nanos t) {
    // The event is handled later, with other events in between: fetch the edges it will walk
    // now, so that they are in cache by then (pointer arithmetic: the index may be one past
    // the last edge, for a node with none).
    __builtin_prefetch(out_.data() + (is_end ? st.out_mid : st.out_begin));
    if (!ordered_) {
      stack_.push_back(v.value << 1 | (is_end ? 1u : 0u));
      return;
    }
    queue_.push(Pending::make(std::max(t, now_), (seq_++ << 32) | (static_cast<std::uint64_t>(v.value) << 1) | (is_end ? 1 : 0)));
  }
  void schedule_start(NodeId v, Nanos t) {
    NodeState& st = state_[v];
    st.start = t;
    if (st.start_is_event) {
      push(v, st, false, t);
    } else {
      st.started = 1;
      schedule_end(v, st);
    }
  }
  void schedule_end(NodeId v, NodeState& st) {
    const Nanos own = st.start + st.duration;
    if (own >= st.end) {
      st.end_cause = EdgeId::none();
      st.end = own;
    }
    if (st.end_is_event) [[likely]] {
      push(v, st, true, st.end);
    } else {
      send_end_now(v);
    }
  }
  // Out of line: it recurses (into the successors' scheduling) and is rarely taken.
  [[gnu::noinline]] void send_end_now(NodeId v) { on_end(v); }

  void notify(const OutEdge& e, Nanos t) {
    const Nanos value = t + e.gap;
    NodeState& st = state_[e.dst];
    if (!e.to_end()) {
      if (value > st.start) {
        st.start = value;
        st.start_cause = e.id();
      }
      if (--st.remaining_start == 0) schedule_start(e.dst, st.start + st.delay);
    } else {
      if (value > st.end) {
        st.end = value;
        st.end_cause = e.id();
      }
      if (--st.remaining_end == 0 && st.started) schedule_end(e.dst, st);
    }
  }

  void on_start(NodeId v) {
    NodeState& st = state_[v];
    st.started = 1;
    const Nanos t = st.start;
    for (std::uint32_t k = st.out_begin; k < st.out_mid; ++k) notify(out_[k], t);
    if (st.remaining_end == 0) schedule_end(v, st);
  }

  void on_end(NodeId v) {
    const NodeState& st = state_[v];
    const Nanos t = st.end;
    sim_.makespan = std::max(sim_.makespan, t);
    ++ended_;
    for (std::uint32_t k = st.out_mid; k < st.out_end; ++k) notify(out_[k], t);
  }

  const graph::Dfg* dfg_ = nullptr;
  std::uint32_t n_ = 0;  // nodes of the graph being run
  std::vector<OutEdge> out_;
  std::vector<NodeId> roots_;
  IdVector<NodeId, NodeState> state_;
  EventQueue queue_;
  bool ordered_ = true;  // events in (time, sequence) order, causes recorded; else times only
  std::vector<std::uint32_t> stack_;  // the pending events of a times-only run: node << 1 | is_end
  std::uint64_t seq_ = 0;
  Nanos now_ = INT64_MIN;
  std::uint32_t ended_ = 0;  // nodes that have ended
  Simulation sim_;
};

Simulator::Simulator() : engine_(std::make_unique<Engine>()) {}
Simulator::~Simulator() = default;

const Simulation& Simulator::run(const graph::Dfg& dfg, Record record) {
  DPRO_CHECK(dfg.finalized());
  return engine_->run(dfg, record);
}

Simulation simulate(const graph::Dfg& dfg, Record record) {
  Simulator simulator;
  simulator.run(dfg, record);
  return simulator.engine_->take();
}

}  // namespace dpro::replayer
