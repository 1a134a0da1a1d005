// Benchmarks and accuracy figures of the communication model (docs/communication.md). Prints
// JSON lines {"bench": ..., "value": ..., "unit": ...}.
// Usage: bench_comm [REPO_ROOT] [--sweep] [--samples] [--accuracy-only]
//   --sweep          the model's all-reduce bus bandwidth against size and cluster
//   --samples        every train/test sample of the half-split accuracy figures
//   --accuracy-only  stop after the accuracy figures (skip the scale benchmarks)
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "bench_util.h"
#include "core/log.h"
#include "graph/builder.h"
#include "costmodel/comm/calibration.h"
#include "hw/cluster.h"
#include "costmodel/comm/comm_ops.h"
#include "whatif/comm/retime.h"
#include "whatif/comm/scale_out.h"
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

std::string pct(double fraction) { return std::to_string(100.0 * fraction); }

// Fit on half of the collective instances, predict the other half (docs/communication.md).
// The default fit prints fit_half_split_median_abs_error_*; every fit variant and the
// lower-envelope evaluation print their own lines; `samples` prints each sample.
void split_fit(const std::string& name, std::vector<comm::CommOp> ops, const comm::ClusterSpec& origin,
               bool samples_too) {
  const auto samples = comm::make_samples(ops, origin, /*unmatched_too=*/true);
  auto report = [&](const std::string& prefix, const comm::SplitEvaluation& ev) {
    bench::emit(prefix + name, 100.0 * ev.median_abs_error, "%",
                "\"train_samples\": " + std::to_string(ev.train) + ", \"test_samples\": " + std::to_string(ev.test) +
                    ", \"train_instances\": " + std::to_string(ev.train_instances) + ", \"test_instances\": " +
                    std::to_string(ev.test_instances) + ", \"mean_abs_error_pct\": " + pct(ev.mean_abs_error) +
                    ", \"instance_median_abs_error_pct\": " + pct(ev.instance_median_abs_error) +
                    ", \"size_oracle_median_abs_error_pct\": " + pct(ev.size_oracle_median_abs_error) +
                    ", \"size_oracle_samples\": " + std::to_string(ev.size_oracle_samples) +
                    ", \"cluster\": " + q(origin.name));
    for (const auto& o : ev.by_op)
      bench::emit(prefix + name + "_" + o.op, 100.0 * o.median_abs_error, "%",
                  "\"train_samples\": " + std::to_string(o.train) + ", \"test_samples\": " + std::to_string(o.test) +
                      ", \"size_oracle_median_abs_error_pct\": " + pct(o.size_oracle_median_abs_error) +
                      ", \"size_oracle_samples\": " + std::to_string(o.size_oracle_samples));
  };
  const comm::SplitEvaluation ev = comm::evaluate_half_split(origin, samples);
  report("fit_half_split_median_abs_error_", ev);
  for (auto method : {comm::FitMethod::kLeastSquares, comm::FitMethod::kLeastAbsolute}) {
    for (auto grouping : {comm::FitGrouping::kFamily, comm::FitGrouping::kOperation}) {
      comm::SplitOptions o;
      o.fit = {method, grouping};
      report(std::string("fit_variant_") + comm::to_string(method) + "_" + comm::to_string(grouping) + "_", 
             comm::evaluate_half_split(origin, samples, o));
    }
  }
  comm::SplitOptions envelope;
  envelope.lower_envelope = true;
  report("fit_half_split_lower_envelope_median_abs_error_", comm::evaluate_half_split(origin, samples, envelope));
  for (const auto& sp : comm::size_spread(samples))
    bench::emit("size_spread_" + name + "_" + comm::to_string(sp.op) + "_" + std::to_string(sp.bytes) + "B",
                sp.max_us / sp.min_us, "max/min",
                "\"ranks\": " + std::to_string(sp.ranks) + ", \"samples\": " + std::to_string(sp.samples) +
                    ", \"instances\": " + std::to_string(sp.instances) + ", \"min_us\": " + std::to_string(sp.min_us) +
                    ", \"median_us\": " + std::to_string(sp.median_us) + ", \"max_us\": " + std::to_string(sp.max_us));
  if (!samples_too) return;
  const comm::CollectiveModel fitted(origin, ev.calibration), raw(origin);
  for (const auto* half : {&ev.train_samples, &ev.test_samples}) {
    for (const auto& s : *half) {
      const auto e = fitted.estimate(s.call);
      bench::emit("sample_" + name, s.time_us, "us",
                  "\"half\": " + q(half == &ev.train_samples ? "train" : "test") + ", \"op\": " +
                      q(comm::to_string(s.call.op)) + ", \"bytes\": " + std::to_string(s.call.bytes) +
                      ", \"rank\": " + std::to_string(s.rank) + ", \"first_start_ns\": " +
                      std::to_string(s.first_start) + ", \"predicted_us\": " + std::to_string(e.time_us) +
                      ", \"uncalibrated_us\": " + std::to_string(raw.estimate(s.call).time_us) +
                      ", \"algorithm\": " + q(comm::to_string(e.algorithm)) + ", \"protocol\": " +
                      q(comm::to_string(e.protocol)));
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string root = DPRO_SOURCE_DIR;
  bool sweep = false, samples = false, accuracy_only = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--sweep") sweep = true;
    else if (a == "--samples") samples = true;
    else if (a == "--accuracy-only") accuracy_only = true;
    else if (a == "--help" || a == "-h") {
      std::printf("usage: bench_comm [REPO_ROOT] [--sweep] [--samples] [--accuracy-only]\n");
      return 0;
    } else root = a;
  }
  const auto cat = comm::ClusterCatalog::load_directory(root + "/configs/clusters");
  model_bus_bandwidth(cat);
  if (sweep) model_sweep(cat);

  // Accuracy: fit on half of the collectives, predict the other half.
  Job dlrm = load({root + "/traces/dlrm-8xV100"}, false);
  const comm::ClusterSpec& v100 = *cat.guess(dlrm.traces.gpu_names());
  auto dlrm_ops = comm::find_comm_ops(dlrm.built.dfg, dlrm.traces);
  comm::attach_host_et_sizes(dlrm_ops, dlrm.traces,
                             trace::expand_host_et_paths({root + "/tests/comm/data/dlrm-host-et"}));
  split_fit("dlrm_8xV100", dlrm_ops, v100, samples);
  Job a100 = load({root + "/traces/hta/a100-ws2-rank0-nccl.json.gz"}, true);
  const comm::ClusterSpec& a100_cluster = *cat.guess(a100.traces.gpu_names());
  split_fit("a100_ws2_rank0", comm::find_comm_ops(a100.built.dfg, a100.traces), a100_cluster, samples);
  if (accuracy_only) return 0;

  // --ranks W on the trace's own cluster reproduces the plain replay.
  {
    Logger quiet(LogLevel::kQuiet);
    const auto plain = replayer::replay_traces(dlrm.traces, replayer::ReplayOptions{}, quiet);
    graph::Dfg g = dlrm.built.dfg;
    auto ops = comm::find_comm_ops(g, dlrm.traces);
    comm::attach_host_et_sizes(ops, dlrm.traces, trace::expand_host_et_paths({root + "/tests/comm/data/dlrm-host-et"}));
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
    comm::attach_host_et_sizes(ops, job.traces, trace::expand_host_et_paths({root + "/tests/comm/data/dlrm-host-et"}));
    const comm::ClusterSpec& origin = *cat.guess(job.traces.gpu_names());
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
