#pragma once
// A schedule: what the executor runs for one rank's part of the graph (one iteration of it, the
// window of one ProfilerStep), as host-thread programs, device streams, events and launches.
//
// The model (docs/executor.md, "Schedule"):
//   - one host thread per recorded CPU thread of the rank; it starts its first op no earlier than
//     that op's recorded offset into the window; its program walks the thread's ops in
//     recorded order and spends each op's own cost (its replay delay + duration: the recorded
//     cost, or what a what-if made it) as a host spin, then issues the GPU ops that op launched,
//     in their order;
//   - one device stream per recorded stream; a stream's ops keep their recorded order (a stream is
//     FIFO; where two host threads launch onto one stream, the later launch waits on the host for
//     the earlier one to be issued);
//   - a dependency between GPU ops of two streams is an event recorded after the first and waited
//     for by the second's stream before it; a CPU call that blocked on GPU work synchronises on an
//     event recorded after that work; a fork/join between host threads is a host signal;
//   - a GPU op without a recorded launch (the trace lost its runtime call) is issued by the thread
//     that issued the op before it on its stream, right after it (or, first on its stream, at the
//     start of the main thread);
//   - edges the device reproduces itself (a full launch queue) or that lead out of this rank (a
//     collective's peers) or out of the window are not scheduled; LoweringStats counts them.
// Everything here is data: run_schedule (runner.h) plays it on a Device.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "executor/launch_lowering.h"
#include "executor/memory_plan.h"
#include "graph/dfg.h"
#include "whatif/workload.h"

namespace dpro::executor {

struct ScheduleOptions {
  std::optional<int> rank;  // the trace's rank number; none: the first rank the traces hold
  // The number of the recorded iteration to run (ProfilerStep#N); none: the middle one of the
  // rank's (a steady-state step). A rank with no recorded iteration is scheduled whole.
  std::optional<std::int64_t> iteration;
  LaunchOptions launch;
};

struct ScheduledLaunch {
  graph::NodeId node;
  std::uint32_t stream = 0;  // index into Schedule::streams
  std::uint32_t thread = 0;  // index into Schedule::threads: the host thread that issues it
  LoweredLaunch lowered;     // spans: offsets into the arena (buffer 0 until the runner allocates it)
};

enum class StepKind : std::uint8_t {
  kSpin,       // host_spin(spin): a CPU op's own cost
  kSpinUntil,  // spin until `spin` after the iteration's start: a thread's first op starts no earlier
               // than it did in the recorded window (the replay's release time)
  kLaunch,     // launch(launches[index])
  kRecord,     // record(event index, stream); tells the host that the event is recorded
  kWaitEvent,  // wait(stream, event index), once the event's record has been issued
  kSyncEvent,  // synchronize(event index), once its record has been issued
  kSignal,     // raise host flag `index`
  kAwait,      // block until host flag `index` is raised
};
const char* to_string(StepKind kind);

struct HostStep {
  StepKind kind = StepKind::kSpin;
  std::uint32_t index = 0;   // launch, event or flag
  std::uint32_t stream = 0;  // kRecord, kWaitEvent
  Nanos spin = 0;            // kSpin
  graph::NodeId node;        // kSpin: the CPU node; kLaunch: the GPU node
};

struct HostThread {
  graph::TrackId track;  // none for no recorded thread (not made today)
  std::string name;
  std::vector<HostStep> steps;
};

struct StreamInfo {
  graph::TrackId track;
  std::string name;
};

struct LoweringStats {
  std::array<std::size_t, graph::kEdgeKindCount> kept{};  // edges the schedule keeps, by kind
  std::size_t outside_window = 0;   // edges to or from an op outside the scheduled window
  std::size_t other_ranks = 0;      // edges to or from other ranks or their barriers (collective peers)
  std::size_t launch_queue = 0;     // full-launch-queue edges: the device's own queue reproduces them
  std::size_t cross_thread_stream_order = 0;  // stream-order edges kept by a host wait between threads
};

struct Schedule {
  int rank = 0;
  std::string window;                 // "ProfilerStep#12", or "" for the whole rank
  Nanos window_start = 0, window_end = 0;  // trace time of the window (whole rank: its first op's start, last op's end)
  std::vector<HostThread> threads;    // [0] is the main thread (the one issuing most launches)
  std::vector<StreamInfo> streams;
  std::vector<ScheduledLaunch> launches;  // a topological order of the window's GPU ops
  std::uint32_t events = 0;           // dependency events (kRecord/kWaitEvent/kSyncEvent indexes)
  std::uint32_t flags = 0;            // host flags (kSignal/kAwait indexes)
  std::vector<TensorLife> tensors;    // every tensor of the launches, positions = launch indexes
  MemoryPlan memory;                  // parallel to tensors
  LoweringStats stats;
};

// Throws OptionError("--rank", ...) for a rank the workload has no trace of, and
// OptionError("--iteration", ...) for an iteration the rank did not record. The graph must be finalized.
Schedule build_schedule(const whatif::Workload& workload, const ScheduleOptions& options);

// Where the host programs would stop for good (a wait no thread's step meets, a cycle of waits
// between threads), as a message; empty when every program runs to its end. build_schedule checks
// it (std::logic_error: a schedule that would hang is a bug of the lowering, not of the input).
std::string stuck_host_step(const Schedule& schedule);

// Counts for reports: launches per op class that run as real kernels and as stand-ins, and the
// stand-ins' reasons.
struct ClassCounts {
  std::size_t real = 0, standin = 0;
};
struct ScheduleSummary {
  std::array<ClassCounts, kOpClassCount> by_class{};
  std::vector<std::pair<std::string, std::size_t>> standin_reasons;  // most frequent first
  // Fused stand-ins per launching op of a part no ElementwiseOp stands for (LoweredLaunch::
  // blocking_ops; a launch counts once for each of its ops), most frequent first.
  std::vector<std::pair<std::string, std::size_t>> standin_blocking_ops;
  std::size_t launches = 0, host_steps = 0, spins = 0;
  Nanos host_spin_total = 0;
};
ScheduleSummary summarize(const Schedule& schedule);

}  // namespace dpro::executor
