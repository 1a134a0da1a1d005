#pragma once
// Writes the simulated timeline as Chrome trace JSON (opens in ui.perfetto.dev and
// chrome://tracing): one process per rank, one track per CPU thread and GPU stream, every
// replayed op plus the CPU ranges that enclose them (ProfilerStep#N, aten::*), at predicted
// times. Collective barriers appear as flow arrows between the participants.
#include <optional>
#include <ostream>
#include <utility>

#include "graph/builder.h"
#include "replayer/engine.h"
#include "trace/event.h"

namespace dpro::replayer {

// `window`: only what overlaps [first, second) of the replay clock (one iteration: see
// report.h's predicted_window); everything when absent.
void write_timeline(std::ostream& out, const trace::TraceSet& traces, const graph::BuiltGraph& built,
                    const Simulation& sim, std::optional<std::pair<Nanos, Nanos>> window = std::nullopt);

}  // namespace dpro::replayer
