#include "whatif/checks.h"

#include <algorithm>
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

}  // namespace dpro::whatif
