#include "whatif/evaluate.h"

namespace dpro::whatif {

Change apply(Workload& workload, const Rewrite& rewrite) {
  return std::visit(
      [&](const auto& r) -> Change {
        using R = std::decay_t<decltype(r)>;
        if constexpr (std::is_same_v<R, HostRetime>) return host_retime(workload, r);
        else if constexpr (std::is_same_v<R, DeviceRetime>) return device_retime(workload, r);
        else if constexpr (std::is_same_v<R, CommRetime>) return comm_retime(workload, r);
        else if constexpr (std::is_same_v<R, OpFusion>) return op_fusion(workload, r);
        else return precision(workload, r);
      },
      rewrite);
}

Evaluation evaluate(const Workload& base, const std::vector<Rewrite>& rewrites, replayer::Simulator& simulator,
                    const EvaluateOptions& options) {
  Evaluation e{base, {}, {}, {}, {}};
  for (const Rewrite& rewrite : rewrites) {
    e.changes.push_back(apply(e.workload, rewrite));
    if (options.on_applied) options.on_applied(e.changes.back());
  }
  graph::Dfg& dfg = e.workload.graph.dfg;
  if (!dfg.finalized()) dfg.finalize();
  const trace::TraceSet& traces = *e.workload.traces;
  graph::check_acyclic(dfg, traces);
  e.simulation = simulator.run(dfg);
  e.report = replayer::make_report(traces, e.workload.graph, e.simulation, options.report);
  e.gpu_work_after_steps = gpu_work_after_steps(traces, dfg, e.simulation, e.report);
  return e;
}

}  // namespace dpro::whatif
