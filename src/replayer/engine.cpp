#include "replayer/engine.h"

#include <algorithm>

#include "core/error.h"

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
  EdgeId id() const { return id_to_end >> 1; }
  bool to_end() const { return id_to_end & 1; }
};

// Per-node state the event loop touches together, in one cache line's share.
struct NodeState {
  Nanos delay;
  Nanos duration;
  std::uint32_t remaining_start;  // start-edges not yet satisfied
  std::uint32_t remaining_end;    // end-edges not yet satisfied
  std::uint32_t out_mid;          // out-edges [out_begin, out_mid) leave from the start
  std::uint8_t started;
  std::uint8_t start_is_event;    // something observes the start: it is queued as an event
};

// A scheduled event, 16 bytes: ordered by (key, insertion sequence). `key` is the event's time,
// raised to the time it was scheduled at if earlier (a rounding-sized negative delay), so the
// queue never goes back in time; the event's own time is kept in Simulation::start/end.
struct Pending {
  Nanos key;
  std::uint64_t seq_node;  // insertion sequence << 32 | node << 1 | is_end
  bool operator>(const Pending& o) const { return key != o.key ? key > o.key : seq_node > o.seq_node; }
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
  const Simulation& run(const graph::Dfg& dfg) {
    dfg_ = &dfg;
    prepare();
    for (NodeId v = 0; v < n_; ++v) {
      if (state_[v].remaining_start == 0) schedule_start(v, dfg_->node(v).release.value_or(0) + state_[v].delay);
    }
    while (!queue_.empty()) {
      const Pending p = queue_.pop();
      ++sim_.events_processed;
      now_ = p.key;
      const NodeId v = static_cast<NodeId>((p.seq_node & 0xffffffffu) >> 1);
      (p.seq_node & 1) ? on_end(v) : on_start(v);
    }
    if (ended_ != n_) throw InputError("", "replay", std::to_string(n_ - ended_) + " ops never ran (dependency cycle)");
    return sim_;
  }

  Simulation take() { return std::move(sim_); }

 private:
  void prepare() {
    n_ = static_cast<NodeId>(dfg_->node_count());
    DPRO_CHECK(n_ < (1u << 31) && dfg_->edge_count() < (1u << 31));
    const auto& edges = dfg_->edges();
    state_.assign(n_, NodeState{});
    // Out-edges grouped by source, start-edges first (a counting sort keeps insertion order).
    out_begin_.assign(n_ + 1, 0);
    for (const graph::Edge& e : edges) {
      ++out_begin_[e.src + 1];
      if (e.src_point == Point::kStart) ++state_[e.src].out_mid;
      NodeState& d = state_[e.dst];
      (e.dst_point == Point::kEnd ? d.remaining_end : d.remaining_start)++;
    }
    for (NodeId v = 0; v < n_; ++v) {
      out_begin_[v + 1] += out_begin_[v];
      state_[v].out_mid += out_begin_[v];
    }
    out_.resize(edges.size());
    fill_start_.assign(out_begin_.begin(), out_begin_.end() - 1);
    fill_end_.resize(n_);
    for (NodeId v = 0; v < n_; ++v) fill_end_[v] = state_[v].out_mid;
    for (EdgeId id = 0; id < edges.size(); ++id) {
      const graph::Edge& e = edges[id];
      std::uint32_t& slot = e.src_point == Point::kStart ? fill_start_[e.src] : fill_end_[e.src];
      out_[slot++] = OutEdge{e.dst, (id << 1) | (e.dst_point == Point::kEnd ? 1u : 0u), e.gap};
    }
    for (NodeId v = 0; v < n_; ++v) {
      NodeState& st = state_[v];
      const graph::Node& node = dfg_->node(v);
      st.delay = node.delay;
      st.duration = node.duration;
      st.start_is_event = st.remaining_end > 0 || st.out_mid > out_begin_[v];
    }
    // start/end first accumulate the latest dependency (INT64_MIN: none yet), then hold the times.
    sim_.start.assign(n_, INT64_MIN);
    sim_.end.assign(n_, INT64_MIN);
    sim_.start_cause.assign(n_, graph::kNone);
    sim_.end_cause.assign(n_, graph::kNone);
    sim_.events_processed = 0;
    sim_.makespan = 0;
    seq_ = 0;
    now_ = INT64_MIN;
    ended_ = 0;
  }

  void push(NodeId v, bool is_end, Nanos t) {
    queue_.push(Pending{std::max(t, now_), (seq_++ << 32) | (static_cast<std::uint64_t>(v) << 1) | (is_end ? 1 : 0)});
  }
  void schedule_start(NodeId v, Nanos t) {
    sim_.start[v] = t;
    NodeState& st = state_[v];
    if (st.start_is_event) {
      push(v, false, t);
    } else {
      st.started = 1;
      schedule_end(v, st);
    }
  }
  void schedule_end(NodeId v, const NodeState& st) {
    const Nanos own = sim_.start[v] + st.duration;
    if (own >= sim_.end[v]) {
      sim_.end_cause[v] = graph::kNone;
      sim_.end[v] = own;
    }
    push(v, true, sim_.end[v]);
  }

  void notify(const OutEdge& e, Nanos t) {
    const Nanos value = t + e.gap;
    NodeState& st = state_[e.dst];
    if (!e.to_end()) {
      if (value > sim_.start[e.dst]) {
        sim_.start[e.dst] = value;
        sim_.start_cause[e.dst] = e.id();
      }
      if (--st.remaining_start == 0) schedule_start(e.dst, sim_.start[e.dst] + st.delay);
    } else {
      if (value > sim_.end[e.dst]) {
        sim_.end[e.dst] = value;
        sim_.end_cause[e.dst] = e.id();
      }
      if (--st.remaining_end == 0 && st.started) schedule_end(e.dst, st);
    }
  }

  void on_start(NodeId v) {
    NodeState& st = state_[v];
    st.started = 1;
    const Nanos t = sim_.start[v];
    for (std::uint32_t k = out_begin_[v]; k < st.out_mid; ++k) notify(out_[k], t);
    if (st.remaining_end == 0) schedule_end(v, st);
  }

  void on_end(NodeId v) {
    const Nanos t = sim_.end[v];
    sim_.makespan = std::max(sim_.makespan, t);
    ++ended_;
    for (std::uint32_t k = state_[v].out_mid; k < out_begin_[v + 1]; ++k) notify(out_[k], t);
  }

  const graph::Dfg* dfg_ = nullptr;
  NodeId n_ = 0;
  std::vector<OutEdge> out_;
  std::vector<std::uint32_t> out_begin_;
  std::vector<std::uint32_t> fill_start_, fill_end_;
  std::vector<NodeState> state_;
  EventQueue queue_;
  std::uint64_t seq_ = 0;
  Nanos now_ = INT64_MIN;
  NodeId ended_ = 0;
  Simulation sim_;
};

Simulator::Simulator() : engine_(std::make_unique<Engine>()) {}
Simulator::~Simulator() = default;

const Simulation& Simulator::run(const graph::Dfg& dfg) {
  DPRO_CHECK(dfg.finalized());
  return engine_->run(dfg);
}

Simulation simulate(const graph::Dfg& dfg) {
  Simulator simulator;
  simulator.run(dfg);
  return simulator.engine_->take();
}

}  // namespace dpro::replayer
