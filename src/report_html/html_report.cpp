#include "report_html/html_report.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"
#include "report_html/escape.h"
#include "report_html/page.h"
#include "report_html/sections.h"
#include "replayer/step_stats.h"

namespace dpro::report_html {
namespace {

std::string side(const ReportView& view, const replayer::StepStats& stats, const ChartScales& scales, std::size_t top) {
  const replayer::Report& report = *view.report;
  std::string out = "<div class=\"side\"><h2>" + escape_html(view.label) + "</h2>";
  if (report.iterations.empty()) return out + "<p>no iterations to report</p></div>";
  out += step_chart_section(report, stats, scales);
  out += breakdown_section(report, stats, scales);
  out += verdict_section(report, stats);
  if (report.analysed) out += path_ops_section(stats, top);
  if (view.tables) out += tables_section(*view.tables, std::max<std::size_t>(top, 25));
  for (const std::string& note : report.notes) out += "<p class=\"note\">" + escape_html(note) + "</p>";
  return out + "</div>";
}

std::string change_cell(Nanos from, Nanos to) {
  const double change = 100.0 * static_cast<double>(to - from) / static_cast<double>(std::max<Nanos>(1, from));
  return fmt::format("<td class=\"{}\">{:+.2f}%</td>", change > 0 ? "up" : change < 0 ? "down" : "", change);
}

// Median predicted step over the steady steps, per rank and for the job, baseline vs prediction.
std::string change_table(const HtmlReport& page, const replayer::StepStats& bs, const replayer::StepStats& ns) {
  const replayer::Report &base = *page.baseline.report, &next = *page.prediction->report;
  std::string out = fmt::format(
      "<h2>Baseline vs prediction</h2><p class=\"note\">median predicted step over the steady steps</p><table><thead><tr>"
      "<th></th><th>{}</th><th>{}</th><th>change</th></tr></thead><tbody>",
      escape_html(page.baseline.label), escape_html(page.prediction->label));
  const auto b = steady_rank_medians(base, bs), n = steady_rank_medians(next, ns);
  for (const auto& [rank, from] : b) {
    const auto to = std::find_if(n.begin(), n.end(), [&](const auto& x) { return x.first == rank; });
    if (to == n.end()) continue;
    out += fmt::format("<tr><td>rank {}</td><td>{}</td><td>{}</td>{}</tr>", rank, format_duration(from),
                       format_duration(to->second), change_cell(from, to->second));
  }
  out += fmt::format("<tr><th>job</th><td>{}</td><td>{}</td>{}</tr></tbody></table>", format_duration(bs.steady_predicted.median),
                     format_duration(ns.steady_predicted.median),
                     change_cell(bs.steady_predicted.median, ns.steady_predicted.median));
  return out;
}

std::string header(const HtmlReport& page) {
  const replayer::Report& r = *page.baseline.report;
  std::string inputs;
  for (const std::string& in : r.provenance.inputs) inputs += (inputs.empty() ? "" : ", ") + in;
  std::string gpus;
  for (const std::string& g : r.provenance.gpus)
    if (!g.empty() && gpus.find(g) == std::string::npos) gpus += (gpus.empty() ? "" : ", ") + g;
  return fmt::format("<h1>{}</h1><p class=\"note\">{} rank(s), {} event(s), {} op(s); GPUs: {}<br>inputs: {}</p>",
                     escape_html(page.title), r.ranks, r.events, r.nodes, escape_html(gpus.empty() ? "not recorded" : gpus),
                     escape_html(inputs));
}

std::string advice_section(const std::vector<replayer::Advice>& advice) {
  if (advice.empty()) return "";
  std::string out = "<h2>Advice</h2><p class=\"note\">rules over the baseline's steady steps: the evidence, then what to try</p><ul class=\"advice\">";
  for (const replayer::Advice& a : advice)
    out += "<li><b>" + escape_html(a.evidence) + "</b> &rarr; " + escape_html(a.action) + "</li>";
  return out + "</ul>";
}

}  // namespace

std::string render_html(const HtmlReport& page) {
  DPRO_CHECK(page.baseline.report != nullptr);
  std::string out = page_head(page.title) + header(page) + advice_section(page.advice);
  const replayer::StepStats base_stats = replayer::step_stats(*page.baseline.report);
  std::optional<replayer::StepStats> next_stats;
  // Both sides on one scale, so that bars and lines compare by eye.
  ChartScales scales = chart_scales(*page.baseline.report, base_stats);
  if (page.prediction) {
    DPRO_CHECK(page.prediction->report != nullptr);
    next_stats = replayer::step_stats(*page.prediction->report);
    const ChartScales other = chart_scales(*page.prediction->report, *next_stats);
    scales = {std::max(scales.step, other.step), std::max(scales.rank_step, other.rank_step)};
    out += change_table(page, base_stats, *next_stats);
  }
  out += "<div class=\"sides\">" + side(page.baseline, base_stats, scales, page.top);
  if (page.prediction) out += side(*page.prediction, *next_stats, scales, page.top);
  out += "</div>" + page_tail();
  return out;
}

}  // namespace dpro::report_html
