#pragma once
// The replay report: per iteration (for traces without ProfilerStep#N, for the whole trace),
// measured vs predicted step time of every rank and of the job, the critical path and its
// breakdown, and GPU busy time. Computing it (make_report) is
// separate from rendering it (render_text, to_json).
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "graph/builder.h"
#include "graph/profiler_cost.h"
#include "replayer/critical_path.h"
#include "replayer/engine.h"
#include "replayer/verdict.h"
#include "trace/event.h"

namespace dpro::replayer {

struct RankIteration {
  int rank = 0;
  Nanos measured_ns = 0;
  Nanos predicted_ns = 0;
  Nanos measured_start = 0;   // trace clock
  Nanos predicted_start = 0;  // replay clock
  Breakdown critical_path;    // over the rank's predicted step; other ranks' ops are peer_wait
  // GPU time per category inside the predicted step, a union over streams: time when several
  // streams run is counted once, for the first of compute, communication, copies running
  // (gpu_usage in report.cpp), so gpu_busy's compute + communication + copies + gpu_idle is the
  // predicted step time.
  Breakdown gpu_busy;
  Nanos gpu_idle = 0;         // predicted step time with no GPU op running
  Verdict verdict;            // from critical_path and the GPU's busy time
  double error() const;       // (predicted - measured) / measured
};

// An op (by name and rank) on the critical path: the time its calls ran on the path, and,
// separately, the time the path waited before they started (untraced CPU time, launch latency,
// unresolved waits, a stream held), so a cheap call after a long gap is not blamed for the gap.
struct PathOp {
  std::string name;
  Category category = Category::kIdle;  // of the op's own time (execution_categories)
  int rank = 0;
  Nanos own = 0;
  Nanos gap_before = 0;
  std::size_t calls = 0;  // distinct op instances (nodes) on the path
  Nanos time() const { return own + gap_before; }
};

// GPU ops of a step that started more than kUnresolvedWaitThreshold after their launch call,
// with no other edge to explain it (critical_path.h), grouped by name and rank.
struct WaitingOp {
  std::string name;
  int rank = 0;
  std::size_t count = 0;
  Nanos total = 0;  // launch-to-start time over its waits
};
struct UnresolvedWaits {
  std::size_t count = 0;  // over all ranks' GPU ops in the step, on the critical path or not
  Nanos total = 0;
  std::vector<WaitingOp> ops;  // most total time first, the top few
};

struct IterationReport {
  std::string name;  // "ProfilerStep#10"
  std::int64_t number = 0;
  bool whole_trace = false;  // the traces have no ProfilerStep#N: this window is all of each rank's trace
  std::vector<RankIteration> ranks;
  Nanos job_measured_ns = 0;
  Nanos job_predicted_ns = 0;
  int critical_rank = 0;  // rank whose step ends last in the replay
  Breakdown job_critical_path;  // every rank's ops in their own category (no peer_wait)
  // Every op on the critical path, most time first (the text report lists Report::top_ops_shown of
  // them; the JSON report all, so that `compare` sees every op of both reports).
  std::vector<PathOp> path_ops;
  UnresolvedWaits unresolved;
  Verdict verdict;  // the critical rank's: what held up the step that ended last
  double job_error() const;
};

// What job a report describes, so that two reports can be checked to be of the same job: the
// trace file of each rank, its GPU's name ("" when the trace does not say) and the world size the
// traces give.
struct Provenance {
  std::vector<std::string> inputs;
  std::vector<std::string> gpus;
  std::optional<int> world_size;
};

struct Report {
  Provenance provenance;
  std::size_t ranks = 0;
  std::size_t events = 0;
  std::size_t nodes = 0;           // ops and barriers, not untraced work
  std::size_t untraced_nodes = 0;  // kUntraced nodes, and their time
  Nanos untraced_ns = 0;
  std::size_t edges = 0;
  graph::BuildStats build;
  std::uint64_t events_simulated = 0;
  double replay_seconds = 0;
  std::vector<IterationReport> iterations;
  std::vector<std::string> notes;  // what-if summaries and other remarks
  // The profiler's own cost taken out of the CPU side before the replay (graph/profiler_cost.h),
  // or kept; none when the traces carry no cost and none was given.
  std::optional<graph::ProfilerCostRemoval> profiler_cost;
  bool analysed = true;  // ReportOptions::analysis: false when only the times were computed
  std::size_t top_ops_shown = 10;  // ReportOptions::top_ops: the path ops the text report lists
  bool per_step_shown = false;     // ReportOptions::per_step
};

inline constexpr std::size_t kStepBlocks = 3;

struct ReportOptions {
  std::optional<std::int64_t> iteration;  // only this ProfilerStep number
  std::size_t top_ops = 10;  // of the critical path's ops, how many the text report lists
  // The text report gives a block per iteration for every report of at most kStepBlocks
  // iterations; for more, a summary across them (step_stats.h) and these blocks only when asked.
  bool per_step = false;
  // false: the times only (measured and predicted per rank and job); no critical path, breakdown,
  // verdict, waits or top ops (they stay empty). A search that scores many plans needs no more.
  bool analysis = true;
};

// The iteration's predicted span in replay time: from the earliest rank's step start to the latest
// rank's step end.
std::pair<Nanos, Nanos> predicted_window(const IterationReport& it);

// Throws InputError if options.iteration names a step that no rank has.
Report make_report(const trace::TraceSet& traces, const graph::BuiltGraph& built, const Simulation& sim,
                   const ReportOptions& options);

// The report's invariants (no negative time; each rank's critical-path categories, and its GPU's
// busy categories with its idle time, add up to its predicted step): a DPRO_CHECK failure, an
// internal error, when broken. make_report checks them before it returns.
void check_invariants(const Report& report);

std::string render_text(const Report& report);
nlohmann::json to_json(const Report& report);
// "12.5%" of `whole` ("-" when whole is 0); a breakdown's categories with time, as shares, on one line.
std::string percent(Nanos part, Nanos whole);
std::string breakdown_line(const Breakdown& b);

// Predicted [start, end) of a CPU event that encloses nodes (e.g. a ProfilerStep), in replay
// time: the measured lead and tail around its first and last node are kept.
std::optional<std::pair<Nanos, Nanos>> predicted_span(const trace::TraceRank& rank, const graph::RankNodes& nodes,
                                                      const graph::Dfg& dfg, const Simulation& sim,
                                                      graph::EventRef event);
// The same for CPU event `e` whose first and last enclosed nodes are `first` and `last` of
// `dfg` (a graph whose nodes keep the measured times of the trace, e.g. a replicated one).
std::optional<std::pair<Nanos, Nanos>> predicted_span(const trace::Event& e, graph::NodeId first, graph::NodeId last,
                                                      const graph::Dfg& dfg, const Simulation& sim);

// The ops of each trace rank in `dfg` (indexed like traces.ranks; barriers, which belong to no
// rank, and untraced work excluded).
std::vector<std::vector<graph::NodeId>> rank_ops(const trace::TraceSet& traces, const graph::Dfg& dfg);

// One rank's part of a reported window, measured (trace clock) and replayed (replay clock), and
// the node the replayed window ends on (the critical path is traced back from it).
struct WindowSpan {
  Nanos measured_start, measured_end, predicted_start, predicted_end;
  graph::NodeId last;
};
// First start and last end of everything `rank` recorded on its CPU threads and GPU streams.
std::pair<Nanos, Nanos> recorded_span(const trace::TraceRank& rank);
// For traces without ProfilerStep#N (torch.profiler used without a schedule, a capture of one
// region): all of a rank's trace as one window, so that its replay and every what-if still have
// a time to compare. Measured: `recorded` (recorded_span of the rank); replayed: the span of
// `nodes` (the rank's ops in `dfg`, barriers excluded), keeping the measured lead before the
// first op and tail after the last. nullopt if `nodes` is empty.
std::optional<WindowSpan> whole_trace_span(std::pair<Nanos, Nanos> recorded, const std::vector<graph::NodeId>& nodes,
                                          const graph::Dfg& dfg, const Simulation& sim);

}  // namespace dpro::replayer
