#include "replayer/timeline.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "replayer/critical_path.h"
#include "replayer/report.h"
#include "replayer/slack.h"
#include "trace/chrome_json.h"

namespace dpro::replayer {
namespace {

using trace::chrome_micros;
using trace::chrome_string;

// A track's Chrome thread id: its index + 1 (tid 0 is the process's own row). A barrier's
// none wraps to 0, as it always has.
std::uint32_t chrome_tid(graph::TrackId track) { return track.value + 1; }

class TimelineWriter {
 public:
  TimelineWriter(std::ostream& out) : out_(out), events_(out, "", ",\n") {}
  void begin() { out_ << "{\"displayTimeUnit\": \"ns\", \"traceEvents\": [\n"; }
  void end() { out_ << "\n]}\n"; }
  void raw(const std::string& event) { events_.add(event); }
  std::uint64_t next_flow() { return flow_++; }
  void slice(int pid, std::uint32_t tid, std::string_view name, const char* cat, Nanos start, Nanos dur,
             const std::string& args) {
    raw(fmt::format(R"({{"ph":"X","pid":{},"tid":{},"ts":{},"dur":{},"name":{},"cat":"{}","args":{{{}}}}})", pid, tid,
                    chrome_micros(start), chrome_micros(dur), chrome_string(name), cat, args));
  }

 private:
  std::ostream& out_;
  trace::ChromeEventList events_;
  std::uint64_t flow_ = 1;
};


// A counter's value changes at each time (+1 / -1 per op), written as Chrome "C" events: the
// value in force at the window's start, then every change inside it.
void write_counter(TimelineWriter& w, int pid, const char* name, const char* key, std::vector<std::pair<Nanos, int>> deltas,
                   const std::optional<std::pair<Nanos, Nanos>>& window) {
  std::sort(deltas.begin(), deltas.end());
  auto emit = [&](Nanos t, int v) {
    w.raw(fmt::format(R"({{"ph":"C","pid":{},"tid":0,"ts":{},"name":"{}","args":{{"{}":{}}}}})", pid, chrome_micros(t), name, key, v));
  };
  int value = 0;
  bool opened = !window;  // the value in force at the window's start is written first
  for (std::size_t i = 0; i < deltas.size();) {
    const Nanos t = deltas[i].first;
    int delta = 0;
    for (; i < deltas.size() && deltas[i].first == t; ++i) delta += deltas[i].second;
    if (window && t < window->first) {
      value += delta;
      continue;
    }
    if (window && t >= window->second) break;
    if (!opened && t > window->first) emit(window->first, value);
    opened = true;
    value += delta;
    emit(t, value);
  }
  if (!opened && !deltas.empty()) emit(window->first, value);
}

// When a GPU op entered its stream's queue: when its launch edge was satisfied (the launch call's
// start plus the edge's gap, or its end); none for GPU ops without a launch edge.
std::optional<Nanos> enqueued_at(const graph::Dfg& dfg, const Simulation& sim, graph::NodeId id) {
  std::optional<Nanos> at;
  dfg.for_each_in_edge(id, [&](graph::EdgeId e) {
    const graph::Edge& edge = dfg.edge(e);
    if (edge.kind != graph::EdgeKind::kLaunch) return;
    at = (edge.src_point == graph::Point::kStart ? sim.start[edge.src] : sim.end[edge.src]) + edge.gap;
  });
  return at;
}

void write_counters(TimelineWriter& w, const TimelineView& v, int pid_base, const std::set<int>& ranks) {
  const graph::Dfg& dfg = v.built->dfg;
  const Simulation& sim = *v.sim;
  std::map<int, std::vector<std::pair<Nanos, int>>> busy, queue;
  for (const graph::NodeId id : dfg.node_ids()) {
    const graph::Node& n = dfg.node(id);
    if (!graph::is_op(n.kind) || !n.track.valid() || dfg.track(n.track).kind != trace::ResourceKind::kGpuStream) continue;
    busy[n.rank].push_back({sim.start[id], +1});
    busy[n.rank].push_back({sim.end[id], -1});
    if (const auto at = enqueued_at(dfg, sim, id)) {
      queue[n.rank].push_back({std::min(*at, sim.start[id]), +1});
      queue[n.rank].push_back({sim.end[id], -1});
    }
  }
  for (int rank : ranks) {
    write_counter(w, pid_base + rank, "GPU busy streams", "streams", std::move(busy[rank]), v.window);
    write_counter(w, pid_base + rank, "launch queue depth", "ops", std::move(queue[rank]), v.window);
  }
}

// The replay's critical path, from its last-ending op back to the start, as one track.
void write_critical_path(TimelineWriter& w, const TimelineView& v, int pid) {
  const graph::Dfg& dfg = v.built->dfg;
  const Simulation& sim = *v.sim;
  graph::NodeId last;
  for (const graph::NodeId id : dfg.node_ids())
    if (graph::is_op(dfg.node(id).kind) && (!last.valid() || sim.end[id] > sim.end[last])) last = id;
  if (!last.valid()) return;
  w.raw(fmt::format(R"({{"ph":"M","name":"process_name","pid":{},"tid":0,"args":{{"name":{}}}}})", pid,
                    chrome_string("critical path (" + v.label + ")")));
  w.raw(fmt::format(R"({{"ph":"M","name":"process_sort_index","pid":{},"tid":0,"args":{{"sort_index":-1}}}})", pid));
  const auto path = critical_path(dfg, sim, execution_categories(dfg), last, graph::Point::kEnd, 0);
  for (const PathSegment& seg : path) {
    if (v.window && (seg.end <= v.window->first || seg.begin >= v.window->second)) continue;
    std::string name = to_string(seg.category);
    if (seg.node.valid() && graph::is_op(dfg.node(seg.node).kind)) {
      const graph::Node& n = dfg.node(seg.node);
      const graph::OpDesc* op = dfg.op(seg.node);
      name += std::string(": ") +
              std::string(n.name.value == 0 && op ? dfg.ops().name(op->name) : v.traces->strings.view(n.name));
    }
    w.slice(pid, 1, name, to_string(seg.category), seg.begin, seg.end - seg.begin,
            fmt::format(R"("rank":{},"part":"{}")", seg.rank, seg.part == Part::kOwn ? "own" : "before start"));
  }
}

void write_view(TimelineWriter& w, const TimelineView& v, int pid_base) {
  const trace::TraceSet& traces = *v.traces;
  const graph::BuiltGraph& built = *v.built;
  const Simulation& sim = *v.sim;
  const graph::Dfg& dfg = built.dfg;
  const auto& window = v.window;
  // How much later each op could have started without the replay ending later (slack.h).
  const IdVector<graph::NodeId, Nanos> slack = start_slack(dfg, sim);
  auto shown = [&](Nanos begin, Nanos end) {
    return !window || (begin < window->second && end > window->first) || (begin == end && begin == window->first);
  };
  // Ranks the graph has ops of (a scale-in graph, `--ranks N` below the trace's ranks, has the
  // first N only): the others get no process or thread names.
  std::set<int> ranks_in_graph;
  for (const graph::Node& n : dfg.nodes())
    if (n.kind != graph::NodeKind::kBarrier) ranks_in_graph.insert(n.rank);
  for (const trace::TraceRank& r : traces.ranks) {
    if (!ranks_in_graph.count(r.rank)) continue;
    w.raw(fmt::format(R"({{"ph":"M","name":"process_name","pid":{},"tid":0,"args":{{"name":{}}}}})", pid_base + r.rank,
                      chrome_string("rank " + std::to_string(r.rank) + " (" + v.label + ")")));
    w.raw(fmt::format(R"({{"ph":"M","name":"process_sort_index","pid":{},"tid":0,"args":{{"sort_index":{}}}}})",
                      pid_base + r.rank, pid_base + r.rank));
  }
  for (const graph::TrackId t : dfg.track_ids()) {
    const graph::Track& track = dfg.track(t);
    if (!ranks_in_graph.count(track.rank)) continue;
    const std::string name = track.kind == trace::ResourceKind::kGpuStream
                                 ? fmt::format("GPU {} stream {}", track.pid, track.tid)
                                 : (track.name.empty() ? fmt::format("thread {}", track.tid) : track.name);
    w.raw(fmt::format(R"({{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":{}}}}})", pid_base + track.rank,
                      chrome_tid(t), chrome_string(name)));
    w.raw(fmt::format(R"({{"ph":"M","name":"thread_sort_index","pid":{},"tid":{},"args":{{"sort_index":{}}}}})",
                      pid_base + track.rank, chrome_tid(t), (track.kind == trace::ResourceKind::kGpuStream ? 1000000 : 0) + t.value));
  }
  // Enclosing CPU ranges first so that viewers nest the ops inside them.
  for (std::size_t ri = 0; ri < traces.ranks.size(); ++ri) {
    const trace::TraceRank& r = traces.ranks[ri];
    const graph::RankNodes& nodes = built.ranks[ri];
    for (const graph::EventRef i : IdRange<graph::EventRef>(r.events.size())) {
      const trace::Event& e = r.events[i.value];
      if (!trace::is_cpu_side(e.kind) || nodes.node_of_event[i].valid()) continue;
      const auto span = predicted_span(r, nodes, dfg, sim, i);
      if (!span || !shown(span->first, span->second)) continue;
      const graph::NodeId first = nodes.first_inside[i];
      w.slice(pid_base + r.rank, chrome_tid(dfg.node(first).track), traces.name(e), trace::to_string(e.kind), span->first,
              span->second - span->first, fmt::format(R"("measured_dur_us":{})", chrome_micros(e.dur)));
    }
  }
  for (const graph::NodeId id : dfg.node_ids()) {
    const graph::Node& n = dfg.node(id);
    // Untraced work is shown as what it is in the trace: the time between two ops of a thread.
    if (!graph::is_op(n.kind) || !n.track.valid() || !shown(sim.start[id], sim.end[id])) continue;
    // A node a what-if inserted has no trace name; its op table entry names it.
    const graph::OpDesc* op = dfg.op(id);
    const std::string_view name = n.name.value == 0 && op ? dfg.ops().name(op->name) : traces.strings.view(n.name);
    std::string args =
        fmt::format(R"("measured_dur_us":{},"slack_us":{})", chrome_micros(n.measured_duration), chrome_micros(slack[id]));
    if (v.op_type && !graph::is_cpu_op(n.kind))
      if (const std::string_view type = v.op_type(id); !type.empty()) args += R"(,"op_type":)" + chrome_string(type);
    w.slice(pid_base + n.rank, chrome_tid(n.track), name, graph::to_string(n.kind), sim.start[id],
            sim.end[id] - sim.start[id], args);
  }
  // Flow arrows from each collective's last-arriving participant to the others (ids unique per file).
  for (const graph::NodeId id : dfg.node_ids()) {
    if (dfg.node(id).kind != graph::NodeKind::kBarrier) continue;
    const graph::EdgeId cause = sim.start_cause[id];
    if (!cause.valid() || !shown(sim.start[id], sim.start[id] + 1)) continue;
    const graph::Node& last = dfg.node(dfg.edge(cause).src);
    dfg.for_each_out_edge(id, [&](graph::EdgeId e) {
      const graph::Node& peer = dfg.node(dfg.edge(e).dst);
      if (dfg.edge(e).dst == dfg.edge(cause).src) return;
      const std::uint64_t flow = w.next_flow();
      w.raw(fmt::format(R"({{"ph":"s","id":{},"pid":{},"tid":{},"ts":{},"name":"collective","cat":"collective"}})", flow,
                        pid_base + last.rank, chrome_tid(last.track), chrome_micros(sim.start[id])));
      w.raw(fmt::format(R"({{"ph":"f","bp":"e","id":{},"pid":{},"tid":{},"ts":{},"name":"collective","cat":"collective"}})",
                        flow, pid_base + peer.rank, chrome_tid(peer.track), chrome_micros(sim.start[id])));
    });
  }
  write_counters(w, v, pid_base, ranks_in_graph);
  write_critical_path(w, v, pid_base + kPathPid);
}

}  // namespace

void write_timeline(std::ostream& out, const std::vector<TimelineView>& views) {
  TimelineWriter w(out);
  w.begin();
  for (std::size_t v = 0; v < views.size(); ++v) write_view(w, views[v], static_cast<int>(v) * kViewPidStride);
  w.end();
}

void write_timeline(std::ostream& out, const trace::TraceSet& traces, const graph::BuiltGraph& built,
                    const Simulation& sim, std::optional<std::pair<Nanos, Nanos>> window) {
  write_timeline(out, {TimelineView{&traces, &built, &sim, "predicted", window, {}}});
}

}  // namespace dpro::replayer
