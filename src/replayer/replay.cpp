#include "replayer/replay.h"

#include <chrono>

namespace dpro::replayer {

Replay replay_traces(const trace::TraceSet& traces, const ReplayOptions& options, Logger& log) {
  Replay r;
  r.graph = graph::build_graph(traces, options.build, log);
  std::optional<graph::ProfilerCostRemoval> profiler_cost = graph::remove_profiler_cost(traces, r.graph, options.profiler_cost);
  const auto t0 = std::chrono::steady_clock::now();
  r.simulation = simulate(r.graph.dfg);
  const auto t1 = std::chrono::steady_clock::now();
  r.report = make_report(traces, r.graph, r.simulation, options.report);
  r.report.replay_seconds = std::chrono::duration<double>(t1 - t0).count();
  r.report.profiler_cost = std::move(profiler_cost);
  return r;
}

}  // namespace dpro::replayer
