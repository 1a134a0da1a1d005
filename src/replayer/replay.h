#pragma once
// The replayer's facade: traces in, report out. Builds the global dataflow graph, simulates
// it with measured op costs, and reports predicted vs measured iteration times.
#include "core/log.h"
#include "graph/builder.h"
#include "graph/profiler_cost.h"
#include "replayer/engine.h"
#include "replayer/report.h"
#include "trace/event.h"

namespace dpro::replayer {

struct ReplayOptions {
  graph::BuildOptions build;
  // The profiler's own cost: taken out of the CPU side where the traces carry it (or it is
  // given), before the replay; see graph/profiler_cost.h.
  graph::ProfilerCostOptions profiler_cost;
  ReportOptions report;
};

struct Replay {
  graph::BuiltGraph graph;
  Simulation simulation;
  Report report;
};

Replay replay_traces(const trace::TraceSet& traces, const ReplayOptions& options, Logger& log);

// Convenience for callers that only need the report.
inline Report replay_trace_set(const trace::TraceSet& traces, const ReplayOptions& options, Logger& log) {
  return replay_traces(traces, options, log).report;
}

}  // namespace dpro::replayer
