#pragma once
// `dpro-replay sweep --html FILE`: one self-contained page (inline SVG, nothing fetched) with the
// sweep's chart, the predicted median step of every point against the baseline's (a dashed line),
// and its table. With several swept settings the bars are grouped by the first setting's values
// and coloured by the combination of the others. Rendering only: the CLI fills the view from
// whatif::SweepRow (this module sits below whatif).
#include <cstddef>
#include <string>
#include <vector>

#include "replayer/critical_path.h"
#include "replayer/report.h"

namespace dpro::report_html {

struct SweepPagePoint {
  std::vector<std::string> values;  // one per axis, in axis order
  Nanos median_ns = 0;              // the what-if's median step over the compared steps
  double change = 0;                // median_ns / baseline - 1
  std::size_t steps = 0;            // steps compared
  std::string verdict;              // most frequent headline ("" when not analysed)
  replayer::Breakdown critical_path;  // mean per compared step
};

struct SweepPage {
  std::string title;              // plain text
  std::vector<std::string> axes;  // the swept settings' names ("ranks", "network.inter_node_gbps")
  std::vector<SweepPagePoint> points;  // the grid, first axis varying slowest (whatif::sweep_grid)
  Nanos baseline_ns = 0;           // the baseline's median step over its steady steps
  std::size_t baseline_steps = 0;
  replayer::Provenance provenance;
};

// The page, UTF-8. Every point must have one value per axis.
std::string render_sweep_html(const SweepPage& page);

}  // namespace dpro::report_html
