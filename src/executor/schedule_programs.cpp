// The host programs of a schedule (schedule.h, "The model"): which thread issues which launch, and
// each thread's steps.
#include <algorithm>
#include <map>
#include <unordered_map>

#include "executor/schedule_internal.h"

namespace dpro::executor::detail {

bool on_thread(const graph::Dfg& dfg, graph::NodeId n) {
  const graph::Node& node = dfg.node(n);
  return node.track.valid() && dfg.track(node.track).kind == trace::ResourceKind::kCpuThread;
}

bool on_stream(const graph::Dfg& dfg, graph::NodeId n) {
  const graph::Node& node = dfg.node(n);
  return node.track.valid() && graph::on_gpu(node.kind) && dfg.track(node.track).kind == trace::ResourceKind::kGpuStream;
}

// The launch call of a GPU op, if the graph has one.
std::optional<graph::NodeId> launcher_of(const graph::Dfg& dfg, graph::NodeId gpu) {
  std::optional<graph::NodeId> out;
  dfg.for_each_in_edge(gpu, [&](graph::EdgeId e) {
    if (dfg.edge(e).kind == graph::EdgeKind::kLaunch) out = dfg.edge(e).src;
  });
  return out;
}

namespace {

// Builds the host programs: which thread issues which launch, and the steps of each thread.
class ProgramBuilder {
 public:
  ProgramBuilder(const graph::Dfg& dfg, const WindowNodes& w, Schedule& s) : dfg_(dfg), w_(w), s_(s) {}

  void build() {
    collect_tracks();
    assign_issuers();
    choose_main_thread();
    allocate_events_and_flags();
    for (std::uint32_t t = 0; t < s_.threads.size(); ++t) emit_thread(t);
  }

 private:
  bool scheduled_gpu(graph::NodeId n) const { return w_.position[n.value] != kNoIndex; }
  bool scheduled_cpu(graph::NodeId n) const { return w_.in[n.value] && on_thread(dfg_, n); }
  std::uint32_t thread_of_cpu(graph::NodeId n) const { return thread_index_.at(dfg_.node(n).track.value); }
  std::uint32_t thread_of_gpu(graph::NodeId n) const { return s_.launches[w_.position[n.value]].thread; }

  void collect_tracks() {
    std::map<std::uint32_t, std::vector<graph::NodeId>> threads;
    for (graph::NodeId id : dfg_.node_ids())
      if (scheduled_cpu(id)) threads[dfg_.node(id).track.value].push_back(id);
    for (auto& [track, nodes] : threads) {
      std::sort(nodes.begin(), nodes.end(), [&](graph::NodeId a, graph::NodeId b) {
        return std::pair(dfg_.node(a).measured_start, a) < std::pair(dfg_.node(b).measured_start, b);
      });
      thread_index_[track] = static_cast<std::uint32_t>(s_.threads.size());
      s_.threads.push_back({graph::TrackId(track), dfg_.track(graph::TrackId(track)).name, {}});
      thread_nodes_.push_back(std::move(nodes));
    }
    if (s_.threads.empty() && !s_.launches.empty()) {  // GPU ops only: one thread issues them
      s_.threads.push_back({graph::TrackId::none(), "issuer", {}});
      thread_nodes_.emplace_back();
    }
  }

  // A launched op goes with its launch call; an op without one goes right after the op before it on
  // its stream (prologue: the first on its stream).
  void assign_issuers() {
    issuer_.assign(s_.launches.size(), graph::NodeId::none());
    for (std::uint32_t i = 0; i < s_.launches.size(); ++i) {
      const graph::NodeId g = s_.launches[i].node;
      if (const auto l = launcher_of(dfg_, g); l && scheduled_cpu(*l)) {
        issuer_[i] = *l;
      } else {
        dfg_.for_each_in_edge(g, [&](graph::EdgeId e) {
          const graph::Edge& edge = dfg_.edge(e);
          if (edge.kind == graph::EdgeKind::kStreamOrder && scheduled_gpu(edge.src)) issuer_[i] = issuer_[w_.position[edge.src.value]];
        });
      }
      if (issuer_[i].valid()) blocks_[issuer_[i].value].push_back(i);
      else prologue_.push_back(i);
    }
  }

  void choose_main_thread() {
    std::vector<std::size_t> launches(s_.threads.size(), 0);
    for (const auto& [cpu, block] : blocks_) launches[thread_of_cpu(graph::NodeId(cpu))] += block.size();
    const auto main = static_cast<std::uint32_t>(std::max_element(launches.begin(), launches.end()) - launches.begin());
    if (main != 0) {
      std::swap(s_.threads[0], s_.threads[main]);
      std::swap(thread_nodes_[0], thread_nodes_[main]);
      for (auto& [track, index] : thread_index_) index = index == main ? 0 : index == 0 ? main : index;
    }
    for (std::uint32_t i = 0; i < s_.launches.size(); ++i)
      s_.launches[i].thread = issuer_[i].valid() ? thread_of_cpu(issuer_[i]) : 0;
  }

  void allocate_events_and_flags() {
    for (const ScheduledLaunch& l : s_.launches) {
      dfg_.for_each_out_edge(l.node, [&](graph::EdgeId e) {
        const graph::Edge& edge = dfg_.edge(e);
        const bool other_stream = scheduled_gpu(edge.dst) && dfg_.node(edge.dst).track != dfg_.node(l.node).track;
        const bool host_waits = scheduled_cpu(edge.dst) && edge.kind != graph::EdgeKind::kLaunchQueue;
        if ((other_stream || host_waits) && !event_of_.contains(l.node.value)) event_of_[l.node.value] = s_.events++;
        const bool same_stream_other_thread = scheduled_gpu(edge.dst) && !other_stream && thread_of_gpu(edge.dst) != l.thread;
        if (same_stream_other_thread && !flag_of_.contains(l.node.value)) {
          flag_of_[l.node.value] = s_.flags++;
          ++s_.stats.cross_thread_stream_order;
        }
        // CPU -> GPU dependencies other than the launch are kept by the host (await below).
      });
    }
    for (const auto& nodes : thread_nodes_)
      for (graph::NodeId c : nodes)
        dfg_.for_each_out_edge(c, [&](graph::EdgeId e) {
          const graph::NodeId dst = dfg_.edge(e).dst;
          const bool other_thread = (scheduled_cpu(dst) && thread_of_cpu(dst) != thread_of_cpu(c)) ||
                                    (scheduled_gpu(dst) && dfg_.edge(e).kind != graph::EdgeKind::kLaunch &&
                                     thread_of_gpu(dst) != thread_of_cpu(c));
          if (other_thread && !flag_of_.contains(c.value)) flag_of_[c.value] = s_.flags++;
        });
  }

  void emit_launch(std::uint32_t i, std::vector<HostStep>& steps) {
    const ScheduledLaunch& l = s_.launches[i];
    std::vector<std::uint32_t> waited;
    dfg_.for_each_in_edge(l.node, [&](graph::EdgeId e) {
      const graph::NodeId src = dfg_.edge(e).src;
      if (scheduled_gpu(src) && dfg_.node(src).track != dfg_.node(l.node).track) {
        const std::uint32_t ev = event_of_.at(src.value);
        if (std::find(waited.begin(), waited.end(), ev) == waited.end()) {
          waited.push_back(ev);
          steps.push_back({StepKind::kWaitEvent, ev, l.stream, 0, l.node});
        }
      } else if (flag_of_.contains(src.value) && (scheduled_gpu(src) ? thread_of_gpu(src) : thread_of_cpu(src)) != l.thread) {
        steps.push_back({StepKind::kAwait, flag_of_.at(src.value), 0, 0, l.node});
      }
    });
    steps.push_back({StepKind::kLaunch, i, l.stream, 0, l.node});
    if (const auto ev = event_of_.find(l.node.value); ev != event_of_.end())
      steps.push_back({StepKind::kRecord, ev->second, l.stream, 0, l.node});
    if (const auto f = flag_of_.find(l.node.value); f != flag_of_.end()) steps.push_back({StepKind::kSignal, f->second, 0, 0, l.node});
  }

  void emit_cpu_node(graph::NodeId c, std::uint32_t thread, std::vector<HostStep>& steps) {
    std::vector<std::uint32_t> synced;
    dfg_.for_each_in_edge(c, [&](graph::EdgeId e) {
      const graph::NodeId src = dfg_.edge(e).src;
      if (scheduled_cpu(src) && thread_of_cpu(src) != thread) steps.push_back({StepKind::kAwait, flag_of_.at(src.value), 0, 0, c});
    });
    const graph::Node& n = dfg_.node(c);
    if (n.delay + n.duration > 0) steps.push_back({StepKind::kSpin, 0, 0, n.delay + n.duration, c});
    if (const auto b = blocks_.find(c.value); b != blocks_.end())
      for (std::uint32_t i : b->second) emit_launch(i, steps);
    // A blocking call ends when the GPU work it waited for does (its own cost spent first).
    dfg_.for_each_in_edge(c, [&](graph::EdgeId e) {
      const graph::Edge& edge = dfg_.edge(e);
      if (!scheduled_gpu(edge.src) || edge.kind == graph::EdgeKind::kLaunchQueue) return;
      const std::uint32_t ev = event_of_.at(edge.src.value);
      if (std::find(synced.begin(), synced.end(), ev) != synced.end()) return;
      synced.push_back(ev);
      steps.push_back({StepKind::kSyncEvent, ev, 0, 0, c});
    });
    if (const auto f = flag_of_.find(c.value); f != flag_of_.end()) steps.push_back({StepKind::kSignal, f->second, 0, 0, c});
  }

  void emit_thread(std::uint32_t t) {
    std::vector<HostStep>& steps = s_.threads[t].steps;
    if (!thread_nodes_[t].empty()) {
      const Nanos offset = dfg_.node(thread_nodes_[t].front()).measured_start - s_.window_start;
      if (offset > 0) steps.push_back({StepKind::kSpinUntil, 0, 0, offset, thread_nodes_[t].front()});
    }
    if (t == 0)
      for (std::uint32_t i : prologue_) emit_launch(i, steps);
    for (graph::NodeId c : thread_nodes_[t]) emit_cpu_node(c, t, steps);
  }

  const graph::Dfg& dfg_;
  const WindowNodes& w_;
  Schedule& s_;
  std::unordered_map<std::uint32_t, std::uint32_t> thread_index_;  // track -> thread
  std::vector<std::vector<graph::NodeId>> thread_nodes_;           // per thread, in recorded order
  std::vector<graph::NodeId> issuer_;                              // per launch: the CPU op issuing it
  std::map<std::uint32_t, std::vector<std::uint32_t>> blocks_;     // CPU node -> launches it issues, in order
  std::vector<std::uint32_t> prologue_;                            // launches issued first by the main thread
  std::unordered_map<std::uint32_t, std::uint32_t> event_of_;      // GPU node -> event recorded after it
  std::unordered_map<std::uint32_t, std::uint32_t> flag_of_;       // node -> host flag raised after it
};

}  // namespace

void build_host_programs(const graph::Dfg& dfg, const WindowNodes& window, Schedule& schedule) {
  ProgramBuilder(dfg, window, schedule).build();
}

}  // namespace dpro::executor::detail
