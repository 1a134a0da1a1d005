#include "replayer/timeline.h"

#include <set>

#include <fmt/format.h>

#include "replayer/report.h"
#include "trace/chrome_json.h"

namespace dpro::replayer {
namespace {

using trace::chrome_micros;
using trace::chrome_string;

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
                    const Simulation& sim) {
  const graph::Dfg& dfg = built.dfg;
  TimelineWriter w(out);
  w.begin();
  // Ranks the graph has ops of (a scale-in graph, `--ranks N` below the trace's ranks, has the
  // first N only): the others get no process or thread names.
  std::set<int> ranks_in_graph;
  for (graph::NodeId id = 0; id < dfg.node_count(); ++id)
    if (dfg.node(id).kind != graph::NodeKind::kBarrier) ranks_in_graph.insert(dfg.node(id).rank);
  for (const trace::TraceRank& r : traces.ranks) {
    if (!ranks_in_graph.count(r.rank)) continue;
    w.raw(fmt::format(R"({{"ph":"M","name":"process_name","pid":{},"tid":0,"args":{{"name":{}}}}})", r.rank,
                      chrome_string("rank " + std::to_string(r.rank) + " (predicted)")));
    w.raw(fmt::format(R"({{"ph":"M","name":"process_sort_index","pid":{},"tid":0,"args":{{"sort_index":{}}}}})", r.rank, r.rank));
  }
  for (std::uint32_t t = 0; t < dfg.tracks().size(); ++t) {
    const graph::Track& track = dfg.tracks()[t];
    if (!ranks_in_graph.count(track.rank)) continue;
    const std::string name = track.kind == trace::ResourceKind::kGpuStream
                                 ? fmt::format("GPU {} stream {}", track.pid, track.tid)
                                 : (track.name.empty() ? fmt::format("thread {}", track.tid) : track.name);
    w.raw(fmt::format(R"({{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":{}}}}})", track.rank, t + 1, chrome_string(name)));
    w.raw(fmt::format(R"({{"ph":"M","name":"thread_sort_index","pid":{},"tid":{},"args":{{"sort_index":{}}}}})", track.rank,
                      t + 1, (track.kind == trace::ResourceKind::kGpuStream ? 1000000 : 0) + t));
  }
  // Enclosing CPU ranges first so that viewers nest the ops inside them.
  for (std::size_t ri = 0; ri < traces.ranks.size(); ++ri) {
    const trace::TraceRank& r = traces.ranks[ri];
    const graph::RankNodes& nodes = built.ranks[ri];
    for (std::uint32_t i = 0; i < r.events.size(); ++i) {
      const trace::Event& e = r.events[i];
      if (!trace::is_cpu_side(e.kind) || nodes.node_of_event[i] != graph::kNone) continue;
      const auto span = predicted_span(r, nodes, dfg, sim, i);
      if (!span) continue;
      const graph::NodeId first = nodes.first_inside[i];
      w.slice(r.rank, dfg.node(first).track + 1, traces.name(e), trace::to_string(e.kind), span->first,
              span->second - span->first, fmt::format(R"("measured_dur_us":{})", chrome_micros(e.dur)));
    }
  }
  for (graph::NodeId id = 0; id < dfg.node_count(); ++id) {
    const graph::Node& n = dfg.node(id);
    if (n.kind == graph::NodeKind::kBarrier || n.track == graph::kNone) continue;
    w.slice(n.rank, n.track + 1, traces.strings.view(n.name), graph::to_string(n.kind), sim.start[id],
            sim.end[id] - sim.start[id], fmt::format(R"("measured_dur_us":{})", chrome_micros(n.measured_duration)));
  }
  // Flow arrows from each collective's last-arriving participant to the others.
  std::uint64_t flow = 1;
  for (graph::NodeId id = 0; id < dfg.node_count(); ++id) {
    if (dfg.node(id).kind != graph::NodeKind::kBarrier) continue;
    const graph::EdgeId cause = sim.start_cause[id];
    if (cause == graph::kNone) continue;
    const graph::Node& last = dfg.node(dfg.edge(cause).src);
    dfg.for_each_out_edge(id, [&](graph::EdgeId e) {
      const graph::Node& peer = dfg.node(dfg.edge(e).dst);
      if (dfg.edge(e).dst == dfg.edge(cause).src) return;
      w.raw(fmt::format(R"({{"ph":"s","id":{},"pid":{},"tid":{},"ts":{},"name":"collective","cat":"collective"}})", flow,
                        last.rank, last.track + 1, chrome_micros(sim.start[id])));
      w.raw(fmt::format(R"({{"ph":"f","bp":"e","id":{},"pid":{},"tid":{},"ts":{},"name":"collective","cat":"collective"}})",
                        flow, peer.rank, peer.track + 1, chrome_micros(sim.start[id])));
      ++flow;
    });
  }
  w.end();
}

}  // namespace dpro::replayer
