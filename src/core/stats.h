#pragma once
// Small statistics helpers shared by the models and the benchmarks.
#include <algorithm>
#include <vector>

namespace dpro {

// Median (mean of the two middle values for an even count); 0 for an empty vector.
inline double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

}  // namespace dpro
