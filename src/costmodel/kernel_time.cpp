#include "costmodel/kernel_time.h"

#include <algorithm>
#include <cmath>

#include "core/stats.h"
#include "costmodel/scaling.h"

namespace dpro::costmodel {

namespace {
bool elementwise(OpFamily f) { return f >= OpFamily::kAdd && f <= OpFamily::kTanh; }

// Intercept of the least-squares line y = a + b x.
double intercept(const std::vector<std::pair<double, double>>& points) {
  const double n = static_cast<double>(points.size());
  double mx = 0, my = 0;
  for (const auto& [x, y] : points) {
    mx += x / n;
    my += y / n;
  }
  double sxx = 0, sxy = 0;
  for (const auto& [x, y] : points) {
    sxx += (x - mx) * (x - mx);
    sxy += (x - mx) * (y - my);
  }
  return sxx > 0 ? my - sxy / sxx * mx : my;
}
}  // namespace

std::map<std::string, double> measurement_overheads_ms(const std::vector<const Measurement*>& data) {
  std::map<std::string, std::map<OpFamily, std::vector<std::pair<double, double>>>> points;
  for (const Measurement* m : data)
    if (elementwise(m->op.family) && m->op.bytes() >= kOverheadMinBytes)
      points[m->device->name][m->op.family].push_back({m->op.bytes(), m->latency_ms});
  std::map<std::string, double> out;
  for (const auto& [device, families] : points) {
    std::vector<double> intercepts;
    for (const auto& [family, p] : families)
      if (p.size() >= kOverheadMinRows) intercepts.push_back(std::max(0.0, intercept(p)));
    if (!intercepts.empty()) out[device] = median(intercepts);
  }
  return out;
}

double typical_overhead_ms(const std::map<std::string, double>& overheads) {
  std::vector<double> v;
  for (const auto& [device, ms] : overheads) v.push_back(ms);
  return median(v);
}

double kernel_time_ratio(double target_ms, double origin_ms, double target_overhead_ms, double origin_overhead_ms,
                         double floor_ms) {
  if (!(floor_ms > 0)) return target_ms / origin_ms;
  const double w = std::clamp((std::max(target_ms, origin_ms) - floor_ms) / floor_ms, 0.0, 1.0);
  const double target = std::max(target_ms - w * target_overhead_ms, 0.25 * target_ms);
  const double origin = std::max(origin_ms - w * origin_overhead_ms, 0.25 * origin_ms);
  return target / origin;
}

double learned_kernel_factor(const OpDesc& op, const DeviceSpec& origin, const DeviceSpec& target, double target_ms,
                             double origin_ms, double target_overhead_ms, double origin_overhead_ms,
                             double floor_ms) {
  return physical_ratio_range(op, origin, target)
      .clamp(kernel_time_ratio(target_ms, origin_ms, target_overhead_ms, origin_overhead_ms, floor_ms));
}

}  // namespace dpro::costmodel
