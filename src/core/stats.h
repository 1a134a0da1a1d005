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

// The q-quantile (0..1) of `v`, the lower neighbour of position q x (n - 1); 0 for an empty vector.
inline double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1))];
}

}  // namespace dpro
