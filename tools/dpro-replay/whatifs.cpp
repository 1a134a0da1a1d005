#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "whatif_cluster.h"
#include "whatif_device.h"
#include "whatif_option.h"

namespace dpro::cli {

std::vector<std::unique_ptr<WhatIfOption>> make_whatif_options() {
  std::vector<std::unique_ptr<WhatIfOption>> options;
  options.push_back(make_device_whatif());
  options.push_back(make_cluster_whatif());
  return options;
}

nlohmann::json warn_gpu_work_after_steps(const trace::TraceSet& traces, replayer::Replay& whatif, Logger& log) {
  const graph::Dfg& dfg = whatif.graph.dfg;
  const replayer::Simulation& sim = whatif.simulation;
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
  nlohmann::json cases = nlohmann::json::array();
  std::string worst;
  Nanos worst_after = 0, worst_step = 0;
  std::size_t steps = 0;
  for (const replayer::IterationReport& it : whatif.report.iterations) {
    for (const replayer::RankIteration& r : it.ranks) {
      ++steps;
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
      cases.push_back({{"iteration", it.whole_trace ? nlohmann::json(nullptr) : nlohmann::json(it.number)},
                       {"rank", r.rank},
                       {"step_ns", r.predicted_ns},
                       {"gpu_end_after_step_ns", after}});
      if (after > worst_after) {
        worst_after = after;
        worst_step = r.predicted_ns;
        worst = fmt::format("{} rank {}", it.name, r.rank);
      }
    }
  }
  if (cases.empty()) return cases;
  const std::string warning = fmt::format(
      "in {} of the {} reported (step, rank) pairs the re-timed GPU work ends after the step by more than the step's "
      "length (worst: {}, GPU work ending {} after a {} step): the what-if's step and job times do not include it, "
      "because the trace's CPU never waits for that work inside the step; the job would take longer than they say",
      cases.size(), steps, worst, format_duration(worst_after), format_duration(worst_step));
  log.warn(warning);
  whatif.report.notes.push_back("Warning: " + warning + ".");
  return cases;
}

}  // namespace dpro::cli
