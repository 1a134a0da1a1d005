#include "whatif/comm/scale_out.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <set>

#include "core/error.h"
#include "replayer/engine.h"
#include "replayer/report.h"

namespace dpro::comm {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

graph::Dfg replicate_ranks(const graph::Dfg& dfg, const trace::TraceSet& traces, int ranks,
                           std::vector<IdVector<graph::NodeId, graph::NodeId>>& block_maps) {
  const int w = static_cast<int>(traces.ranks.size());
  DPRO_CHECK(w > 0 && ranks > 0);
  std::map<int, int> index_of_rank;  // trace rank number -> index
  for (int i = 0; i < w; ++i) index_of_rank[traces.ranks[i].rank] = i;
  const int blocks = (ranks + w - 1) / w;
  // New rank of trace rank index i in block j: j * W + i (trace rank numbers 0..W-1 keep theirs).
  // A single block (N <= W) keeps the trace's numbers, also those of a partial set (ranks 0, 3, 5),
  // so that the report finds each rank's nodes by its number.
  auto new_rank = [&](int block, int index) { return blocks == 1 ? traces.ranks[index].rank : block * w + index; };

  graph::Dfg out;
  out.ops() = dfg.ops();  // a replica is the same op: it keeps its description
  using TrackMap = IdVector<graph::TrackId, graph::TrackId>;
  std::vector<TrackMap> track_maps(blocks, TrackMap(dfg.tracks().size(), graph::TrackId::none()));
  for (int j = 0; j < blocks; ++j) {
    for (const graph::TrackId t : dfg.track_ids()) {
      graph::Track track = dfg.track(t);
      const auto it = index_of_rank.find(track.rank);
      if (it == index_of_rank.end() || new_rank(j, it->second) >= ranks) continue;
      track.rank = new_rank(j, it->second);
      track_maps[j][t] = out.add_track(track);
    }
  }
  block_maps.assign(blocks, IdVector<graph::NodeId, graph::NodeId>(dfg.node_count(), graph::NodeId::none()));
  out.nodes().reserve(dfg.node_count() * static_cast<std::size_t>(blocks));
  for (int j = 0; j < blocks; ++j) {
    for (const graph::NodeId id : dfg.node_ids()) {
      const graph::Node& n = dfg.node(id);
      if (n.kind == graph::NodeKind::kBarrier) {
        if (j == 0) {
          block_maps[j][id] = out.add_node(n);
          if (dfg.op_of(id).valid()) out.set_op(block_maps[j][id], dfg.op_of(id));
        } else {
          block_maps[j][id] = block_maps[0][id];
        }
        continue;
      }
      const auto it = index_of_rank.find(n.rank);
      if (it == index_of_rank.end() || new_rank(j, it->second) >= ranks) continue;
      graph::Node copy = n;
      copy.rank = new_rank(j, it->second);
      if (n.track.valid()) copy.track = track_maps[j][n.track];
      block_maps[j][id] = out.add_node(copy);
      if (dfg.op_of(id).valid()) out.set_op(block_maps[j][id], dfg.op_of(id));
    }
  }
  for (int j = 0; j < blocks; ++j) {
    for (const graph::Edge& e : dfg.edges()) {
      const bool src_barrier = dfg.node(e.src).kind == graph::NodeKind::kBarrier;
      const bool dst_barrier = dfg.node(e.dst).kind == graph::NodeKind::kBarrier;
      if (src_barrier && dst_barrier && j > 0) continue;
      graph::Edge copy = e;
      copy.src = block_maps[j][e.src];
      copy.dst = block_maps[j][e.dst];
      if (!copy.src.valid() || !copy.dst.valid()) continue;
      out.add_edge(copy);
    }
  }
  out.set_origin(dfg.origin());
  out.finalize();
  return out;
}

graph::BuiltGraph scale_in(const graph::BuiltGraph& built, const trace::TraceSet& traces, int ranks) {
  DPRO_CHECK(ranks >= 1 && ranks < static_cast<int>(traces.ranks.size()));
  DPRO_CHECK(built.ranks.size() == traces.ranks.size());
  std::vector<IdVector<graph::NodeId, graph::NodeId>> block_maps;
  graph::BuiltGraph out;
  out.dfg = replicate_ranks(built.dfg, traces, ranks, block_maps);
  out.stats = built.stats;
  const IdVector<graph::NodeId, graph::NodeId>& map = block_maps.at(0);
  auto remap = [&](const IdVector<graph::EventRef, graph::NodeId>& ids) {
    IdVector<graph::EventRef, graph::NodeId> mapped(ids.size(), graph::NodeId::none());
    for (const graph::EventRef i : ids.ids())
      if (ids[i].valid()) mapped[i] = map[ids[i]];
    return mapped;
  };
  out.ranks.reserve(built.ranks.size());
  for (const graph::RankNodes& r : built.ranks)
    out.ranks.push_back({remap(r.node_of_event), remap(r.first_inside), remap(r.last_inside)});
  return out;
}

ScaleOutResult simulate_scaled_job(const trace::TraceSet& traces, const std::vector<graph::RankNodes>& rank_nodes,
                                   const graph::Dfg& dfg, int ranks, bool expand) {
  const int w = static_cast<int>(traces.ranks.size());
  if (ranks < 1) throw OptionError("ranks", std::to_string(ranks), "must be at least 1");
  DPRO_CHECK(rank_nodes.size() == traces.ranks.size());
  ScaleOutResult result;
  result.ranks = ranks;
  result.expanded = expand || ranks < w;
  std::vector<IdVector<graph::NodeId, graph::NodeId>> block_maps;
  graph::Dfg expanded;
  if (result.expanded) expanded = replicate_ranks(dfg, traces, ranks, block_maps);
  const graph::Dfg& g = result.expanded ? expanded : dfg;
  result.nodes = g.op_count();
  result.edges = g.edge_count();
  const auto t1 = std::chrono::steady_clock::now();
  const replayer::Simulation sim = replayer::simulate(g);
  result.simulate_seconds = seconds_since(t1);

  // Ranks to report: every (block, trace rank) that exists; in symmetric mode the replicas
  // equal their originals, so block 0 stands for all.
  const int blocks = result.expanded ? static_cast<int>(block_maps.size()) : 1;
  std::set<std::int64_t> numbers;
  for (const auto& r : traces.ranks)
    for (const auto& it : r.iterations) numbers.insert(it.number);
  for (std::int64_t number : numbers) {
    Nanos begin = INT64_MAX, end = INT64_MIN;
    for (int j = 0; j < blocks; ++j) {
      for (int i = 0; i < w && j * w + i < ranks; ++i) {
        const trace::TraceRank& tr = traces.ranks[i];
        const auto step = std::find_if(tr.iterations.begin(), tr.iterations.end(),
                                       [&](const trace::Iteration& x) { return x.number == number; });
        if (step == tr.iterations.end()) continue;
        const graph::EventRef marker{step->event};
        graph::NodeId first = rank_nodes[i].first_inside[marker];
        graph::NodeId last = rank_nodes[i].last_inside[marker];
        // Replicas keep the measured times of their originals.
        if (result.expanded && first.valid() && last.valid()) {
          first = block_maps[j][first];
          last = block_maps[j][last];
        }
        const auto span = replayer::predicted_span(tr.events[step->event], first, last, g, sim);
        if (!span) continue;
        begin = std::min(begin, span->first);
        end = std::max(end, span->second);
      }
    }
    if (begin < end) result.iterations.push_back({number, end - begin});
  }
  if (numbers.empty()) {  // no ProfilerStep#N: the whole trace of each rank, as the report does
    const std::vector<std::vector<graph::NodeId>> nodes_of = replayer::rank_ops(traces, dfg);
    std::vector<std::pair<Nanos, Nanos>> recorded;  // per trace rank, shared by its replicas
    for (const auto& tr : traces.ranks) recorded.push_back(replayer::recorded_span(tr));
    std::vector<graph::NodeId> nodes;  // rank i's ops in block j
    Nanos begin = INT64_MAX, end = INT64_MIN;
    for (int j = 0; j < blocks; ++j) {
      for (int i = 0; i < w && j * w + i < ranks; ++i) {
        nodes.clear();
        for (graph::NodeId id : nodes_of[i]) nodes.push_back(result.expanded ? block_maps[j][id] : id);
        const auto span = replayer::whole_trace_span(recorded[i], nodes, g, sim);
        if (!span) continue;
        begin = std::min(begin, span->predicted_start);
        end = std::max(end, span->predicted_end);
      }
    }
    if (begin < end) result.iterations.push_back({0, end - begin, true});
  }
  return result;
}

}  // namespace dpro::comm
