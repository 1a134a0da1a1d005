#include "replayer/timeline.h"

#include <set>

#include <fmt/format.h>

#include "replayer/report.h"
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
  void slice(int pid, std::uint32_t tid, std::string_view name, const char* cat, Nanos start, Nanos dur,
             const std::string& args) {
    raw(fmt::format(R"({{"ph":"X","pid":{},"tid":{},"ts":{},"dur":{},"name":{},"cat":"{}","args":{{{}}}}})", pid, tid,
                    chrome_micros(start), chrome_micros(dur), chrome_string(name), cat, args));
  }

 private:
  std::ostream& out_;
  trace::ChromeEventList events_;
};

}  // namespace

void write_timeline(std::ostream& out, const trace::TraceSet& traces, const graph::BuiltGraph& built,
                    const Simulation& sim, std::optional<std::pair<Nanos, Nanos>> window) {
  const graph::Dfg& dfg = built.dfg;
  auto shown = [&](Nanos begin, Nanos end) {
    return !window || (begin < window->second && end > window->first) || (begin == end && begin == window->first);
  };
  TimelineWriter w(out);
  w.begin();
  // Ranks the graph has ops of (a scale-in graph, `--ranks N` below the trace's ranks, has the
  // first N only): the others get no process or thread names.
  std::set<int> ranks_in_graph;
  for (const graph::Node& n : dfg.nodes())
    if (n.kind != graph::NodeKind::kBarrier) ranks_in_graph.insert(n.rank);
  for (const trace::TraceRank& r : traces.ranks) {
    if (!ranks_in_graph.count(r.rank)) continue;
    w.raw(fmt::format(R"({{"ph":"M","name":"process_name","pid":{},"tid":0,"args":{{"name":{}}}}})", r.rank,
                      chrome_string("rank " + std::to_string(r.rank) + " (predicted)")));
    w.raw(fmt::format(R"({{"ph":"M","name":"process_sort_index","pid":{},"tid":0,"args":{{"sort_index":{}}}}})", r.rank, r.rank));
  }
  for (const graph::TrackId t : dfg.track_ids()) {
    const graph::Track& track = dfg.track(t);
    if (!ranks_in_graph.count(track.rank)) continue;
    const std::string name = track.kind == trace::ResourceKind::kGpuStream
                                 ? fmt::format("GPU {} stream {}", track.pid, track.tid)
                                 : (track.name.empty() ? fmt::format("thread {}", track.tid) : track.name);
    w.raw(fmt::format(R"({{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":{}}}}})", track.rank, chrome_tid(t), chrome_string(name)));
    w.raw(fmt::format(R"({{"ph":"M","name":"thread_sort_index","pid":{},"tid":{},"args":{{"sort_index":{}}}}})", track.rank,
                      chrome_tid(t), (track.kind == trace::ResourceKind::kGpuStream ? 1000000 : 0) + t.value));
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
      w.slice(r.rank, chrome_tid(dfg.node(first).track), traces.name(e), trace::to_string(e.kind), span->first,
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
    w.slice(n.rank, chrome_tid(n.track), name, graph::to_string(n.kind), sim.start[id],
            sim.end[id] - sim.start[id], fmt::format(R"("measured_dur_us":{})", chrome_micros(n.measured_duration)));
  }
  // Flow arrows from each collective's last-arriving participant to the others.
  std::uint64_t flow = 1;
  for (const graph::NodeId id : dfg.node_ids()) {
    if (dfg.node(id).kind != graph::NodeKind::kBarrier) continue;
    const graph::EdgeId cause = sim.start_cause[id];
    if (!cause.valid() || !shown(sim.start[id], sim.start[id] + 1)) continue;
    const graph::Node& last = dfg.node(dfg.edge(cause).src);
    dfg.for_each_out_edge(id, [&](graph::EdgeId e) {
      const graph::Node& peer = dfg.node(dfg.edge(e).dst);
      if (dfg.edge(e).dst == dfg.edge(cause).src) return;
      w.raw(fmt::format(R"({{"ph":"s","id":{},"pid":{},"tid":{},"ts":{},"name":"collective","cat":"collective"}})", flow,
                        last.rank, chrome_tid(last.track), chrome_micros(sim.start[id])));
      w.raw(fmt::format(R"({{"ph":"f","bp":"e","id":{},"pid":{},"tid":{},"ts":{},"name":"collective","cat":"collective"}})",
                        flow, peer.rank, chrome_tid(peer.track), chrome_micros(sim.start[id])));
      ++flow;
    });
  }
  w.end();
}

}  // namespace dpro::replayer
