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

LearnedKernelFactors learned_kernel_factors(const LearnedModel& model, const std::vector<OpDesc>& ops,
                                            const std::vector<const DeviceSpec*>& origins, const DeviceSpec& target,
                                            const ResidualCorrection* correction) {
  LearnedKernelFactors out;
  const bool identity = model.knows_device(target);
  std::vector<PredictQuery> on_target, on_origin;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    on_target.push_back({&ops[i], &target, true});
    on_origin.push_back({&ops[i], origins[i], identity});
  }
  const auto t = model.predict_ms(on_target);
  const auto o = model.predict_ms(on_origin);
  out.target_overhead_ms = model.measurement_overhead_ms(target, true);
  for (const DeviceSpec* origin : origins)
    if (!out.origin_overhead_ms.count(origin))
      out.origin_overhead_ms[origin] = model.measurement_overhead_ms(*origin, identity);
  for (std::size_t i = 0; i < ops.size(); ++i)
    out.factor.push_back(learned_kernel_factor(ops[i], *origins[i], target,
                                               t[i] * (correction ? correction->factor(ops[i]) : 1.0), o[i],
                                               out.target_overhead_ms, out.origin_overhead_ms.at(origins[i]),
                                               model.unseen_floor_ms(ops[i].family)));
  return out;
}

}  // namespace dpro::costmodel
