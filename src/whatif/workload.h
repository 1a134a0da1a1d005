#pragma once
// A workload: the traces of one job and the dataflow graph built from them, travelling together.
// Rewrites edit the graph of a copy (the traces are shared, never edited): op durations, nodes
// and edges, and for a scale-in the ranks the graph covers.
#include <memory>

#include "graph/builder.h"
#include "trace/event.h"

namespace dpro::whatif {

struct Workload {
  std::shared_ptr<const trace::TraceSet> traces;  // never null
  graph::BuiltGraph graph;                        // per-rank node ranges parallel to traces->ranks
};

}  // namespace dpro::whatif
