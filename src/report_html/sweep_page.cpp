#include "report_html/sweep_page.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"
#include "report_html/escape.h"
#include "report_html/page.h"
#include "report_html/svg.h"

namespace dpro::report_html {
namespace {

// One colour per series (the critical-path palette's order, sections.cpp), repeated past ten.
constexpr const char* kSeriesColors[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                         "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};

// "name=value name=value" of a point's values from axis `from` on.
std::string label_of(const SweepPage& page, const SweepPagePoint& p, std::size_t from) {
  std::string out;
  for (std::size_t k = from; k < page.axes.size(); ++k) out += fmt::format("{}{}={}", out.empty() ? "" : " ", page.axes[k], p.values[k]);
  return out;
}

std::string change_text(double change) { return fmt::format("{:+.2f}%", 100.0 * change); }

// Groups: the first axis's values in order; series: the other axes' combinations in order. A single
// axis gives one series, one bar per value.
GroupedBarChart chart_of(const SweepPage& page) {
  GroupedBarChart chart;
  chart.reference = page.baseline_ns;
  chart.reference_label = "baseline";
  std::vector<std::string> series_labels;
  for (const SweepPagePoint& p : page.points) {
    const std::string group = p.values.front(), series = page.axes.size() > 1 ? label_of(page, p, 1) : "median step";
    auto s = std::find(series_labels.begin(), series_labels.end(), series);
    if (s == series_labels.end()) s = series_labels.insert(series_labels.end(), series);
    const std::size_t si = static_cast<std::size_t>(s - series_labels.begin());
    if (chart.groups.empty() || chart.groups.back().label != group) chart.groups.push_back({group, {}, {}});
    BarGroup& g = chart.groups.back();
    g.values.resize(std::max(g.values.size(), si + 1));
    g.notes.resize(g.values.size());
    g.values[si] = p.median_ns;
    g.notes[si] = change_text(p.change);
  }
  for (std::size_t s = 0; s < series_labels.size(); ++s)
    chart.series.push_back({series_labels[s], kSeriesColors[s % std::size(kSeriesColors)]});
  return chart;
}

std::string table_of(const SweepPage& page) {
  std::string out = "<div class=\"scroll\"><table class=\"sortable\"><thead><tr>";
  for (const std::string& a : page.axes) out += "<th>" + escape_html(a) + "</th>";
  out += "<th>median step</th><th>change</th><th>steps</th><th>verdict</th><th>critical path</th></tr></thead><tbody>";
  for (const SweepPagePoint& p : page.points) {
    out += "<tr>";
    for (const std::string& v : p.values) out += "<td class=\"text\">" + escape_html(v) + "</td>";
    out += fmt::format("<td data-v=\"{}\">{}</td><td data-v=\"{}\" class=\"{}\">{}</td><td>{}</td><td class=\"text\">{}</td>"
                       "<td class=\"text\">{}</td></tr>",
                       p.median_ns, format_duration(p.median_ns), p.change, p.change > 0 ? "up" : p.change < 0 ? "down" : "",
                       change_text(p.change), p.steps, escape_html(p.verdict), escape_html(replayer::breakdown_line(p.critical_path)));
  }
  return out + "</tbody></table></div>";
}

std::string header(const SweepPage& page) {
  std::string inputs, gpus;
  for (const std::string& in : page.provenance.inputs) inputs += (inputs.empty() ? "" : ", ") + in;
  for (const std::string& g : page.provenance.gpus)
    if (!g.empty() && gpus.find(g) == std::string::npos) gpus += (gpus.empty() ? "" : ", ") + g;
  std::string axes;
  for (const std::string& a : page.axes) axes += (axes.empty() ? "" : " x ") + a;
  return fmt::format("<h1>{}</h1><p class=\"note\">{} point(s) over {}; baseline: median step {} over its {} steady step(s); "
                     "GPUs: {}<br>inputs: {}</p>",
                     escape_html(page.title), page.points.size(), escape_html(axes), format_duration(page.baseline_ns),
                     page.baseline_steps, escape_html(gpus.empty() ? "not recorded" : gpus), escape_html(inputs));
}

}  // namespace

std::string render_sweep_html(const SweepPage& page) {
  for (const SweepPagePoint& p : page.points) DPRO_CHECK(!p.values.empty() && p.values.size() == page.axes.size());
  std::string out = page_head(page.title) + header(page);
  if (page.points.empty()) return out + "<p>no points</p>" + page_tail();
  const std::string grouping =
      page.axes.size() > 1 ? fmt::format("grouped by {}, one colour per combination of the other settings", page.axes.front()) : "";
  out += fmt::format("<h2>Predicted median step per point</h2><p class=\"note\">over the baseline's steady steps; the dashed "
                     "line is the baseline; above each bar its change{}{}</p>",
                     grouping.empty() ? "" : "; ", escape_html(grouping));
  out += grouped_bars_svg(chart_of(page));
  out += "<h2>Points</h2><p class=\"note\">click a column to sort</p>" + table_of(page);
  return out + page_tail();
}

}  // namespace dpro::report_html
