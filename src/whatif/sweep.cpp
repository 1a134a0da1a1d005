#include "whatif/sweep.h"

#include <map>
#include <set>

#include "core/error.h"
#include "replayer/verdict.h"

namespace dpro::whatif {

std::vector<SweepPoint> sweep_grid(const std::vector<SweepAxis>& axes, std::size_t max_points) {
  std::set<std::string> names;
  std::size_t count = 1;
  for (const SweepAxis& axis : axes) {
    if (axis.values.empty()) throw OptionError("sweep", axis.name, "has no values to sweep");
    if (!names.insert(axis.name).second) throw OptionError("sweep", axis.name, "is swept twice: give its values once, separated by ','");
    count *= axis.values.size();
    if (count > max_points)
      throw OptionError("sweep", axis.name,
                        "makes more than " + std::to_string(max_points) + " points: sweep fewer values or fewer settings at once");
  }
  std::vector<SweepPoint> grid(1);
  for (const SweepAxis& axis : axes) {
    std::vector<SweepPoint> next;
    for (const SweepPoint& prefix : grid)
      for (const std::string& value : axis.values) {
        SweepPoint p = prefix;
        p.emplace_back(axis.name, value);
        next.push_back(std::move(p));
      }
    grid = std::move(next);
  }
  return grid;
}

SweepRow sweep_row(SweepPoint point, const replayer::Report& baseline, const replayer::StepStats& baseline_stats,
                   const replayer::Report& whatif) {
  SweepRow row;
  row.point = std::move(point);
  const replayer::SteadyChange c = replayer::steady_change(baseline, baseline_stats, whatif);
  row.steps = c.steps;
  row.baseline_ns = c.baseline_median;
  row.predicted_ns = c.whatif_median;
  row.change = c.baseline_median > 0
                   ? static_cast<double>(c.whatif_median) / static_cast<double>(c.baseline_median) - 1.0
                   : 0.0;
  std::map<std::string, std::size_t> verdicts;
  for (std::size_t i : c.whatif_steps) {
    const replayer::IterationReport& w = whatif.iterations[i];
    for (int k = 0; k < replayer::kCategoryCount; ++k) row.critical_path[k] += w.job_critical_path.by_category[k];
    if (whatif.analysed) ++verdicts[replayer::headline(w.verdict)];
  }
  if (c.steps > 0)
    for (Nanos& v : row.critical_path) v /= static_cast<Nanos>(c.steps);
  // The most frequent verdict; ties go to the name first in order, so that the row is deterministic.
  std::size_t best = 0;
  for (const auto& [name, n] : verdicts)
    if (n > best) best = n, row.verdict = name;
  return row;
}

}  // namespace dpro::whatif
