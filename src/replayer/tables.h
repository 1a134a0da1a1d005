#pragma once
// Tables of a replay, as HTA and Nsight Systems give them: the GPU ops (kernels, copies, sets) and
// the collectives, by name and rank, over the report's iterations. An op belongs to an iteration
// when its predicted start lies in that iteration's predicted step on its rank (report.h's
// RankIteration: the step's CPU span); without iterations, the whole trace is one. Times are the
// replay's (a what-if's, in a what-if report) beside the trace's measured durations; totals are
// over all reported iterations, `per_iteration` divides by their number.
//
// Beside them (tables_cpu.cpp, tables_gpu_time.cpp): operators, phases and memory from the trace
// as measured, in each rank's measured step windows (RankIteration::measured_start, measured_ns);
// overlap and idle from the replay, in its predicted step windows. These three hold a row per
// rank and iteration (`step`: the ProfilerStep number, -1 for a whole-trace window).
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "graph/builder.h"
#include "replayer/engine.h"
#include "replayer/report.h"
#include "trace/event.h"

namespace dpro::replayer {

struct GpuOpRow {
  int rank = 0;
  std::string name;
  graph::NodeKind kind = graph::NodeKind::kKernel;  // kernel, memcpy, memset
  std::size_t count = 0;
  Nanos measured = 0;   // sum of recorded durations
  Nanos predicted = 0;  // sum of replayed durations
  Nanos max = 0;        // longest replayed instance
  double share = 0;     // of the rank's replayed GPU-op time (kernels, copies, sets, collectives)
  // Kernels of traces that record them (Kineto's "est. achieved occupancy %", "blocks per SM",
  // "warps per SM"): the mean over the row's instances that give the field, each weighted by its
  // measured duration (at least 1 ns), so that the long launches count most, as in Nsight Systems.
  std::optional<double> occupancy_pct, blocks_per_sm, warps_per_sm;
};

struct CollectiveRow {
  int rank = 0;
  std::string name;  // the NCCL kernel
  std::string op;    // "allreduce", ... ("" when the trace does not say)
  std::size_t count = 0;
  std::int64_t bytes = 0;  // per rank, summed over calls (0 when the trace gives no sizes)
  Nanos measured = 0;      // recorded: waiting for the last peer + transfer
  Nanos predicted = 0;     // replayed, the same way: waiting in the replay + transfer
  Nanos transfer = 0;      // of it, the transfer: the cost charged once every peer has arrived
  // NCCL's bus bandwidth (nccl-tests' busBw: algorithm bandwidth x 2(n-1)/n for all-reduce,
  // (n-1)/n for all-gather and reduce-scatter, x1 otherwise) over the transfer time, GB/s.
  std::optional<double> bus_gbps;
};

// A CPU operator (aten::*, autograd, record_function and NVTX ranges, module-level ops; not the
// iteration marker) by name and rank, over the instances that start in a measured step. Nesting
// is by containment on the thread; children are the operators, annotations and runtime or driver
// calls directly inside. GPU time is of the kernels, copies, sets and collectives each launched,
// by CUPTI correlation of the launching runtime or driver call.
struct OperatorRow {
  int rank = 0;
  std::string name;
  std::size_t count = 0;
  Nanos total = 0;     // sum of measured durations
  Nanos self = 0;      // total minus the time of its direct children
  Nanos gpu_self = 0;  // measured GPU time of the work launched by calls directly inside it
  Nanos gpu = 0;       // measured GPU time of the work launched anywhere inside it
  std::string shapes;  // the most frequent "Input Dims" (raw JSON text), "" when not recorded
};

// Communication vs computation on one rank's GPU in one replayed step (HTA's comm/comp
// overlap): each is the union over streams of its ops (execution_categories: kernels compute,
// collectives and communication kernels communicate), clipped to the step.
struct OverlapRow {
  int rank = 0;
  std::int64_t step = -1;
  Nanos span = 0;           // the predicted step
  Nanos compute = 0;
  Nanos communication = 0;
  Nanos overlapped = 0;     // communication while some compute runs
  Nanos exposed() const { return communication - overlapped; }
  double hidden() const;    // overlapped / communication, 0 without communication
};

// The replayed step's GPU idle time (RankIteration::gpu_idle: no GPU op of the rank running)
// split by what ended each idle gap: the replay's start cause of the op that starts at its end.
// host_wait: its launch call (the GPU waited for the CPU; also an op with no recorded launch);
// kernel_wait: its stream predecessor or a cross-stream event (back-to-back GPU work and the gap
// between it); peer_wait: a collective barrier (a peer's collective); other: anything else (a
// blocking sync, the tail after the step's last GPU op). The four add up to `idle`.
struct IdleRow {
  int rank = 0;
  std::int64_t step = -1;
  Nanos span = 0;
  Nanos idle = 0;
  Nanos host_wait = 0, kernel_wait = 0, peer_wait = 0, other = 0;
};

// Peak GPU memory of a rank from Kineto's "[memory]" events (profile_memory=True), in bytes:
// one row per rank for the whole trace (step -1), then one per measured step with samples in it.
// `recorded` false (and no values) for a rank whose trace has none.
struct MemoryRow {
  int rank = 0;
  std::int64_t step = -1;
  bool recorded = false;
  std::optional<std::int64_t> peak_allocated;  // "Total Allocated"
  std::optional<std::int64_t> peak_reserved;   // "Total Reserved" (whole trace: also the importer's peak)
  std::size_t samples = 0;
};

// Time per phase of one measured step on one rank. Phases come from CPU ranges: user annotations
// whose name says forward, backward or optimizer ("## forward ##", "DistributedDataParallel.forward",
// "Optimizer.step#SGD.step"), autograd's "autograd::engine::evaluate_function: ..." ops
// (backward), and the other annotations directly inside the step marker, each a phase of its
// own name. A phase's ranges are merged over the rank's threads.
struct PhaseRow {
  int rank = 0;
  std::int64_t step = -1;
  std::string phase;   // "forward", "backward", "optimizer", or the annotation's name
  std::size_t ranges = 0;
  Nanos cpu = 0;       // the union of its ranges, clipped to the step
  Nanos gpu = 0;       // measured GPU time of the work launched by calls (any thread) starting in its ranges
};

struct Tables {
  std::size_t iterations = 0;
  std::vector<GpuOpRow> gpu_ops;          // most replayed time first
  std::vector<CollectiveRow> collectives;  // most replayed time first
  std::vector<OperatorRow> operators;     // most self time first
  std::vector<OverlapRow> overlap;        // by rank, then step
  std::vector<IdleRow> idle;              // by rank, then step
  std::vector<MemoryRow> memory;          // by rank, then step (-1 first)
  std::vector<PhaseRow> phases;           // by rank, step, then first range
};

// The names --table accepts, in the order they are listed.
const std::vector<std::string>& table_names();

// Builds the tables named in `only` (names of table_names(); "gpu_ops" also builds collectives),
// every one when `only` is empty; the others stay empty. A report that shows no table but its
// advice builds only advice_tables() (the operators, phases and memory tables cost as much again).
Tables make_tables(const trace::TraceSet& traces, const graph::BuiltGraph& built, const Simulation& sim,
                   const Report& report, const std::vector<std::string>& only = {});

// `top` rows of each table ("" for a table not asked for).
std::string render_gpu_ops(const Tables& t, std::size_t top);
std::string render_collectives(const Tables& t, std::size_t top);
nlohmann::json to_json(const Tables& t);
std::string gpu_ops_csv(const Tables& t);
std::string collectives_csv(const Tables& t);

// The other tables: text (a summary per rank over the iterations, mean per iteration; with
// `per_step` a line per step too), CSV (a row per rank and step). to_json holds them as well.
std::string render_operators(const Tables& t, std::size_t top);
std::string render_overlap(const Tables& t, bool per_step = false);
std::string render_idle(const Tables& t, bool per_step = false);
std::string render_memory(const Tables& t);
std::string render_phases(const Tables& t, bool per_step = false);
std::string operators_csv(const Tables& t);
std::string overlap_csv(const Tables& t);
std::string idle_csv(const Tables& t);
std::string memory_csv(const Tables& t);
std::string phases_csv(const Tables& t);
// Any table by name (one of table_names(); DPRO_CHECK otherwise).
std::string render_table(const Tables& t, const std::string& name, std::size_t top, bool per_step = false);
std::string table_csv(const Tables& t, const std::string& name);

// The pieces make_tables assembles (tables_cpu.cpp, tables_gpu_time.cpp).
std::vector<OperatorRow> operator_rows(const trace::TraceSet& traces, const Report& report);
std::vector<PhaseRow> phase_rows(const trace::TraceSet& traces, const Report& report);
std::vector<MemoryRow> memory_rows(const trace::TraceSet& traces, const Report& report);
std::vector<OverlapRow> overlap_rows(const trace::TraceSet& traces, const graph::Dfg& dfg, const Simulation& sim,
                                     const Report& report);
std::vector<IdleRow> idle_rows(const trace::TraceSet& traces, const graph::Dfg& dfg, const Simulation& sim,
                               const Report& report);

}  // namespace dpro::replayer
