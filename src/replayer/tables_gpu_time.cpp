// The tables read from the replay: communication/computation overlap and GPU idle time by cause
// (tables.h).
#include <algorithm>
#include <functional>

#include "replayer/critical_path.h"
#include "replayer/tables.h"
#include "replayer/tables_internal.h"

namespace dpro::replayer {

namespace {

// Each rank's GPU ops (as the report counts them: rank_ops, on the GPU), by replayed start.
std::map<int, std::vector<graph::NodeId>> gpu_ops_by_rank(const trace::TraceSet& traces, const graph::Dfg& dfg,
                                                          const Simulation& sim) {
  std::map<int, std::vector<graph::NodeId>> out;
  const auto ops = rank_ops(traces, dfg);
  for (std::size_t ri = 0; ri < ops.size(); ++ri) {
    std::vector<graph::NodeId>& list = out[traces.ranks[ri].rank];
    for (graph::NodeId id : ops[ri])
      if (graph::on_gpu(dfg.node(id).kind)) list.push_back(id);
    std::stable_sort(list.begin(), list.end(), [&](graph::NodeId a, graph::NodeId b) { return sim.start[a] < sim.start[b]; });
  }
  return out;
}

std::vector<Interval> clipped(const std::vector<graph::NodeId>& nodes, const Simulation& sim, const StepWindow& w,
                              const std::function<bool(graph::NodeId)>& keep) {
  std::vector<Interval> v;
  for (graph::NodeId id : nodes)
    if (keep(id)) v.emplace_back(std::max(sim.start[id], w.begin), std::min(sim.end[id], w.end));
  return merge(std::move(v));
}

// Which idle bucket the gap ending when `next` starts belongs to (IdleRow).
Nanos& bucket(IdleRow& row, const graph::Dfg& dfg, const Simulation& sim, graph::NodeId next) {
  const graph::EdgeId cause = sim.start_cause[next];
  if (!cause.valid()) return row.other;
  switch (dfg.edge(cause).kind) {
    case graph::EdgeKind::kLaunch: return row.host_wait;
    case graph::EdgeKind::kStreamOrder:
    case graph::EdgeKind::kStreamWait: return row.kernel_wait;
    case graph::EdgeKind::kCollective: return row.peer_wait;
    default: return row.other;
  }
}

IdleRow idle_of(const std::vector<graph::NodeId>& nodes, const graph::Dfg& dfg, const Simulation& sim, int rank,
                const StepWindow& w) {
  IdleRow row{rank, w.step, w.end - w.begin};
  const std::vector<Interval> busy = clipped(nodes, sim, w, [](graph::NodeId) { return true; });
  row.idle = row.span - length(busy);
  Nanos cursor = w.begin;
  auto gap_until = [&](Nanos until) {
    if (until <= cursor) return;
    // The op starting when the gap ends (nodes are by start); none after the step's last op.
    auto it = std::lower_bound(nodes.begin(), nodes.end(), until, [&](graph::NodeId id, Nanos t) { return sim.start[id] < t; });
    if (until < w.end && it != nodes.end() && sim.start[*it] == until) bucket(row, dfg, sim, *it) += until - cursor;
    else row.other += until - cursor;
  };
  for (const Interval& b : busy) {
    gap_until(b.first);
    cursor = b.second;
  }
  gap_until(w.end);
  return row;
}

}  // namespace

double OverlapRow::hidden() const {
  return communication > 0 ? static_cast<double>(overlapped) / static_cast<double>(communication) : 0.0;
}

std::vector<OverlapRow> overlap_rows(const trace::TraceSet& traces, const graph::Dfg& dfg, const Simulation& sim,
                                     const Report& report) {
  const ExecutionCategories categories = execution_categories(dfg);
  const auto nodes = gpu_ops_by_rank(traces, dfg, sim);
  std::vector<OverlapRow> rows;
  for (const auto& [rank, windows] : predicted_windows(report)) {
    const auto n = nodes.find(rank);
    if (n == nodes.end()) continue;
    for (const StepWindow& w : windows) {
      auto of = [&](Category c) { return clipped(n->second, sim, w, [&](graph::NodeId id) { return categories[id] == c; }); };
      const std::vector<Interval> compute = of(Category::kCompute), comm = of(Category::kCommunication);
      rows.push_back({rank, w.step, w.end - w.begin, length(compute), length(comm), overlap_length(compute, comm)});
    }
  }
  return rows;
}

std::vector<IdleRow> idle_rows(const trace::TraceSet& traces, const graph::Dfg& dfg, const Simulation& sim,
                               const Report& report) {
  const auto nodes = gpu_ops_by_rank(traces, dfg, sim);
  std::vector<IdleRow> rows;
  for (const auto& [rank, windows] : predicted_windows(report)) {
    const auto n = nodes.find(rank);
    for (const StepWindow& w : windows)
      rows.push_back(n == nodes.end() ? IdleRow{rank, w.step, w.end - w.begin, w.end - w.begin, 0, 0, 0, w.end - w.begin}
                                      : idle_of(n->second, dfg, sim, rank, w));
  }
  return rows;
}

}  // namespace dpro::replayer
