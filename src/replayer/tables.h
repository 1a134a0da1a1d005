#pragma once
// Tables of a replay, as HTA and Nsight Systems give them: the GPU ops (kernels, copies, sets) and
// the collectives, by name and rank, over the report's iterations. An op belongs to an iteration
// when its predicted start lies in that iteration's predicted step on its rank (report.h's
// RankIteration: the step's CPU span); without iterations, the whole trace is one. Times are the
// replay's (a what-if's, in a what-if report) beside the trace's measured durations; totals are
// over all reported iterations, `per_iteration` divides by their number.
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

struct Tables {
  std::size_t iterations = 0;
  std::vector<GpuOpRow> gpu_ops;          // most replayed time first
  std::vector<CollectiveRow> collectives;  // most replayed time first
};

Tables make_tables(const trace::TraceSet& traces, const graph::BuiltGraph& built, const Simulation& sim,
                   const Report& report);

// `top` rows of each table ("" for a table not asked for).
std::string render_gpu_ops(const Tables& t, std::size_t top);
std::string render_collectives(const Tables& t, std::size_t top);
nlohmann::json to_json(const Tables& t);
std::string gpu_ops_csv(const Tables& t);
std::string collectives_csv(const Tables& t);

}  // namespace dpro::replayer
