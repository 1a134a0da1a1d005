#include "report_html/sections.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "report_html/escape.h"
#include "report_html/svg.h"
#include "replayer/verdict.h"

namespace dpro::report_html {
namespace {

using replayer::Category;
using replayer::kCategoryCount;

// One colour per critical-path category, in Category's order (a colour-blind-safe palette).
constexpr const char* kCategoryColors[kCategoryCount] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                                         "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};

const char* verdict_class(replayer::Verdict::Bound b) {
  switch (b) {
    case replayer::Verdict::Bound::kGpu: return "v-gpu";
    case replayer::Verdict::Bound::kCpu: return "v-cpu";
    case replayer::Verdict::Bound::kCommunication: return "v-comm";
    case replayer::Verdict::Bound::kPeer: return "v-peer";
    case replayer::Verdict::Bound::kUnresolvedWaits: return "v-wait";
    case replayer::Verdict::Bound::kIdle: return "v-idle";
  }
  return "v-idle";
}

std::string verdict_cell(const replayer::Verdict& v) {
  return fmt::format("<td class=\"{}\" title=\"{}\">{}</td>", verdict_class(v.bound), escape_html(replayer::describe(v)),
                     escape_html(replayer::headline(v)));
}

const char* mark_of(const replayer::StepStats& stats, std::size_t index) {
  const auto in = [&](const std::vector<std::size_t>& v) { return std::find(v.begin(), v.end(), index) != v.end(); };
  return in(stats.warmup) ? "warm-up" : in(stats.outliers) ? "outlier" : "";
}

// The ranks' numbers, in the order of the first iteration (every iteration lists the same ranks).
std::vector<int> rank_numbers(const replayer::Report& report) {
  std::vector<int> ranks;
  if (!report.iterations.empty())
    for (const auto& r : report.iterations.front().ranks) ranks.push_back(r.rank);
  return ranks;
}

const replayer::RankIteration* find_rank(const replayer::IterationReport& it, int rank) {
  for (const auto& r : it.ranks)
    if (r.rank == rank) return &r;
  return nullptr;
}

// The steady steps, or every step when none is steady (one step that is all warm-up cannot be).
std::vector<std::size_t> steady_or_all(const replayer::Report& report, const replayer::StepStats& stats) {
  if (!stats.steady.empty()) return stats.steady;
  std::vector<std::size_t> all(report.iterations.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  return all;
}

std::string format_cell(const std::string& key, const nlohmann::json& v) {
  if (v.is_null()) return "<td>-</td>";
  if (v.is_string()) return "<td class=\"text\">" + escape_html(v.get<std::string>()) + "</td>";
  if (v.is_number_integer() && key.size() > 3 && key.ends_with("_ns"))
    return fmt::format("<td data-v=\"{}\">{}</td>", v.get<std::int64_t>(), format_duration(v.get<std::int64_t>()));
  if (v.is_number() && key == "share") return fmt::format("<td data-v=\"{0}\">{1:.1f}%</td>", v.get<double>(), 100 * v.get<double>());
  if (v.is_number_float()) return fmt::format("<td data-v=\"{0}\">{0:.3f}</td>", v.get<double>());
  if (v.is_number()) return fmt::format("<td data-v=\"{0}\">{0}</td>", v.dump());
  return "<td class=\"text\">" + escape_html(v.dump()) + "</td>";
}

std::string json_table(const std::string& name, const nlohmann::json& rows, std::size_t shown) {
  // JSON objects come with sorted keys: who and what first, then the figures in that order.
  std::vector<std::string> keys;
  for (const char* k : {"rank", "kind", "op", "name"})
    if (rows.front().contains(k)) keys.push_back(k);
  for (const auto& [k, _] : rows.front().items())
    if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
  std::string out = fmt::format("<h4>{}</h4><div class=\"scroll\"><table class=\"sortable\"><thead><tr>", escape_html(name));
  for (const std::string& k : keys) out += "<th>" + escape_html(k.ends_with("_ns") ? k.substr(0, k.size() - 3) : k) + "</th>";
  out += "</tr></thead><tbody>";
  for (std::size_t i = 0; i < rows.size() && i < shown; ++i) {
    out += "<tr>";
    for (const std::string& k : keys) out += format_cell(k, rows[i].is_object() && rows[i].contains(k) ? rows[i][k] : nlohmann::json());
    out += "</tr>";
  }
  out += "</tbody></table></div>";
  if (rows.size() > shown) out += fmt::format("<p class=\"note\">{} more rows (in the --json report)</p>", rows.size() - shown);
  return out;
}

}  // namespace

std::vector<std::pair<int, Nanos>> steady_rank_medians(const replayer::Report& report, const replayer::StepStats& stats) {
  std::vector<std::pair<int, Nanos>> out;
  for (int rank : rank_numbers(report)) {
    std::vector<Nanos> times;
    for (std::size_t i : steady_or_all(report, stats))
      if (const auto* r = find_rank(report.iterations[i], rank)) times.push_back(r->predicted_ns);
    out.emplace_back(rank, replayer::distribution_of(times).median);
  }
  return out;
}

std::string verdict_section(const replayer::Report& report, const replayer::StepStats& stats) {
  std::string out = "<h3>Verdict per step and rank</h3>";
  if (!report.analysed) return out + "<p class=\"note\">not analysed</p>";
  const std::vector<int> ranks = rank_numbers(report);
  out += "<div class=\"scroll\"><table class=\"verdicts\"><thead><tr><th>step</th><th></th>";
  for (int r : ranks) out += fmt::format("<th>rank {}</th>", r);
  out += "<th>job</th></tr></thead><tbody>";
  for (std::size_t i = 0; i < report.iterations.size() && i < kVerdictRows; ++i) {
    const auto& it = report.iterations[i];
    out += fmt::format("<tr><td class=\"text\">{}</td><td class=\"mark\">{}</td>", escape_html(it.name), mark_of(stats, i));
    for (int r : ranks) {
      const auto* ri = find_rank(it, r);
      out += ri ? verdict_cell(ri->verdict) : std::string("<td>-</td>");
    }
    out += verdict_cell(it.verdict) + "</tr>";
  }
  out += "</tbody></table></div>";
  if (report.iterations.size() > kVerdictRows)
    out += fmt::format("<p class=\"note\">{} more steps (in the --json report)</p>", report.iterations.size() - kVerdictRows);
  return out;
}

ChartScales chart_scales(const replayer::Report& report, const replayer::StepStats& stats) {
  ChartScales scales;
  for (std::size_t i = 0; i < report.iterations.size(); ++i)
    if (std::string(mark_of(stats, i)) != "warm-up")
      scales.step = std::max({scales.step, report.iterations[i].job_measured_ns, report.iterations[i].job_predicted_ns});
  const std::vector<std::size_t> steps = steady_or_all(report, stats);
  for (int rank : rank_numbers(report)) {
    Nanos total = 0;
    for (std::size_t i : steps)
      if (const auto* r = find_rank(report.iterations[i], rank)) total += r->predicted_ns;
    scales.rank_step = std::max(scales.rank_step, total / static_cast<Nanos>(std::max<std::size_t>(1, steps.size())));
  }
  return scales;
}

std::string step_chart_section(const replayer::Report& report, const replayer::StepStats& stats, const ChartScales& scales) {
  LineChart chart;
  chart.series = {{"measured", "#9c755f"}, {"predicted", "#4e79a7"}};
  chart.values.resize(2);
  for (std::size_t i = 0; i < report.iterations.size(); ++i) {
    const auto& it = report.iterations[i];
    chart.x_labels.push_back(it.whole_trace ? "trace" : std::to_string(it.number));
    const std::string mark = mark_of(stats, i);
    chart.marks.push_back(mark == "warm-up" ? StepMark::kWarmup : mark == "outlier" ? StepMark::kOutlier : StepMark::kSteady);
    chart.values[0].push_back(it.job_measured_ns);
    chart.values[1].push_back(it.job_predicted_ns);
  }
  chart.y_max = scales.step;
  return fmt::format(
      "<h3>Step time over iterations</h3><p class=\"note\">job time per step; steady median {} predicted, {} measured; "
      "{} warm-up and {} outlier step(s), drawn as large dots (warm-up steps above the axis on its top edge)</p>{}",
      format_duration(stats.steady_predicted.median), format_duration(stats.steady_measured.median), stats.warmup.size(),
      stats.outliers.size(), line_chart_svg(chart));
}

std::string breakdown_section(const replayer::Report& report, const replayer::StepStats& stats, const ChartScales& scales) {
  if (!report.analysed) return "";
  std::vector<Series> path_series, gpu_series;
  for (int c = 0; c < kCategoryCount; ++c)
    path_series.push_back({replayer::to_string(static_cast<Category>(c)), kCategoryColors[c]});
  gpu_series = {{"compute", kCategoryColors[0]}, {"communication", kCategoryColors[1]}, {"copies", kCategoryColors[3]},
                {"GPU idle", "#dddddd"}};
  const std::vector<std::size_t> steps = steady_or_all(report, stats);
  std::vector<Bar> path_bars, gpu_bars;
  for (int rank : rank_numbers(report)) {
    Bar path{fmt::format("rank {}", rank), std::vector<Nanos>(kCategoryCount, 0)};
    Bar gpu{path.label, std::vector<Nanos>(4, 0)};
    for (std::size_t i : steps) {
      const auto* r = find_rank(report.iterations[i], rank);
      if (!r) continue;
      for (int c = 0; c < kCategoryCount; ++c) path.parts[c] += r->critical_path.by_category[c];
      gpu.parts[0] += r->gpu_busy[Category::kCompute];
      gpu.parts[1] += r->gpu_busy[Category::kCommunication];
      gpu.parts[2] += r->gpu_busy[Category::kCopies];
      gpu.parts[3] += r->gpu_idle;
    }
    const auto n = static_cast<Nanos>(std::max<std::size_t>(1, steps.size()));
    for (Nanos& v : path.parts) v /= n;
    for (Nanos& v : gpu.parts) v /= n;
    path_bars.push_back(std::move(path));
    gpu_bars.push_back(std::move(gpu));
  }
  return "<h3>Critical path per rank</h3><p class=\"note\">mean per steady step; peer_wait: time on another rank's ops</p>" +
         stacked_bars_svg(path_series, path_bars, scales.rank_step) +
         "<h3>GPU busy per rank</h3><p class=\"note\">mean per steady step, a union over streams</p>" +
         stacked_bars_svg(gpu_series, gpu_bars, scales.rank_step);
}

std::string path_ops_section(const replayer::StepStats& stats, std::size_t top) {
  std::string out =
      "<h3>Critical path: top ops</h3><p class=\"note\">mean per steady step: the op's own time on the path, and the path's "
      "wait before its calls started</p><div class=\"scroll\"><table class=\"sortable\"><thead><tr><th>name</th><th>rank</th>"
      "<th>category</th><th>own</th><th>gap before</th><th>calls</th></tr></thead><tbody>";
  for (std::size_t i = 0; i < stats.path_ops.size() && i < top; ++i) {
    const replayer::PathOp& op = stats.path_ops[i];
    out += fmt::format("<tr><td class=\"text\">{}</td><td>{}</td><td class=\"text\">{}</td><td data-v=\"{}\">{}</td>"
                       "<td data-v=\"{}\">{}</td><td>{}</td></tr>",
                       escape_html(op.name), op.rank, replayer::to_string(op.category), op.own, format_duration(op.own),
                       op.gap_before, format_duration(op.gap_before), op.calls);
  }
  return out + "</tbody></table></div>";
}

std::string tables_section(const nlohmann::json& tables, std::size_t rows) {
  std::string out;
  if (!tables.is_object()) return out;
  for (const auto& [name, value] : tables.items())
    if (value.is_array() && !value.empty() && value.front().is_object()) out += json_table(name, value, rows);
  return out.empty() ? out : "<h3>Tables</h3><p class=\"note\">totals over the reported steps; click a column to sort</p>" + out;
}

}  // namespace dpro::report_html
