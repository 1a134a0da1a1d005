#include "costmodel/eval/kmeans.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <set>

namespace dpro::costmodel {

std::vector<float> op_cluster_features(const OpDesc& op) {
  std::vector<float> f(4 + kOpFamilyCount, 0.0f);
  const double flops = op.flops(), bytes = op.bytes();
  f[0] = static_cast<float>(std::log2(1 + flops));
  f[1] = static_cast<float>(std::log2(1 + bytes));
  f[2] = static_cast<float>(std::log2(1 + op.bytes_written()));
  f[3] = static_cast<float>(std::log2((1 + flops) / (1 + bytes)));
  f[4 + static_cast<int>(op.family)] = 4.0f;  // families are far apart
  return f;
}

namespace {
double dist2(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) { const double d = a[i] - b[i]; s += d * d; }
  return s;
}
}  // namespace

std::vector<std::size_t> kmeans_select(const std::vector<std::vector<float>>& points, int k,
                                       std::uint64_t seed, int iterations) {
  const std::size_t n = points.size();
  if (n == 0 || k <= 0) return {};
  if (static_cast<std::size_t>(k) >= n) {
    std::vector<std::size_t> all(n);
    for (size_t i = 0; i < n; ++i) all[i] = i;
    return all;
  }
  std::mt19937_64 rng(seed);
  // k-means++ seeding.
  std::vector<std::vector<float>> centres;
  centres.push_back(points[std::uniform_int_distribution<std::size_t>(0, n - 1)(rng)]);
  std::vector<double> d2(n);
  for (size_t i = 0; i < n; ++i) d2[i] = dist2(points[i], centres[0]);
  while (centres.size() < static_cast<std::size_t>(k)) {
    std::discrete_distribution<std::size_t> pick(d2.begin(), d2.end());
    centres.push_back(points[pick(rng)]);
    for (size_t i = 0; i < n; ++i) d2[i] = std::min(d2[i], dist2(points[i], centres.back()));
  }
  std::vector<int> assign(n, 0);
  const std::size_t dim = points[0].size();
  for (int it = 0; it < iterations; ++it) {
    for (size_t i = 0; i < n; ++i) {
      double best = std::numeric_limits<double>::max();
      for (int c = 0; c < k; ++c) {
        const double d = dist2(points[i], centres[c]);
        if (d < best) { best = d; assign[i] = c; }
      }
    }
    std::vector<std::vector<double>> sum(k, std::vector<double>(dim, 0.0));
    std::vector<int> count(k, 0);
    for (size_t i = 0; i < n; ++i) {
      ++count[assign[i]];
      for (size_t j = 0; j < dim; ++j) sum[assign[i]][j] += points[i][j];
    }
    for (int c = 0; c < k; ++c)
      if (count[c] > 0)
        for (size_t j = 0; j < dim; ++j) centres[c][j] = static_cast<float>(sum[c][j] / count[c]);
  }
  // Largest clusters first; each takes its nearest not-yet-chosen point.
  std::vector<int> count(k, 0);
  for (size_t i = 0; i < n; ++i) ++count[assign[i]];
  std::vector<int> order(k);
  for (int c = 0; c < k; ++c) order[c] = c;
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return count[a] > count[b]; });
  std::set<std::size_t> chosen;
  std::vector<std::size_t> out;
  for (int c : order) {
    double best = std::numeric_limits<double>::max();
    std::size_t arg = n;
    for (size_t i = 0; i < n; ++i) {
      if (chosen.count(i)) continue;
      const double d = dist2(points[i], centres[c]);
      if (d < best) { best = d; arg = i; }
    }
    if (arg < n) { chosen.insert(arg); out.push_back(arg); }
  }
  return out;
}

}  // namespace dpro::costmodel
