#include "executor/multi_rank.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <stdexcept>

#include "core/error.h"

namespace dpro::executor {

namespace {

// The recorded members of a collective's group: its recorded ranks, or every rank of the traces
// for a group of the job's size (or of no recorded size); empty when unknown.
std::vector<int> recorded_members(const graph::CollectiveDesc& d, const trace::TraceSet& traces) {
  if (!d.group_ranks.empty()) return d.group_ranks;
  if (d.group_size && *d.group_size != static_cast<int>(traces.ranks.size())) return {};
  std::vector<int> all;
  for (const trace::TraceRank& r : traces.ranks) all.push_back(r.rank);
  return all;
}

std::optional<graph::NodeId> barrier_of(const graph::Dfg& dfg, graph::NodeId n) {
  std::optional<graph::NodeId> out;
  auto look = [&](graph::EdgeId e, graph::NodeId other) {
    if (dfg.edge(e).kind == graph::EdgeKind::kCollective && dfg.node(other).kind == graph::NodeKind::kBarrier) out = other;
  };
  dfg.for_each_out_edge(n, [&](graph::EdgeId e) { look(e, dfg.edge(e).dst); });
  dfg.for_each_in_edge(n, [&](graph::EdgeId e) { look(e, dfg.edge(e).src); });
  return out;
}

// Assigns each collective launch of each rank its group (groups of 2+ scheduled members).
void assign_groups(const whatif::Workload& w, const std::set<int>& scheduled, MultiRankSchedule& m) {
  const graph::Dfg& dfg = w.graph.dfg;
  std::map<std::pair<std::string, std::vector<int>>, std::uint32_t> index;
  for (std::size_t r = 0; r < m.ranks.size(); ++r) {
    const Schedule& s = m.ranks[r];
    m.launch_group.emplace_back(s.launches.size(), kNoGroup);
    for (std::size_t i = 0; i < s.launches.size(); ++i) {
      const graph::OpDesc* op = dfg.op(s.launches[i].node);
      const auto* call = std::get_if<CollectiveCall>(&s.launches[i].lowered.launch);
      // Point-to-point ops name no peer here: they stay stand-ins.
      if (!call || call->op == "send" || call->op == "recv" || !op || !op->collective) continue;
      const std::vector<int> recorded = recorded_members(*op->collective, *w.traces);
      std::vector<int> members;
      for (int rank : recorded)
        if (scheduled.contains(rank)) members.push_back(rank);
      std::sort(members.begin(), members.end());
      if (members.size() < 2) continue;
      const std::string name(dfg.ops().name(op->collective->group));
      auto [it, fresh] = index.try_emplace({name, members}, static_cast<std::uint32_t>(m.groups.size()));
      if (fresh) m.groups.push_back({name, members, recorded.size(), 0});
      m.launch_group[r][i] = it->second;
    }
  }
}

// A rank's collectives of group g, in the order it issues them: recorded start.
std::vector<std::uint32_t> group_sequence(const graph::Dfg& dfg, const MultiRankSchedule& m, std::size_t r, std::uint32_t g) {
  std::vector<std::uint32_t> out;
  for (std::uint32_t i = 0; i < m.launch_group[r].size(); ++i)
    if (m.launch_group[r][i] == g) out.push_back(i);
  std::stable_sort(out.begin(), out.end(), [&](std::uint32_t a, std::uint32_t b) {
    return dfg.node(m.ranks[r].launches[a].node).measured_start < dfg.node(m.ranks[r].launches[b].node).measured_start;
  });
  return out;
}

// Host flags so that a rank issues each group's collectives in their sequence where two host
// threads issue them.
void order_issue(const graph::Dfg& dfg, MultiRankSchedule& m, std::size_t r) {
  Schedule& s = m.ranks[r];
  std::map<std::uint32_t, std::vector<std::uint32_t>> signal_after, await_before;  // launch -> flags
  for (std::uint32_t g = 0; g < m.groups.size(); ++g) {
    const std::vector<std::uint32_t> seq = group_sequence(dfg, m, r, g);
    for (std::size_t k = 1; k < seq.size(); ++k) {
      if (s.launches[seq[k - 1]].thread == s.launches[seq[k]].thread) continue;
      signal_after[seq[k - 1]].push_back(s.flags);
      await_before[seq[k]].push_back(s.flags++);
    }
  }
  if (signal_after.empty()) return;
  for (HostThread& t : s.threads) {
    std::vector<HostStep> steps;
    for (const HostStep& step : t.steps) {
      const bool launch = step.kind == StepKind::kLaunch;
      if (launch && await_before.contains(step.index))
        for (std::uint32_t f : await_before[step.index]) steps.push_back({StepKind::kAwait, f, 0, 0, step.node});
      steps.push_back(step);
      if (launch && signal_after.contains(step.index))
        for (std::uint32_t f : signal_after[step.index]) steps.push_back({StepKind::kSignal, f, 0, 0, step.node});
    }
    t.steps = std::move(steps);
  }
  if (const std::string stuck = stuck_host_step(s); !stuck.empty())
    throw std::logic_error("rank " + std::to_string(s.rank) + ": ordering its collectives would hang the schedule: " + stuck);
}

std::string describe(const graph::Dfg& dfg, const ScheduledLaunch& l) {
  const auto& c = std::get<CollectiveCall>(l.lowered.launch);
  return c.op + " of " + std::to_string(c.bytes) + " bytes " + to_string(c.dtype) + " (node " + std::to_string(l.node.value) +
         ", " + std::string(dfg.ops().name(dfg.op(l.node)->name)) + ")";
}

bool same_collective(const graph::Dfg& dfg, const ScheduledLaunch& a, const ScheduledLaunch& b) {
  const auto& x = std::get<CollectiveCall>(a.lowered.launch);
  const auto& y = std::get<CollectiveCall>(b.lowered.launch);
  if (x.op != y.op || x.bytes != y.bytes || x.dtype != y.dtype) return false;
  const auto ba = barrier_of(dfg, a.node), bb = barrier_of(dfg, b.node);
  return !ba || !bb || *ba == *bb;
}

// The k-th collective of group g, one vertex per (g, k): vertex index offsets per group.
std::vector<std::size_t> instance_offsets(const MultiRankSchedule& m, const std::vector<std::vector<std::uint32_t>>& position) {
  std::vector<std::size_t> count(m.groups.size(), 0);
  for (std::size_t r = 0; r < m.ranks.size(); ++r)
    for (std::size_t i = 0; i < m.launch_group[r].size(); ++i)
      if (const std::uint32_t g = m.launch_group[r][i]; g != kNoGroup) count[g] = std::max<std::size_t>(count[g], position[r][i] + 1);
  std::vector<std::size_t> offset(m.groups.size() + 1, 0);
  for (std::size_t g = 0; g < m.groups.size(); ++g) offset[g + 1] = offset[g] + count[g];
  return offset;
}

}  // namespace

std::string collective_wait_cycle(const MultiRankSchedule& m, const std::vector<std::vector<std::uint32_t>>& position) {
  const std::vector<std::size_t> offset = instance_offsets(m, position);
  struct Arc {
    std::size_t to;
    int rank;
    std::uint32_t stream;
  };
  std::vector<std::vector<Arc>> out(offset.back());
  auto vertex = [&](std::size_t r, std::size_t i) { return offset[m.launch_group[r][i]] + position[r][i]; };
  for (std::size_t r = 0; r < m.ranks.size(); ++r) {
    std::map<std::uint32_t, std::size_t> last_on_stream;  // stream -> its latest group collective
    for (std::size_t i = 0; i < m.launch_group[r].size(); ++i) {
      if (m.launch_group[r][i] == kNoGroup) continue;
      const std::uint32_t stream = m.ranks[r].launches[i].stream;
      if (auto it = last_on_stream.find(stream); it != last_on_stream.end() && m.launch_group[r][it->second] != m.launch_group[r][i])
        out[vertex(r, it->second)].push_back({vertex(r, i), m.ranks[r].rank, stream});
      last_on_stream[stream] = i;
    }
  }
  auto name = [&](std::size_t v) {
    std::size_t g = 0;
    while (offset[g + 1] <= v) ++g;
    const std::string& n = m.groups[g].name;
    return "group " + (n.empty() ? std::string("(unnamed)") : n) + " #" + std::to_string(v - offset[g]);
  };
  // Depth-first search, iterative; a back arc closes a cycle, read back through the parents.
  std::vector<std::uint8_t> state(out.size(), 0);  // 0 new, 1 on the path, 2 done
  std::vector<std::pair<std::size_t, const Arc*>> parent(out.size(), {SIZE_MAX, nullptr});
  for (std::size_t root = 0; root < out.size(); ++root) {
    if (state[root]) continue;
    std::vector<std::pair<std::size_t, std::size_t>> stack{{root, 0}};  // vertex, next arc
    state[root] = 1;
    while (!stack.empty()) {
      auto& [v, next] = stack.back();
      if (next == out[v].size()) {
        state[v] = 2;
        stack.pop_back();
        continue;
      }
      const Arc& a = out[v][next++];
      if (state[a.to] == 0) {
        state[a.to] = 1;
        parent[a.to] = {v, &a};
        stack.push_back({a.to, 0});
      } else if (state[a.to] == 1) {
        std::vector<std::string> steps{"rank " + std::to_string(a.rank) + " issues " + name(v) + " before " + name(a.to) +
                                       " on stream " + std::to_string(a.stream)};
        for (std::size_t u = v; u != a.to; u = parent[u].first) {
          const Arc* in = parent[u].second;
          steps.push_back("rank " + std::to_string(in->rank) + " issues " + name(parent[u].first) + " before " + name(u) +
                          " on stream " + std::to_string(in->stream));
        }
        std::string msg = "collectives of different groups would wait on each other in a cycle (NCCL would hang): ";
        for (std::size_t k = steps.size(); k-- > 0;) msg += steps[k] + (k ? "; " : "");
        return msg;
      }
    }
  }
  return "";
}

std::string collective_order_mismatch(const graph::Dfg& dfg, const MultiRankSchedule& m) {
  std::map<int, std::size_t> rank_index;
  for (std::size_t r = 0; r < m.ranks.size(); ++r) rank_index[m.ranks[r].rank] = r;
  for (std::uint32_t g = 0; g < m.groups.size(); ++g) {
    const RankGroup& group = m.groups[g];
    const std::size_t first = rank_index.at(group.ranks.front());
    const std::vector<std::uint32_t> ref = group_sequence(dfg, m, first, g);
    for (std::size_t k = 1; k < group.ranks.size(); ++k) {
      const std::size_t r = rank_index.at(group.ranks[k]);
      const std::vector<std::uint32_t> seq = group_sequence(dfg, m, r, g);
      const std::string head = "group " + (group.name.empty() ? std::string("(unnamed)") : group.name) + ": rank " + std::to_string(group.ranks[k]) + " and rank " +
                               std::to_string(group.ranks.front());
      for (std::size_t p = 0; p < std::min(seq.size(), ref.size()); ++p) {
        const ScheduledLaunch& a = m.ranks[first].launches[ref[p]];
        const ScheduledLaunch& b = m.ranks[r].launches[seq[p]];
        if (!same_collective(dfg, a, b))
          return head + " issue different collectives at position " + std::to_string(p) + ": " + describe(dfg, b) + " vs " +
                 describe(dfg, a) + " (NCCL would hang or mix them up)";
      }
      if (seq.size() != ref.size())
        return head + " issue " + std::to_string(seq.size()) + " and " + std::to_string(ref.size()) +
               " collectives in the window (NCCL would hang)";
    }
  }
  // Every group agrees on its own order; across groups, a stream runs its collectives one after
  // another, so two ranks issuing two groups' collectives in opposite stream orders wait forever.
  std::vector<std::vector<std::uint32_t>> position(m.ranks.size());
  for (std::size_t r = 0; r < m.ranks.size(); ++r) {
    position[r].assign(m.launch_group[r].size(), 0);
    for (std::uint32_t g = 0; g < m.groups.size(); ++g) {
      const std::vector<std::uint32_t> seq = group_sequence(dfg, m, r, g);
      for (std::uint32_t k = 0; k < seq.size(); ++k) position[r][seq[k]] = k;
    }
  }
  return collective_wait_cycle(m, position);
}

MultiRankSchedule build_multi_rank_schedule(const whatif::Workload& workload, const std::vector<int>& ranks,
                                            ScheduleOptions options) {
  if (ranks.empty()) throw OptionError("--ranks", "", "no rank to schedule");
  const std::set<int> scheduled(ranks.begin(), ranks.end());
  if (scheduled.size() != ranks.size()) throw OptionError("--ranks", "", "a rank is named twice");
  const graph::Dfg& dfg = workload.graph.dfg;
  MultiRankSchedule m;
  for (int rank : scheduled) {
    options.rank = rank;
    try {
      m.ranks.push_back(build_schedule(workload, options));
    } catch (const OptionError& e) {
      if (e.option() != "--rank") throw;
      throw OptionError("--ranks", std::to_string(rank), e.message());
    }
    // Every rank runs the same recorded iteration: the first rank's.
    if (!options.iteration && !m.ranks.front().window.empty())
      for (const trace::TraceRank& r : workload.traces->ranks)
        if (r.rank == rank)
          for (const trace::Iteration& it : r.iterations)
            if (it.name == m.ranks.front().window) options.iteration = it.number;
  }
  assign_groups(workload, scheduled, m);
  for (std::size_t r = 0; r < m.ranks.size(); ++r) order_issue(dfg, m, r);
  if (const std::string bad = collective_order_mismatch(dfg, m); !bad.empty())
    throw InputError(workload.traces->ranks.front().file, "collective order", bad);
  for (std::uint32_t g = 0; g < m.groups.size(); ++g) {
    std::size_t first = 0;
    while (m.ranks[first].rank != m.groups[g].ranks.front()) ++first;
    m.groups[g].collectives = group_sequence(dfg, m, first, g).size();
  }
  return m;
}

}  // namespace dpro::executor
