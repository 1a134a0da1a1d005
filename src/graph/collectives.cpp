// Cross-rank matching of collectives: instances are keyed by (process group, operation,
// per-group sequence). Each instance gets a barrier node: it starts when the last participant's
// kernel starts, and every participant's kernel ends its measured transfer time after that.
#include <algorithm>
#include <map>
#include <set>

#include "core/error.h"
#include "graph/builder_internal.h"

namespace dpro::graph::detail {
namespace {

struct InstanceKey {
  std::string group;
  std::string op;
  std::int64_t sequence;
  auto operator<=>(const InstanceKey&) const = default;
};

std::string describe(const trace::TraceSet& traces, const trace::TraceRank& rank, const CollectiveRef& ref,
                     std::int64_t sequence) {
  const trace::Event& e = rank.events[ref.event.value];
  return "collective " + ref.op + " #" + std::to_string(sequence) + " of process group " + ref.group +
         " (kernel '" + std::string(traces.name(e)).substr(0, 60) + "' at ts " + std::to_string(e.start) + " ns)";
}

}  // namespace

void match_collectives(const trace::TraceSet& traces, std::vector<std::vector<CollectiveRef>>& per_rank,
                       Dfg& dfg, BuildStats& stats, Logger& log) {
  std::set<int> present;
  int world = 0;
  for (const trace::TraceRank& r : traces.ranks) {
    present.insert(r.rank);
    world = std::max(world, r.world_size.value_or(0));
  }
  // instance -> (rank index, ref index)
  std::map<InstanceKey, std::vector<std::pair<std::size_t, std::size_t>>> instances;
  for (std::size_t ri = 0; ri < per_rank.size(); ++ri) {
    std::map<std::pair<std::string, std::string>, std::int64_t> next_sequence;
    for (std::size_t k = 0; k < per_rank[ri].size(); ++k) {
      CollectiveRef& ref = per_rank[ri][k];
      const std::int64_t seq = ref.sequence ? *ref.sequence : next_sequence[{ref.group, ref.op}]++;
      ref.sequence = seq;
      instances[InstanceKey{ref.group, ref.op, seq}].emplace_back(ri, k);
    }
  }
  for (const auto& [key, members] : instances) {
    const auto& first = per_rank[members.front().first][members.front().second];
    std::vector<int> participants = first.group_ranks;
    if (participants.empty()) {
      const int size = std::max<int>(world, static_cast<int>(traces.ranks.size()));
      // A group smaller than the job whose members the trace does not list (a list PyTorch cut
      // at 30 ranks that is no progression) cannot be matched: which ranks to wait for is unknown.
      if (first.group_size && *first.group_size < size) {
        stats.collectives_unmatched += members.size();
        continue;
      }
      for (int r = 0; r < size; ++r) participants.push_back(r);
    }
    const bool all_present = std::all_of(participants.begin(), participants.end(), [&](int r) { return present.count(r) > 0; });
    if (!all_present || participants.size() < 2) {
      stats.collectives_unmatched += members.size();
      continue;
    }
    std::set<int> have;
    for (const auto& [ri, k] : members) have.insert(traces.ranks[ri].rank);
    for (int r : participants) {
      if (have.count(r)) continue;
      const trace::TraceRank& owner = traces.ranks[members.front().first];
      const trace::TraceRank* missing = traces.find_rank(r);
      std::size_t count_there = 0;
      const std::size_t missing_index = static_cast<std::size_t>(missing - traces.ranks.data());
      for (const CollectiveRef& ref : per_rank[missing_index]) {
        if (ref.group == key.group && ref.op == key.op) ++count_there;
      }
      std::size_t count_here = 0;
      for (const CollectiveRef& ref : per_rank[members.front().first]) {
        if (ref.group == key.group && ref.op == key.op) ++count_here;
      }
      throw InputError(owner.file, describe(traces, owner, first, key.sequence),
                       "cannot be matched: rank " + std::to_string(r) + " (" + missing->file + ") has " +
                           std::to_string(count_there) + " " + key.op + " collective(s) in this group, rank " +
                           std::to_string(owner.rank) + " has " + std::to_string(count_here));
    }
    Node barrier;
    barrier.kind = NodeKind::kBarrier;
    barrier.rank = -1;
    barrier.name = first.node.valid() ? dfg.node(first.node).name : StringId{};
    const NodeId b = dfg.add_node(barrier);
    Nanos last_arrival = INT64_MIN;
    for (const auto& [ri, k] : members) last_arrival = std::max(last_arrival, dfg.node(per_rank[ri][k].node).measured_start);
    dfg.node(b).measured_start = last_arrival;
    for (const auto& [ri, k] : members) {
      const NodeId n = per_rank[ri][k].node;
      Node& kernel = dfg.node(n);
      const Nanos transfer = std::max<Nanos>(0, kernel.measured_start + kernel.measured_duration - last_arrival);
      kernel.duration = transfer;
      add_counted_edge(dfg, stats, Edge{n, b, EdgeKind::kCollective, Point::kStart, Point::kStart, 0});
      add_counted_edge(dfg, stats, Edge{b, n, EdgeKind::kCollective, Point::kStart, Point::kEnd, transfer});
    }
    ++stats.collectives_matched;
  }
  if (stats.collectives_unmatched > 0) {
    log.info(std::to_string(stats.collectives_unmatched) +
             " collective kernel(s) have participants outside this trace set; replayed with measured durations");
  }
}

}  // namespace dpro::graph::detail

namespace dpro::graph {

const trace::CollectiveInfo* collective_info(const trace::TraceRank& rank, const Node& kernel) {
  auto info_of = [&](EventRef event) -> const trace::CollectiveInfo* {
    const trace::Event* e = event_of(rank, event);
    if (!e) return nullptr;
    const trace::EventAttrs* a = rank.attrs_of(*e);
    return a && a->collective ? &*a->collective : nullptr;
  };
  const trace::CollectiveInfo* own = info_of(kernel.event);
  const trace::CollectiveInfo* launcher = info_of(kernel.parent_op);
  if (launcher && launcher->op.empty()) launcher = nullptr;
  if (launcher && (!own || (!own->group_name && own->group_ranks.empty()))) return launcher;
  return own;
}

}  // namespace dpro::graph
