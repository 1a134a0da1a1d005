#include "costmodel/comm/calibration.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "core/stats.h"

namespace dpro::comm {

const char* to_string(FitMethod m) {
  switch (m) {
    case FitMethod::kLeastSquares: return "least-squares";
    case FitMethod::kLeastAbsolute: return "least-absolute";
  }
  return "?";
}

const char* to_string(FitGrouping g) {
  switch (g) {
    case FitGrouping::kFamily: return "per-family";
    case FitGrouping::kOperation: return "per-operation";
  }
  return "?";
}

const char* to_string(ScaleSource s) {
  switch (s) {
    case ScaleSource::kDefault: return "default";
    case ScaleSource::kOperation: return "operation";
    case ScaleSource::kFamily: return "family";
    case ScaleSource::kOtherFamily: return "other family";
  }
  return "?";
}

namespace {

struct Row {
  double x1, x2, y;  // uncalibrated latency, uncalibrated byte time, measured time (us)
};

// Minimiser of sum w_i |v - x_i| (the lower weighted median).
double weighted_median(std::vector<std::pair<double, double>> xw) {
  if (xw.empty()) return 0;
  std::sort(xw.begin(), xw.end());
  double total = 0;
  for (const auto& [x, w] : xw) total += w;
  double acc = 0;
  for (const auto& [x, w] : xw) {
    acc += w;
    if (acc >= 0.5 * total) return x;
  }
  return xw.back().first;
}

// Whether the rows determine two scales: at least two rows whose latency/byte-time mix
// differs (otherwise only their sum is identified).
bool two_scales_identified(const std::vector<Row>& rows) {
  const Row* first = nullptr;
  for (const Row& r : rows) {
    if (r.x1 + r.x2 <= 0) continue;
    if (!first) { first = &r; continue; }
    const double cross = r.x1 * first->x2 - r.x2 * first->x1;
    if (std::abs(cross) > 1e-9 * (r.x1 + r.x2) * (first->x1 + first->x2)) return true;
  }
  return false;
}

// One scale for latency and byte time together.
bool fit_common(const std::vector<Row>& rows, FitMethod method, Scales& s) {
  if (method == FitMethod::kLeastSquares) {
    double num = 0, den = 0;
    for (const Row& r : rows) {
      const double w = 1.0 / (r.y * r.y), x = r.x1 + r.x2;
      num += w * x * r.y;
      den += w * x * x;
    }
    if (!(den > 0)) return false;
    s.latency = s.byte_time = num / den;
  } else {
    // sum |k x - y| / y = sum (x / y) |k - y / x|
    std::vector<std::pair<double, double>> xw;
    for (const Row& r : rows)
      if (r.x1 + r.x2 > 0) xw.emplace_back(r.y / (r.x1 + r.x2), (r.x1 + r.x2) / r.y);
    if (xw.empty()) return false;
    s.latency = s.byte_time = weighted_median(std::move(xw));
  }
  return s.latency > 0;
}

// Weighted (1 / y^2) least squares of y ~ a x1 + b x2; false when degenerate or not positive.
bool fit_least_squares(const std::vector<Row>& rows, Scales& s) {
  double s11 = 0, s12 = 0, s22 = 0, t1 = 0, t2 = 0;
  for (const Row& r : rows) {
    const double w = 1.0 / (r.y * r.y);
    s11 += w * r.x1 * r.x1;
    s12 += w * r.x1 * r.x2;
    s22 += w * r.x2 * r.x2;
    t1 += w * r.x1 * r.y;
    t2 += w * r.x2 * r.y;
  }
  const double det = s11 * s22 - s12 * s12;
  if (!(std::abs(det) > 1e-12 * std::max(1.0, s11 * s22))) return false;
  s.latency = (t1 * s22 - t2 * s12) / det;
  s.byte_time = (s11 * t2 - s12 * t1) / det;
  return s.latency > 0 && s.byte_time > 0;
}

// Least absolute relative deviations, sum |a x1 + b x2 - y| / y over a, b >= 0. For a fixed a
// the best b is a weighted median; the objective minimised over b is convex in a, so a golden
// section search over a finds the optimum. False when the optimum drops a term (a or b ~ 0).
bool fit_least_absolute(const std::vector<Row>& rows, Scales& s) {
  double a_hi = 0;
  for (const Row& r : rows)
    if (r.x1 > 0) a_hi = std::max(a_hi, r.y / r.x1);
  if (!(a_hi > 0)) return false;
  auto best_b = [&](double a, double& objective) {
    std::vector<std::pair<double, double>> xw;
    double fixed = 0;
    for (const Row& r : rows) {
      if (r.x2 > 0) xw.emplace_back((r.y - a * r.x1) / r.x2, r.x2 / r.y);
      else fixed += std::abs(a * r.x1 - r.y) / r.y;
    }
    const double b = std::max(0.0, weighted_median(std::move(xw)));
    objective = fixed;
    for (const Row& r : rows)
      if (r.x2 > 0) objective += std::abs(a * r.x1 + b * r.x2 - r.y) / r.y;
    return b;
  };
  const double phi = (std::sqrt(5.0) - 1) / 2;
  double lo = 0, hi = a_hi * 1.01, f1 = 0, f2 = 0;
  double m1 = hi - phi * (hi - lo), m2 = lo + phi * (hi - lo);
  best_b(m1, f1);
  best_b(m2, f2);
  for (int it = 0; it < 200 && hi - lo > 1e-12 * a_hi; ++it) {
    if (f1 <= f2) {
      hi = m2; m2 = m1; f2 = f1;
      m1 = hi - phi * (hi - lo);
      best_b(m1, f1);
    } else {
      lo = m1; m1 = m2; f1 = f2;
      m2 = lo + phi * (hi - lo);
      best_b(m2, f2);
    }
  }
  double objective = 0;
  s.latency = 0.5 * (lo + hi);
  s.byte_time = best_b(s.latency, objective);
  // Scales this small mean the fit dropped that term.
  return s.latency > 1e-6 * a_hi && s.byte_time > 1e-9;
}

bool fit_rows(const std::vector<Row>& rows, FitMethod method, Scales& s) {
  if (rows.empty()) return false;
  if (two_scales_identified(rows)) {
    const bool ok = method == FitMethod::kLeastSquares ? fit_least_squares(rows, s) : fit_least_absolute(rows, s);
    if (ok) return true;
  }
  return fit_common(rows, method, s);
}

}  // namespace

std::vector<CommSample> make_samples(const std::vector<CommOp>& ops, const ClusterSpec& origin, bool unmatched_too) {
  std::vector<CommSample> samples;
  std::map<std::uint64_t, Nanos> first_start;
  for (const CommOp& op : ops) {
    if ((!op.matched() && !unmatched_too) || !op.bytes || op.size_source == SizeSource::kInferred || op.group_size < 2 ||
        op.transfer <= 0)
      continue;
    CommSample s;
    s.call = CollectiveCall{op.op, *op.bytes, place(origin, op.group_size)};
    s.time_us = static_cast<double>(op.transfer) / 1000.0;
    s.instance = op.matched() ? op.barrier.value : (std::uint64_t{1} << 40) + op.node.value;
    s.rank = op.rank;
    auto [it, fresh] = first_start.emplace(s.instance, op.measured_start);
    if (!fresh) it->second = std::min(it->second, op.measured_start);
    samples.push_back(s);
  }
  for (CommSample& s : samples) s.first_start = first_start[s.instance];
  return samples;
}

CalibrationFit fit_calibration_detailed(const ClusterSpec& cluster, const std::vector<CommSample>& samples,
                                        const FitOptions& options) {
  const CollectiveModel raw(cluster);
  std::vector<Row> by_op[kCollectiveOpCount], by_family[2];
  CalibrationFit fit;
  for (const CommSample& s : samples) {
    if (!(s.time_us > 0)) continue;
    const CollectiveEstimate e = raw.estimate_uncalibrated(s.call);
    const Row row{e.raw_latency_us, e.raw_byte_time_us, s.time_us};
    by_op[static_cast<int>(s.call.op)].push_back(row);
    by_family[is_point_to_point(s.call.op) ? 1 : 0].push_back(row);
    ++fit.samples[static_cast<int>(s.call.op)];
  }
  Scales family[2];
  bool family_ok[2];
  for (int f = 0; f < 2; ++f) family_ok[f] = fit_rows(by_family[f], options.method, family[f]);
  for (int i = 0; i < kCollectiveOpCount; ++i) {
    const int f = is_point_to_point(static_cast<CollectiveOp>(i)) ? 1 : 0;
    Scales& s = fit.calibration.op[i];
    if (options.grouping == FitGrouping::kOperation && fit_rows(by_op[i], options.method, s)) {
      fit.source[i] = ScaleSource::kOperation;
    } else if (family_ok[f]) {
      s = family[f];
      fit.source[i] = ScaleSource::kFamily;
    } else if (family_ok[1 - f]) {
      s = family[1 - f];
      fit.source[i] = ScaleSource::kOtherFamily;
    } else {
      s = Scales{};
      fit.source[i] = ScaleSource::kDefault;
    }
  }
  return fit;
}

Calibration fit_calibration(const ClusterSpec& cluster, const std::vector<CommSample>& samples,
                            const FitOptions& options) {
  return fit_calibration_detailed(cluster, samples, options).calibration;
}

namespace {

using SizeKey = std::tuple<int, std::int64_t, int>;  // operation, bytes, group size
SizeKey size_key(const CommSample& s) {
  return {static_cast<int>(s.call.op), s.call.bytes, s.call.placement.ranks};
}

// Per rank and (operation, size, group), the fastest sample.
std::vector<CommSample> lower_envelope(const std::vector<CommSample>& samples) {
  std::map<std::pair<int, SizeKey>, CommSample> fastest;
  for (const CommSample& s : samples) {
    auto [it, fresh] = fastest.emplace(std::make_pair(s.rank, size_key(s)), s);
    if (!fresh && s.time_us < it->second.time_us) it->second = s;
  }
  std::vector<CommSample> out;
  for (auto& [key, s] : fastest) out.push_back(s);
  std::sort(out.begin(), out.end(), [](const CommSample& a, const CommSample& b) {
    return std::tie(a.first_start, a.rank) < std::tie(b.first_start, b.rank);
  });
  return out;
}

// Per test sample: |c - y| / y where c is the weighted median (weights 1/y) of its group.
std::vector<double> size_oracle_errors(const std::vector<const CommSample*>& test) {
  std::map<SizeKey, std::vector<std::pair<double, double>>> groups;
  for (const CommSample* s : test) groups[size_key(*s)].emplace_back(s->time_us, 1.0 / s->time_us);
  std::map<SizeKey, double> best;
  for (auto& [key, xw] : groups) best[key] = weighted_median(xw);
  std::vector<double> errors;
  for (const CommSample* s : test)
    if (groups[size_key(*s)].size() >= 3) errors.push_back(std::abs(best[size_key(*s)] - s->time_us) / s->time_us);
  return errors;
}

}  // namespace

SplitEvaluation evaluate_half_split(const ClusterSpec& cluster, const std::vector<CommSample>& samples,
                                    const SplitOptions& options) {
  // Instances in time order; even positions train, odd positions test.
  std::vector<std::pair<Nanos, std::uint64_t>> instances;
  for (const CommSample& s : samples) instances.emplace_back(s.first_start, s.instance);
  std::sort(instances.begin(), instances.end());
  instances.erase(std::unique(instances.begin(), instances.end()), instances.end());
  std::map<std::uint64_t, bool> is_train;
  SplitEvaluation ev;
  for (std::size_t i = 0; i < instances.size(); ++i) is_train[instances[i].second] = i % 2 == 0;
  std::vector<CommSample> train, test;
  for (const CommSample& s : samples) (is_train[s.instance] ? train : test).push_back(s);
  if (options.lower_envelope) {
    train = lower_envelope(train);
    test = lower_envelope(test);
  }
  std::set<std::uint64_t> train_inst, test_inst;
  for (const CommSample& s : train) train_inst.insert(s.instance);
  for (const CommSample& s : test) test_inst.insert(s.instance);
  ev.train_instances = train_inst.size();
  ev.test_instances = test_inst.size();
  ev.train = train.size();
  ev.test = test.size();
  ev.calibration = fit_calibration(cluster, train, options.fit);
  const CollectiveModel fitted(cluster, ev.calibration);
  std::vector<double> all;
  std::map<std::string, std::vector<double>> per_op;
  std::map<std::string, std::vector<const CommSample*>> test_per_op;
  std::map<std::string, std::size_t> train_per_op;
  std::map<std::uint64_t, std::vector<const CommSample*>> per_instance;
  std::vector<const CommSample*> test_ptrs;
  for (const CommSample& s : train) ++train_per_op[to_string(s.call.op)];
  for (const CommSample& s : test) {
    const double err = std::abs(fitted.estimate(s.call).time_us - s.time_us) / s.time_us;
    all.push_back(err);
    per_op[to_string(s.call.op)].push_back(err);
    test_per_op[to_string(s.call.op)].push_back(&s);
    per_instance[s.instance].push_back(&s);
    test_ptrs.push_back(&s);
  }
  ev.median_abs_error = median(all);
  double sum = 0;
  for (double e : all) sum += e;
  ev.mean_abs_error = all.empty() ? 0 : sum / static_cast<double>(all.size());
  std::vector<double> instance_errors;
  for (const auto& [id, members] : per_instance) {
    std::vector<double> times;
    for (const CommSample* s : members) times.push_back(s->time_us);
    const double measured = median(times);
    instance_errors.push_back(std::abs(fitted.estimate(members.front()->call).time_us - measured) / measured);
  }
  ev.instance_median_abs_error = median(instance_errors);
  const std::vector<double> oracle = size_oracle_errors(test_ptrs);
  ev.size_oracle_median_abs_error = median(oracle);
  ev.size_oracle_samples = oracle.size();
  for (const auto& [op, errors] : per_op) train_per_op.emplace(op, 0);
  for (const auto& [op, n] : train_per_op) {
    OpError oe;
    oe.op = op;
    oe.train = n;
    oe.test = per_op[op].size();
    oe.median_abs_error = median(per_op[op]);
    const std::vector<double> op_oracle = size_oracle_errors(test_per_op[op]);
    oe.size_oracle_median_abs_error = median(op_oracle);
    oe.size_oracle_samples = op_oracle.size();
    ev.by_op.push_back(oe);
  }
  ev.train_samples = std::move(train);
  ev.test_samples = std::move(test);
  return ev;
}

std::vector<SizeSpread> size_spread(const std::vector<CommSample>& samples) {
  std::map<SizeKey, std::vector<const CommSample*>> groups;
  for (const CommSample& s : samples) groups[size_key(s)].push_back(&s);
  std::vector<SizeSpread> out;
  for (const auto& [key, members] : groups) {
    SizeSpread sp;
    sp.op = members.front()->call.op;
    sp.bytes = members.front()->call.bytes;
    sp.ranks = members.front()->call.placement.ranks;
    sp.samples = members.size();
    std::vector<double> times;
    std::set<std::uint64_t> inst;
    for (const CommSample* s : members) {
      times.push_back(s->time_us);
      inst.insert(s->instance);
    }
    sp.instances = inst.size();
    sp.min_us = *std::min_element(times.begin(), times.end());
    sp.max_us = *std::max_element(times.begin(), times.end());
    sp.median_us = median(times);
    out.push_back(sp);
  }
  return out;
}

}  // namespace dpro::comm
