#pragma once
// Finding ops to edit in real traces, for the editor's tests.
#include <algorithm>
#include <array>
#include <initializer_list>
#include <optional>

#include "graph/dfg.h"
#include "replayer/engine.h"

namespace dpro::test {

// The stream successor of `n` (by its stream-order out-edge), or none.
inline graph::NodeId stream_next(const graph::Dfg& dfg, graph::NodeId n) {
  graph::NodeId next;
  dfg.for_each_out_edge(n, [&](graph::EdgeId e) {
    if (dfg.edge(e).kind == graph::EdgeKind::kStreamOrder) next = dfg.edge(e).dst;
  });
  return next;
}

// Three kernels a, b, c, consecutive on one stream, that nothing but their stream order and
// their own launches ties to other ops, and whose launches came before a was ready (the
// GPU was the bottleneck): fusing them changes no other op's dependencies.
inline std::optional<std::array<graph::NodeId, 3>> fusable_kernels(const graph::Dfg& dfg,
                                                                  const replayer::Simulation& sim) {
  using graph::EdgeKind;
  auto only = [&](graph::NodeId n, bool in, std::initializer_list<EdgeKind> kinds) {
    bool ok = true;
    auto check = [&](graph::EdgeId e) { ok = ok && std::find(kinds.begin(), kinds.end(), dfg.edge(e).kind) != kinds.end(); };
    in ? dfg.for_each_in_edge(n, check) : dfg.for_each_out_edge(n, check);
    return ok;
  };
  auto kernel = [&](graph::NodeId n) { return n.valid() && dfg.node(n).kind == graph::NodeKind::kKernel; };
  for (const graph::NodeId a : dfg.node_ids()) {
    if (!kernel(a)) continue;
    const graph::NodeId b = stream_next(dfg, a);
    if (!kernel(b)) continue;
    const graph::NodeId c = stream_next(dfg, b);
    if (!kernel(c)) continue;
    if (!only(a, false, {EdgeKind::kStreamOrder}) || !only(b, false, {EdgeKind::kStreamOrder})) continue;
    if (!only(b, true, {EdgeKind::kStreamOrder, EdgeKind::kLaunch}) ||
        !only(c, true, {EdgeKind::kStreamOrder, EdgeKind::kLaunch})) {
      continue;
    }
    const Nanos a_ready = sim.start[a] - dfg.node(a).delay;
    bool launched_early = true;
    for (graph::NodeId part : {b, c}) {
      dfg.for_each_in_edge(part, [&](graph::EdgeId e) {
        const graph::Edge& edge = dfg.edge(e);
        if (edge.kind == EdgeKind::kLaunch) launched_early = launched_early && sim.start[edge.src] + edge.gap <= a_ready;
      });
    }
    if (launched_early) return std::array<graph::NodeId, 3>{a, b, c};
  }
  return std::nullopt;
}

}  // namespace dpro::test
