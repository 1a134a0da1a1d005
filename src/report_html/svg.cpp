#include "report_html/svg.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "report_html/escape.h"

namespace dpro::report_html {
namespace {

constexpr int kWidth = 760;       // SVG user units; the page scales the chart to its column
constexpr int kLabelWidth = 110;  // left margin for bar labels and the y axis
constexpr int kBarHeight = 18;
constexpr int kBarGap = 6;

std::string legend(const std::vector<Series>& series, const std::vector<bool>& used) {
  std::string out = "<div class=\"legend\">";
  for (std::size_t s = 0; s < series.size(); ++s) {
    if (!used[s]) continue;
    out += fmt::format("<span><i style=\"background:{}\"></i>{}</span>", escape_html(series[s].color),
                       escape_html(series[s].name));
  }
  return out + "</div>";
}

double scale_of(Nanos max, int pixels) { return max > 0 ? static_cast<double>(pixels) / static_cast<double>(max) : 0.0; }

// The y axis of a vertical chart from 0 to `top`: grid lines to x = `right` and duration labels at quarters.
std::string y_axis(Nanos top, int base, int plot_h, int right) {
  std::string out;
  for (int tick = 0; tick <= 4; ++tick) {
    const double y = base - tick * plot_h / 4.0;
    out += fmt::format("<line class=\"grid\" x1=\"{}\" x2=\"{}\" y1=\"{:.1f}\" y2=\"{:.1f}\"/>", kLabelWidth, right, y, y);
    out += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>", kLabelWidth - 6, y + 4,
                       format_duration(top * tick / 4));
  }
  return out;
}

}  // namespace

std::string stacked_bars_svg(const std::vector<Series>& series, const std::vector<Bar>& bars, Nanos scale) {
  Nanos longest = 0;
  std::vector<bool> used(series.size(), false);
  for (const Bar& b : bars) {
    longest = std::max(longest, std::accumulate(b.parts.begin(), b.parts.end(), Nanos{0}));
    for (std::size_t s = 0; s < b.parts.size() && s < series.size(); ++s) used[s] = used[s] || b.parts[s] > 0;
  }
  const int plot = kWidth - kLabelWidth - 90;  // room on the right for the total
  const double px = scale_of(std::max(longest, scale), plot);
  const int height = static_cast<int>(bars.size()) * (kBarHeight + kBarGap) + kBarGap;
  std::string out = fmt::format("<svg class=\"chart\" viewBox=\"0 0 {} {}\" role=\"img\">", kWidth, height);
  for (std::size_t i = 0; i < bars.size(); ++i) {
    const int y = kBarGap + static_cast<int>(i) * (kBarHeight + kBarGap);
    out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>", kLabelWidth - 6, y + 13,
                       escape_html(bars[i].label));
    double x = kLabelWidth;
    Nanos total = 0;
    for (std::size_t s = 0; s < bars[i].parts.size() && s < series.size(); ++s) {
      const Nanos v = bars[i].parts[s];
      if (v <= 0) continue;
      const double w = static_cast<double>(v) * px;
      out += fmt::format("<rect x=\"{:.1f}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\"><title>{}: {}</title></rect>", x, y,
                         w, kBarHeight, escape_html(series[s].color), escape_html(series[s].name), format_duration(v));
      x += w;
      total += v;
    }
    out += fmt::format("<text x=\"{:.1f}\" y=\"{}\">{}</text>", x + 4, y + 13, format_duration(total));
  }
  return out + "</svg>" + legend(series, used);
}

std::string grouped_bars_svg(const GroupedBarChart& chart) {
  Nanos top = chart.reference;
  for (const BarGroup& g : chart.groups)
    for (Nanos v : g.values) top = std::max(top, v);
  top += top / 10;  // room above the tallest bar for its note
  const int plot_w = kWidth - kLabelWidth - 110, plot_h = 220, y0 = 10, base = y0 + plot_h;  // room right for the reference's label
  const double py = scale_of(top, plot_h);
  const std::size_t groups = std::max<std::size_t>(1, chart.groups.size()), per_group = std::max<std::size_t>(1, chart.series.size());
  const double slot = static_cast<double>(plot_w) / static_cast<double>(groups);  // one group and its gap
  const double bar_w = slot * 0.8 / static_cast<double>(per_group);
  std::string out = fmt::format("<svg class=\"chart\" viewBox=\"0 0 {} {}\" role=\"img\">", kWidth, base + 30) +
                    y_axis(top, base, plot_h, kLabelWidth + plot_w);
  for (std::size_t g = 0; g < chart.groups.size(); ++g) {
    const BarGroup& group = chart.groups[g];
    const double left = kLabelWidth + slot * static_cast<double>(g) + slot * 0.1;
    out += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>", left + slot * 0.4, base + 18,
                       escape_html(group.label));
    for (std::size_t s = 0; s < group.values.size() && s < chart.series.size(); ++s) {
      const double h = static_cast<double>(group.values[s]) * py, x = left + bar_w * static_cast<double>(s);
      const std::string note = s < group.notes.size() ? group.notes[s] : "";
      out += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\"><title>{} {}: {} {}</title></rect>",
                         x + 1, base - h, std::max(1.0, bar_w - 2), h, escape_html(chart.series[s].color), escape_html(group.label),
                         escape_html(chart.series[s].name), format_duration(group.values[s]), escape_html(note));
      if (!note.empty() && bar_w >= 30)
        out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>", x + bar_w / 2, base - h - 3,
                           escape_html(note));
    }
  }
  if (chart.reference > 0) {
    const double y = base - static_cast<double>(chart.reference) * py;
    out += fmt::format("<line class=\"reference\" x1=\"{}\" x2=\"{}\" y1=\"{:.1f}\" y2=\"{:.1f}\"><title>{}: {}</title></line>",
                       kLabelWidth, kLabelWidth + plot_w, y, y, escape_html(chart.reference_label), format_duration(chart.reference));
    out += fmt::format("<text x=\"{}\" y=\"{:.1f}\">{}</text><text x=\"{}\" y=\"{:.1f}\">{}</text>", kLabelWidth + plot_w + 4, y - 2,
                       escape_html(chart.reference_label), kLabelWidth + plot_w + 4, y + 11, format_duration(chart.reference));
  }
  return out + "</svg>" + legend(chart.series, std::vector<bool>(chart.series.size(), true));
}

std::string line_chart_svg(const LineChart& chart) {
  const std::size_t n = chart.x_labels.size();
  Nanos top = 0;
  for (const auto& values : chart.values)
    for (Nanos v : values) top = std::max(top, v);
  if (chart.y_max > 0) top = chart.y_max;
  const int plot_w = kWidth - kLabelWidth - 20, plot_h = 200, y0 = 10, base = y0 + plot_h;
  const double py = scale_of(top, plot_h);
  const auto y_of = [&](Nanos v) { return base - static_cast<double>(std::min(v, top)) * py; };
  const auto x_of = [&](std::size_t i) {
    return kLabelWidth + (n <= 1 ? plot_w / 2.0 : static_cast<double>(i) * plot_w / static_cast<double>(n - 1));
  };
  std::string out = fmt::format("<svg class=\"chart\" viewBox=\"0 0 {} {}\" role=\"img\">", kWidth, base + 30);
  out += y_axis(top, base, plot_h, kWidth - 20);  // y grid: 0, 1/4, ... of the largest value
  const std::size_t label_every = std::max<std::size_t>(1, n / 12);
  for (std::size_t i = 0; i < n; i += label_every)
    out += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>", x_of(i), base + 18,
                       escape_html(chart.x_labels[i]));
  std::vector<bool> used(chart.series.size(), true);
  for (std::size_t s = 0; s < chart.series.size() && s < chart.values.size(); ++s) {
    std::string points;
    for (std::size_t i = 0; i < n && i < chart.values[s].size(); ++i)
      points += fmt::format("{:.1f},{:.1f} ", x_of(i), y_of(chart.values[s][i]));
    const std::string color = escape_html(chart.series[s].color);
    out += fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\" points=\"{}\"/>", color, points);
    for (std::size_t i = 0; i < n && i < chart.values[s].size(); ++i) {
      const StepMark mark = i < chart.marks.size() ? chart.marks[i] : StepMark::kSteady;
      const char* cls = mark == StepMark::kWarmup ? "warmup" : mark == StepMark::kOutlier ? "outlier" : "steady";
      out += fmt::format("<circle class=\"{}\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"{}\" fill=\"{}\"><title>{} {}: {} ({})</title></circle>",
                         cls, x_of(i), y_of(chart.values[s][i]), mark == StepMark::kSteady ? 3 : 6,
                         color, escape_html(chart.series[s].name), escape_html(chart.x_labels[i]),
                         format_duration(chart.values[s][i]), cls);
    }
  }
  return out + "</svg>" + legend(chart.series, used);
}

}  // namespace dpro::report_html
