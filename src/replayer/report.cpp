#include "replayer/report.h"
#include "replayer/step_stats.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <set>

#include "core/error.h"

namespace dpro::replayer {

double RankIteration::error() const {
  return measured_ns > 0 ? static_cast<double>(predicted_ns - measured_ns) / static_cast<double>(measured_ns) : 0.0;
}

double IterationReport::job_error() const {
  return job_measured_ns > 0
             ? static_cast<double>(job_predicted_ns - job_measured_ns) / static_cast<double>(job_measured_ns)
             : 0.0;
}

std::optional<std::pair<Nanos, Nanos>> predicted_span(const trace::TraceRank& rank, const graph::RankNodes& nodes,
                                                      const graph::Dfg& dfg, const Simulation& sim,
                                                      graph::EventRef event) {
  return predicted_span(rank.events[event.value], nodes.first_inside[event], nodes.last_inside[event], dfg, sim);
}

std::optional<std::pair<Nanos, Nanos>> predicted_span(const trace::Event& e, graph::NodeId first, graph::NodeId last,
                                                      const graph::Dfg& dfg, const Simulation& sim) {
  if (!first.valid() || !last.valid()) return std::nullopt;
  const graph::Node& f = dfg.node(first);
  const graph::Node& l = dfg.node(last);
  const Nanos lead = f.measured_start - e.start;
  const Nanos tail = e.end() - (l.measured_start + l.measured_duration);
  return std::make_pair(sim.start[first] - lead, sim.end[last] + tail);
}

std::vector<std::vector<graph::NodeId>> rank_ops(const trace::TraceSet& traces, const graph::Dfg& dfg) {
  std::map<int, std::size_t> index_of_rank;
  for (std::size_t i = 0; i < traces.ranks.size(); ++i) index_of_rank[traces.ranks[i].rank] = i;
  std::vector<std::vector<graph::NodeId>> ops(traces.ranks.size());
  for (const graph::NodeId id : dfg.node_ids()) {
    const graph::Node& n = dfg.node(id);
    if (!graph::is_op(n.kind)) continue;
    if (auto it = index_of_rank.find(n.rank); it != index_of_rank.end()) ops[it->second].push_back(id);
  }
  return ops;
}

std::pair<Nanos, Nanos> recorded_span(const trace::TraceRank& rank) {
  Nanos first = INT64_MAX, last = INT64_MIN;
  for (const trace::Event& e : rank.events) {
    if (!trace::is_cpu_side(e.kind) && !trace::is_gpu_work(e.kind)) continue;
    first = std::min(first, e.start);
    last = std::max(last, e.end());
  }
  return {first, last};
}

std::optional<WindowSpan> whole_trace_span(std::pair<Nanos, Nanos> recorded, const std::vector<graph::NodeId>& nodes,
                                          const graph::Dfg& dfg, const Simulation& sim) {
  if (nodes.empty()) return std::nullopt;
  WindowSpan s{INT64_MAX, INT64_MIN, INT64_MAX, INT64_MIN, graph::NodeId::none()};
  Nanos first_op = INT64_MAX, last_op = INT64_MIN;
  for (graph::NodeId id : nodes) {
    const graph::Node& n = dfg.node(id);
    first_op = std::min(first_op, n.measured_start);
    last_op = std::max(last_op, n.measured_start + n.measured_duration);
    s.predicted_start = std::min(s.predicted_start, sim.start[id]);
    if (!s.last.valid() || sim.end[id] > s.predicted_end) {
      s.predicted_end = sim.end[id];
      s.last = id;
    }
  }
  s.measured_start = std::min(first_op, recorded.first);
  s.measured_end = std::max(last_op, recorded.second);
  s.predicted_start -= first_op - s.measured_start;
  s.predicted_end += s.measured_end - last_op;
  return s;
}

namespace {

// Order in which overlapping GPU work is attributed: time when a kernel computes is compute
// even if a transfer runs beside it (that transfer is hidden); communication shows only what
// no compute overlaps, and copies what neither overlaps.
constexpr std::array<Category, 3> kGpuPriority = {Category::kCompute, Category::kCommunication, Category::kCopies};

// GPU busy time per category (union over streams, kGpuPriority) and idle time of one rank
// inside [begin, end).
void gpu_usage(const ExecutionCategories& categories, const Simulation& sim, Nanos begin, Nanos end,
               RankIteration& out, const std::vector<graph::NodeId>& gpu_nodes) {
  struct Change {
    Nanos at;
    int priority;
    int delta;  // +1 an op starts, -1 it ends
  };
  std::vector<Change> changes;
  for (graph::NodeId id : gpu_nodes) {
    const Nanos s = std::max(sim.start[id], begin);
    const Nanos e = std::min(sim.end[id], end);
    if (e <= s) continue;
    const Category c = categories[id];
    const int priority = static_cast<int>(std::find(kGpuPriority.begin(), kGpuPriority.end(), c) - kGpuPriority.begin());
    changes.push_back({s, priority, +1});
    changes.push_back({e, priority, -1});
  }
  std::sort(changes.begin(), changes.end(), [](const Change& x, const Change& y) { return x.at < y.at; });
  std::array<int, kGpuPriority.size()> running{};
  Nanos busy = 0, last = begin;
  for (const Change& ch : changes) {
    const auto top = std::find_if(running.begin(), running.end(), [](int n) { return n > 0; });
    if (top != running.end()) {
      out.gpu_busy[kGpuPriority[top - running.begin()]] += ch.at - last;
      busy += ch.at - last;
    }
    last = ch.at;
    running[ch.priority] += ch.delta;
  }
  out.gpu_idle = (end - begin) - busy;
}

// The op that untraced work `work` comes before on its thread; none if there is none (an
// edited graph).
graph::NodeId op_after_untraced(const graph::Dfg& dfg, graph::NodeId work) {
  graph::NodeId next;
  dfg.for_each_out_edge(work, [&](graph::EdgeId e) {
    const graph::Edge& edge = dfg.edge(e);
    if (!next.valid() && edge.kind == graph::EdgeKind::kThreadOrder && graph::is_cpu_op(dfg.node(edge.dst).kind)) next = edge.dst;
  });
  return next;
}

std::vector<PathOp> path_ops(const trace::TraceSet& traces, const graph::Dfg& dfg,
                            const ExecutionCategories& categories, const std::vector<PathSegment>& path) {
  std::map<std::pair<std::string, int>, PathOp> by_op;
  std::map<std::pair<std::string, int>, std::set<graph::NodeId>> instances;
  for (const PathSegment& s : path) {
    if (!s.node.valid()) continue;
    // Untraced work is no op: its time is the gap before the op that follows it on its thread.
    const bool untraced = dfg.node(s.node).kind == graph::NodeKind::kUntraced;
    const graph::NodeId id = untraced ? op_after_untraced(dfg, s.node) : s.node;
    if (!id.valid()) continue;
    const graph::Node& n = dfg.node(id);
    if (n.kind == graph::NodeKind::kBarrier) continue;
    auto key = std::make_pair(std::string(traces.strings.view(n.name)), n.rank);
    PathOp& op = by_op[key];
    if (op.name.empty()) {
      op.name = key.first;
      op.rank = n.rank;
      op.category = categories[id];
    }
    (s.part == Part::kOwn && !untraced ? op.own : op.gap_before) += s.end - s.begin;
    instances[key].insert(id);
  }
  std::vector<PathOp> ops;
  for (auto& [key, op] : by_op) {
    op.calls = instances[key].size();
    ops.push_back(std::move(op));
  }
  std::stable_sort(ops.begin(), ops.end(), [](const PathOp& a, const PathOp& b) { return a.time() > b.time(); });
  return ops;
}

// Adds to `out` the GPU ops of one rank that started inside [begin, end) more than
// kUnresolvedWaitThreshold after their launch call, the launch edge deciding their start.
void find_unresolved_waits(const trace::TraceSet& traces, const graph::Dfg& dfg, const Simulation& sim,
                           const std::vector<graph::NodeId>& gpu_nodes, Nanos begin, Nanos end,
                           std::map<std::pair<std::string, int>, WaitingOp>& out) {
  for (graph::NodeId id : gpu_nodes) {
    if (sim.start[id] < begin || sim.start[id] >= end) continue;
    const graph::EdgeId cause = sim.start_cause[id];
    if (!cause.valid()) continue;
    const graph::Edge& e = dfg.edge(cause);
    // The wait after the edge was satisfied: a slow launch call's gap is the call's time.
    const Nanos since = sim.start[id] - (e.src_point == graph::Point::kStart ? sim.start[e.src] : sim.end[e.src]);
    const Nanos wait = since - std::max<Nanos>(e.gap, 0);
    const graph::Node& n = dfg.node(id);
    if (!is_unresolved_wait(n.kind, e.kind, wait)) continue;
    WaitingOp& op = out[{std::string(traces.strings.view(n.name)), n.rank}];
    op.name = traces.strings.view(n.name);
    op.rank = n.rank;
    ++op.count;
    op.total = saturating_add(op.total, wait);
  }
}

constexpr std::size_t kWaitingOpsListed = 5;

UnresolvedWaits summarize_waits(std::map<std::pair<std::string, int>, WaitingOp> by_op) {
  UnresolvedWaits w;
  for (auto& [key, op] : by_op) {
    w.count += op.count;
    w.total = saturating_add(w.total, op.total);
    w.ops.push_back(std::move(op));
  }
  std::stable_sort(w.ops.begin(), w.ops.end(), [](const WaitingOp& a, const WaitingOp& b) { return a.total > b.total; });
  if (w.ops.size() > kWaitingOpsListed) w.ops.resize(kWaitingOpsListed);
  return w;
}

}  // namespace

Report make_report(const trace::TraceSet& traces, const graph::BuiltGraph& built, const Simulation& sim,
                   const ReportOptions& options) {
  const graph::Dfg& dfg = built.dfg;
  Report report;
  report.ranks = traces.ranks.size();
  for (const trace::TraceRank& r : traces.ranks) {
    report.events += r.events.size();
    report.provenance.inputs.push_back(r.file);
    report.provenance.gpus.push_back(r.devices.empty() ? std::string() : r.devices.front().name);
    if (r.world_size) report.provenance.world_size = r.world_size;
  }
  for (const graph::Node& n : dfg.nodes()) {
    if (n.kind != graph::NodeKind::kUntraced) continue;
    ++report.untraced_nodes;
    report.untraced_ns += n.duration;
  }
  report.nodes = dfg.node_count() - report.untraced_nodes;
  report.edges = dfg.edge_count();
  report.build = built.stats;
  report.events_simulated = sim.events_processed;
  report.analysed = options.analysis;
  report.top_ops_shown = options.top_ops;
  report.per_step_shown = options.per_step;

  std::set<std::int64_t> numbers;
  for (const trace::TraceRank& r : traces.ranks) {
    for (const trace::Iteration& it : r.iterations) numbers.insert(it.number);
  }
  // Each rank's ops, read by the analysis and by the whole-trace window only (a report with the
  // analysis off on traces with steps, as the optimizer scores plans, does without them).
  const std::vector<std::vector<graph::NodeId>> ops_of_rank =
      options.analysis || numbers.empty() ? rank_ops(traces, dfg) : std::vector<std::vector<graph::NodeId>>(traces.ranks.size());
  const ExecutionCategories categories = options.analysis ? execution_categories(dfg) : ExecutionCategories{};
  std::vector<std::vector<graph::NodeId>> gpu_nodes(traces.ranks.size());
  for (std::size_t ri = 0; options.analysis && ri < ops_of_rank.size(); ++ri) {
    for (graph::NodeId id : ops_of_rank[ri])
      if (graph::on_gpu(dfg.node(id).kind)) gpu_nodes[ri].push_back(id);
  }
  if (options.iteration && !numbers.count(*options.iteration)) {
    std::string known;
    for (std::int64_t n : numbers) known += (known.empty() ? "" : ", ") + std::to_string(n);
    throw OptionError("iteration", std::to_string(*options.iteration),
                      numbers.empty() ? "the traces have no iterations (no ProfilerStep#N; --iteration-marker names another marker)"
                                      : "no such iteration; the traces have " + known,
                      traces.ranks.front().file);
  }
  auto add_window = [&](IterationReport it, auto span_of_rank) {
    Nanos meas_begin = INT64_MAX, meas_end = INT64_MIN, pred_begin = INT64_MAX, pred_end = INT64_MIN;
    graph::NodeId job_last;
    std::map<std::pair<std::string, int>, WaitingOp> waits;
    for (std::size_t ri = 0; ri < traces.ranks.size(); ++ri) {
      const std::optional<WindowSpan> span = span_of_rank(ri);
      if (!span) continue;
      RankIteration r;
      r.rank = traces.ranks[ri].rank;
      r.measured_ns = span->measured_end - span->measured_start;
      r.measured_start = span->measured_start;
      r.predicted_ns = span->predicted_end - span->predicted_start;
      r.predicted_start = span->predicted_start;
      if (options.analysis) {
        auto path = critical_path(dfg, sim, categories, span->last, graph::Point::kEnd, span->predicted_start);
        r.critical_path = breakdown_of(path, r.rank);
        // The measured tail after the last op: host time the trace does not break down.
        r.critical_path[Category::kCpuUntraced] += span->predicted_end - sim.end[span->last];
        gpu_usage(categories, sim, span->predicted_start, span->predicted_end, r, gpu_nodes[ri]);
        r.verdict = verdict_of(r.critical_path, r.predicted_ns - r.gpu_idle, r.predicted_ns);
        find_unresolved_waits(traces, dfg, sim, gpu_nodes[ri], span->predicted_start, span->predicted_end, waits);
      }
      meas_begin = std::min(meas_begin, span->measured_start);
      meas_end = std::max(meas_end, span->measured_end);
      pred_begin = std::min(pred_begin, span->predicted_start);
      if (span->predicted_end > pred_end) {
        pred_end = span->predicted_end;
        job_last = span->last;
        it.critical_rank = r.rank;
        it.verdict = r.verdict;
      }
      it.ranks.push_back(r);
    }
    if (it.ranks.empty()) return;
    it.job_measured_ns = meas_end - meas_begin;
    it.job_predicted_ns = pred_end - pred_begin;
    if (options.analysis) {
      auto path = critical_path(dfg, sim, categories, job_last, graph::Point::kEnd, pred_begin);
      it.job_critical_path = breakdown_of(path);
      it.job_critical_path[Category::kCpuUntraced] += pred_end - sim.end[job_last];
      it.path_ops = path_ops(traces, dfg, categories, path);
      it.unresolved = summarize_waits(std::move(waits));
    }
    report.iterations.push_back(std::move(it));
  };

  for (std::int64_t number : numbers) {
    if (options.iteration && number != *options.iteration) continue;
    IterationReport it;
    it.number = number;
    std::vector<const trace::Iteration*> steps(traces.ranks.size(), nullptr);  // this step on each rank
    for (std::size_t ri = 0; ri < traces.ranks.size(); ++ri) {
      const auto& its = traces.ranks[ri].iterations;
      auto step = std::find_if(its.begin(), its.end(), [&](const trace::Iteration& x) { return x.number == number; });
      if (step == its.end()) continue;
      steps[ri] = &*step;
      if (it.name.empty()) it.name = step->name;
    }
    add_window(std::move(it), [&](std::size_t ri) -> std::optional<WindowSpan> {
      const trace::Iteration* step = steps[ri];
      if (!step) return std::nullopt;
      const graph::EventRef marker{step->event};
      const auto span = predicted_span(traces.ranks[ri], built.ranks[ri], dfg, sim, marker);
      if (!span) return std::nullopt;
      return WindowSpan{step->start, step->end, span->first, span->second, built.ranks[ri].last_inside[marker]};
    });
  }

  // Traces without ProfilerStep#N: each rank's whole trace is the window (whole_trace_span).
  if (numbers.empty()) {
    IterationReport it;
    it.name = "whole trace (no ProfilerStep#N in the traces)";
    it.whole_trace = true;
    add_window(std::move(it), [&](std::size_t ri) {
      return whole_trace_span(recorded_span(traces.ranks[ri]), ops_of_rank[ri], dfg, sim);
    });
  }
  check_invariants(report);
  return report;
}

void check_invariants(const Report& report) {
  // A report that breaks these is a bug in dpro: it is never written (an internal error), never
  // shown as negative shares or categories that do not add up to the step.
  const auto non_negative = [](const Breakdown& b) {
    return std::all_of(std::begin(b.by_category), std::end(b.by_category), [](Nanos t) { return t >= 0; });
  };
  for (const IterationReport& it : report.iterations) {
    DPRO_CHECK(it.job_measured_ns >= 0 && it.job_predicted_ns >= 0);
    DPRO_CHECK(non_negative(it.job_critical_path));
    for (const RankIteration& r : it.ranks) {
      DPRO_CHECK(r.measured_ns >= 0 && r.predicted_ns >= 0);
      DPRO_CHECK(non_negative(r.critical_path) && non_negative(r.gpu_busy) && r.gpu_idle >= 0);
      if (!report.analysed) continue;
      DPRO_CHECK(r.critical_path.total() == r.predicted_ns);
      DPRO_CHECK(r.gpu_busy.total() + r.gpu_idle == r.predicted_ns);
    }
  }
}

namespace {

using nlohmann::json;

std::string unresolved_lines(const UnresolvedWaits& w) {
  if (w.count == 0) return "  unresolved waits: none\n";
  std::string out = fmt::format("  unresolved waits: {} GPU ops started more than {} after their launch, {} in all:",
                                w.count, format_duration(kUnresolvedWaitThreshold), format_duration(w.total));
  for (const WaitingOp& op : w.ops)
    out += fmt::format(" {} (rank {}, x{}, {});", op.name.substr(0, 60), op.rank, op.count, format_duration(op.total));
  return out + "\n";
}

json verdict_json(const Verdict& v) {
  json j = {{"bound", headline(v)}, {"text", describe(v)}, {"path_share", v.path_share},
            {"gpu_busy_share", v.gpu_busy_share}};
  if (v.peer >= 0) j["peer"] = v.peer;
  return j;
}

std::string per_record(const graph::ClassRemoval& c) {
  return c.ns_min == c.ns_max ? format_duration(c.ns_min)
                              : format_duration(c.ns_min) + " to " + format_duration(c.ns_max);
}

const char* source_text(graph::ProfilerCostRemoval::Source s) {
  switch (s) {
    case graph::ProfilerCostRemoval::Source::kCalibration: return "the traces' calibration";
    case graph::ProfilerCostRemoval::Source::kGiven: return "given";
    case graph::ProfilerCostRemoval::Source::kCalibrationAndGiven: return "the traces' calibration, classes given replacing it";
  }
  return "";
}

// One line: what the profiler's records cost per class, and what of it left the replay.
std::string profiler_cost_line(const graph::ProfilerCostRemoval& p) {
  std::string classes;
  for (const graph::ClassRemoval& c : p.classes)
    classes += fmt::format("{}{} {} records x {} = {} per step", classes.empty() ? "" : "; ", trace::to_string(c.record_class),
                           c.records, per_record(c), format_duration(p.cost_per_step(c)));
  if (p.kept)
    return fmt::format("profiler's own cost kept as recorded ({}: {}): durations are the profiled job's\n",
                       source_text(p.source), classes);
  std::string out = fmt::format(
      "profiler's own cost taken out of the CPU side ({}, {} of {} ranks): {}; removed {} per step from {} ops",
      source_text(p.source), p.ranks_with_costs, p.ranks, classes, format_duration(p.removed_per_step()), p.nodes_changed);
  if (p.clamped > 0)
    out += fmt::format(" ({} in all not removed: ops that lasted less than their records' cost)", format_duration(p.clamped));
  return out + "; predicted times are of the job without the profiler, measured ones of the profiled job\n";
}

nlohmann::json profiler_cost_json(const graph::ProfilerCostRemoval& p) {
  json classes = json::array();
  for (const graph::ClassRemoval& c : p.classes)
    classes.push_back({{"class", trace::to_string(c.record_class)},
                       {"records", c.records},
                       {"ns_each_min", c.ns_min},
                       {"ns_each_max", c.ns_max},
                       {"total_ns", c.cost},
                       {"per_step_ns", p.cost_per_step(c)}});
  const char* source = p.source == graph::ProfilerCostRemoval::Source::kCalibration ? "calibration"
                       : p.source == graph::ProfilerCostRemoval::Source::kGiven     ? "given"
                                                                                   : "calibration+given";
  return {{"kept", p.kept},
          {"source", source},
          {"ranks", p.ranks},
          {"ranks_with_costs", p.ranks_with_costs},
          {"steps", p.rank_steps},
          {"classes", classes},
          {"removed_ns", p.kept ? 0 : p.removed},
          {"removed_per_step_ns", p.kept ? 0 : p.removed_per_step()},
          {"not_removed_ns", p.kept ? 0 : p.clamped},
          {"ops_changed", p.kept ? 0 : p.nodes_changed}};
}

}  // namespace

std::pair<Nanos, Nanos> predicted_window(const IterationReport& it) {
  std::pair<Nanos, Nanos> w{0, 0};
  for (std::size_t k = 0; k < it.ranks.size(); ++k) {
    const RankIteration& r = it.ranks[k];
    const Nanos end = r.predicted_start + r.predicted_ns;
    w = k == 0 ? std::make_pair(r.predicted_start, end) : std::make_pair(std::min(w.first, r.predicted_start), std::max(w.second, end));
  }
  return w;
}

std::string percent(Nanos part, Nanos whole) {
  return whole > 0 ? fmt::format("{:.1f}%", 100.0 * static_cast<double>(part) / static_cast<double>(whole)) : "-";
}

std::string breakdown_line(const Breakdown& b) {
  const Nanos total = b.total();
  std::string line;
  for (int c = 0; c < kCategoryCount; ++c) {  // categories with no time left out, to keep one line
    if (b.by_category[c] != 0) line += fmt::format("{} {}  ", to_string(static_cast<Category>(c)), percent(b.by_category[c], total));
  }
  return line;
}

std::string render_text(const Report& report) {
  const std::string untraced =
      report.untraced_nodes == 0 ? "" : fmt::format(" and {} stretches of untraced CPU work", report.untraced_nodes);
  std::string out = fmt::format(
      "graph: {} ranks, {} events -> {} ops{}, {} dependencies; {} collective instances matched across ranks, "
      "{} collective kernels replayed as measured; {} blocking syncs\n",
      report.ranks, report.events, report.nodes, untraced, report.edges, report.build.collectives_matched,
      report.build.collectives_unmatched, report.build.blocking_calls);
  if (report.profiler_cost) out += profiler_cost_line(*report.profiler_cost);
  if (report.iterations.empty()) out += "nothing to compare: no replayed op lies in a ProfilerStep#N (or, without any, in the traces)\n";
  const bool blocks = report.per_step_shown || report.iterations.size() <= kStepBlocks;
  if (report.iterations.size() > 1) {
    out += "\n" + render_summary(report, step_stats(report), report.top_ops_shown);
    if (!blocks) out += fmt::format("  (a block per iteration: --per-step; one iteration: --iteration N)\n");
  }
  for (const IterationReport& it : report.iterations) {
    if (!blocks) break;
    out += fmt::format("\n{}\n  {:>6}  {:>12}  {:>12}  {:>8}\n", it.name, "rank", "measured", "predicted", "error");
    for (const RankIteration& r : it.ranks) {
      out += fmt::format("  {:>6}  {:>12}  {:>12}  {:>+7.2f}%\n", r.rank, format_duration(r.measured_ns),
                         format_duration(r.predicted_ns), 100.0 * r.error());
    }
    out += fmt::format("  {:>6}  {:>12}  {:>12}  {:>+7.2f}%\n", "job", format_duration(it.job_measured_ns),
                       format_duration(it.job_predicted_ns), 100.0 * it.job_error());
    out += fmt::format("  critical path (ends on rank {}): {}\n", it.critical_rank, breakdown_line(it.job_critical_path));
    out += fmt::format("  verdict: {}\n", describe(it.verdict));
    out += unresolved_lines(it.unresolved);
    if (!it.path_ops.empty() && report.top_ops_shown > 0)
      out += fmt::format("  top ops on the critical path:\n    {:>12}  {:>12}  {:<15}  {:<8} {:<6} {}\n", "own",
                         "gap before", "category", "rank", "calls", "name");
    for (std::size_t k = 0; k < std::min(it.path_ops.size(), report.top_ops_shown); ++k) {
      const PathOp& op = it.path_ops[k];
      out += fmt::format("    {:>12}  {:>12}  {:<15}  rank {:<3} x{:<5} {}\n", format_duration(op.own),
                         format_duration(op.gap_before), to_string(op.category), op.rank, op.calls,
                         op.name.substr(0, 90));
    }
    for (const RankIteration& r : it.ranks) {
      const Nanos step = r.predicted_ns;
      out += fmt::format("  rank {:>3} GPU: compute {}  communication {}  copies {}  idle {}   verdict: {}\n", r.rank,
                         percent(r.gpu_busy[Category::kCompute], step), percent(r.gpu_busy[Category::kCommunication], step),
                         percent(r.gpu_busy[Category::kCopies], step), percent(r.gpu_idle, step), headline(r.verdict));
    }
  }
  for (const std::string& note : report.notes) out += "\n" + note + "\n";
  return out;
}

nlohmann::json to_json(const Report& report) {
  auto breakdown_json = [](const Breakdown& b) {
    json j = json::object();
    for (int c = 0; c < kCategoryCount; ++c) j[std::string(to_string(static_cast<Category>(c))) + "_ns"] = b.by_category[c];
    if (!b.peer_wait_by_rank.empty()) {
      json peers = json::object();
      for (const auto& [rank, ns] : b.peer_wait_by_rank) peers[std::to_string(rank)] = ns;
      j["peer_wait_by_rank_ns"] = peers;
    }
    return j;
  };
  json iterations = json::array();
  for (const IterationReport& it : report.iterations) {
    json ranks = json::array();
    for (const RankIteration& r : it.ranks) {
      json gpu = json::object();
      for (Category c : {Category::kCompute, Category::kCommunication, Category::kCopies})
        gpu[std::string(to_string(c)) + "_ns"] = r.gpu_busy[c];
      gpu["idle_ns"] = r.gpu_idle;
      ranks.push_back({{"rank", r.rank},
                       {"measured_ns", r.measured_ns},
                       {"predicted_ns", r.predicted_ns},
                       {"error", r.error()},
                       {"critical_path", breakdown_json(r.critical_path)},
                       {"gpu", gpu},
                       {"verdict", verdict_json(r.verdict)}});
    }
    json ops = json::array();
    for (const PathOp& op : it.path_ops) {
      // time_ns (own + gap) and count (= calls) keep the keys older readers use.
      ops.push_back({{"name", op.name}, {"category", to_string(op.category)}, {"rank", op.rank},
                     {"time_ns", op.time()}, {"own_ns", op.own}, {"gap_before_ns", op.gap_before},
                     {"count", op.calls}, {"calls", op.calls}});
    }
    json waiting = json::array();
    for (const WaitingOp& op : it.unresolved.ops)
      waiting.push_back({{"name", op.name}, {"rank", op.rank}, {"count", op.count}, {"total_ns", op.total}});
    iterations.push_back({{"name", it.name},
                          {"number", it.whole_trace ? json(nullptr) : json(it.number)},
                          {"whole_trace", it.whole_trace},
                          {"ranks", ranks},
                          {"job",
                           {{"measured_ns", it.job_measured_ns},
                            {"predicted_ns", it.job_predicted_ns},
                            {"error", it.job_error()},
                            {"critical_rank", it.critical_rank},
                            {"critical_path", breakdown_json(it.job_critical_path)},
                            {"top_ops", ops},
                            {"top_ops_complete", true},
                            {"verdict", verdict_json(it.verdict)},
                            {"unresolved_waits",
                             {{"threshold_ns", kUnresolvedWaitThreshold},
                              {"count", it.unresolved.count},
                              {"total_ns", it.unresolved.total},
                              {"ops", waiting}}}}}});
  }
  const graph::BuildStats& s = report.build;
  json edges = json::object();
  for (int k = 0; k < graph::kEdgeKindCount; ++k) edges[graph::to_string(static_cast<graph::EdgeKind>(k))] = s.edges_by_kind[k];
  const Provenance& p = report.provenance;
  json summary = report.iterations.empty() ? json(nullptr) : to_json(report, step_stats(report));
  json j = {{"provenance",
             {{"inputs", p.inputs}, {"gpus", p.gpus}, {"world_size", p.world_size ? json(*p.world_size) : json(nullptr)}}},
          {"summary", summary},
          {"iterations", iterations},
          {"graph",
           {{"ranks", report.ranks},
            {"events", report.events},
            {"nodes", report.nodes},
            {"untraced_nodes", report.untraced_nodes},
            {"untraced_ns", report.untraced_ns},
            {"edges", report.edges},
            {"edges_by_kind", edges},
            {"collectives_matched", s.collectives_matched},
            {"collectives_unmatched", s.collectives_unmatched},
            {"blocking_syncs", s.blocking_calls},
            {"syncs_unresolved", s.syncs_unresolved},
            {"dependency_violations", s.violations},
            {"dependency_violation_ns", s.violation_total},
            {"inferred_edges_dropped", s.dropped_edges},
            {"slow_launches", s.slow_launches},
            {"stream_waits_by_timing", s.stream_waits_by_timing},
            {"launch_queue",
             {{"depth", s.launch_queue_depth},
              {"estimated", s.launch_queue_estimated},
              {"launches_blocked", s.launches_blocked},
              {"contradicted", s.launch_queue_contradicted}}}}},
          {"replay", {{"events_simulated", report.events_simulated}, {"seconds", report.replay_seconds}}},
          {"notes", report.notes}};
  if (report.profiler_cost) j["profiler_cost"] = profiler_cost_json(*report.profiler_cost);
  return j;
}

}  // namespace dpro::replayer
