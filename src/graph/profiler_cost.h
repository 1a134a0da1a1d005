#pragma once
// Taking the profiler's own cost out of a replay. Every record a profiler writes costs the host
// of the traced job some time (CUPTI fills an API record around each recorded call, an activity
// record for each kernel it launches), so under the profiler a launch-bound job's CPU side ran
// slower than without it, and a replay of its capture predicts the profiled job. With the cost
// of each record class known (trace::RecordCosts: dpro-profile's calibration in the trace, or
// given by the user), this pass lowers the replay duration of each CPU node (runtime/driver calls,
// CPU ops) by the cost of the records it paid for, never below 0; measured_duration keeps the
// recorded time. A replay of the graph then predicts the job without the profiler.
//
// Who pays for a record: a call or CPU op that is a node pays for its own; a call nested inside a
// runtime-call node (a driver call under cudaLaunchKernel) is paid by that node; an enclosing CPU
// op that is no node (aten::linear around its launches) by the first node inside it; GPU work
// (kernels, copies, sets) and synchronisation records by the call with their correlation id.
#include <cstddef>
#include <optional>
#include <vector>

#include "core/time.h"
#include "graph/builder.h"
#include "trace/event.h"
#include "trace/record_cost.h"

namespace dpro::graph {

struct ProfilerCostOptions {
  bool keep = false;  // durations as recorded: the traces' calibration is reported, not used
  // Costs given by hand: on every rank they replace the trace's calibration class by class.
  std::optional<trace::RecordCosts> given;
};

// One record class, over every rank with a cost for it.
struct ClassRemoval {
  trace::RecordClass record_class = trace::RecordClass::kRuntime;
  std::size_t records = 0;         // records of the class paid by CPU nodes
  Nanos ns_min = 0, ns_max = 0;    // cost per record (each rank has its own calibration)
  Nanos cost = 0;                  // records x cost per record
  Nanos cost_in_steps = 0;         // of `cost`, paid by nodes that started inside an iteration
};

struct ProfilerCostRemoval {
  enum class Source { kCalibration, kGiven, kCalibrationAndGiven };
  Source source = Source::kCalibration;
  bool kept = false;                   // asked to keep durations: nothing was removed, the
                                       // figures below say what would have been
  std::size_t ranks = 0;               // ranks of the traces
  std::size_t ranks_with_costs = 0;
  std::size_t rank_steps = 0;          // (rank, iteration) pairs of those ranks: the per-step divisor
  std::size_t nodes_changed = 0;
  std::vector<ClassRemoval> classes;   // classes with a cost on some rank, in RecordClass order
  Nanos removed = 0;                   // taken out of node durations
  Nanos removed_in_steps = 0;
  Nanos clamped = 0;                   // not taken: nodes that lasted less than their records' cost

  // Per (rank, iteration): a mean over the ranks with costs (for one rank: per step).
  Nanos removed_per_step() const;
  Nanos cost_per_step(const ClassRemoval& c) const;
};

// Lowers the CPU nodes' durations of `built` (made from `traces`) by their records' cost.
// nullopt, and the graph untouched, when no rank has a cost (no calibration in the traces and
// none given). With options.keep the graph is untouched too and the result says what was kept.
std::optional<ProfilerCostRemoval> remove_profiler_cost(const trace::TraceSet& traces, BuiltGraph& built,
                                                        const ProfilerCostOptions& options);

}  // namespace dpro::graph
