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
using detail::launcher_of;
using detail::on_stream;
using detail::on_thread;
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
  detail::build_host_programs(dfg, w, s);
  if (const std::string stuck = stuck_host_step(s); !stuck.empty()) throw std::logic_error("executor schedule would hang: " + stuck);
  detail::plan_schedule_memory(dfg, w, s);
  return s;
}

ScheduleSummary summarize(const Schedule& schedule) {
  ScheduleSummary out;
  std::map<std::string, std::size_t> reasons, blocking;
  for (const ScheduledLaunch& l : schedule.launches) {
    ClassCounts& c = out.by_class[static_cast<int>(l.lowered.op_class)];
    if (l.lowered.is_standin()) {
      ++c.standin;
      ++reasons[l.lowered.standin_reason];
      for (const std::string& op : l.lowered.blocking_ops) ++blocking[op];
    } else {
      ++c.real;
    }
  }
  out.standin_reasons.assign(reasons.begin(), reasons.end());
  std::stable_sort(out.standin_reasons.begin(), out.standin_reasons.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  out.standin_blocking_ops.assign(blocking.begin(), blocking.end());
  std::stable_sort(out.standin_blocking_ops.begin(), out.standin_blocking_ops.end(),
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
