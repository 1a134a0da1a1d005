#pragma once
// The discrete-event engine. It replays a finalized Dfg under the timing contract stated in
// graph/dfg.h: events (a node starting, a node ending) are processed in (time, insertion
// sequence) order, so identical inputs give identical runs. Every node records which
// dependency decided its start and its end, for the critical path.
#include <cstdint>
#include <memory>
#include <vector>

#include "graph/dfg.h"

namespace dpro::replayer {

struct Simulation {
  IdVector<graph::NodeId, Nanos> start;  // replay clock (ns since Dfg::origin())
  IdVector<graph::NodeId, Nanos> end;
  // The edge that decided a node's start (none: its release time) and end (none: its own
  // duration after its start).
  IdVector<graph::NodeId, graph::EdgeId> start_cause;
  IdVector<graph::NodeId, graph::EdgeId> end_cause;
  std::uint64_t events_processed = 0;
  Nanos makespan = 0;  // latest end

};

// Replays graphs, keeping its working memory between runs (the optimizer and what-if sweeps
// replay many variants of one graph). The returned reference is valid until the next run().
// Throws InputError if some node never runs (a dependency cycle the builder did not catch), or
// if the graph's durations, delays, edge gaps and release times could add up to more than
// kMaxReplayNanos (core/time.h): every time it computes then fits the clock.
class Simulator {
 public:
  Simulator();
  ~Simulator();
  const Simulation& run(const graph::Dfg& dfg);

 private:
  class Engine;
  friend Simulation simulate(const graph::Dfg& dfg);
  std::unique_ptr<Engine> engine_;
};

// One replay with a fresh Simulator.
Simulation simulate(const graph::Dfg& dfg);

}  // namespace dpro::replayer
