#include "trace/native/clock_alignment.h"

#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace dpro::trace {
namespace {

using CollectiveKey = std::tuple<std::string, std::string, std::int64_t>;  // group, op, seq

// End time of each collective of one rank, by its matching key.
std::map<CollectiveKey, Nanos> collective_ends(const TraceRank& rank) {
  std::map<CollectiveKey, Nanos> ends;
  std::map<std::pair<std::string, std::string>, std::int64_t> ordinal;
  for (const auto& e : rank.events) {  // events are in time order
    if (e.kind != EventKind::kCollective) continue;
    const auto* attrs = rank.attrs_of(e);
    if (!attrs || !attrs->collective) continue;
    const auto& c = *attrs->collective;
    std::string group = c.group_name.value_or("");
    std::int64_t seq = c.sequence ? *c.sequence : ordinal[{group, c.op}]++;
    ends.emplace(CollectiveKey{group, c.op, seq}, e.end());
  }
  return ends;
}

Nanos median(std::vector<Nanos> v) {
  auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  return *mid;
}

void shift_rank(TraceRank& rank, Nanos offset) {
  for (auto& e : rank.events) e.start += offset;
  for (auto& m : rank.gpu_memory) m.at += offset;
  for (auto& it : rank.iterations) {
    it.start += offset;
    it.end += offset;
  }
  rank.clock_offset = rank.clock_offset.value_or(0) + offset;
}

}  // namespace

void align_clocks(TraceSet& set, Logger& log) {
  std::map<std::string, std::vector<std::size_t>> ranks_of_host;
  for (std::size_t i = 0; i < set.ranks.size(); ++i) ranks_of_host[set.ranks[i].host].push_back(i);
  if (ranks_of_host.size() < 2) return;

  std::vector<std::map<CollectiveKey, Nanos>> ends;
  for (const auto& r : set.ranks) ends.push_back(collective_ends(r));
  auto lowest = std::min_element(set.ranks.begin(), set.ranks.end(),
                                 [](const auto& a, const auto& b) { return a.rank < b.rank; });
  const std::string& reference = lowest->host;

  for (const auto& [host, members] : ranks_of_host) {
    if (host == reference) continue;
    std::vector<Nanos> diffs;
    for (auto ref_index : ranks_of_host[reference])
      for (auto index : members)
        for (const auto& [key, end] : ends[index])
          if (auto it = ends[ref_index].find(key); it != ends[ref_index].end())
            diffs.push_back(it->second - end);
    if (diffs.empty()) {
      log.warn("clock alignment: host " + host + " shares no collective with host " + reference +
               "; its clock is left unchanged");
      continue;
    }
    Nanos offset = median(std::move(diffs));
    for (auto index : members) shift_rank(set.ranks[index], offset);
    log.info("clock alignment: host " + host + " shifted by " + std::to_string(offset) + " ns");
  }
}

}  // namespace dpro::trace
