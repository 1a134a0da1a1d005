// Replay speed on a synthetic data-parallel job: R ranks x K ops each (default 64 x 20,000 =
// 1.28 million ops). Each rank has a CPU thread of leaf ops and launch calls, a compute
// stream and a communication stream; every 100th GPU op is a collective over all ranks,
// fenced by cross-stream waits, and every 500th launch is followed by a blocking sync.
//   bench_replay [RANKS] [OPS_PER_RANK] [REPEATS]
#include <cstdio>
#include <cstdlib>
#include <random>

#include "bench_util.h"
#include "replayer/engine.h"

using namespace dpro;
using graph::Edge;
using graph::EdgeKind;
using graph::NodeKind;
using graph::Point;

namespace {

graph::Dfg make_job(int ranks, int ops_per_rank) {
  graph::Dfg g;
  std::mt19937_64 rng(42);
  std::uniform_int_distribution<Nanos> cpu_cost(2000, 20000), kernel_cost(5000, 200000), gap(0, 3000);
  const int launches = ops_per_rank * 13 / 40;  // each launch makes one GPU op
  const int cpu_ops = ops_per_rank - 2 * launches;
  std::vector<std::vector<graph::NodeId>> collectives(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) {
    const auto thread = g.add_track({r, trace::ResourceKind::kCpuThread, 1, 1, "main"});
    const auto compute = g.add_track({r, trace::ResourceKind::kGpuStream, 0, 7, "stream 7"});
    const auto comm = g.add_track({r, trace::ResourceKind::kGpuStream, 0, 13, "stream 13"});
    graph::NodeId prev_cpu, prev_compute, prev_comm;  // none until the first
    auto add = [&](NodeKind kind, graph::TrackId track, Nanos cost) {
      graph::Node n;
      n.kind = kind;
      n.rank = r;
      n.track = track;
      n.duration = n.measured_duration = cost;
      n.delay = gap(rng);
      return g.add_node(n);
    };
    auto chain_cpu = [&](graph::NodeId n) {
      if (!prev_cpu.valid()) g.node(n).release = 0;
      else g.add_edge(Edge{prev_cpu, n, EdgeKind::kThreadOrder});
      prev_cpu = n;
    };
    int launched = 0;
    for (int i = 0; i < cpu_ops + launches; ++i) {
      const bool launch = (i % 20) < 13;  // 13 of every 20 CPU nodes are launch calls
      if (!launch || launched >= launches) {
        chain_cpu(add(NodeKind::kCpuOp, thread, cpu_cost(rng)));
        continue;
      }
      const auto call = add(NodeKind::kRuntimeCall, thread, 4000);
      chain_cpu(call);
      const bool is_collective = launched % 100 == 99;
      const auto gpu = add(is_collective ? NodeKind::kCollective : NodeKind::kKernel, is_collective ? comm : compute,
                           is_collective ? 50000 : kernel_cost(rng));
      g.add_edge(Edge{call, gpu, EdgeKind::kLaunch, Point::kStart, Point::kStart});
      graph::NodeId& prev = is_collective ? prev_comm : prev_compute;
      if (prev.valid()) g.add_edge(Edge{prev, gpu, EdgeKind::kStreamOrder});
      if (is_collective) {
        if (prev_compute.valid()) g.add_edge(Edge{prev_compute, gpu, EdgeKind::kStreamWait});
        collectives[static_cast<std::size_t>(r)].push_back(gpu);
      } else if (prev_comm.valid() && launched % 100 == 0) {
        g.add_edge(Edge{prev_comm, gpu, EdgeKind::kStreamWait});
      }
      prev = gpu;
      if (launched % 500 == 499) {
        const auto sync = add(NodeKind::kRuntimeCall, thread, 3000);
        chain_cpu(sync);
        g.add_edge(Edge{gpu, sync, EdgeKind::kBlockingSync, Point::kEnd, Point::kEnd, 3000});
        ++i;
      }
      ++launched;
    }
  }
  for (std::size_t c = 0; c < collectives[0].size(); ++c) {
    graph::Node b;
    b.kind = NodeKind::kBarrier;
    b.rank = -1;
    const auto barrier = g.add_node(b);
    for (int r = 0; r < ranks; ++r) {
      const auto k = collectives[static_cast<std::size_t>(r)][c];
      g.add_edge(Edge{k, barrier, EdgeKind::kCollective, Point::kStart, Point::kStart});
      g.add_edge(Edge{barrier, k, EdgeKind::kCollective, Point::kStart, Point::kEnd, 50000});
    }
  }
  g.finalize();
  return g;
}

}  // namespace

int main(int argc, char** argv) {
  const int ranks = argc > 1 ? std::atoi(argv[1]) : 64;
  const int ops = argc > 2 ? std::atoi(argv[2]) : 20000;
  const int repeats = argc > 3 ? std::atoi(argv[3]) : 3;
  auto t0 = std::chrono::steady_clock::now();
  const graph::Dfg g = make_job(ranks, ops);
  const double build_s = bench::seconds_since(t0);
  // The first run allocates the simulator's working memory; later runs reuse it, as what-if
  // sweeps and the optimizer do.
  replayer::Simulator simulator;
  std::vector<double> rates, times, cpu_rates;
  Nanos makespan = 0;
  double cold = 0;
  for (int i = 0; i <= repeats; ++i) {
    t0 = std::chrono::steady_clock::now();
    const double c0 = bench::cpu_seconds();
    makespan = simulator.run(g).makespan;
    const double s = bench::seconds_since(t0);
    const double c = bench::cpu_seconds() - c0;
    if (i == 0) {
      cold = s;
      continue;
    }
    times.push_back(s);
    rates.push_back(static_cast<double>(g.node_count()) / s);
    cpu_rates.push_back(static_cast<double>(g.node_count()) / c);
  }
  const std::string shape = "\"ranks\": " + std::to_string(ranks) + ", \"ops\": " + std::to_string(g.node_count()) +
                            ", \"edges\": " + std::to_string(g.edge_count()) + ", \"repeats\": " + std::to_string(repeats);
  bench::emit("replay_speed", bench::median(rates), "ops/s", shape + ", \"median_seconds\": " + std::to_string(bench::median(times)) +
                                                                  ", \"simulated_makespan_ms\": " + std::to_string(makespan / 1e6) +
                                                                  ", \"per_cpu_second\": " + std::to_string(bench::median(cpu_rates)));
  // The same graph replayed for times only (replayer::Record::kTimes, as the optimizer scores
  // plans), on the warm simulator; it must give the ordered run's times.
  std::vector<double> times_only_rates, times_only_cpu_rates;
  const replayer::Simulation ordered = simulator.run(g);
  for (int i = 0; i < repeats; ++i) {
    t0 = std::chrono::steady_clock::now();
    const double c0 = bench::cpu_seconds();
    const replayer::Simulation& fast = simulator.run(g, replayer::Record::kTimes);
    times_only_rates.push_back(static_cast<double>(g.node_count()) / bench::seconds_since(t0));
    times_only_cpu_rates.push_back(static_cast<double>(g.node_count()) / (bench::cpu_seconds() - c0));
    if (fast.start != ordered.start || fast.end != ordered.end || fast.makespan != ordered.makespan) {
      std::fprintf(stderr, "bench_replay: the times-only run differs from the ordered run\n");
      return 1;
    }
  }
  bench::emit("replay_speed_times_only", bench::median(times_only_rates), "ops/s",
              shape + ", \"per_cpu_second\": " + std::to_string(bench::median(times_only_cpu_rates)));
  bench::emit("replay_speed_first_run", static_cast<double>(g.node_count()) / cold, "ops/s", shape);
  bench::emit("replay_graph_build", build_s, "s", shape);
  bench::emit("replay_peak_rss", bench::peak_rss_mib(), "MiB", shape);
  return 0;
}
