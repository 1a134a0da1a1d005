#include "trace/iterations.h"

#include <algorithm>
#include <map>

namespace dpro::trace {

void detect_iterations(TraceRank& rank, const StringTable& strings) {
  std::map<std::int64_t, Iteration> by_number;
  for (std::uint32_t i = 0; i < rank.events.size(); ++i) {
    const Event& e = rank.events[i];
    if (e.kind != EventKind::kUserAnnotation && e.kind != EventKind::kCpuOp) continue;
    const std::string_view name = strings.view(e.name);
    const auto number = profiler_step_number(name);
    if (!number) continue;
    auto [it, inserted] = by_number.try_emplace(*number);
    if (inserted || e.dur > it->second.end - it->second.start) {
      it->second = Iteration{std::string(name), *number, e.start, e.end(), i};
    }
  }
  rank.iterations.clear();
  for (auto& [number, iteration] : by_number) rank.iterations.push_back(std::move(iteration));
  std::sort(rank.iterations.begin(), rank.iterations.end(),
            [](const Iteration& a, const Iteration& b) { return a.start < b.start; });
}

}  // namespace dpro::trace
