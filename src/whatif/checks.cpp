#include "whatif/checks.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace dpro::whatif {

GpuWorkAfterSteps gpu_work_after_steps(const trace::TraceSet& traces, const graph::Dfg& dfg,
                                       const replayer::Simulation& sim, const replayer::Report& report) {
  // Each rank's GPU ops by measured start, to find those a step started.
  std::map<int, std::vector<graph::NodeId>> gpu_ops;
  const auto ops_of_rank = replayer::rank_ops(traces, dfg);
  for (std::size_t ri = 0; ri < ops_of_rank.size(); ++ri) {
    auto& ops = gpu_ops[traces.ranks[ri].rank];
    for (graph::NodeId id : ops_of_rank[ri])
      if (graph::on_gpu(dfg.node(id).kind)) ops.push_back(id);
    std::sort(ops.begin(), ops.end(),
              [&](graph::NodeId a, graph::NodeId b) { return dfg.node(a).measured_start < dfg.node(b).measured_start; });
  }
  GpuWorkAfterSteps out;
  Nanos worst_after = 0;
  for (const replayer::IterationReport& it : report.iterations) {
    for (const replayer::RankIteration& r : it.ranks) {
      ++out.steps;
      const auto& ops = gpu_ops[r.rank];
      auto first = std::lower_bound(ops.begin(), ops.end(), r.measured_start, [&](graph::NodeId id, Nanos t) {
        return dfg.node(id).measured_start < t;
      });
      Nanos gpu_end = INT64_MIN;
      for (auto i = first; i != ops.end() && dfg.node(*i).measured_start < r.measured_start + r.measured_ns; ++i)
        gpu_end = std::max(gpu_end, sim.end[*i]);
      const Nanos step_end = r.predicted_start + r.predicted_ns;
      if (gpu_end == INT64_MIN || gpu_end - step_end <= r.predicted_ns) continue;
      const Nanos after = gpu_end - step_end;
      out.cases.push_back({it.name, it.whole_trace ? std::nullopt : std::optional<std::int64_t>(it.number), r.rank,
                           r.predicted_ns, after});
      if (after > worst_after) {
        worst_after = after;
        out.worst = out.cases.size() - 1;
      }
    }
  }
  return out;
}


namespace {

struct OpTime {
  Nanos gpu = 0, cpu = 0;
};

OpTime op_time(const graph::Dfg& dfg) {
  OpTime t;
  for (const graph::Node& n : dfg.nodes()) {
    if (graph::on_gpu(n.kind)) t.gpu += n.duration;
    else if (n.kind != graph::NodeKind::kBarrier) t.cpu += n.duration + std::max<Nanos>(n.delay, 0);
  }
  return t;
}

bool changed(Nanos before, Nanos after) {
  return before > 0 && std::abs(static_cast<double>(after - before)) > kChangedWork * static_cast<double>(before);
}

}  // namespace

std::optional<Unmoved> why_unmoved(const graph::Dfg& base, const replayer::Report& base_report,
                                   const graph::Dfg& after, const replayer::Report& after_report) {
  if (base_report.iterations.empty() || base_report.iterations.size() != after_report.iterations.size())
    return std::nullopt;
  std::vector<double> changes;
  Unmoved u;
  for (std::size_t i = 0; i < base_report.iterations.size(); ++i) {
    const replayer::IterationReport& b = base_report.iterations[i];
    if (b.job_predicted_ns <= 0) continue;
    changes.push_back(static_cast<double>(after_report.iterations[i].job_predicted_ns) /
                          static_cast<double>(b.job_predicted_ns) - 1);
    u.path += b.job_critical_path.total();
    u.path_gpu += b.job_critical_path[replayer::Category::kCompute] +
                  b.job_critical_path[replayer::Category::kCommunication] +
                  b.job_critical_path[replayer::Category::kCopies];
  }
  if (changes.empty()) return std::nullopt;
  std::nth_element(changes.begin(), changes.begin() + static_cast<std::ptrdiff_t>(changes.size() / 2), changes.end());
  u.step_change = changes[changes.size() / 2];
  const OpTime before = op_time(base), now = op_time(after);
  u.gpu_before = before.gpu;
  u.gpu_after = now.gpu;
  u.cpu_before = before.cpu;
  u.cpu_after = now.cpu;
  if (std::abs(u.step_change) >= kUnmovedStep || !(changed(before.gpu, now.gpu) || changed(before.cpu, now.cpu)))
    return std::nullopt;
  return u;
}

}  // namespace dpro::whatif
