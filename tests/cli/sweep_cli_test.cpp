// `dpro-replay sweep`: one what-if per combination of the values given, in one table.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "core/byte_source.h"

#include "cli/cli_run.h"
#include "trace_fixtures.h"

using namespace dpro;
using dpro::test::Run;
using dpro::test::run;

namespace {
// The what-if's median step of `replay` with the same flags, over the baseline's steps (DLRM has one).
long long replayed_step(const std::string& flags) {
  const Run r = run("replay -q --json - " + test::dlrm_dir() + " " + flags);
  REQUIRE(r.code == 0);
  return nlohmann::json::parse(r.out).at("whatif").at("iterations").at(0).at("job").at("predicted_ns").get<long long>();
}
}  // namespace

TEST_CASE("dpro-replay sweep gives each point the step that replay gives for the same flags") {
  const Run r = run("sweep -q --json - " + test::dlrm_dir() +
                    " --set cluster.gpus_per_node=1 --ranks 8,16 --set network.inter_node_gbps=1,100");
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(j.at("axes").size() == 2);  // gpus_per_node has one value: a condition, not an axis
  CHECK(j.at("axes").at(0).at("name") == "ranks");
  CHECK(j.at("axes").at(1).at("name") == "network.inter_node_gbps");
  const auto& points = j.at("points");
  REQUIRE(points.size() == 4);
  const std::vector<std::pair<std::string, std::string>> expected = {{"8", "1"}, {"8", "100"}, {"16", "1"}, {"16", "100"}};
  const long long base = j.at("baseline").at("median_ns").get<long long>();
  CHECK(base == 20823000);
  for (std::size_t i = 0; i < points.size(); ++i) {
    const auto& p = points.at(i);
    CHECK(p.at("settings").at("ranks") == expected[i].first);
    CHECK(p.at("settings").at("network.inter_node_gbps") == expected[i].second);
    const long long step = replayed_step("--set cluster.gpus_per_node=1 --ranks " + expected[i].first +
                                         " --set network.inter_node_gbps=" + expected[i].second);
    CHECK(p.at("median_ns").get<long long>() == step);
    CHECK(p.at("change").get<double>() == Approx(static_cast<double>(step) / static_cast<double>(base) - 1.0));
  }
  // A slower network never makes the step shorter, at either size.
  CHECK(points.at(0).at("median_ns").get<long long>() >= points.at(1).at("median_ns").get<long long>());
  CHECK(points.at(2).at("median_ns").get<long long>() >= points.at(3).at("median_ns").get<long long>());
}

TEST_CASE("dpro-replay sweep prints one row per point and writes CSV") {
  const std::string csv = (std::filesystem::temp_directory_path() / ("dpro-sweep-" + std::to_string(::getpid()) + ".csv")).string();
  std::filesystem::remove(csv);
  const Run r = run("sweep " + test::dlrm_dir() + " --set host.cpu_speed=0.5,1,2 --csv " + csv);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("sweep of 3 points") && Catch::Contains("host.cpu_speed") && Catch::Contains("+0.00%"));
  const std::string text = read_whole_file(csv);
  CHECK(std::count(text.begin(), text.end(), '\n') == 4);
  CHECK(text.rfind("host.cpu_speed,median_ns,baseline_median_ns,change_percent,verdict\n", 0) == 0);
  // Not overwritten without --force.
  CHECK(run("sweep -q " + test::dlrm_dir() + " --set host.cpu_speed=0.5,1 --csv " + csv).code == 2);
  std::filesystem::remove(csv);
}

TEST_CASE("dpro-replay sweep --html writes one page with the chart and the table, -q printing nothing") {
  const std::string html = (std::filesystem::temp_directory_path() / ("dpro-sweep-" + std::to_string(::getpid()) + ".html")).string();
  std::filesystem::remove(html);
  const Run r = run("sweep -q " + test::dlrm_dir() + " --set cluster.gpus_per_node=1 --ranks 8,16 --set network.inter_node_gbps=10,100 --html " + html);
  REQUIRE(r.code == 0);
  CHECK(r.out.empty());
  const std::string page = read_whole_file(html);
  CHECK(page.rfind("<!DOCTYPE html>", 0) == 0);
  const auto count = [&](const std::string& part) {
    std::size_t n = 0;
    for (std::size_t at = page.find(part); at != std::string::npos; at = page.find(part, at + 1)) ++n;
    return n;
  };
  CHECK(count("<rect ") == 4);                  // one bar per point
  CHECK(count("class=\"reference\"") == 1);  // the baseline
  CHECK(page.find("20.823 ms") != std::string::npos);
  CHECK(page.find("network.inter_node_gbps=100") != std::string::npos);
  CHECK(page.find("http") == std::string::npos);
  CHECK(run("sweep -q " + test::dlrm_dir() + " --ranks 8,16 --html " + html).code == 2);  // no overwrite without --force
  std::filesystem::remove(html);
}

TEST_CASE("dpro-replay sweep refuses what it cannot sweep, naming the flag") {
  const Run none = run("sweep " + test::dlrm_dir() + " --device H100-SXM5-80GB");
  CHECK(none.code == 2);
  CHECK_THAT(none.out, Catch::Contains("nothing to sweep"));
  const Run bad = run("sweep " + test::dlrm_dir() + " --ranks 8,x");
  CHECK(bad.code == 2);
  CHECK_THAT(bad.out, Catch::Contains("--ranks x"));
  const Run empty = run("sweep " + test::dlrm_dir() + " --ranks 8,,16");
  CHECK(empty.code == 2);
  CHECK_THAT(empty.out, Catch::Contains("empty value"));
  const Run many = run("sweep " + test::dlrm_dir() + " --ranks 1,2,3,4,5,6,7,8,9 --set network.inter_node_gbps=1,2,3,4,5,6,7,8");
  CHECK(many.code == 2);
  CHECK_THAT(many.out, Catch::Contains("more than 64 points") && Catch::Contains("--max-points"));
}
