#pragma once
// Real traces and configs for the communication tests.
#include <string>
#include <vector>

#include "core/log.h"
#include "graph/builder.h"
#include "hw/cluster.h"
#include "costmodel/comm/comm_ops.h"
#include "test_paths.h"
#include "trace_fixtures.h"

namespace dpro::test {

inline std::string clusters_dir() { return source_path("configs/clusters"); }
inline std::string dlrm_host_et_dir() { return source_path("tests/comm/data/dlrm-host-et"); }
inline std::string a100_trace() { return source_path("traces/hta/a100-ws2-rank0-nccl.json.gz"); }

struct LoadedJob {
  trace::TraceSet traces;
  graph::BuiltGraph built;
};

inline LoadedJob load_job(const std::vector<std::string>& files, bool allow_partial = false) {
  Logger quiet(LogLevel::kQuiet);
  LoadedJob job;
  job.traces = load(files, quiet, allow_partial);
  job.built = graph::build_graph(job.traces, graph::BuildOptions{}, quiet);
  return job;
}

inline LoadedJob load_dlrm() { return load_job({dlrm_dir()}); }
inline LoadedJob load_a100() { return load_job({a100_trace()}, true); }

// DLRM's comm ops with their message sizes: the trace's (its nccl:* ranges), which its host
// execution traces, attached here, would give where the trace did not.
inline std::vector<comm::CommOp> dlrm_sized_ops(const LoadedJob& job) {
  auto ops = comm::find_comm_ops(job.built.dfg, job.traces);
  comm::attach_host_et_sizes(ops, job.traces, trace::expand_host_et_paths({dlrm_host_et_dir()}));
  return ops;
}

}  // namespace dpro::test
