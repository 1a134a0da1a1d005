#include <algorithm>

#include "replayer/tables_internal.h"

namespace dpro::replayer {

namespace {

std::map<int, std::vector<StepWindow>> windows(const Report& report, bool measured) {
  std::map<int, std::vector<StepWindow>> w;
  for (const IterationReport& it : report.iterations)
    for (const RankIteration& r : it.ranks) {
      const Nanos begin = measured ? r.measured_start : r.predicted_start;
      w[r.rank].push_back({it.whole_trace ? -1 : it.number, begin, begin + (measured ? r.measured_ns : r.predicted_ns)});
    }
  return w;
}

}  // namespace

std::map<int, std::vector<StepWindow>> measured_windows(const Report& report) { return windows(report, true); }
std::map<int, std::vector<StepWindow>> predicted_windows(const Report& report) { return windows(report, false); }

const StepWindow* window_of(const std::vector<StepWindow>& windows, Nanos t) {
  for (const StepWindow& w : windows)
    if (t >= w.begin && t < w.end) return &w;
  return nullptr;
}

std::vector<Interval> merge(std::vector<Interval> v) {
  std::sort(v.begin(), v.end());
  std::vector<Interval> out;
  for (const Interval& i : v) {
    if (i.second <= i.first) continue;
    if (!out.empty() && i.first <= out.back().second) out.back().second = std::max(out.back().second, i.second);
    else out.push_back(i);
  }
  return out;
}

Nanos length(const std::vector<Interval>& merged) {
  Nanos n = 0;
  for (const Interval& i : merged) n += i.second - i.first;
  return n;
}

bool covers(const std::vector<Interval>& merged, Nanos t) {
  auto it = std::upper_bound(merged.begin(), merged.end(), t, [](Nanos x, const Interval& i) { return x < i.first; });
  return it != merged.begin() && t < std::prev(it)->second;
}

Nanos overlap_length(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  Nanos n = 0;
  for (std::size_t i = 0, j = 0; i < a.size() && j < b.size();) {
    n += std::max<Nanos>(0, std::min(a[i].second, b[j].second) - std::max(a[i].first, b[j].first));
    if (a[i].second < b[j].second) ++i;
    else ++j;
  }
  return n;
}

}  // namespace dpro::replayer
