// Benchmarks and accuracy figures of the communication model (docs/communication.md). Prints
// JSON lines {"bench": ..., "value": ..., "unit": ...}. Usage: bench_comm [repo root [--sweep]]
#include <chrono>
#include <string>
#include <vector>

#include "bench_util.h"
#include "core/log.h"
#include "graph/builder.h"
#include "replayer/comm/calibration.h"
#include "replayer/comm/cluster.h"
#include "replayer/comm/comm_ops.h"
#include "replayer/comm/retime.h"
#include "replayer/comm/scale_out.h"
#include "replayer/replay.h"
#include "trace/loader.h"

using namespace dpro;

namespace {

struct Job {
  trace::TraceSet traces;
  graph::BuiltGraph built;
};

Job load(const std::vector<std::string>& paths, bool partial) {
  Logger quiet(LogLevel::kQuiet);
  trace::LoadOptions o;
  o.allow_partial = partial;
  Job j;
  j.traces = trace::load_traces(paths, o, quiet);
  j.built = graph::build_graph(j.traces, graph::BuildOptions{}, quiet);
  return j;
}

std::string q(const std::string& s) { return "\"" + s + "\""; }

void model_bus_bandwidth(const comm::ClusterCatalog& cat) {
  // nccl-tests style: all-reduce of 8 GiB on the 8 GPUs of one node.
  const std::int64_t bytes = std::int64_t{8} << 30;
  struct Row { const char* cluster; double published; const char* source; };
  for (const Row& r : {Row{"dgx-a100", 230.0, "github.com/NVIDIA/nccl-tests/issues/149"},
                       Row{"dgx-h100", 480.0, "github.com/NVIDIA/nccl-tests/issues/212"}}) {
    const comm::CollectiveModel m(cat.get(r.cluster));
    const comm::CollectiveCall call{comm::CollectiveOp::kAllReduce, bytes, comm::place(m.cluster(), 8)};
    const auto e = m.estimate(call);
    const double busbw = comm::CollectiveModel::bus_bandwidth_gbps(call, e.time_us);
    bench::emit(std::string("model_allreduce_busbw_8gpu_8GiB_") + r.cluster, busbw, "GB/s",
                "\"published\": " + std::to_string(r.published) + ", \"error_pct\": " +
                    std::to_string(100.0 * (busbw - r.published) / r.published) + ", \"algorithm\": " +
                    q(comm::to_string(e.algorithm)) + ", \"protocol\": " + q(comm::to_string(e.protocol)) +
                    ", \"source\": " + q(r.source));
  }
}

// The model's all-reduce bus bandwidth against message size, one node of 8 GPUs and 8 nodes.
void model_sweep(const comm::ClusterCatalog& cat) {
  for (const char* name : {"dgx1-v100", "dgx-a100", "dgx-h100", "pcie-a100"}) {
    const comm::CollectiveModel m(cat.get(name));
    for (int ranks : {8, 64}) {
      for (std::int64_t bytes : {std::int64_t{1} << 10, std::int64_t{1} << 20, std::int64_t{1} << 24,
                                 std::int64_t{1} << 28, std::int64_t{1} << 33}) {
        const comm::CollectiveCall call{comm::CollectiveOp::kAllReduce, bytes, comm::place(m.cluster(), ranks)};
        const auto e = m.estimate(call);
        bench::emit(std::string("model_allreduce_busbw_") + name + "_" + std::to_string(ranks) + "gpu_" +
                        std::to_string(bytes) + "B",
                    comm::CollectiveModel::bus_bandwidth_gbps(call, e.time_us), "GB/s",
                    "\"time_us\": " + std::to_string(e.time_us) + ", \"algorithm\": " + q(comm::to_string(e.algorithm)) +
                        ", \"protocol\": " + q(comm::to_string(e.protocol)));
      }
    }
  }
}

void split_fit(const std::string& name, std::vector<comm::CommOp> ops, const comm::ClusterSpec& origin) {
  const auto samples = comm::make_samples(ops, origin);
  const auto ev = comm::evaluate_half_split(origin, samples);
  bench::emit("fit_half_split_median_abs_error_" + name, 100.0 * ev.median_abs_error, "%",
              "\"train_samples\": " + std::to_string(ev.train) + ", \"test_samples\": " + std::to_string(ev.test) +
                  ", \"train_instances\": " + std::to_string(ev.train_instances) + ", \"test_instances\": " +
                  std::to_string(ev.test_instances) + ", \"mean_abs_error_pct\": " +
                  std::to_string(100.0 * ev.mean_abs_error) + ", \"cluster\": " + q(origin.name));
  for (const auto& o : ev.by_op)
    bench::emit("fit_half_split_median_abs_error_" + name + "_" + o.op, 100.0 * o.median_abs_error, "%",
                "\"train_samples\": " + std::to_string(o.train) + ", \"test_samples\": " + std::to_string(o.test));
}

}  // namespace

int main(int argc, char** argv) {
  const std::string root = argc > 1 ? argv[1] : DPRO_SOURCE_DIR;
  const auto cat = comm::ClusterCatalog::load_directory(root + "/configs/clusters");
  model_bus_bandwidth(cat);
  if (argc > 2 && std::string(argv[2]) == "--sweep") model_sweep(cat);

  // Accuracy: fit on half of the collectives, predict the other half.
  Job dlrm = load({root + "/traces/dlrm-8xV100"}, false);
  const comm::ClusterSpec& v100 = *cat.guess(dlrm.traces);
  auto dlrm_ops = comm::find_comm_ops(dlrm.built.dfg, dlrm.traces);
  comm::attach_host_et_sizes(dlrm_ops, dlrm.traces,
                             comm::expand_host_et_paths({root + "/tests/comm/data/dlrm-host-et"}));
  split_fit("dlrm_8xV100", dlrm_ops, v100);
  Job a100 = load({root + "/traces/hta/a100-ws2-rank0-nccl.json.gz"}, true);
  const comm::ClusterSpec& a100_cluster = *cat.guess(a100.traces);
  split_fit("a100_ws2_rank0", comm::find_comm_ops(a100.built.dfg, a100.traces), a100_cluster);

  // --ranks W on the trace's own cluster reproduces the plain replay.
  {
    Logger quiet(LogLevel::kQuiet);
    const auto plain = replayer::replay_traces(dlrm.traces, replayer::ReplayOptions{}, quiet);
    graph::Dfg g = dlrm.built.dfg;
    auto ops = comm::find_comm_ops(g, dlrm.traces);
    comm::attach_host_et_sizes(ops, dlrm.traces, comm::expand_host_et_paths({root + "/tests/comm/data/dlrm-host-et"}));
    const auto cal = comm::fit_calibration(v100, comm::make_samples(ops, v100));
    const comm::CollectiveModel m(v100, cal);
    comm::retime_collectives(g, ops, m, m, 8);
    const auto r = comm::simulate_scaled_job(dlrm.traces, dlrm.built.ranks, g, 8, false);
    const double base = static_cast<double>(plain.report.iterations.at(0).job_predicted_ns);
    bench::emit("ranks_equal_world_vs_plain_replay_dlrm", 100.0 * (r.iterations.at(0).job_predicted_ns - base) / base,
                "%", "\"plain_ns\": " + std::to_string(plain.report.iterations.at(0).job_predicted_ns) +
                         ", \"ranks8_ns\": " + std::to_string(r.iterations.at(0).job_predicted_ns));
  }

  // Scale: 1,024-rank data-parallel iteration from the 8-rank trace, end to end.
  auto scaled = [&](int ranks, bool expand, const char* name) {
    const auto t0 = std::chrono::steady_clock::now();
    Job job = load({root + "/traces/dlrm-8xV100"}, false);
    auto ops = comm::find_comm_ops(job.built.dfg, job.traces);
    comm::attach_host_et_sizes(ops, job.traces, comm::expand_host_et_paths({root + "/tests/comm/data/dlrm-host-et"}));
    const comm::ClusterSpec& origin = *cat.guess(job.traces);
    const auto cal = comm::fit_calibration(origin, comm::make_samples(ops, origin));
    const comm::CollectiveModel m(origin, cal);
    comm::retime_collectives(job.built.dfg, ops, m, m, ranks);
    const auto r = comm::simulate_scaled_job(job.traces, job.built.ranks, job.built.dfg, ranks, expand);
    const double seconds = bench::seconds_since(t0);
    bench::emit(name, seconds, "s",
                "\"ranks\": " + std::to_string(ranks) + ", \"expanded\": " + (expand ? "true" : "false") +
                    ", \"graph_nodes\": " + std::to_string(r.nodes) + ", \"graph_edges\": " + std::to_string(r.edges) +
                    ", \"simulate_s\": " + std::to_string(r.simulate_seconds) + ", \"job_iteration_ns\": " +
                    std::to_string(r.iterations.empty() ? 0 : r.iterations.front().job_predicted_ns) +
                    ", \"peak_rss_mib\": " + std::to_string(bench::peak_rss_mib()));
  };
  scaled(1024, false, "scale_out_1024_ranks_symmetric_end_to_end");
  scaled(256, true, "scale_out_256_ranks_expanded_end_to_end");
  scaled(1024, true, "scale_out_1024_ranks_expanded_end_to_end");
  return 0;
}
