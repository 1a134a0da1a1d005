// `compare` as a CI step on real reports: two halves of one noisy job pass a limit smaller than
// their spread, a real slowdown fails it, and the JUnit and Markdown files say so (the XML parsed
// by python3's xml.etree, a parser independent of the writer).
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <filesystem>

#include "cli/cli_run.h"
#include "core/byte_source.h"
#include "trace_fixtures.h"

using namespace dpro;
using test::run;
using test::Run;

namespace {

// The report's iterations of one parity (0: even, 1: odd positions), as if two recordings of the job
// had each captured half of its steps; the summary's warm-up kept where its step is.
void write_half(const nlohmann::json& report, int parity, const std::string& path) {
  nlohmann::json half = report;
  half["iterations"] = nlohmann::json::array();
  std::vector<std::string> names;
  for (std::size_t i = static_cast<std::size_t>(parity); i < report.at("iterations").size(); i += 2) {
    half["iterations"].push_back(report["iterations"][i]);
    names.push_back(report["iterations"][i].at("name").get<std::string>());
  }
  nlohmann::json warmup = nlohmann::json::array();
  for (const auto& name : report.at("summary").at("warmup"))
    if (std::find(names.begin(), names.end(), name.get<std::string>()) != names.end()) warmup.push_back(name);
  half["summary"]["warmup"] = warmup;
  test::write_text(path, half.dump());
}

// "testcases failures" of a JUnit file as python3's xml.etree reads it, or its error.
std::string junit_counts(const std::string& path) {
  return test::run_command("python3 -c \"import sys, xml.etree.ElementTree as E; r = E.parse(sys.argv[1]).getroot(); "
                           "print(len(r.findall('.//testcase')), len(r.findall('.//testcase/failure')), "
                           "r.get('failures'))\" '" + path + "' 2>&1").out;
}

}  // namespace

TEST_CASE("compare in CI: two halves of one noisy job are within noise; a slower host is a regression") {
  const std::string dir = test::fresh_dir("cli_compare_noise");
  const std::string resnet = test::source_path("traces/h100/resnet50");
  REQUIRE(run("replay -q --json " + dir + "/all.json " + resnet).code == 0);
  const auto all = nlohmann::json::parse(read_whole_file(dir + "/all.json"));
  write_half(all, 1, dir + "/odd.json");
  write_half(all, 0, dir + "/even.json");
  // Medians 45.0 ms and 46.2 ms (+2.8 %) with steps spread by +-4 ms: within noise, not over 1 %.
  Run r = run("compare " + dir + "/odd.json " + dir + "/even.json --max-slowdown 1");
  CHECK(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("is within the noise") && Catch::Contains("though beyond --max-slowdown 1%"));
  // The same job on a host 20 % slower (a what-if): +14 %, far beyond the noise.
  REQUIRE(run("replay -q --set host.cpu_speed=0.8 --json " + dir + "/slow.json " + resnet).code == 0);
  r = run("compare " + dir + "/all.json " + dir + "/slow.json --max-slowdown 3 --junit " + dir + "/slow.xml --markdown " +
          dir + "/slow.md");
  CHECK(r.code == 1);
  CHECK_THAT(r.out, Catch::Contains("REGRESSION: job +"));
  CHECK(junit_counts(dir + "/slow.xml") == "3 2 2\n");  // job, rank 0, same job; the job and rank 0 fail
  const std::string md = read_whole_file(dir + "/slow.md");
  CHECK(md.rfind("### dpro-replay compare: FAILED", 0) == 0);
  CHECK_THAT(md, Catch::Contains("| check | base | new | change | noise | outcome |") &&
                     Catch::Contains("| step time: job |") && Catch::Contains("**regression**"));
  // An output is never overwritten without --force.
  r = run("compare " + dir + "/all.json " + dir + "/slow.json --junit " + dir + "/slow.xml");
  CHECK(r.code == 2);
  CHECK_THAT(r.out, Catch::Contains("--force"));
}

TEST_CASE("compare in CI: JUnit and Markdown of the DLRM job on a slow network, names escaped") {
  const std::string dir = test::fresh_dir("cli_compare_junit");
  const std::string odd = dir + "/a&b <\"c\">";  // a folder name a shell, XML and Markdown all treat specially
  std::filesystem::create_directories(odd);
  REQUIRE(run("replay -q --json '" + odd + "/base.json' " + test::dlrm_dir()).code == 0);
  REQUIRE(run("replay -q --set cluster.gpus_per_node=1 --set network.inter_node_gbps=1.25 --json " + dir + "/slow.json " +
              test::dlrm_dir()).code == 0);
  Run r = run("compare '" + odd + "/base.json' " + dir + "/slow.json --max-slowdown 3 --junit " + dir + "/c.xml --markdown " +
              dir + "/c.md");
  CHECK(r.code == 1);
  // 8 ranks + job + same job; the job (+13 %) and the ranks that slowed by more than 3 % fail.
  const std::string counts = junit_counts(dir + "/c.xml");
  INFO(counts);
  CHECK(counts.rfind("10 ", 0) == 0);
  const std::string xml = read_whole_file(dir + "/c.xml");
  CHECK_THAT(xml, Catch::Contains("a&amp;b &lt;&quot;c&quot;&gt;/base.json") && Catch::Contains("name=\"step time: job\"") &&
                      Catch::Contains("<failure type=\"regression\""));
  const std::string md = read_whole_file(dir + "/c.md");
  CHECK_THAT(md, Catch::Contains("a&amp;b &lt;&quot;c&quot;&gt;/base.json") && Catch::Contains("| same job |"));
  // The same report twice: every check within noise, nothing fails.
  r = run("compare " + dir + "/slow.json " + dir + "/slow.json --max-slowdown 0 --junit " + dir + "/same.xml");
  CHECK(r.code == 0);
  CHECK(junit_counts(dir + "/same.xml") == "10 0 0\n");
}
