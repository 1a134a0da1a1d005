#include "replayer/engine.h"

#include <algorithm>
#include <queue>

#include "core/error.h"

namespace dpro::replayer {
namespace {

using graph::EdgeId;
using graph::NodeId;
using graph::Point;

struct OutEdge {
  NodeId dst;
  EdgeId id;
  Nanos gap;
  bool to_end;      // dst_point == kEnd
  bool from_start;  // src_point == kStart: sent when the source starts, not when it ends
};

struct Pending {
  Nanos key;           // ordering time: never earlier than the time it was scheduled at
  std::uint64_t seq;   // insertion order breaks ties
  Nanos time;          // the event's own time
  NodeId node;
  bool is_end;
  bool operator>(const Pending& o) const { return key != o.key ? key > o.key : seq > o.seq; }
};

class Engine {
 public:
  explicit Engine(const graph::Dfg& dfg) : dfg_(dfg) {}

  Simulation run() {
    prepare();
    for (NodeId v = 0; v < n_; ++v) {
      if (remaining_start_[v] == 0) schedule(v, false, dfg_.node(v).release.value_or(0) + dfg_.node(v).delay, 0);
    }
    while (!queue_.empty()) {
      const Pending p = queue_.top();
      queue_.pop();
      ++sim_.events_processed;
      now_ = p.key;
      p.is_end ? on_end(p.node, p.time) : on_start(p.node, p.time);
    }
    if (ended_ != n_) throw InputError("", "replay", std::to_string(n_ - ended_) + " ops never ran (dependency cycle)");
    return std::move(sim_);
  }

 private:
  void prepare() {
    n_ = static_cast<NodeId>(dfg_.node_count());
    const auto& g = dfg_.csr();
    out_begin_.assign(n_ + 1, 0);
    out_.reserve(dfg_.edge_count());
    remaining_start_.assign(n_, 0);
    remaining_end_.assign(n_, 0);
    for (NodeId v = 0; v < n_; ++v) {
      out_begin_[v] = static_cast<std::uint32_t>(out_.size());
      for (auto [it, end] = boost::out_edges(v, g); it != end; ++it) {
        const EdgeId id = g[*it];
        const graph::Edge& e = dfg_.edge(id);
        out_.push_back(OutEdge{e.dst, id, e.gap, e.dst_point == Point::kEnd, e.src_point == Point::kStart});
        (e.dst_point == Point::kEnd ? remaining_end_ : remaining_start_)[e.dst]++;
      }
    }
    out_begin_[n_] = static_cast<std::uint32_t>(out_.size());
    sim_.start.assign(n_, 0);
    sim_.end.assign(n_, 0);
    sim_.start_cause.assign(n_, graph::kNone);
    sim_.end_cause.assign(n_, graph::kNone);
    acc_start_.assign(n_, INT64_MIN);
    acc_end_.assign(n_, INT64_MIN);
    started_.assign(n_, false);
  }

  void schedule(NodeId v, bool is_end, Nanos t, Nanos now) {
    queue_.push(Pending{std::max(t, now), seq_++, t, v, is_end});
  }

  void notify(std::uint32_t k, Nanos t) {
    const OutEdge& e = out_[k];
    const Nanos value = t + e.gap;
    if (!e.to_end) {
      if (value > acc_start_[e.dst]) {
        acc_start_[e.dst] = value;
        sim_.start_cause[e.dst] = e.id;
      }
      if (--remaining_start_[e.dst] == 0) schedule(e.dst, false, acc_start_[e.dst] + dfg_.node(e.dst).delay, now_);
    } else {
      if (value > acc_end_[e.dst]) {
        acc_end_[e.dst] = value;
        sim_.end_cause[e.dst] = e.id;
      }
      if (--remaining_end_[e.dst] == 0 && started_[e.dst]) schedule_end(e.dst);
    }
  }

  void schedule_end(NodeId v) {
    const Nanos own = sim_.start[v] + dfg_.node(v).duration;
    if (own >= acc_end_[v]) sim_.end_cause[v] = graph::kNone;
    schedule(v, true, std::max(own, acc_end_[v]), now_);
  }

  void on_start(NodeId v, Nanos t) {
    sim_.start[v] = t;
    started_[v] = true;
    for (std::uint32_t k = out_begin_[v]; k < out_begin_[v + 1]; ++k) {
      if (out_[k].from_start) notify(k, t);
    }
    if (remaining_end_[v] == 0) schedule_end(v);
  }

  void on_end(NodeId v, Nanos t) {
    sim_.end[v] = t;
    sim_.makespan = std::max(sim_.makespan, t);
    ++ended_;
    for (std::uint32_t k = out_begin_[v]; k < out_begin_[v + 1]; ++k) {
      if (!out_[k].from_start) notify(k, t);
    }
  }

  const graph::Dfg& dfg_;
  NodeId n_ = 0;
  std::vector<OutEdge> out_;
  std::vector<std::uint32_t> out_begin_;
  std::vector<std::uint32_t> remaining_start_, remaining_end_;
  std::vector<Nanos> acc_start_, acc_end_;
  std::vector<bool> started_;
  std::priority_queue<Pending, std::vector<Pending>, std::greater<>> queue_;
  std::uint64_t seq_ = 0;
  Nanos now_ = INT64_MIN;
  NodeId ended_ = 0;
  Simulation sim_;
};

}  // namespace

Simulation simulate(const graph::Dfg& dfg) {
  DPRO_CHECK(dfg.finalized());
  return Engine(dfg).run();
}

}  // namespace dpro::replayer
