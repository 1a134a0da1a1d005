#pragma once
// Writes the simulated timeline as Chrome trace JSON (opens in ui.perfetto.dev and
// chrome://tracing): one process per rank, one track per CPU thread and GPU stream, every
// replayed op plus the CPU ranges that enclose them (ProfilerStep#N, aten::*), at predicted
// times. Collective barriers appear as flow arrows between the participants. Per rank, two
// counters: the GPU's busy streams, and the launch queue's depth (GPU ops launched and not yet
// finished). Per view, a "critical path" process: the replay's critical path walked back from its
// last op, one slice per segment, named by its category and op.
//
// Several views (a baseline and a what-if) go into one file side by side: view v's rank r is
// process v x kViewPidStride + r, its critical path process v x kViewPidStride + kPathPid.
//
// Each op's args: measured_dur_us (its duration in the trace), slack_us (how much later it could
// have started without the view's replay ending later: slack.h; 0 on the critical path), and
// op_type for GPU ops when the view has an op_type function.
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "graph/builder.h"
#include "replayer/engine.h"
#include "trace/event.h"

namespace dpro::replayer {

inline constexpr int kPathPid = 1 << 20;            // above every rank (ranks are < 2^20)
inline constexpr int kViewPidStride = 1 << 21;

struct TimelineView {
  const trace::TraceSet* traces = nullptr;
  const graph::BuiltGraph* built = nullptr;
  const Simulation* sim = nullptr;
  std::string label = "predicted";  // in each process name: "rank 3 (predicted)"
  // Only what overlaps [first, second) of this view's replay clock (one iteration: report.h's
  // predicted_window); everything when absent.
  std::optional<std::pair<Nanos, Nanos>> window;
  // Per GPU op, a type written as its "op_type" arg (the cost model's kernel types: the caller
  // passes costmodel::kernel_types, which the replayer does not depend on); none when empty or
  // when it returns an empty name.
  std::function<std::string_view(graph::NodeId)> op_type;
};

void write_timeline(std::ostream& out, const std::vector<TimelineView>& views);

// One view, labelled "predicted".
void write_timeline(std::ostream& out, const trace::TraceSet& traces, const graph::BuiltGraph& built,
                    const Simulation& sim, std::optional<std::pair<Nanos, Nanos>> window = std::nullopt);

}  // namespace dpro::replayer
