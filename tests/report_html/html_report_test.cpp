// The HTML page of a real replay (8-rank DLRM): its sections are there, it fetches nothing, it is
// valid UTF-8, and names from the trace cannot inject markup.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "replayer/replay.h"
#include "replayer/tables.h"
#include "report_html/html_report.h"
#include "trace_fixtures.h"

using namespace dpro;

namespace {

const std::string kHostile = "<script>alert(\"x\")</script>&amp;\xFF'";

std::size_t count_of(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

bool valid_utf8(const std::string& s) {
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const std::size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (std::size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) >> 6) != 2) return false;
    i += n;
  }
  return true;
}

struct Fixture {
  test::CapturingLog log;
  trace::TraceSet traces = test::load(test::dlrm_files(), log.log, true);
  replayer::Replay replay = replayer::replay_traces(traces, {}, log.log);
  nlohmann::json tables =
      replayer::to_json(replayer::make_tables(traces, replay.graph, replay.simulation, replay.report));
};

}  // namespace

TEST_CASE("html report of the DLRM replay: every section, self-contained, valid UTF-8") {
  Fixture f;
  report_html::HtmlReport page;
  page.title = "DLRM";
  page.baseline = {"baseline", &f.replay.report, f.tables};
  const std::string html = report_html::render_html(page);
  for (const char* section : {"Verdict per step and rank", "Step time over iterations", "Critical path per rank",
                              "GPU busy per rank", "Critical path: top ops", "<h4>gpu_ops</h4>", "<h4>collectives</h4>"})
    CHECK(count_of(html, section) == 1);
  CHECK(count_of(html, "waiting for rank 7") >= 8);  // the report's verdict of ranks 0-6 and the job
  CHECK(count_of(html, "<svg") == 3);                 // step chart, two breakdown charts
  CHECK(count_of(html, "Baseline vs prediction") == 0);
  // Nothing fetched: no external script, style, image or font.
  for (const char* ref : {"src=", "href=", "@import", "url(", "http:", "https:"}) CHECK(count_of(html, ref) == 0);
  CHECK(count_of(html, "<script>") == 1);  // the page's own sort script
  CHECK(valid_utf8(html));
}

TEST_CASE("html report escapes trace-derived names in notes, top ops and tables") {
  Fixture f;
  replayer::Report report = f.replay.report;
  report.notes.push_back(kHostile);
  report.iterations.front().path_ops.front().name = kHostile;
  report.provenance.inputs.push_back(kHostile);
  nlohmann::json tables = f.tables;
  tables["gpu_ops"].front()["name"] = kHostile;
  report_html::HtmlReport page;
  page.title = kHostile;
  page.baseline = {kHostile, &report, tables};
  const std::string html = report_html::render_html(page);
  CHECK(count_of(html, "<script>") == 1);
  CHECK(count_of(html, "alert(\"x\")") == 0);
  // <title> and <h1>, header input, side label, note, top op, table row
  CHECK(count_of(html, "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;amp;\xEF\xBF\xBD&#39;") == 7);
  CHECK(valid_utf8(html));
}

TEST_CASE("html report with a prediction shows both sides and the change per rank") {
  Fixture f;
  replayer::Report faster = f.replay.report;
  for (auto& it : faster.iterations) {
    it.job_predicted_ns /= 2;
    for (auto& r : it.ranks) r.predicted_ns /= 2;
  }
  report_html::HtmlReport page;
  page.title = "what-if";
  page.baseline = {"baseline side", &f.replay.report, f.tables};
  page.prediction = report_html::ReportView{"prediction side", &faster, std::nullopt};
  const std::string html = report_html::render_html(page);
  CHECK(count_of(html, "Baseline vs prediction") == 1);
  CHECK(count_of(html, "<div class=\"side\">") == 2);
  CHECK(count_of(html, "-50.00%") == 9);  // 8 ranks and the job
  CHECK(count_of(html, "<h4>gpu_ops</h4>") == 1);  // the prediction was given no tables
}
