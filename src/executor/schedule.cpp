#include "executor/schedule.h"

#include <algorithm>
#include <map>
#include <queue>
#include <stdexcept>
#include <unordered_map>

#include "core/error.h"
#include "executor/schedule_internal.h"

namespace dpro::executor {

using detail::kNoIndex;
using detail::WindowNodes;

const char* to_string(StepKind kind) {
  switch (kind) {
    case StepKind::kSpin: return "spin";
    case StepKind::kSpinUntil: return "spin_until";
    case StepKind::kLaunch: return "launch";
    case StepKind::kRecord: return "record";
    case StepKind::kWaitEvent: return "wait_event";
    case StepKind::kSyncEvent: return "sync_event";
    case StepKind::kSignal: return "signal";
    case StepKind::kAwait: return "await";
  }
  return "?";
}

namespace {

bool on_thread(const graph::Dfg& dfg, graph::NodeId n) {
  const graph::Node& node = dfg.node(n);
  return node.track.valid() && dfg.track(node.track).kind == trace::ResourceKind::kCpuThread;
}
bool on_stream(const graph::Dfg& dfg, graph::NodeId n) {
  const graph::Node& node = dfg.node(n);
  return node.track.valid() && graph::on_gpu(node.kind) && dfg.track(node.track).kind == trace::ResourceKind::kGpuStream;
}

const trace::TraceRank& trace_rank(const trace::TraceSet& traces, std::optional<int> wanted) {
  DPRO_CHECK(!traces.ranks.empty());
  if (!wanted) return traces.ranks.front();
  const int rank = *wanted;
  for (const trace::TraceRank& r : traces.ranks)
    if (r.rank == rank) return r;
  std::string known;
  for (const trace::TraceRank& r : traces.ranks) known += (known.empty() ? "" : ", ") + std::to_string(r.rank);
  throw OptionError("--rank", std::to_string(rank), "no trace of this rank (ranks: " + known + ")");
}

void choose_window(const trace::TraceRank& rank, const ScheduleOptions& options, Schedule& s) {
  if (rank.iterations.empty()) {
    if (options.iteration)
      throw OptionError("--iteration", std::to_string(*options.iteration), "rank " + std::to_string(rank.rank) + " records no iteration");
    return;
  }
  std::size_t i = rank.iterations.size() / 2;
  if (options.iteration) {
    const auto found = std::find_if(rank.iterations.begin(), rank.iterations.end(),
                                    [&](const trace::Iteration& it) { return it.number == *options.iteration; });
    if (found == rank.iterations.end())
      throw OptionError("--iteration", std::to_string(*options.iteration),
                        "rank " + std::to_string(rank.rank) + " recorded iterations " + rank.iterations.front().name + " to " +
                            rank.iterations.back().name);
    i = static_cast<std::size_t>(found - rank.iterations.begin());
  }
  const trace::Iteration& it = rank.iterations[i];
  s.window = it.name;
  s.window_start = it.start;
  s.window_end = it.end;
}

// The launch call of a GPU op, if the graph has one.
std::optional<graph::NodeId> launcher_of(const graph::Dfg& dfg, graph::NodeId gpu) {
  std::optional<graph::NodeId> out;
  dfg.for_each_in_edge(gpu, [&](graph::EdgeId e) {
    if (dfg.edge(e).kind == graph::EdgeKind::kLaunch) out = dfg.edge(e).src;
  });
  return out;
}

// CPU ops recorded in the window; GPU ops launched by one of them (or, without a launch call,
// recorded in the window).
std::vector<char> select_nodes(const graph::Dfg& dfg, const Schedule& s) {
  std::vector<char> in(dfg.node_count(), 0);
  const bool whole = s.window.empty();
  auto inside = [&](const graph::Node& n) { return whole || (n.measured_start >= s.window_start && n.measured_start < s.window_end); };
  for (graph::NodeId id : dfg.node_ids()) {
    const graph::Node& n = dfg.node(id);
    if (n.rank == s.rank && on_thread(dfg, id) && inside(n)) in[id.value] = 1;
  }
  for (graph::NodeId id : dfg.node_ids()) {
    const graph::Node& n = dfg.node(id);
    if (n.rank != s.rank || !on_stream(dfg, id)) continue;
    const auto launcher = launcher_of(dfg, id);
    in[id.value] = launcher ? in[launcher->value] : inside(n);
  }
  return in;
}

// A rank scheduled whole: its window is the span of its ops.
void whole_rank_span(const graph::Dfg& dfg, const std::vector<char>& in, Schedule& s) {
  bool first = true;
  for (graph::NodeId id : dfg.node_ids()) {
    if (!in[id.value]) continue;
    const graph::Node& n = dfg.node(id);
    s.window_start = first ? n.measured_start : std::min(s.window_start, n.measured_start);
    s.window_end = first ? n.measured_start + n.measured_duration : std::max(s.window_end, n.measured_start + n.measured_duration);
    first = false;
  }
}

// The window's GPU ops in a topological order of the edges between them, earliest recorded first.
std::vector<graph::NodeId> gpu_order(const graph::Dfg& dfg, const std::vector<char>& in) {
  auto gpu = [&](graph::NodeId n) { return in[n.value] && on_stream(dfg, n); };
  std::vector<std::uint32_t> pending(dfg.node_count(), 0);
  using Key = std::pair<Nanos, std::uint32_t>;
  std::priority_queue<Key, std::vector<Key>, std::greater<>> ready;
  std::size_t total = 0;
  for (graph::NodeId id : dfg.node_ids()) {
    if (!gpu(id)) continue;
    ++total;
    dfg.for_each_in_edge(id, [&](graph::EdgeId e) { pending[id.value] += gpu(dfg.edge(e).src); });
    if (pending[id.value] == 0) ready.emplace(dfg.node(id).measured_start, id.value);
  }
  std::vector<graph::NodeId> order;
  while (!ready.empty()) {
    const graph::NodeId id(ready.top().second);
    ready.pop();
    order.push_back(id);
    dfg.for_each_out_edge(id, [&](graph::EdgeId e) {
      const graph::NodeId dst = dfg.edge(e).dst;
      if (gpu(dst) && --pending[dst.value] == 0) ready.emplace(dfg.node(dst).measured_start, dst.value);
    });
  }
  DPRO_CHECK(order.size() == total);  // the graph is acyclic
  return order;
}

void count_edges(const graph::Dfg& dfg, const std::vector<char>& in, int rank, LoweringStats& stats) {
  for (graph::EdgeId e : dfg.edge_ids()) {
    const graph::Edge& edge = dfg.edge(e);
    const bool a = in[edge.src.value], b = in[edge.dst.value];
    if (!a && !b) continue;
    const graph::NodeId other = a ? edge.dst : edge.src;
    if (a && b) {
      if (edge.kind == graph::EdgeKind::kLaunchQueue) ++stats.launch_queue;
      else ++stats.kept[static_cast<int>(edge.kind)];
    } else if (dfg.node(other).rank != rank) {
      ++stats.other_ranks;
    } else {
      ++stats.outside_window;
    }
  }
}

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

Schedule build_schedule(const whatif::Workload& workload, const ScheduleOptions& options) {
  const graph::Dfg& dfg = workload.graph.dfg;
  DPRO_CHECK(dfg.finalized());
  Schedule s;
  const trace::TraceRank& rank = trace_rank(*workload.traces, options.rank);
  s.rank = rank.rank;
  choose_window(rank, options, s);
  WindowNodes w;
  w.in = select_nodes(dfg, s);
  if (s.window.empty()) whole_rank_span(dfg, w.in, s);
  w.position.assign(dfg.node_count(), kNoIndex);
  std::map<std::uint32_t, std::uint32_t> stream_index;  // track -> stream
  // A capture with shapes in one step only describes the kernels of like steps by it.
  const costmodel::LikeStepLaunchers like = costmodel::launchers_from_like_steps(*workload.traces, dfg);
  LaunchOptions launch = options.launch;
  if (!launch.like_steps) launch.like_steps = &like;
  for (graph::NodeId g : gpu_order(dfg, w.in)) {
    const std::uint32_t track = dfg.node(g).track.value;
    if (!stream_index.contains(track)) {
      stream_index[track] = static_cast<std::uint32_t>(s.streams.size());
      s.streams.push_back({graph::TrackId(track), dfg.track(graph::TrackId(track)).name});
    }
    w.position[g.value] = static_cast<std::uint32_t>(s.launches.size());
    s.launches.push_back({g, stream_index[track], 0, lower_launch(dfg, g, launch)});
  }
  count_edges(dfg, w.in, s.rank, s.stats);
  ProgramBuilder(dfg, w, s).build();
  if (const std::string stuck = stuck_host_step(s); !stuck.empty()) throw std::logic_error("executor schedule would hang: " + stuck);
  detail::plan_schedule_memory(dfg, w, s);
  return s;
}

ScheduleSummary summarize(const Schedule& schedule) {
  ScheduleSummary out;
  std::map<std::string, std::size_t> reasons;
  for (const ScheduledLaunch& l : schedule.launches) {
    ClassCounts& c = out.by_class[static_cast<int>(l.lowered.op_class)];
    if (l.lowered.is_standin()) {
      ++c.standin;
      ++reasons[l.lowered.standin_reason];
    } else {
      ++c.real;
    }
  }
  out.standin_reasons.assign(reasons.begin(), reasons.end());
  std::stable_sort(out.standin_reasons.begin(), out.standin_reasons.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  out.launches = schedule.launches.size();
  for (const HostThread& t : schedule.threads) {
    out.host_steps += t.steps.size();
    for (const HostStep& s : t.steps) {
      if (s.kind != StepKind::kSpin) continue;
      ++out.spins;
      out.host_spin_total += s.spin;
    }
  }
  return out;
}

}  // namespace dpro::executor
