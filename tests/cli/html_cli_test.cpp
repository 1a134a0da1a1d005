// `--html FILE` of replay and optimize, as a user runs them: the page is written through the
// output-file rules (no overwrite without --force, never over an input) and holds the baseline and,
// with a what-if or a plan, the prediction beside it.
#include <catch2/catch.hpp>

#include <filesystem>

#include "cli/cli_run.h"
#include "core/byte_source.h"
#include "trace_fixtures.h"

using namespace dpro;
using test::run;
using test::Run;

namespace {

std::size_t count_of(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("html report: replay --html writes the baseline page, and never overwrites without --force") {
  const std::string dir = test::fresh_dir("cli_html");
  const std::string page = dir + "/r.html";
  Run r = run("replay -q --html " + page + " " + test::dlrm_dir());
  REQUIRE(r.code == 0);
  CHECK(r.out.empty());
  const std::string html = read_whole_file(page);
  CHECK(html.rfind("<!DOCTYPE html>", 0) == 0);
  CHECK(count_of(html, "<div class=\"side\">") == 1);
  CHECK(count_of(html, "<h4>collectives</h4>") == 1);
  CHECK(count_of(html, "<h2>Advice</h2>") == 1);  // DLRM: exposed communication, its straggler, ...
  CHECK(count_of(html, "exposed communication 36.6% of the step") == 1);
  r = run("replay -q --html " + page + " " + test::dlrm_dir());
  CHECK(r.code == 2);
  CHECK_THAT(r.out, Catch::Contains("--force"));
  CHECK(read_whole_file(page) == html);
  CHECK(run("replay -q --force --html " + page + " " + test::dlrm_dir()).code == 0);
  const std::string copy = dir + "/input.json.gz";
  std::filesystem::copy_file(test::dlrm_files().front(), copy);
  CHECK(run("replay -q --force --allow-partial --html " + copy + " " + copy).code == 2);
  CHECK(read_whole_file(copy) == read_whole_file(test::dlrm_files().front()));
}

TEST_CASE("html report: a what-if and an optimizer plan are shown beside their baseline") {
  const std::string dir = test::fresh_dir("cli_html_whatif");
  Run r = run("replay -q --set cluster.gpus_per_node=1 --set network.inter_node_gbps=1.25 --html " + dir + "/w.html " + test::dlrm_dir());
  REQUIRE(r.code == 0);
  std::string html = read_whole_file(dir + "/w.html");
  CHECK(count_of(html, "Baseline vs prediction") == 1);
  CHECK(count_of(html, "<div class=\"side\">") == 2);
  CHECK(count_of(html, "what-if: predicted") >= 2);  // the change table's column and the side's heading
  CHECK(count_of(html, "class=\"up\"") >= 1);        // a slower network: some step grows
  r = run("optimize -q --budget 5 --html " + dir + "/o.html " + test::source_path("traces/h100/resnet50"));
  REQUIRE(r.code == 0);
  html = read_whole_file(dir + "/o.html");
  CHECK(count_of(html, "baseline under the search&#39;s conditions") >= 2);
  CHECK(count_of(html, "chosen plan:") >= 2);
  CHECK(count_of(html, "<div class=\"side\">") == 2);
}

TEST_CASE("advice: the text and JSON reports carry the advice, and -q prints nothing") {
  Run r = run("replay " + test::dlrm_dir());
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("\nadvice (from the steady steps") &&
                        Catch::Contains("  - exposed communication 36.6% of the step") && !Catch::Contains("GPU-bound: kernels"));
  r = run("replay -q " + test::dlrm_dir());
  CHECK(r.code == 0);
  CHECK(r.out.empty());
  r = run("replay -q --json - " + test::dlrm_dir());
  REQUIRE(r.code == 0);
  const std::string json = r.out;
  CHECK(count_of(json, "\"rule\": \"exposed_communication\"") == 1);
  CHECK(count_of(json, "\"rule\": \"straggler\"") == 1);
  CHECK(count_of(json, "\"rule\": \"gpu_bound\"") == 0);
}
