#include "costmodel/residual_correction.h"

#include <cmath>

namespace dpro::costmodel {

void ResidualCorrection::point_of(const OpDesc& op, float* out) {
  const double flops = op.flops(), bytes = op.bytes();
  out[0] = static_cast<float>(std::log2(1 + flops));
  out[1] = static_cast<float>(std::log2(1 + bytes));
  out[2] = static_cast<float>(std::log2(1 + op.bytes_written()));
  out[3] = static_cast<float>(std::log2((1 + flops) / (1 + bytes)));
}

void ResidualCorrection::add(const OpDesc& op, double predicted_ms, double measured_ms) {
  if (!(predicted_ms > 0) || !(measured_ms > 0) || !std::isfinite(predicted_ms)) return;
  Sample s{};
  point_of(op, s.point);
  s.family = static_cast<int>(op.family);
  s.log_residual = std::log(measured_ms / predicted_ms);
  samples_.push_back(s);
}

double ResidualCorrection::factor(const OpDesc& op) const {
  if (samples_.empty()) return 1.0;
  float p[4];
  point_of(op, p);
  const int family = static_cast<int>(op.family);
  double all_sum = 0, fam_sum = 0, near_sum = 0, near_w = 0;
  std::size_t fam_n = 0;
  const double inv2h2 = 1.0 / (2 * options_.bandwidth * options_.bandwidth);
  for (const auto& s : samples_) {
    all_sum += s.log_residual;
    if (s.family != family) continue;
    fam_sum += s.log_residual;
    ++fam_n;
    double d2 = 0;
    for (int i = 0; i < 4; ++i) d2 += (p[i] - s.point[i]) * (p[i] - s.point[i]);
    const double w = std::exp(-d2 * inv2h2);
    near_sum += w * s.log_residual;
    near_w += w;
  }
  const double all_mean = all_sum / static_cast<double>(samples_.size());
  const double fam_mean = (fam_sum + options_.global_prior * all_mean) / (static_cast<double>(fam_n) + options_.global_prior);
  const double r = (near_sum + options_.family_prior * fam_mean) / (near_w + options_.family_prior);
  return std::exp(r);
}

ResidualCorrection correction_from_samples(const LearnedModel& model, const std::vector<Measurement>& samples,
                                           const DeviceSpec& device) {
  std::vector<PredictQuery> q;
  for (const auto& m : samples) q.push_back({&m.op, &device, true});
  const auto predicted = model.predict_ms(q);
  ResidualCorrection c;
  for (std::size_t i = 0; i < samples.size(); ++i) c.add(samples[i].op, predicted[i], samples[i].latency_ms);
  return c;
}

}  // namespace dpro::costmodel
