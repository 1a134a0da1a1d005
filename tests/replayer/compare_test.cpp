// Comparing two replay reports: what the CI check reads from each, and how it decides.
#include <catch2/catch.hpp>

#include "core/error.h"
#include "replayer/compare.h"
#include "replayer/replay.h"
#include "trace_fixtures.h"

using namespace dpro;
using nlohmann::json;

namespace {

// A critical path with every category: `compute_ns` of compute and 1000 ns of launch.
json critical_path(Nanos compute_ns) {
  json path = json::object();
  for (int c = 0; c < replayer::kCategoryCount; ++c) path[std::string(replayer::to_string(static_cast<replayer::Category>(c))) + "_ns"] = 0;
  path["compute_ns"] = compute_ns;
  path["launch_ns"] = 1000;
  return path;
}

// A report with one iteration per job time; each lists cudaLaunchKernel and, when `mm_ns` > 0,
// aten::mm among its ops; `complete`: as this dpro writes them (every op of the path listed), else
// as an older dpro did (its top ops only).
json report(const std::vector<Nanos>& jobs, Nanos compute_ns, Nanos mm_ns, bool complete = true) {
  json iterations = json::array();
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    json ops = json::array({{{"name", "cudaLaunchKernel"}, {"category", "launch"}, {"rank", 0}, {"time_ns", 1000}, {"count", 3}}});
    if (mm_ns > 0) ops.push_back({{"name", "aten::mm"}, {"category", "compute"}, {"rank", 1}, {"time_ns", mm_ns}, {"count", 1}});
    iterations.push_back({{"name", "ProfilerStep#" + std::to_string(i)},
                          {"job",
                           {{"measured_ns", jobs[i]},
                            {"predicted_ns", jobs[i] + 5},
                            {"critical_path", critical_path(compute_ns)},
                            {"top_ops", ops}}}});
    if (complete) iterations.back()["job"]["top_ops_complete"] = true;
  }
  return {{"iterations", iterations}, {"graph", json::object()}};
}

std::string summary_error(const json& j) {
  try {
    replayer::summarize_report(j, "r.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("A report summary takes the median job time, and a what-if's prediction over the measured time") {
  const auto s = replayer::summarize_report(report({100, 400, 200, 300}, 50, 20), "r.json");
  CHECK_FALSE(s.whatif);
  CHECK(s.median_job_ns == 250);
  CHECK(s.critical_path_ns[static_cast<int>(replayer::Category::kCompute)] == 50);
  CHECK(s.op_ns.at({"compute", "aten::mm"}) == 20);
  json with_whatif = report({100}, 0, 0);
  with_whatif["whatif"] = report({700, 900, 800}, 0, 0);
  const auto w = replayer::summarize_report(with_whatif, "r.json");
  CHECK(w.whatif);
  CHECK(w.median_job_ns == 805);  // predicted_ns = measured + 5 in this fixture
}

TEST_CASE("A report written before the issue-29 categories still compares: cpu_launch is cpu_op, new keys are 0") {
  json old = report({100, 200}, 50, 0);
  for (json& it : old["iterations"]) {
    it["job"]["critical_path"] = {{"compute_ns", 50}, {"communication_ns", 7}, {"copies_ns", 0}, {"cpu_launch_ns", 900}, {"idle_ns", 3}};
    it["job"]["top_ops"][0]["category"] = "cpu_launch";
  }
  const auto s = replayer::summarize_report(old, "old.json");
  auto at = [&](replayer::Category c) { return s.critical_path_ns[static_cast<int>(c)]; };
  CHECK(at(replayer::Category::kCpuOp) == 900);
  CHECK(at(replayer::Category::kCompute) == 50);
  CHECK(at(replayer::Category::kCommunication) == 7);
  CHECK(at(replayer::Category::kIdle) == 3);
  CHECK(at(replayer::Category::kPeerWait) == 0);
  CHECK(at(replayer::Category::kUnresolvedWait) == 0);
  const auto now = replayer::summarize_report(report({100, 200}, 50, 0), "new.json");
  const auto c = replayer::compare_reports(s, now, 0.03, 10);
  CHECK(c.change == 0);
  CHECK(c.critical_path_change_ns[static_cast<int>(replayer::Category::kCpuOp)] == -900);
  CHECK(c.critical_path_change_ns[static_cast<int>(replayer::Category::kLaunch)] == 1000);
}

TEST_CASE("compare flags a slowdown beyond the limit and names the ops that changed") {
  auto base = replayer::summarize_report(report({1000, 1000, 1000}, 100, 0), "base.json");
  auto slower = replayer::summarize_report(report({1040, 1060, 1050}, 150, 50), "new.json");
  const auto c = replayer::compare_reports(base, slower, 0.03, 10);
  CHECK(c.change == Approx(0.05));
  CHECK(c.regression());
  CHECK(c.critical_path_change_ns[static_cast<int>(replayer::Category::kCompute)] == 50);
  REQUIRE(c.ops.size() == 1);  // cudaLaunchKernel did not change
  CHECK(c.ops[0].name == "aten::mm");
  CHECK(*c.ops[0].base_ns == 0);  // not on the base's path: the base lists every op
  CHECK(*c.ops[0].new_ns == 50);
  CHECK(*c.ops[0].delta() == 50);
  CHECK_FALSE(replayer::compare_reports(base, slower, 0.06, 10).regression());
  CHECK_FALSE(replayer::compare_reports(base, slower, std::nullopt, 10).regression());
  CHECK_FALSE(replayer::compare_reports(slower, base, 0.0, 10).regression());  // faster is never a regression
  CHECK_THAT(replayer::render_text(c), Catch::Contains("+5.00%") && Catch::Contains("REGRESSION"));
  CHECK(replayer::to_json(c).at("ops").at(0).at("delta_ns") == 50);
}

TEST_CASE("compare never counts an op an older report leaves unlisted as 0 ns") {
  // An older report lists only its top ops: aten::mm absent there may have taken any time below them.
  const auto old_base = replayer::summarize_report(report({1000, 1000}, 100, 0, false), "old.json");
  CHECK_FALSE(old_base.ops_complete);
  const auto slower = replayer::summarize_report(report({1050, 1050}, 150, 50), "new.json");
  const auto c = replayer::compare_reports(old_base, slower, 0.03, 10);
  REQUIRE(c.ops.size() == 1);
  CHECK_FALSE(c.ops[0].base_ns);
  CHECK_FALSE(c.ops[0].delta());
  CHECK(replayer::to_json(c).at("ops").at(0).at("delta_ns").is_null());
  CHECK_THAT(replayer::render_text(c), Catch::Contains("?") && Catch::Contains("older report"));
  // An op an older report lists in only some iterations has no known mean: left out, not averaged with 0s.
  json partial = report({1000, 1000}, 100, 40, false);
  partial["iterations"][1]["job"]["top_ops"].erase(1);
  const auto s = replayer::summarize_report(partial, "old.json");
  CHECK_FALSE(s.op_ns.contains({"compute", "aten::mm"}));
  CHECK(s.op_ns.at({"launch", "cudaLaunchKernel"}) == 1000);
  // Known changes come before unknown ones.
  const auto both = replayer::compare_reports(replayer::summarize_report(report({1000}, 100, 0, false), "old.json"),
                                              replayer::summarize_report(report({1000}, 100, 30), "new.json"), 0.03, 10);
  REQUIRE(both.ops.size() == 1);
  CHECK_FALSE(both.ops[0].delta());
}

TEST_CASE("A file that is not a replay report is refused naming the key") {
  CHECK_THAT(summary_error(json::array()), Catch::Contains("r.json") && Catch::Contains("not a JSON object"));
  CHECK_THAT(summary_error(json{{"traceEvents", json::array()}}), Catch::Contains("iterations: missing"));
  CHECK_THAT(summary_error(json{{"iterations", json::array()}}), Catch::Contains("iterations: empty"));
  json bad = report({100, 200}, 0, 0);
  bad["iterations"][1]["job"]["measured_ns"] = "fast";
  CHECK_THAT(summary_error(bad), Catch::Contains("iterations[1].job.measured_ns") && Catch::Contains("not an integer"));
  json negative = report({100}, 0, 0);
  negative["iterations"][0]["job"]["critical_path"]["idle_ns"] = -5;
  CHECK_THAT(summary_error(negative), Catch::Contains("iterations[0].job.critical_path.idle_ns: not a time"));
  json huge = report({100}, 0, 0);
  huge["iterations"][0]["job"]["top_ops"][0]["time_ns"] = std::uint64_t{1} << 63;
  CHECK_THAT(summary_error(huge), Catch::Contains("iterations[0].job.top_ops[0].time_ns: not a time"));
  json no_ops = report({100}, 0, 0);
  no_ops["iterations"][0]["job"].erase("top_ops");
  CHECK_THAT(summary_error(no_ops), Catch::Contains("iterations[0].job.top_ops: missing"));
  json whatif_bad = report({100}, 0, 0);
  whatif_bad["whatif"] = json::object();
  CHECK_THAT(summary_error(whatif_bad), Catch::Contains("whatif.iterations: missing"));
}

TEST_CASE("compare reads the reports replay writes: a slower network on DLRM is a regression in communication") {
  test::CapturingLog log;
  const auto set = test::load({test::dlrm_dir()}, log.log);
  const auto base = replayer::replay_traces(set, {}, log.log);
  // The same job with every collective 100x longer, as a what-if report.
  replayer::Replay slow = base;
  for (auto& n : slow.graph.dfg.nodes())
    if (n.kind == graph::NodeKind::kCollective) n.duration *= 100;
  slow.simulation = replayer::simulate(slow.graph.dfg);
  slow.report = replayer::make_report(set, slow.graph, slow.simulation, {});
  json whatif = replayer::to_json(base.report);
  whatif["whatif"] = replayer::to_json(slow.report);
  const auto c = replayer::compare_reports(replayer::summarize_report(replayer::to_json(base.report), "base.json"),
                                           replayer::summarize_report(whatif, "slow.json"), 0.05, 10);
  CHECK(c.base.median_job_ns == base.report.iterations.at(0).job_measured_ns);
  CHECK(c.next.median_job_ns == slow.report.iterations.at(0).job_predicted_ns);
  CHECK(c.change > 0.05);
  CHECK(c.regression());
  const int comm = static_cast<int>(replayer::Category::kCommunication);
  for (int k = 0; k < replayer::kCategoryCount; ++k) CHECK(c.critical_path_change_ns[comm] >= c.critical_path_change_ns[k]);
  CHECK(c.critical_path_change_ns[comm] > 0);
}

TEST_CASE("A report holding a number beyond a double's range is an InputError naming the file, not an internal error") {
  // Found by tests/fuzz (fuzz_compare): nlohmann's parser throws out_of_range, not parse_error.
  const std::string text = R"({"iterations": [{"job": {"measured_ns": 1.6141488214841e982}}]})";
  try {
    replayer::parse_report_summary(text, "huge.json");
    FAIL("accepted");
  } catch (const InputError& e) {
    CHECK(e.file() == "huge.json");
    CHECK(std::string(e.what()).find("not valid JSON") != std::string::npos);
  }
}

TEST_CASE("compare says when two reports describe different recorded jobs") {
  json base = report({1000}, 100, 0);
  base["provenance"] = {{"inputs", {"a.json", "b.json"}}, {"gpus", {"Tesla V100-SXM2-32GB", "Tesla V100-SXM2-32GB"}}, {"world_size", 2}};
  json same = base;
  same["provenance"]["inputs"] = {"new/a.json", "new/b.json"};  // a new recording of the same job
  auto c = replayer::compare_reports(replayer::summarize_report(base, "base.json"), replayer::summarize_report(same, "new.json"), 0.03, 10);
  REQUIRE(c.same_job);
  CHECK(*c.same_job);
  json other = base;
  other["provenance"] = {{"inputs", {"a.json"}}, {"gpus", {"NVIDIA H100 80GB HBM3"}}, {"world_size", 1}};
  c = replayer::compare_reports(replayer::summarize_report(base, "base.json"), replayer::summarize_report(other, "new.json"), 0.03, 10);
  REQUIRE(c.same_job);
  CHECK_FALSE(*c.same_job);
  CHECK(c.job_differences.size() == 3);
  CHECK_THAT(replayer::render_text(c), Catch::Contains("different recorded jobs") && Catch::Contains("ranks: 2 -> 1") &&
                                           Catch::Contains("NVIDIA H100 80GB HBM3"));
  CHECK(replayer::to_json(c).at("same_job") == false);
  // A report of an older version says nothing: unknown, not "same".
  c = replayer::compare_reports(replayer::summarize_report(report({1000}, 100, 0), "old.json"),
                                replayer::summarize_report(other, "new.json"), 0.03, 10);
  CHECK_FALSE(c.same_job);
  CHECK(replayer::to_json(c).at("same_job").is_null());
  json bad = base;
  bad["provenance"]["gpus"] = "V100";
  CHECK_THAT(summary_error(bad), Catch::Contains("provenance.gpus: not an array"));
}

namespace {

// `report` with each iteration's ranks 0 and 1 (rank 0 at the job's time, rank 1 at `rank1` of it)
// and a summary marking `warmup` (iteration names) as warm-up steps.
json report_with_ranks(const std::vector<Nanos>& jobs, double rank1, const std::vector<std::string>& warmup = {}) {
  json j = report(jobs, 100, 0);
  for (std::size_t i = 0; i < jobs.size(); ++i)
    j["iterations"][i]["ranks"] = json::array(
        {{{"rank", 0}, {"measured_ns", jobs[i]}, {"predicted_ns", jobs[i]}},
         {{"rank", 1}, {"measured_ns", static_cast<Nanos>(rank1 * static_cast<double>(jobs[i]))}, {"predicted_ns", jobs[i]}}});
  j["summary"] = {{"warmup", warmup}, {"outliers", json::array()}};
  return j;
}

}  // namespace

TEST_CASE("compare noise: 1.4826 x the median absolute deviation of the steady steps") {
  CHECK(replayer::noise_of({1000, 1100, 900, 1050, 950}) == 74);  // MAD 50
  CHECK(replayer::noise_of({1000}) == 0);
  CHECK(replayer::noise_of({}) == 0);
  // A warm-up step the report's summary names is left out of the noise, not of the median.
  const auto with = replayer::summarize_report(report_with_ranks({9000, 1000, 1100, 900, 1050, 950}, 1.0, {"ProfilerStep#0"}), "w.json");
  CHECK(with.job_noise_ns == 74);
  const auto without = replayer::summarize_report(report_with_ranks({9000, 1000, 1100, 900, 1050, 950}, 1.0), "n.json");
  CHECK(without.job_noise_ns > 74);
  REQUIRE(with.ranks.size() == 2);
  CHECK(with.ranks[1].rank == 1);
  CHECK(with.ranks[1].median_ns == 1025);
}

TEST_CASE("compare: a slowdown within the steps' noise passes; the same slowdown of a quiet job fails") {
  using Outcome = replayer::StepCheck::Outcome;
  const auto noisy = replayer::summarize_report(report_with_ranks({1000, 1100, 900, 1050, 950}, 1.0), "noisy.json");
  const auto noisy_later = replayer::summarize_report(report_with_ranks({1040, 1140, 940, 1090, 990}, 1.0), "later.json");
  const auto c = replayer::compare_reports(noisy, noisy_later, 0.03, 10);
  CHECK(c.change == Approx(0.04));
  CHECK(c.checks.front().name == "job");
  CHECK(c.checks.front().noise_ns == 74);
  CHECK(c.checks.front().outcome == Outcome::kWithinNoise);
  CHECK_FALSE(c.failed());
  CHECK_THAT(replayer::render_text(c), Catch::Contains("within the noise"));
  const auto quiet = replayer::summarize_report(report_with_ranks({1000, 1000, 1000}, 1.0), "quiet.json");
  const auto quiet_later = replayer::summarize_report(report_with_ranks({1040, 1040, 1040}, 1.0), "ql.json");
  const auto q = replayer::compare_reports(quiet, quiet_later, 0.03, 10);
  CHECK(q.checks.front().outcome == Outcome::kRegression);
  CHECK(q.failed());
  CHECK(replayer::compare_reports(quiet, quiet_later, 0.05, 10).checks.front().outcome == Outcome::kSlower);
  CHECK(replayer::compare_reports(quiet_later, quiet, 0.0, 10).checks.front().outcome == Outcome::kFaster);
}

TEST_CASE("compare checks each rank's step: a rank that slowed fails, unless the job alone decides") {
  const auto base = replayer::summarize_report(report_with_ranks({1000, 1000, 1000}, 1.0), "b.json");
  const auto rank1_slower = replayer::summarize_report(report_with_ranks({1000, 1000, 1000}, 1.2), "n.json");
  const auto c = replayer::compare_reports(base, rank1_slower, 0.03, 10);
  REQUIRE(c.checks.size() == 3);  // job, rank 0, rank 1
  CHECK(c.checks[0].outcome == replayer::StepCheck::Outcome::kWithinNoise);
  CHECK(c.checks[2].name == "rank 1");
  CHECK(c.checks[2].failed());
  CHECK_FALSE(c.regression());
  CHECK(c.failed());
  const auto job_only = replayer::compare_reports(base, rank1_slower, 0.03, 10, false);
  CHECK(job_only.checks[2].outcome == replayer::StepCheck::Outcome::kSlower);
  CHECK_FALSE(job_only.failed());
  CHECK(replayer::to_json(c).at("checks").at(2).at("outcome") == "regression");
}
