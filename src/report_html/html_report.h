#pragma once
// `dpro-replay replay|optimize --html FILE`: one static, self-contained HTML page (inline CSS, inline
// SVG charts, a few lines of inline script to sort tables; nothing fetched) that shows a replay
// report: the verdict per step and rank, the critical-path and GPU-busy breakdown per rank, the step
// time over iterations with warm-up and outliers marked, the critical path's top ops and the
// tables. With a prediction (a what-if, an optimizer plan) the baseline and the prediction are shown
// side by side, under a per-rank table of the change. Every trace-derived string is escaped
// (escape.h). Rendering only: the figures come from the report (replayer/report.h, step_stats.h).
#include <nlohmann/json.hpp>

#include <optional>
#include <string>

#include "replayer/advice.h"
#include "replayer/report.h"

namespace dpro::report_html {

struct ReportView {
  std::string label;                         // "baseline (replay of the trace as measured)"
  const replayer::Report* report = nullptr;  // not owned: must outlive render_html
  // replayer::to_json(Tables) (or any object whose arrays of flat objects are tables); each array
  // becomes one sortable table, so tables added there appear here without a change.
  std::optional<nlohmann::json> tables;
};

struct HtmlReport {
  std::string title;  // plain text
  ReportView baseline;
  std::optional<ReportView> prediction;
  std::vector<replayer::Advice> advice;  // the baseline's (replayer/advice.h), shown under the header
  std::size_t top = 10;  // rows of the critical path's top ops; the tables show max(top, 25) rows each
};

// The page, UTF-8. Requires baseline.report (and prediction->report when there is a prediction).
std::string render_html(const HtmlReport& page);

}  // namespace dpro::report_html
