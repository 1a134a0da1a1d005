// `dpro-replay optimize` and `replay --plan` as a user runs them: the plan file, its replay,
// determinism, and one clear line with exit code 2 for each kind of bad input.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>

#include "cli/cli_run.h"
#include "core/byte_source.h"
#include "core/time.h"
#include "trace_fixtures.h"

using namespace dpro;
using dpro::test::Run;
using dpro::test::run;

namespace {

// Rank 0 of a 2-rank A100 DDP job (all-reduces), on a slow network so that buckets matter.
std::string a100() { return test::source_path("traces/hta/a100-ws2-rank0-nccl.json.gz"); }
const char* kSlow = " --set network.inter_node_gbps=0.5 --set network.intra_node_gbps=0.5";

nlohmann::json read_json(const std::string& path) { return nlohmann::json::parse(read_whole_file(path)); }

}  // namespace

TEST_CASE("optimize writes a plan that replay --plan reproduces to the nanosecond") {
  const std::string dir = test::fresh_dir("optimize_plan");
  const Run o = run("optimize " + a100() + kSlow + " --strategies buckets --budget 20 --plan-out " + dir +
                    "/plan.json --json " + dir + "/result.json");
  REQUIRE(o.code == 0);
  CHECK_THAT(o.out, Catch::Contains("Pareto set") && Catch::Contains("chosen plan") && Catch::Contains("baseline"));
  const nlohmann::json plan = read_json(dir + "/plan.json");
  CHECK(plan.at("format") == "dpro-plan");
  const auto step = plan.at("predicted").at("step_ns").get<Nanos>();
  CHECK(step <= plan.at("predicted").at("baseline_ns").get<Nanos>());
  const nlohmann::json result = read_json(dir + "/result.json");
  CHECK(result.at("pareto").size() >= 1);
  CHECK(result.at("plan") == plan);

  const Run r = run("replay " + a100() + " --plan " + dir + "/plan.json");
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("predicted median step " + format_duration(step) + " (the plan file says " +
                                    format_duration(step)));
}

TEST_CASE("optimize plans compression per bucket on a slow network, and replay --plan reproduces it to the nanosecond") {
  const std::string dir = test::fresh_dir("optimize_per_bucket");
  const Run o = run("optimize " + a100() + kSlow + " --strategies compression --budget 20 --plan-out " + dir +
                    "/plan.json --json " + dir + "/result.json");
  REQUIRE(o.code == 0);
  CHECK_THAT(o.out, Catch::Contains("compression planner (") && Catch::Contains("replayed"));
  const nlohmann::json plan = read_json(dir + "/plan.json");
  REQUIRE(plan.at("decisions").size() == 1);
  const std::string value = plan.at("decisions")[0].at("value");
  CHECK(value.find(',') != std::string::npos);  // a method per bucket
  const nlohmann::json planner = read_json(dir + "/result.json").at("compression_planner");
  CHECK(planner.at("value") == value);
  CHECK(planner.at("replayed_step_ns") == plan.at("predicted").at("step_ns"));
  const auto step = plan.at("predicted").at("step_ns").get<Nanos>();
  CHECK(step < plan.at("predicted").at("baseline_ns").get<Nanos>());
  const Run r = run("replay " + a100() + " --plan " + dir + "/plan.json");
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("predicted median step " + format_duration(step) + " (the plan file says " +
                                    format_duration(step)));
}

TEST_CASE("optimize --memory-budget: a budget below the job's own memory is one line and exit 2, a plan fits the rest") {
  Run r = run("optimize " + a100() + kSlow + " --strategies compression --memory-budget 0.2");
  CHECK(r.code == 2);
  CHECK_THAT(r.out, Catch::Contains("--memory-budget 0.2: below the job's own memory per rank, at least 0.381 GiB"));
  CHECK(std::count(r.out.begin(), r.out.end(), '\n') <= 2);  // the one line, after the trace's own warning
  r = run("optimize " + test::source_path("traces/hta/simple-add-kineto.json.gz") + " --memory-budget 80");
  CHECK(r.code == 2);
  CHECK_THAT(r.out, Catch::Contains("--memory-budget 80: cannot tell the job's own memory per rank"));
  // 0.42 GiB leaves 0.039 GiB beyond the job's 0.381: less than the per-bucket plan's residuals (0.06 GiB).
  const std::string dir = test::fresh_dir("optimize_memory_budget");
  for (const char* budget : {"0.42", "1"}) {
    r = run("optimize -q " + a100() + kSlow + " --strategies compression --budget 20 --memory-budget " + budget +
            " --json " + dir + "/" + budget + ".json");
    REQUIRE(r.code == 0);
  }
  const nlohmann::json tight = read_json(dir + "/0.42.json"), loose = read_json(dir + "/1.json");
  CHECK(tight.at("memory").at("job_bytes_per_rank").get<std::int64_t>() > 0);
  const auto room = tight.at("memory").at("budget_bytes_per_rank").get<std::int64_t>() -
                    tight.at("memory").at("job_bytes_per_rank").get<std::int64_t>();
  CHECK(tight.at("plan").at("predicted").at("extra_memory_bytes").get<std::int64_t>() <= room);
  CHECK(loose.at("plan").at("predicted").at("extra_memory_bytes").get<std::int64_t>() > room);
  CHECK(tight.at("plan").at("predicted").at("step_ns").get<Nanos>() >= loose.at("plan").at("predicted").at("step_ns").get<Nanos>());
}

TEST_CASE("optimize credits precision plans for activation memory where shapes are recorded, and says on what basis") {
  const std::string dir = test::fresh_dir("optimize_precision_memory");
  // The H100 ResNet-50 with one step under emit_nvtx records shapes; its capture without emit_nvtx does not.
  Run r = run("optimize " + test::source_path("traces/h100/resnet50-emit-nvtx-step") +
              " --strategies precision --budget 10 --json " + dir + "/shapes.json");
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("memory of precision plans: precision plans credited against") &&
                        Catch::Contains("gemm bf16, conv bf16: -4.46 GiB"));
  const nlohmann::json shapes = read_json(dir + "/shapes.json");
  CHECK(shapes.at("precision_memory").at("activation_bytes_per_rank").get<std::int64_t>() > 0);
  std::map<std::string, std::int64_t> delta;  // "gemm bf16, conv bf16" -> bytes
  for (const nlohmann::json& p : shapes.at("precision_memory").at("plans")) {
    CHECK(p.at("searched") == true);
    delta[p.at("precision").get<std::string>()] = p.at("delta_bytes").get<std::int64_t>();
  }
  // Each Pareto plan's memory is its precision decisions' change to the activations.
  bool some_negative = false;
  for (const nlohmann::json& p : shapes.at("pareto")) {
    std::string what;
    for (const nlohmann::json& d : p.at("decisions"))
      what += (what.empty() ? "" : ", ") + d.at("subject").get<std::string>() + " " + d.at("value").get<std::string>();
    const auto bytes = p.at("extra_memory_bytes").get<std::int64_t>();
    CHECK(bytes == (what.empty() ? 0 : delta.at(what)));
    some_negative = some_negative || bytes < 0;
  }
  CHECK(some_negative);
  r = run("optimize " + test::source_path("traces/h100/resnet50") + " --strategies precision --budget 6 --json " + dir +
          "/no_shapes.json");
  REQUIRE(r.code == 0);
  const nlohmann::json none = read_json(dir + "/no_shapes.json");
  CHECK_THAT(none.at("precision_memory").at("basis").get<std::string>(), Catch::Contains("not credited"));
  for (const nlohmann::json& p : none.at("pareto")) CHECK(p.at("extra_memory_bytes") == 0);
  // DLRM (V100): shapes and all-reduces, no precision decision priced; the reference figures and a
  // budget below the job's own memory refused, as no searched plan frees any.
  r = run("optimize -q " + test::source_path("traces/dlrm-8xV100") + " --budget 2 --memory-budget 1 --json " + dir + "/dlrm.json");
  REQUIRE(r.code == 0);
  const nlohmann::json dlrm = read_json(dir + "/dlrm.json");
  CHECK(dlrm.at("precision_memory").at("plans").at(0).at("searched") == false);
  r = run("optimize -q " + test::source_path("traces/dlrm-8xV100") + " --budget 2 --memory-budget 0.009");
  CHECK(r.code == 2);
  CHECK_THAT(r.out, Catch::Contains("below the job's own memory per rank"));
}

TEST_CASE("optimize gives a byte-identical plan file for the same traces, flags and seed") {
  const std::string dir = test::fresh_dir("optimize_determinism");
  for (const char* name : {"a", "b"}) {
    const Run o = run("optimize -q " + a100() + kSlow + " --strategies buckets --budget 12 --seed 5 --threads " +
                      (name[0] == 'a' ? "1" : "2") + " --plan-out " + dir + "/" + name + ".json");
    REQUIRE(o.code == 0);
    CHECK(o.out.empty());  // -q: nothing but errors
  }
  CHECK(read_whole_file(dir + "/a.json") == read_whole_file(dir + "/b.json"));
}

TEST_CASE("optimize and replay --plan refuse bad input with one line and exit code 2") {
  const std::string dir = test::fresh_dir("optimize_bad");
  Run r = run("optimize " + a100() + " --strategies pruning");
  CHECK(r.code == 2);
  CHECK_THAT(r.out, Catch::Contains("--strategies pruning: unknown strategy"));
  // The flags a search decides are not its conditions, nor in its help.
  for (const char* flag : {"--bucket-mb 25", "--compress fp16", "--precision-dtype bf16"}) {
    r = run("optimize " + a100() + " " + flag);
    CHECK(r.code == 2);
    CHECK_THAT(r.out, Catch::Contains(std::string(flag).substr(0, std::string(flag).find(' ')) + ": is what the"));
  }
  r = run("optimize --help");
  CHECK(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("--memory-headroom") && !Catch::Contains("--bucket-mb") && !Catch::Contains("--compress"));
  r = run("optimize " + test::source_path("traces/hta/simple-add-kineto.json.gz") + " --strategies buckets");
  CHECK(r.code == 2);
  CHECK_THAT(r.out, Catch::Contains("nothing to search") && Catch::Contains("no all-reduce"));

  // A plan made for one job, replayed on another.
  REQUIRE(run("optimize -q " + a100() + " --strategies buckets --budget 3 --plan-out " + dir + "/plan.json").code == 0);
  r = run("replay " + test::dlrm_dir() + " --plan " + dir + "/plan.json");
  CHECK(r.code == 2);
  CHECK_THAT(r.out, Catch::Contains("plan.json: trace: the plan was made for another job"));
  r = run("replay " + a100() + " --plan " + dir + "/plan.json --ranks 4");
  CHECK(r.code == 2);
  CHECK_THAT(r.out, Catch::Contains("--plan: a plan carries its own what-if conditions"));
  test::write_text(dir + "/bad.json", R"({"format": "dpro-plan", "version": 1, "trace": {"fingerprint": "0000000000000000", "ranks": 1, "ops": 1}, "conditions": {}, "decisions": [{"strategy": "compression", "value": "zip"}]})");
  r = run("replay " + a100() + " --plan " + dir + "/bad.json");
  CHECK(r.code == 2);
  CHECK_THAT(r.out, Catch::Contains("bad.json: trace: the plan was made for another job"));
  nlohmann::json bad_value = read_json(dir + "/plan.json");
  bad_value["decisions"] = {{{"strategy", "buckets"}, {"value", "huge"}}};
  test::write_text(dir + "/bad_value.json", bad_value.dump());
  r = run("replay " + a100() + " --plan " + dir + "/bad_value.json");
  CHECK(r.code == 2);
  CHECK_THAT(r.out, Catch::Contains("bad_value.json: decisions: buckets huge: not a bucket size"));
  bad_value["decisions"] = {{{"strategy", "compression"}, {"value", "zip"}}};
  test::write_text(dir + "/bad_method.json", bad_value.dump());
  r = run("replay " + a100() + " --plan " + dir + "/bad_method.json");
  CHECK(r.code == 2);
  CHECK_THAT(r.out, Catch::Contains("bad_method.json: decisions: compress zip"));
  r = run("optimize " + a100() + " --memory-headroom -1");
  CHECK(r.code == 2);
  CHECK_THAT(r.out, Catch::Contains("--memory-headroom"));
  test::write_text(dir + "/notjson.json", "{");
  r = run("replay " + a100() + " --plan " + dir + "/notjson.json");
  CHECK(r.code == 2);
  CHECK_THAT(r.out, Catch::Contains("notjson.json: not valid JSON"));
}

TEST_CASE("replay --precision-dtype after --device prices the lowering on the target GPU") {
  const Run r = run("replay " + test::source_path("traces/h100/resnet50") +
                    " --device H200 --precision-dtype bf16 --iteration 20");
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("precision bf16 on H200-SXM-141GB") && Catch::Contains("kernels lowered"));
}

TEST_CASE("optimize --strategies partition: a byte-identical plan for a seed, replay --plan to the nanosecond, a bad boundary refused") {
  const std::string dir = test::fresh_dir("optimize_partition");
  for (const char* name : {"a", "b"}) {
    const Run o = run("optimize -q " + a100() + kSlow + " --strategies partition --budget 24 --seed 3 --plan-out " + dir +
                      "/" + name + ".json");
    REQUIRE(o.code == 0);
  }
  CHECK(read_whole_file(dir + "/a.json") == read_whole_file(dir + "/b.json"));
  const nlohmann::json plan = read_json(dir + "/a.json");
  const auto step = plan.at("predicted").at("step_ns").get<Nanos>();
  CHECK(step < plan.at("predicted").at("baseline_ns").get<Nanos>());
  Run r = run("replay " + a100() + " --plan " + dir + "/a.json");
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("predicted median step " + format_duration(step) + " (the plan file says " +
                                    format_duration(step)));

  // A partition of its own: one bucket per step, then a boundary past the step's 5 all-reduces.
  nlohmann::json own = plan;
  own["decisions"] = {{{"strategy", "partition"}, {"value", ""}, {"boundaries", nlohmann::json::array()}}};
  test::write_text(dir + "/one_bucket.json", own.dump());
  r = run("replay " + a100() + " --plan " + dir + "/one_bucket.json");
  CHECK(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("partition: one gradient bucket per step"));
  own["decisions"][0]["boundaries"] = {2, 7};
  test::write_text(dir + "/out_of_range.json", own.dump());
  r = run("replay " + a100() + " --plan " + dir + "/out_of_range.json");
  CHECK(r.code == 2);
  CHECK_THAT(r.out, Catch::Contains("out_of_range.json: decisions: partition 7: boundary out of range: a step has at most 5 "
                                    "all-reduces, so a boundary is a position from 1 to 4"));
  CHECK(std::count(r.out.begin(), r.out.end(), '\n') <= 2);  // the one line, after the trace's own warning
}

TEST_CASE("replay --plan refuses a precision decision for an unknown op class with one line and exit code 2") {
  const std::string dir = test::fresh_dir("optimize_precision_class");
  REQUIRE(run("optimize -q " + a100() + " --strategies buckets --budget 2 --plan-out " + dir + "/plan.json").code == 0);
  nlohmann::json plan = read_json(dir + "/plan.json");
  plan["decisions"] = {{{"strategy", "precision"}, {"subject", "softmax"}, {"value", "bf16"}}};
  test::write_text(dir + "/bad_class.json", plan.dump());
  const Run r = run("replay " + a100() + " --plan " + dir + "/bad_class.json");
  CHECK(r.code == 2);
  CHECK_THAT(r.out, Catch::Contains("bad_class.json: decisions: precision softmax: unknown op class (gemm, conv, or all for both)"));
}

TEST_CASE("optimize --tolerances: forbidden precision stays out of the plan and the Pareto set on the H100 ResNet-50") {
  const std::string dir = test::fresh_dir("optimize_tolerances_precision");
  // Without rules this job's GEMMs go to fp8 (docs/optimizer.md); a rule allows tf32 and bf16 only,
  // and convolutions nothing riskier than tf32.
  test::write_text(dir + "/tol.json", R"({"rules": [{"match": "gemm", "precision": ["tf32", "bf16"]},
                                                     {"match": "conv", "max_risk": 0.01}]})");
  const Run o = run("optimize " + test::source_path("traces/h100/resnet50") +
                    " --strategies precision --budget 10 --tolerances " + dir + "/tol.json --plan-out " + dir +
                    "/plan.json --json " + dir + "/result.json");
  REQUIRE(o.code == 0);
  CHECK_THAT(o.out, Catch::Contains("tolerances " + dir + "/tol.json: 2 rule(s)"));
  const nlohmann::json result = read_json(dir + "/result.json");
  std::size_t precision_decisions = 0;
  for (const nlohmann::json& p : result.at("pareto"))
    for (const nlohmann::json& d : p.at("decisions")) {
      ++precision_decisions;
      if (d.at("subject") == "gemm") CHECK((d.at("value") == "tf32" || d.at("value") == "bf16"));
      if (d.at("subject") == "conv") CHECK(d.at("value") == "tf32");
    }
  CHECK(precision_decisions > 0);  // the rules leave something to decide
  const nlohmann::json plan = read_json(dir + "/plan.json");
  for (const nlohmann::json& d : plan.at("decisions")) CHECK(d.at("value") != "fp8");
  CHECK(plan.at("tolerances").at("rules").size() == 2);
  CHECK(plan.at("tolerances").at("fingerprint").get<std::string>().size() == 16);
  const auto step = plan.at("predicted").at("step_ns").get<Nanos>();
  const Run r = run("replay " + test::source_path("traces/h100/resnet50") + " --plan " + dir + "/plan.json");
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("(the plan file says " + format_duration(step)));
  // Under --max-risk 0.1 the job's GEMMs go to bf16; a rule without bf16 for GEMMs moves them off it.
  test::write_text(dir + "/nobf16.json", R"({"rules": [{"match": "gemm", "precision": ["tf32", "fp16", "fp8"]}]})");
  for (const bool rules : {false, true}) {
    const std::string out = dir + (rules ? "/ruled.json" : "/free.json");
    REQUIRE(run("optimize -q " + test::source_path("traces/h100/resnet50") + " --strategies precision --budget 30 --max-risk 0.1" +
                (rules ? " --tolerances " + dir + "/nobf16.json" : std::string()) + " --plan-out " + out)
                .code == 0);
    std::string gemm;
    const nlohmann::json chosen = read_json(out);
    for (const nlohmann::json& d : chosen.at("decisions"))
      if (d.at("subject") == "gemm") gemm = d.at("value").get<std::string>();
    if (rules) CHECK((gemm != "bf16" && !gemm.empty()));
    else CHECK(gemm == "bf16");
  }
}

TEST_CASE("optimize --tolerances: compression forbidden on a slow network keeps every bucket uncompressed") {
  const std::string dir = test::fresh_dir("optimize_tolerances_compression");
  test::write_text(dir + "/none.json", R"({"rules": [{"match": "*", "compression": ["none"]}, {"match": "bucket:9", "compression": ["fp16"]}]})");
  const Run o = run("optimize " + a100() + kSlow + " --strategies buckets,compression --budget 12 --tolerances " + dir +
                    "/none.json --json " + dir + "/result.json");
  REQUIRE(o.code == 0);
  // The job runs 5 buckets a step: bucket 9 matches nothing, which is a warning, not an error.
  CHECK_THAT(o.out, Catch::Contains("none.json: rules[1] (\"bucket:9\") matches no decision of this search"));
  CHECK_THAT(o.out, Catch::Contains("compression left out: every decision forbidden by the tolerances"));
  const nlohmann::json result = read_json(dir + "/result.json");
  for (const nlohmann::json& p : result.at("pareto"))
    for (const nlohmann::json& d : p.at("decisions")) CHECK(d.at("strategy") != "compression");
  CHECK(result.at("plan").at("tolerances").at("rules")[0].at("compression") == nlohmann::json::array({"none"}));
  // Compression alone, all of it forbidden: nothing to search, one line, exit 2.
  const Run all = run("optimize " + a100() + kSlow + " --strategies compression --tolerances " + dir + "/none.json");
  CHECK(all.code == 2);
  CHECK_THAT(all.out, Catch::Contains("the rules forbid every decision"));
}

TEST_CASE("optimize --tolerances refuses a bad file with one line naming the file and the item, exit code 2") {
  const std::string dir = test::fresh_dir("optimize_tolerances_bad");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{", "notjson.json: not valid JSON"},
      {R"({"rules": [{"match": "gemm", "dtype": ["bf16"]}]})", "unknown.json: rules[0].dtype: unknown key"},
      {R"({"rules": [{"match": "gemm", "precision": 1e999}]})", "overflow.json: not valid JSON"},
      {R"({"rules": [{"match": "gemm", "precision": ["bf8"]}]})", "dtype.json: rules[0].precision: unknown dtype \"bf8\""},
      {R"({"rules": [{"match": "bucket:0", "compression": ["zip"]}]})", "method.json: rules[0].compression: unknown method \"zip\""},
  };
  const char* names[] = {"notjson.json", "unknown.json", "overflow.json", "dtype.json", "method.json"};
  for (std::size_t i = 0; i < cases.size(); ++i) {
    test::write_text(dir + "/" + names[i], cases[i].first);
    const Run r = run("optimize " + a100() + " --strategies compression --tolerances " + dir + "/" + names[i]);
    CHECK(r.code == 2);
    CHECK_THAT(r.out, Catch::Contains(cases[i].second));
    CHECK(std::count(r.out.begin(), r.out.end(), '\n') <= 2);  // the one line, after the trace's own warning
  }
  const Run missing = run("optimize " + a100() + " --tolerances " + dir + "/absent.json");
  CHECK(missing.code == 2);
  CHECK_THAT(missing.out, Catch::Contains("absent.json"));
}

TEST_CASE("replay --plan refuses a plan whose decisions break its own recorded tolerances, or whose rules were edited") {
  const std::string dir = test::fresh_dir("optimize_tolerances_replay");
  test::write_text(dir + "/tol.json", R"({"rules": [{"match": "bucket:0", "compression": ["none"]}]})");
  REQUIRE(run("optimize -q " + a100() + kSlow + " --strategies compression --budget 12 --tolerances " + dir +
              "/tol.json --plan-out " + dir + "/plan.json")
              .code == 0);
  nlohmann::json plan = read_json(dir + "/plan.json");
  REQUIRE(plan.at("decisions").size() == 1);
  CHECK(plan.at("decisions")[0].at("value").get<std::string>().substr(0, 5) == "none,");
  REQUIRE(run("replay " + a100() + " --plan " + dir + "/plan.json").code == 0);
  // One method for every bucket compresses bucket 0, which the recorded rule forbids.
  nlohmann::json broken = plan;
  broken["decisions"][0]["value"] = "powersgd:4";
  test::write_text(dir + "/broken.json", broken.dump());
  Run r = run("replay " + a100() + " --plan " + dir + "/broken.json");
  CHECK(r.code == 2);
  CHECK_THAT(r.out, Catch::Contains("broken.json: decisions: compression powersgd:4: forbidden by the plan's own tolerances"));
  // Rules edited without their fingerprint.
  nlohmann::json edited = plan;
  edited["tolerances"]["rules"][0]["compression"] = {"none", "powersgd"};
  test::write_text(dir + "/edited.json", edited.dump());
  r = run("replay " + a100() + " --plan " + dir + "/edited.json");
  CHECK(r.code == 2);
  CHECK_THAT(r.out, Catch::Contains("edited.json: tolerances.fingerprint"));
  CHECK(std::count(r.out.begin(), r.out.end(), '\n') <= 2);
}

TEST_CASE("optimize --tolerances on part of a class: the first convolution kept at tf32, a byte-identical plan, replay --plan exact") {
  const std::string dir = test::fresh_dir("optimize_layer_precision");
  const std::string resnet = test::source_path("traces/h100/resnet50");
  test::write_text(dir + "/keep.json", R"({"rules": [{"match": "conv@0,-1", "precision": ["tf32"]},
                                                      {"match": "gemm@-1", "precision": ["tf32"]}]})");
  for (const char* name : {"/a.json", "/b.json"})
    REQUIRE(run("optimize -q " + resnet + " --strategies precision --budget 16 --tolerances " + dir + "/keep.json --plan-out " +
                dir + name + (std::string(name) == "/a.json" ? " --json " + dir + "/result.json" : std::string()))
                .code == 0);
  CHECK(read_whole_file(dir + "/a.json") == read_whole_file(dir + "/b.json"));
  const nlohmann::json plan = read_json(dir + "/a.json");
  std::map<std::string, std::string> chosen;
  for (const nlohmann::json& d : plan.at("decisions")) chosen[d.at("subject")] = d.at("value");
  CHECK((chosen["conv@-1,0"].empty() || chosen["conv@-1,0"] == "tf32"));  // as recorded, or tf32
  CHECK(chosen["conv@^-1,0"] == "bf16");
  const nlohmann::json result = read_json(dir + "/result.json");  // kept: the loop reads into it
  for (const nlohmann::json& p : result.at("pareto"))
    for (const nlohmann::json& d : p.at("decisions"))
      if (d.at("subject") == "conv@-1,0") CHECK(d.at("value") == "tf32");
  const auto step = plan.at("predicted").at("step_ns").get<Nanos>();
  Run r = run("replay " + resnet + " --plan " + dir + "/a.json");
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains(format_duration(step) + " (the plan file says " + format_duration(step)));
  // A rule on part of a class the search does not decide stays a warning.
  test::write_text(dir + "/nothing.json", R"({"rules": [{"match": "conv@0", "precision": ["tf32"]}]})");
  r = run("optimize " + a100() + " --strategies buckets --budget 2 --tolerances " + dir + "/nothing.json");
  CHECK(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("nothing.json: rules[0] (\"conv@0\") matches no decision of this search"));
  // Bad input: a malformed part, and a plan whose parts overlap: one line, exit code 2.
  test::write_text(dir + "/bad.json", R"({"rules": [{"match": "conv@first", "precision": ["tf32"]}]})");
  r = run("optimize " + resnet + " --strategies precision --tolerances " + dir + "/bad.json");
  CHECK(r.code == 2);
  CHECK_THAT(r.out, Catch::Contains("bad.json: rules[0].match: \"conv@first\""));
  CHECK(std::count(r.out.begin(), r.out.end(), '\n') <= 3);  // the one line, after the trace's own two warnings
  nlohmann::json overlap = plan;
  overlap.erase("tolerances");
  overlap["decisions"] = {{{"strategy", "precision"}, {"subject", "conv@0,1"}, {"value", "tf32"}},
                          {{"strategy", "precision"}, {"subject", "conv@1"}, {"value", "bf16"}}};
  test::write_text(dir + "/overlap.json", overlap.dump());
  r = run("replay " + resnet + " --plan " + dir + "/overlap.json");
  CHECK(r.code == 2);
  CHECK_THAT(r.out, Catch::Contains("overlap.json: decisions: precision conv@0,1: overlaps conv@1"));
  CHECK(std::count(r.out.begin(), r.out.end(), '\n') <= 3);
}

TEST_CASE("optimize --tolerances on layers: the first and last convolution layers kept at tf32 with their backward ops, replay --plan exact") {
  const std::string dir = test::fresh_dir("optimize_layers");
  const std::string emit = test::source_path("traces/h100/resnet50-emit-nvtx-step");
  test::write_text(dir + "/keep.json", R"({"rules": [{"match": "conv#0,-1", "precision": ["tf32"]}]})");
  for (const char* name : {"/a.json", "/b.json"})
    REQUIRE(run("optimize -q " + emit + " --strategies precision --budget 16 --tolerances " + dir + "/keep.json --plan-out " + dir +
                name)
                .code == 0);
  CHECK(read_whole_file(dir + "/a.json") == read_whole_file(dir + "/b.json"));
  const nlohmann::json plan = read_json(dir + "/a.json");
  std::map<std::string, std::string> chosen;
  for (const nlohmann::json& d : plan.at("decisions")) chosen[d.at("subject")] = d.at("value");
  CHECK((chosen["conv#-1,0"].empty() || chosen["conv#-1,0"] == "tf32"));
  CHECK(chosen["conv#^-1,0"] == "bf16");
  const auto step = plan.at("predicted").at("step_ns").get<Nanos>();
  Run r = run("replay " + emit + " --plan " + dir + "/a.json");
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains(format_duration(step) + " (the plan file says " + format_duration(step)));
  // A capture without sequence numbers has no layers: the rule cannot be kept, one line and exit 2.
  r = run("optimize " + test::source_path("traces/h100/resnet50") + " --strategies precision --tolerances " + dir + "/keep.json");
  CHECK(r.code == 2);
  CHECK_THAT(r.out, Catch::Contains("keep.json: rules[0].match: \"conv#0,-1\" names layers, but") &&
                        Catch::Contains("name op positions instead (conv@0,-1)"));
  CHECK(std::count(r.out.begin(), r.out.end(), '\n') <= 3);
  // Positions and layers of one class in one rules file, or in one plan: refused.
  test::write_text(dir + "/mixed.json", R"({"rules": [{"match": "conv#0", "precision": ["tf32"]}, {"match": "conv@-1", "precision": ["tf32"]}]})");
  r = run("optimize " + emit + " --strategies precision --tolerances " + dir + "/mixed.json");
  CHECK(r.code == 2);
  CHECK_THAT(r.out, Catch::Contains("mixed.json: rules[1].match"));
  nlohmann::json mixed = plan;
  mixed.erase("tolerances");
  mixed["decisions"] = {{{"strategy", "precision"}, {"subject", "conv#0"}, {"value", "tf32"}},
                        {{"strategy", "precision"}, {"subject", "conv@^0"}, {"value", "bf16"}}};
  test::write_text(dir + "/mixed_plan.json", mixed.dump());
  r = run("replay " + emit + " --plan " + dir + "/mixed_plan.json");
  CHECK(r.code == 2);
  CHECK_THAT(r.out, Catch::Contains("mixed_plan.json: decisions: precision conv#0: names layers (#), conv@^0 op positions (@) of the same op class"));
}

TEST_CASE("optimize --strategies op_fusion on bert chooses a GEMM epilogue, and replay --plan reproduces the plan") {
  const std::string dir = test::fresh_dir("optimize_epilogue");
  const std::string bert = test::source_path("traces/h100/bert-ddp");
  const Run o = run("optimize " + bert + " --strategies op_fusion --budget 40 --plan-out " + dir + "/plan.json");
  REQUIRE(o.code == 0);
  CHECK_THAT(o.out, Catch::Contains("op_fusion: GEMM epilogue of 2 kernels (nvjet_sm90"));
  const nlohmann::json plan = read_json(dir + "/plan.json");
  // The decision names the GEMM kernel first, then the kernels its epilogue replaces.
  std::size_t epilogues = 0;
  for (const auto& d : plan.at("decisions")) {
    if (d.at("strategy") != "op_fusion") continue;
    const auto chain = d.at("chain").get<std::vector<std::string>>();
    if (chain.front().rfind("nvjet_sm90", 0) == 0) {
      ++epilogues;
      CHECK(chain.size() == 2);
      CHECK(chain.back().find("elementwise_kernel") != std::string::npos);
    }
  }
  CHECK(epilogues >= 1);
  const auto step = plan.at("predicted").at("step_ns").get<Nanos>();
  CHECK(step < plan.at("predicted").at("baseline_ns").get<Nanos>());
  const Run r = run("replay " + bert + " --plan " + dir + "/plan.json");
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("predicted median step " + format_duration(step) + " (the plan file says " +
                                    format_duration(step)));
}

TEST_CASE("optimize --device-profile of another GPU: refused before any strategy is built, with the rule's line") {
  // Before the rule was shared the precision strategy was left out with a warning over it and the
  // search went on (exit 0) when another strategy could be searched.
  const std::string dir = test::fresh_dir("optimize_profile_other_gpu");
  const std::string profile = dir + "/a100.json";
  test::write_text(profile, R"({"format": "dpro-device-profile", "version": 1, "device": "NVIDIA A100-SXM4-80GB",
    "date": "2026-11-27T00:00:00Z", "repetitions": 1, "warmup": 0,
    "launch": {"gpu_ns_per_launch": 2000, "host_ns_per_launch": 2500, "launches": 200},
    "copies": [], "gemms": [], "standin": [], "kernels": []})");
  const std::string dlrm = test::source_path("traces/dlrm-8xV100");
  const Run o = run("optimize -q " + dlrm + " --strategies precision,buckets --budget 4 --threads 1 --device-profile " + profile);
  CHECK(o.code == 2);
  CHECK(std::count(o.out.begin(), o.out.end(), '\n') == 1);
  CHECK_THAT(o.out, Catch::Contains(profile + ": device: profiled on A100-SXM4-80GB, but the work is priced on "
                                              "V100-SXM2-32GB (the trace's GPU): calibrate that GPU, or leave out "
                                              "--device-profile"));
  // Named with --device, the A100 is the GPU priced: the profile applies.
  const Run named = run("optimize -q " + dlrm + " --strategies buckets --budget 4 --threads 1 --device A100-SXM4-80GB "
                        "--device-profile " + profile);
  CHECK(named.code == 0);
}

TEST_CASE("optimize and replay --plan with --device-profile: op fusion priced by the profile's bandwidth and launch, the plan reproduced") {
  const std::string dir = test::fresh_dir("optimize_fusion_profile");
  // A profile of the trace's H100: 6 bytes / 0.002 ns = 3000 B/ns elementwise, a 2 us empty kernel.
  const std::string profile = dir + "/h100.json";
  test::write_text(profile, R"({"format": "dpro-device-profile", "version": 1, "device": "H100-SXM5-80GB",
    "date": "2026-11-27T00:00:00Z", "repetitions": 1, "warmup": 0,
    "launch": {"gpu_ns_per_launch": 2000, "host_ns_per_launch": 2500, "launches": 200},
    "copies": [], "gemms": [], "standin": [],
    "kernels": [{"kernel": "cast_fp32_bf16", "param": 0, "latency_ns": 2000, "ns_per_element": 0.002, "samples": []}]})");
  const std::string gpt2 = test::source_path("traces/h100/gpt2-emit-nvtx-step");
  const Run o = run("optimize " + gpt2 + " --strategies op_fusion --budget 40 --device-profile " + profile +
                    " --plan-out " + dir + "/plan.json");
  REQUIRE(o.code == 0);
  const nlohmann::json plan = read_json(dir + "/plan.json");
  const auto step = plan.at("predicted").at("step_ns").get<Nanos>();
  const Run r = run("replay " + gpt2 + " --plan " + dir + "/plan.json --device-profile " + profile);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("predicted median step " + format_duration(step) + " (the plan file says " +
                                    format_duration(step)));
  CHECK_THAT(r.out, Catch::Contains("From the device profile: elementwise bandwidth (cast_fp32_bf16), launch."));
  const auto fusion = [&](const std::string& flags) {
    const Run j = run("replay " + gpt2 + " --plan " + dir + "/plan.json --json -" + flags);
    REQUIRE(j.code == 0);
    return nlohmann::json::parse(j.out.substr(j.out.find('{'))).at("whatif").at("changes").at("op_fusion");
  };
  const nlohmann::json with = fusion(" --device-profile " + profile), without = fusion("");
  CHECK(with.at("from_profile") == nlohmann::json::array({"elementwise bandwidth (cast_fp32_bf16)", "launch"}));
  CHECK_FALSE(without.contains("from_profile"));
  CHECK(with.at("instances") == without.at("instances"));
  CHECK(with.at("gpu_after_ns") != without.at("gpu_after_ns"));
}
