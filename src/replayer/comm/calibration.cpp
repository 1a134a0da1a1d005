#include "replayer/comm/calibration.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>

namespace dpro::comm {

namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

// Weighted (1 / y^2) least squares of y ~ a x1 + b x2 with a, b >= 0; falls back to one
// common scale when the two-parameter solution is degenerate or negative.
bool fit_family(const std::vector<std::array<double, 3>>& rows, double& a, double& b) {
  if (rows.empty()) return false;
  double s11 = 0, s12 = 0, s22 = 0, t1 = 0, t2 = 0, c11 = 0, ct = 0;
  for (const auto& [x1, x2, y] : rows) {
    const double w = 1.0 / (y * y);
    s11 += w * x1 * x1;
    s12 += w * x1 * x2;
    s22 += w * x2 * x2;
    t1 += w * x1 * y;
    t2 += w * x2 * y;
    c11 += w * (x1 + x2) * (x1 + x2);
    ct += w * (x1 + x2) * y;
  }
  const double det = s11 * s22 - s12 * s12;
  if (rows.size() >= 2 && std::abs(det) > 1e-12 * std::max(1.0, s11 * s22)) {
    a = (t1 * s22 - t2 * s12) / det;
    b = (s11 * t2 - s12 * t1) / det;
    if (a > 0 && b > 0) return true;
    // One regressor alone: keep the other at the scale the common fit gives.
    if (a <= 0 && s22 > 0) { b = t2 / s22; a = b; if (b > 0) return true; }
    if (b <= 0 && s11 > 0) { a = t1 / s11; b = a; if (a > 0) return true; }
  }
  if (c11 <= 0) return false;
  a = b = ct / c11;
  return a > 0;
}

}  // namespace

std::vector<CommSample> make_samples(const std::vector<CommOp>& ops, const ClusterSpec& origin) {
  std::vector<CommSample> samples;
  std::map<std::uint64_t, Nanos> first_start;
  for (const CommOp& op : ops) {
    if (!op.bytes || op.size_source == SizeSource::kInferred || op.group_size < 2 || op.transfer <= 0) continue;
    CommSample s;
    s.call = CollectiveCall{op.op, *op.bytes, place(origin, op.group_size)};
    s.time_us = static_cast<double>(op.transfer) / 1000.0;
    s.instance = op.matched() ? op.barrier : (std::uint64_t{1} << 40) + op.node;
    s.rank = op.rank;
    auto [it, fresh] = first_start.emplace(s.instance, op.measured_start);
    if (!fresh) it->second = std::min(it->second, op.measured_start);
    samples.push_back(s);
  }
  for (CommSample& s : samples) s.first_start = first_start[s.instance];
  return samples;
}

Calibration fit_calibration(const ClusterSpec& cluster, const std::vector<CommSample>& samples) {
  const CollectiveModel raw(cluster);
  std::vector<std::array<double, 3>> rows[2];
  for (const CommSample& s : samples) {
    const CollectiveEstimate e = raw.estimate_uncalibrated(s.call);
    rows[is_point_to_point(s.call.op) ? 1 : 0].push_back({e.raw_latency_us, e.raw_byte_time_us, s.time_us});
  }
  Calibration c;
  bool ok[2];
  for (int f = 0; f < 2; ++f) ok[f] = fit_family(rows[f], c.latency_scale[f], c.byte_time_scale[f]);
  for (int f = 0; f < 2; ++f) {
    if (!ok[f] && ok[1 - f]) {
      c.latency_scale[f] = c.latency_scale[1 - f];
      c.byte_time_scale[f] = c.byte_time_scale[1 - f];
    } else if (!ok[f]) {
      c.latency_scale[f] = c.byte_time_scale[f] = 1.0;
    }
  }
  return c;
}

SplitEvaluation evaluate_half_split(const ClusterSpec& cluster, const std::vector<CommSample>& samples) {
  // Instances in time order; even positions train, odd positions test.
  std::vector<std::pair<Nanos, std::uint64_t>> instances;
  for (const CommSample& s : samples) instances.emplace_back(s.first_start, s.instance);
  std::sort(instances.begin(), instances.end());
  instances.erase(std::unique(instances.begin(), instances.end()), instances.end());
  std::map<std::uint64_t, bool> is_train;
  SplitEvaluation ev;
  for (std::size_t i = 0; i < instances.size(); ++i) {
    is_train[instances[i].second] = i % 2 == 0;
    ++(i % 2 == 0 ? ev.train_instances : ev.test_instances);
  }
  std::vector<CommSample> train, test;
  for (const CommSample& s : samples) (is_train[s.instance] ? train : test).push_back(s);
  ev.train = train.size();
  ev.test = test.size();
  ev.calibration = fit_calibration(cluster, train);
  const CollectiveModel fitted(cluster, ev.calibration);
  std::vector<double> all;
  std::map<std::string, std::vector<double>> per_op;
  std::map<std::string, std::size_t> train_per_op;
  for (const CommSample& s : train) ++train_per_op[to_string(s.call.op)];
  for (const CommSample& s : test) {
    const double err = std::abs(fitted.estimate(s.call).time_us - s.time_us) / s.time_us;
    all.push_back(err);
    per_op[to_string(s.call.op)].push_back(err);
  }
  ev.median_abs_error = median(all);
  double sum = 0;
  for (double e : all) sum += e;
  ev.mean_abs_error = all.empty() ? 0 : sum / static_cast<double>(all.size());
  for (const auto& [op, errors] : per_op) train_per_op.emplace(op, 0);
  for (const auto& [op, n] : train_per_op) {
    OpError oe;
    oe.op = op;
    oe.train = n;
    oe.test = per_op[op].size();
    oe.median_abs_error = median(per_op[op]);
    ev.by_op.push_back(oe);
  }
  return ev;
}

}  // namespace dpro::comm
