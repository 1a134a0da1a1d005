#include "whatif/host_speed.h"

#include <algorithm>
#include <unordered_map>

namespace dpro::whatif {

namespace {

struct Durations {
  std::vector<Nanos> each;
  Nanos total = 0;
};

// Own durations of each op name's unblocked CPU-thread nodes.
std::unordered_map<std::string, Durations> cpu_op_durations(const graph::Dfg& dfg, Nanos* all) {
  std::unordered_map<std::string, Durations> by_name;
  *all = 0;
  for (graph::NodeId id : dfg.node_ids()) {
    const graph::Node& n = dfg.node(id);
    if (!graph::is_cpu_op(n.kind)) continue;
    bool waits = false;
    // Waited: a blocking edge (a sync, a full launch queue) from GPU work that ended after the call began.
    dfg.for_each_in_edge(id, [&](graph::EdgeId e) {
      const graph::Edge& edge = dfg.edge(e);
      const graph::Node& src = dfg.node(edge.src);
      waits |= graph::is_blocking(edge.kind) && src.measured_start + src.measured_duration > n.measured_start;
    });
    const std::string_view name = dfg.op_name(id);
    if (waits || name.empty()) continue;
    Durations& d = by_name[std::string(name)];
    d.each.push_back(n.measured_duration);
    d.total += n.measured_duration;
    *all += n.measured_duration;
  }
  return by_name;
}

Nanos median(std::vector<Nanos>& v) {
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  return *mid;
}

}  // namespace

HostSpeed host_speed(const graph::Dfg& origin, const graph::Dfg& target, std::size_t min_calls) {
  HostSpeed out;
  Nanos target_all = 0;
  auto o = cpu_op_durations(origin, &out.origin_cpu_total);
  auto t = cpu_op_durations(target, &target_all);
  for (auto& [name, od] : o) {
    auto it = t.find(name);
    if (it == t.end() || od.each.size() < min_calls || it->second.each.size() < min_calls) continue;
    HostOpRatio r;
    r.name = name;
    r.origin_calls = od.each.size();
    r.target_calls = it->second.each.size();
    r.origin_median = median(od.each);
    r.target_median = median(it->second.each);
    r.origin_total = od.total;
    if (r.origin_median <= 0 || r.target_median <= 0) continue;
    r.speed = static_cast<double>(r.origin_median) / static_cast<double>(r.target_median);
    out.origin_total += r.origin_total;
    out.ops.push_back(std::move(r));
  }
  std::sort(out.ops.begin(), out.ops.end(), [](const HostOpRatio& a, const HostOpRatio& b) {
    return a.origin_total != b.origin_total ? a.origin_total > b.origin_total : a.name < b.name;
  });
  std::vector<const HostOpRatio*> by_speed;
  for (const HostOpRatio& r : out.ops) by_speed.push_back(&r);
  std::sort(by_speed.begin(), by_speed.end(), [](const HostOpRatio* a, const HostOpRatio* b) {
    return a->speed != b->speed ? a->speed < b->speed : a->name < b->name;
  });
  Nanos seen = 0;
  for (const HostOpRatio* r : by_speed) {
    seen += r->origin_total;
    if (2 * seen >= out.origin_total) {
      out.cpu_speed = r->speed;
      break;
    }
  }
  return out;
}

}  // namespace dpro::whatif
