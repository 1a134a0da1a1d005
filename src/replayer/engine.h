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
  bool causes = true;  // start_cause and end_cause hold one edge per node; else they are empty
};

// What a run records. kTimesAndCauses: everything above, the events handled in (time, insertion
// sequence) order. kTimes: start, end, makespan and events_processed, equal to the ordered run's
// to the ns, and no causes (start_cause and end_cause left empty, Simulation::causes false).
// Why the times do not depend on the order: a node's start is its release plus delay (a root) or
// the largest of (predecessor's time + gap) over its start-edges, plus its delay; its end is the
// larger of start + duration and the largest of (predecessor's time + gap) over its end-edges.
// Each is fixed once all its edges have been notified, and the engine handles a node's start or
// end only then, in either mode; so the times are the graph's longest paths, whatever the order.
// The order decides only which of several equal candidates is the cause (the first notified),
// and every event is handled once in either mode, so events_processed is the same too. The
// optimizer's scores read only times (report with analysis off); the critical path, timelines
// and the analysis read causes and need kTimesAndCauses.
enum class Record { kTimesAndCauses, kTimes };

// Replays graphs, keeping its working memory between runs (the optimizer and what-if sweeps
// replay many variants of one graph). The returned reference is valid until the next run().
// Throws InputError if some node never runs (a dependency cycle the builder did not catch), or
// if the graph's durations, delays, edge gaps and release times could add up to more than
// kMaxReplayNanos (core/time.h): every time it computes then fits the clock.
class Simulator {
 public:
  Simulator();
  ~Simulator();
  const Simulation& run(const graph::Dfg& dfg, Record record = Record::kTimesAndCauses);

 private:
  class Engine;
  friend Simulation simulate(const graph::Dfg& dfg, Record record);
  std::unique_ptr<Engine> engine_;
};

// One replay with a fresh Simulator.
Simulation simulate(const graph::Dfg& dfg, Record record = Record::kTimesAndCauses);

}  // namespace dpro::replayer
