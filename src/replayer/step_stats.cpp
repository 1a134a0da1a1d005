#include "replayer/step_stats.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace dpro::replayer {

using nlohmann::json;

Distribution distribution_of(std::vector<Nanos> values) {
  Distribution d;
  d.count = values.size();
  if (values.empty()) return d;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size(), m = n / 2;
  d.median = n % 2 ? values[m] : values[m - 1] + (values[m] - values[m - 1]) / 2;
  long double sum = 0;
  for (Nanos v : values) sum += static_cast<long double>(v);
  d.mean = static_cast<Nanos>(std::llround(sum / static_cast<long double>(n)));
  d.p90 = values[static_cast<std::size_t>(std::ceil(0.9 * static_cast<double>(n))) - 1];
  d.min = values.front();
  d.max = values.back();
  return d;
}

namespace {

// The job time a step is judged by: the prediction (the replay's, or a what-if's).
Nanos step_time(const IterationReport& it) { return it.job_predicted_ns; }

void classify(const Report& report, StepStats& s) {
  std::vector<Nanos> all;
  for (const IterationReport& it : report.iterations) all.push_back(step_time(it));
  const Nanos median_all = distribution_of(all).median;
  std::size_t first = 0;
  while (first + 1 < all.size() && static_cast<double>(all[first]) > kWarmupFactor * static_cast<double>(median_all))
    s.warmup.push_back(first++);
  const std::vector<Nanos> rest(all.begin() + static_cast<std::ptrdiff_t>(first), all.end());
  const Nanos median = distribution_of(rest).median;
  std::vector<Nanos> deviations;
  for (Nanos v : rest) deviations.push_back(v > median ? v - median : median - v);
  const double mad = static_cast<double>(distribution_of(deviations).median);
  const double limit = std::max(3.0 * 1.4826 * mad, 0.1 * static_cast<double>(median));
  for (std::size_t i = first; i < all.size(); ++i)
    (std::abs(static_cast<double>(all[i] - median)) > limit ? s.outliers : s.steady).push_back(i);
}

void summarize_steady(const Report& report, StepStats& s) {
  std::vector<Nanos> measured, predicted;
  std::map<std::pair<std::string, int>, PathOp> ops;
  for (std::size_t i : s.steady) {
    const IterationReport& it = report.iterations[i];
    measured.push_back(it.job_measured_ns);
    predicted.push_back(it.job_predicted_ns);
    for (int c = 0; c < kCategoryCount; ++c) s.critical_path[c] += it.job_critical_path.by_category[c];
    if (report.analysed) ++s.verdicts[headline(it.verdict)];
    for (const PathOp& op : it.path_ops) {
      PathOp& sum = ops[{op.name, op.rank}];
      if (sum.name.empty()) sum = PathOp{op.name, op.category, op.rank, 0, 0, 0};
      sum.own += op.own;
      sum.gap_before += op.gap_before;
      sum.calls += op.calls;
    }
  }
  s.steady_measured = distribution_of(measured);
  s.steady_predicted = distribution_of(predicted);
  const Nanos n = static_cast<Nanos>(std::max<std::size_t>(1, s.steady.size()));
  for (Nanos& v : s.critical_path) v /= n;
  for (auto& [key, op] : ops) {
    op.own /= n;
    op.gap_before /= n;
    op.calls = (op.calls + s.steady.size() / 2) / std::max<std::size_t>(1, s.steady.size());
    s.path_ops.push_back(op);
  }
  std::stable_sort(s.path_ops.begin(), s.path_ops.end(), [](const PathOp& a, const PathOp& b) { return a.time() > b.time(); });
}

std::string names(const Report& report, const std::vector<std::size_t>& which) {
  std::string out;
  for (std::size_t k = 0; k < which.size(); ++k) {
    if (k == 4) return out + fmt::format(" and {} more", which.size() - 4);
    const IterationReport& it = report.iterations[which[k]];
    out += fmt::format("{}{} ({})", k ? ", " : "", it.name, format_duration(step_time(it)));
  }
  return out.empty() ? "none" : out;
}

std::string distribution_line(const Distribution& d) {
  return fmt::format("median {}  mean {}  p90 {}  min {}  max {}", format_duration(d.median), format_duration(d.mean),
                     format_duration(d.p90), format_duration(d.min), format_duration(d.max));
}

json distribution_json(const Distribution& d) {
  return {{"count", d.count}, {"median_ns", d.median}, {"mean_ns", d.mean}, {"p90_ns", d.p90}, {"min_ns", d.min}, {"max_ns", d.max}};
}

json names_json(const Report& report, const std::vector<std::size_t>& which) {
  json out = json::array();
  for (std::size_t i : which) out.push_back(report.iterations[i].name);
  return out;
}

}  // namespace

StepStats step_stats(const Report& report) {
  StepStats s;
  s.iterations = report.iterations.size();
  if (report.iterations.empty()) return s;
  classify(report, s);
  std::vector<Nanos> measured, predicted;
  for (const IterationReport& it : report.iterations) {
    measured.push_back(it.job_measured_ns);
    predicted.push_back(it.job_predicted_ns);
  }
  s.measured = distribution_of(measured);
  s.predicted = distribution_of(predicted);
  summarize_steady(report, s);
  return s;
}

SteadyChange steady_change(const Report& baseline, const StepStats& baseline_stats, const Report& whatif) {
  std::vector<Nanos> from, to;
  SteadyChange c;
  for (std::size_t i : baseline_stats.steady) {
    const IterationReport& b = baseline.iterations[i];
    const auto w = std::find_if(whatif.iterations.begin(), whatif.iterations.end(), [&](const IterationReport& x) {
      return x.number == b.number && x.whole_trace == b.whole_trace;
    });
    if (w == whatif.iterations.end()) continue;
    from.push_back(b.job_predicted_ns);
    to.push_back(w->job_predicted_ns);
    c.whatif_steps.push_back(static_cast<std::size_t>(w - whatif.iterations.begin()));
  }
  c.steps = from.size();
  c.baseline_median = distribution_of(std::move(from)).median;
  c.whatif_median = distribution_of(std::move(to)).median;
  return c;
}

std::string render_summary(const Report& report, const StepStats& s, std::size_t top) {
  std::string out = fmt::format("summary of {} iterations ({} .. {})\n", s.iterations, report.iterations.front().name,
                                report.iterations.back().name);
  out += fmt::format("  job step, measured:  {}\n", distribution_line(s.measured));
  out += fmt::format("  job step, predicted: {}\n", distribution_line(s.predicted));
  out += fmt::format("  warm-up (more than {}x the median, at the start): {}\n", kWarmupFactor, names(report, s.warmup));
  out += fmt::format("  outliers: {}\n", names(report, s.outliers));
  if (s.steady.empty()) return out;
  const Distribution& d = s.steady_predicted;
  out += fmt::format("  {} steady iterations: predicted median {}, p90 {} ({:+.1f}% above the median), measured median {}\n",
                     s.steady.size(), format_duration(d.median), format_duration(d.p90),
                     d.median > 0 ? 100.0 * static_cast<double>(d.p90 - d.median) / static_cast<double>(d.median) : 0.0,
                     format_duration(s.steady_measured.median));
  if (!report.analysed) return out;
  Breakdown path;
  std::copy(std::begin(s.critical_path), std::end(s.critical_path), path.by_category);
  out += fmt::format("  critical path (mean per steady iteration): {}\n", breakdown_line(path));
  std::string verdicts;
  for (const auto& [name, count] : s.verdicts) verdicts += fmt::format("{}{} {} of {}", verdicts.empty() ? "" : ", ", name, count, s.steady.size());
  out += fmt::format("  verdicts: {}\n", verdicts);
  if (top > 0 && !s.path_ops.empty())
    out += fmt::format("  top ops on the critical path, mean per steady iteration:\n    {:>12}  {:>12}  {:<15}  {:<8} {:<6} {}\n",
                       "own", "gap before", "category", "rank", "calls", "name");
  for (std::size_t k = 0; k < std::min(top, s.path_ops.size()); ++k) {
    const PathOp& op = s.path_ops[k];
    out += fmt::format("    {:>12}  {:>12}  {:<15}  rank {:<3} x{:<5} {}\n", format_duration(op.own), format_duration(op.gap_before),
                       to_string(op.category), op.rank, op.calls, op.name.substr(0, 90));
  }
  return out;
}

json to_json(const Report& report, const StepStats& s) {
  json path = json::object();
  for (int c = 0; c < kCategoryCount; ++c) path[std::string(to_string(static_cast<Category>(c))) + "_ns"] = s.critical_path[c];
  json ops = json::array();
  for (const PathOp& op : s.path_ops)
    ops.push_back({{"name", op.name}, {"category", to_string(op.category)}, {"rank", op.rank}, {"own_ns", op.own},
                   {"gap_before_ns", op.gap_before}, {"calls", op.calls}});
  return {{"iterations", s.iterations},
          {"measured", distribution_json(s.measured)},
          {"predicted", distribution_json(s.predicted)},
          {"warmup", names_json(report, s.warmup)},
          {"outliers", names_json(report, s.outliers)},
          {"steady",
           {{"count", s.steady.size()},
            {"measured", distribution_json(s.steady_measured)},
            {"predicted", distribution_json(s.steady_predicted)},
            {"critical_path_mean", path},
            {"verdicts", s.verdicts},
            {"path_ops_mean", ops}}}};
}

}  // namespace dpro::replayer
