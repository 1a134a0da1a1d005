// The sweep's page (report_html/sweep_page.h): one bar per point, grouped by the first setting and
// coloured by the others, the baseline as a dashed line, the table, nothing fetched, names escaped.
#include <catch2/catch.hpp>

#include "report_html/sweep_page.h"

using namespace dpro;

namespace {

std::size_t count_of(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

report_html::SweepPage two_axes() {
  report_html::SweepPage page;
  page.title = "sweep";
  page.axes = {"ranks", "network.inter_node_gbps"};
  page.baseline_ns = 20'000'000;
  page.baseline_steps = 3;
  const std::vector<std::pair<std::string, std::string>> grid = {{"8", "10"}, {"8", "100"}, {"16", "10"}, {"16", "100"}};
  Nanos step = 21'000'000;
  for (const auto& [ranks, gbps] : grid) {
    report_html::SweepPagePoint p;
    p.values = {ranks, gbps};
    p.median_ns = step;
    p.change = static_cast<double>(step) / 20e6 - 1.0;
    p.steps = 3;
    p.verdict = "communication-bound";
    page.points.push_back(p);
    step += 1'000'000;
  }
  return page;
}

}  // namespace

TEST_CASE("sweep page: bars grouped by the first setting, one colour per value of the other, baseline dashed") {
  const std::string html = report_html::render_sweep_html(two_axes());
  CHECK(count_of(html, "<rect ") == 4);
  CHECK(count_of(html, "fill=\"#4e79a7\"") == 2);  // gbps=10 at both sizes
  CHECK(count_of(html, "fill=\"#f28e2b\"") == 2);  // gbps=100
  CHECK(count_of(html, "class=\"reference\"") == 1);
  CHECK(html.find("20.000 ms") != std::string::npos);       // the baseline's label
  CHECK(html.find(">+5.00%<") != std::string::npos);        // 21 ms over 20 ms, above its bar
  CHECK(html.find("network.inter_node_gbps=100") != std::string::npos);  // the legend names the series
  CHECK(count_of(html, "<tr>") == 5);                       // header and one row per point
  CHECK(html.find("http") == std::string::npos);            // nothing fetched
}

TEST_CASE("sweep page: one setting gives one bar per value in one colour; names are escaped") {
  report_html::SweepPage page = two_axes();
  page.axes = {"device<b>"};
  page.points.resize(2);
  page.points[0].values = {"A100"};
  page.points[1].values = {"<script>"};
  const std::string html = report_html::render_sweep_html(page);
  CHECK(count_of(html, "<rect ") == 2);
  CHECK(count_of(html, "fill=\"#4e79a7\"") == 2);
  CHECK(html.find("<script>alert") == std::string::npos);
  CHECK(html.find("<script>\"") == std::string::npos);
  CHECK(html.find("&lt;script&gt;") != std::string::npos);
  CHECK(html.find("device&lt;b&gt;") != std::string::npos);
}
