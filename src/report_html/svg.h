#pragma once
// The report's charts as inline SVG (no script, no external resource): stacked horizontal bars
// (a breakdown per rank) and lines over iterations (step times). Labels are escaped here; the
// caller passes plain text. Values are nanoseconds; axes print them with format_duration.
#include <string>
#include <vector>

#include "core/time.h"

namespace dpro::report_html {

struct Series {
  std::string name;
  std::string color;  // a CSS colour the caller chooses ("#4e79a7")
};

// One bar: its parts in the order of the chart's series (0 for a series it lacks).
struct Bar {
  std::string label;
  std::vector<Nanos> parts;
};

// Bars scaled so that `scale` ns (0: the longest bar's total) spans the plot, so that two charts
// side by side can share one scale; a legend of the series with any time below them.
std::string stacked_bars_svg(const std::vector<Series>& series, const std::vector<Bar>& bars, Nanos scale = 0);

// Vertical bars in groups along the x axis: each group has one bar per series (a sweep: the groups
// are one setting's values, the series the combinations of the others), all from 0 ns up.
struct BarGroup {
  std::string label;
  std::vector<Nanos> values;  // one per series, in the chart's series order
  std::vector<std::string> notes;  // optional, per series: printed above the bar ("+3.1%") and in its tooltip
};
struct GroupedBarChart {
  std::vector<Series> series;
  std::vector<BarGroup> groups;
  // A horizontal dashed line across the plot (a sweep: the baseline's step); 0: none.
  Nanos reference = 0;
  std::string reference_label;
};
std::string grouped_bars_svg(const GroupedBarChart& chart);

// A point's kind on the step chart: steady steps are plain dots, warm-up and outlier steps are
// marked (step_stats.h).
enum class StepMark { kSteady, kWarmup, kOutlier };

struct LineChart {
  std::vector<std::string> x_labels;  // one per iteration ("10" for ProfilerStep#10)
  std::vector<StepMark> marks;        // one per iteration
  std::vector<Series> series;
  std::vector<std::vector<Nanos>> values;  // [series][iteration]
  // Top of the y axis; 0: the largest value. Points above it are drawn on the top edge (their
  // tooltip gives the value), so a long warm-up step does not flatten the steady ones.
  Nanos y_max = 0;
};

// Lines over iterations from 0 ns up to the largest value, with the marks and a legend.
std::string line_chart_svg(const LineChart& chart);

}  // namespace dpro::report_html
