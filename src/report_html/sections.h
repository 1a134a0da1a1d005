#pragma once
// The sections of one report on the HTML page (html_report.h), each a self-contained fragment.
#include <nlohmann/json.hpp>

#include <string>

#include "replayer/report.h"
#include "replayer/step_stats.h"

namespace dpro::report_html {

// Verdict per iteration (rows) and rank (columns), the job's verdict last; at most kVerdictRows rows.
inline constexpr std::size_t kVerdictRows = 40;
std::string verdict_section(const replayer::Report& report, const replayer::StepStats& stats);
// The scales of the charts of a report: the largest non-warm-up job time of the step chart, and the
// longest mean steady step of a rank (the breakdown bars). Side by side, both sides use the larger.
struct ChartScales {
  Nanos step = 0, rank_step = 0;
};
ChartScales chart_scales(const replayer::Report& report, const replayer::StepStats& stats);
// Job step time per iteration, measured and predicted, warm-up and outliers marked.
std::string step_chart_section(const replayer::Report& report, const replayer::StepStats& stats, const ChartScales& scales);
// Per rank, mean over the steady steps: the critical path by category, and the GPU's busy time.
std::string breakdown_section(const replayer::Report& report, const replayer::StepStats& stats, const ChartScales& scales);
// The critical path's ops, mean time per steady step, `top` of them.
std::string path_ops_section(const replayer::StepStats& stats, std::size_t top);
// Each array of flat objects in `tables` as a sortable table of `rows` rows.
std::string tables_section(const nlohmann::json& tables, std::size_t rows);

// Median predicted step of each rank over the steady steps (ranks by number, as the report has them).
std::vector<std::pair<int, Nanos>> steady_rank_medians(const replayer::Report& report, const replayer::StepStats& stats);

}  // namespace dpro::report_html
