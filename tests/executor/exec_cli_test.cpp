// dpro-exec as a user runs it: exit codes, one-line errors, the schedule's text and JSON, a plan.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <iterator>

#include "../cli/cli_run.h"
#include "executor/device_profile.h"
#include "trace_fixtures.h"

using dpro::test::run_command;
using namespace dpro;

namespace {

dpro::test::Run exec(const std::string& args) { return run_command(std::string(DPRO_EXEC_BIN) + " " + args + " 2>&1"); }
dpro::test::Run exec_stdout(const std::string& args) {
  return run_command(std::string(DPRO_EXEC_BIN) + " " + args + " 2>/dev/null");
}

std::size_t lines(const std::string& text) { return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')); }

}  // namespace

TEST_CASE("dpro-exec: schedule prints the launches per op class, streams, threads and the arena, and its JSON twin") {
  const auto text = exec("schedule -q traces/dlrm-8xV100 --rank 3");
  REQUIRE(text.code == 0);
  CHECK(text.out.find("op class") != std::string::npos);
  CHECK(text.out.find("collective") != std::string::npos);
  CHECK(text.out.find("live-tensor peak") != std::string::npos);
  const auto json = exec_stdout("schedule -q traces/dlrm-8xV100 --rank 3 --json");
  REQUIRE(json.code == 0);
  const nlohmann::json j = nlohmann::json::parse(json.out);
  CHECK(j["rank"] == 3);
  CHECK(j["streams"].size() == 4);
  CHECK(j["by_class"]["collective"]["real"].get<int>() > 0);
  CHECK(j["memory"]["arena_over_live_peak"].get<double>() <= 1.2);
}

TEST_CASE("dpro-exec: bad input is one line naming the offending item, exit 2") {
  const auto missing = exec("schedule traces/no-such-dir");
  CHECK(missing.code == 2);
  CHECK(lines(missing.out) == 1);
  const auto rank = exec("schedule -q traces/h100/gpt2 --rank 4");
  CHECK(rank.code == 2);
  CHECK(rank.out.find("--rank 4") != std::string::npos);
  const auto iteration = exec("schedule -q traces/h100/gpt2 --iteration 999");
  CHECK(iteration.code == 2);
  CHECK(iteration.out.find("--iteration 999") != std::string::npos);
  const std::string dir = dpro::test::fresh_dir("exec_cli");
  dpro::test::write_text(dir + "/plan.json", "{\"format\": \"dpro-plan\", \"version\": 7}");
  const auto plan = exec("schedule -q traces/h100/gpt2 --plan " + dir + "/plan.json");
  CHECK(plan.code == 2);
  CHECK(plan.out.find("plan.json") != std::string::npos);
  CHECK(lines(plan.out) == 1);
}

TEST_CASE("dpro-exec: run and validate need the CUDA executor or --fake, and calibrate its --out") {
  const auto r = exec("run -q traces/h100/gpt2-emit-nvtx-step --iterations 2");
#if !DPRO_EXECUTOR_CUDA
  CHECK(r.code == 2);
  CHECK(lines(r.out) == 1);
  CHECK(r.out.find("no CUDA executor") != std::string::npos);
#endif
  const auto fake = exec_stdout("run -q --fake traces/h100/gpt2-emit-nvtx-step --iterations 2 --json");
  REQUIRE(fake.code == 0);
  const nlohmann::json j = nlohmann::json::parse(fake.out);
  CHECK(j["device"] == "fake");
  CHECK(j["iteration_ns"].size() == 2);
  CHECK(exec("validate traces/h100/gpt2").code == 2);
  CHECK(exec("calibrate").code == 2);
}

TEST_CASE("dpro-exec: a plan from dpro-replay optimize is applied before the schedule") {
  const std::string dir = dpro::test::fresh_dir("exec_cli_plan");
  const std::string plan = dir + "/plan.json";
  const auto o = run_command(std::string(DPRO_REPLAY_BIN) + " optimize -q traces/h100/gpt2-emit-nvtx-step --strategies op_fusion " +
                             "--budget 3 --plan-out " + plan + " > /dev/null 2>&1");
  REQUIRE(o.code == 0);
  const auto before = exec_stdout("schedule -q traces/h100/gpt2-emit-nvtx-step --iteration 12 --json");
  const auto after = exec_stdout("schedule -q traces/h100/gpt2-emit-nvtx-step --iteration 12 --json --plan " + plan);
  REQUIRE(before.code == 0);
  REQUIRE(after.code == 0);
  const nlohmann::json a = nlohmann::json::parse(after.out), b = nlohmann::json::parse(before.out);
  REQUIRE(a["notes"].size() >= 1);
  if (a["notes"].size() > 1) {  // the plan fused something: fewer launches, some of them fused chains
    CHECK(a["launches"].get<int>() < b["launches"].get<int>());
    CHECK(a["by_class"].contains("fused"));
  }
  // The ops that keep fused chains stand-ins: named, each with a positive count.
  REQUIRE(a["standin_blocking_ops"].is_array());
  for (const auto& entry : a["standin_blocking_ops"]) {
    CHECK_FALSE(entry["op"].get<std::string>().empty());
    CHECK(entry["launches"].get<int>() > 0);
  }
  CHECK(b["standin_blocking_ops"].empty());  // no plan, no fused chains
  // A plan made for another job is refused.
  const auto other = exec("schedule -q traces/h100/resnet50 --plan " + plan);
  CHECK(other.code == 2);
}

TEST_CASE("dpro-exec: calibrate writes a device profile that reads back; on the fake device here") {
  const std::string dir = test::fresh_dir("exec_calibrate");
  const auto r = exec("calibrate --fake --quick -q --out " + dir + "/fake.json");
  REQUIRE(r.code == 0);
  CHECK(r.out.empty());
  const executor::DeviceProfile p = executor::read_device_profile(dir + "/fake.json");
  CHECK(p.device == "fake");
  CHECK(p.repetitions == 3);
  CHECK(p.copies.size() == 3);  // h2d, d2h, d2d
  CHECK_FALSE(p.gemms.empty());
  CHECK_FALSE(p.standin.empty());
  // Never over an existing file without --force; bad options are one line, exit 2.
  auto again = exec("calibrate --fake --quick -q --out " + dir + "/fake.json");
  CHECK(again.code == 2);
  CHECK(lines(again.out) == 1);
  CHECK(exec("calibrate --fake --quick -q --force --out " + dir + "/fake.json").code == 0);
  CHECK(exec("calibrate --fake --repetitions 0 --out " + dir + "/x.json").code == 2);
}

TEST_CASE("dpro-exec: validate --fake prints measured vs predicted for the step, every class and every stream") {
  const auto text = exec("validate -q --fake traces/h100/gpt2-emit-nvtx-step --iterations 2");
  REQUIRE(text.code == 0);
  for (const char* row : {"step (median)", "iteration 2", "gemm", "elementwise/fused", "cast", "compress", "copy",
                          "collective stand-in", "other stand-in"})
    CHECK(text.out.find(row) != std::string::npos);
  const auto json = exec_stdout("validate -q --fake traces/h100/gpt2-emit-nvtx-step --iterations 2 --json -");
  REQUIRE(json.code == 0);
  const nlohmann::json j = nlohmann::json::parse(json.out);
  const auto schedule = exec_stdout("schedule -q traces/h100/gpt2-emit-nvtx-step --json");
  REQUIRE(schedule.code == 0);
  const nlohmann::json s = nlohmann::json::parse(schedule.out);
  CHECK(j["device"] == "fake");
  CHECK(j["step"]["measured_per_iteration_ns"].size() == 2);
  CHECK(j["classes"].size() == 7);
  CHECK(j["streams"].size() == s["streams"].size());
  std::int64_t class_predicted = 0, stream_predicted = 0, launches = 0;
  for (const auto& c : j["classes"]) {
    class_predicted += c["predicted_ns"].get<std::int64_t>();
    launches += c["launches"].get<std::int64_t>();
    if (c["predicted_ns"].get<std::int64_t>() > 0) CHECK(c["error_pct"].is_number());
  }
  for (const auto& st : j["streams"]) stream_predicted += st["predicted_ns"].get<std::int64_t>();
  CHECK(launches == s["launches"].get<std::int64_t>());
  CHECK(launches == j["launches"].get<std::int64_t>());
  CHECK(class_predicted == stream_predicted);
  const double e = j["step"]["error_pct"].get<double>();
  const double m = j["step"]["measured_ns"].get<double>(), p = j["step"]["predicted_ns"].get<double>();
  CHECK(e == Approx(100.0 * (m - p) / p));
}

TEST_CASE("dpro-exec: validate's bad input is one line, exit 2") {
  const auto missing = exec("validate --fake traces/no-such-dir");
  CHECK(missing.code == 2);
  CHECK(lines(missing.out) == 1);
  const auto rank = exec("validate -q --fake traces/h100/gpt2 --rank 4");
  CHECK(rank.code == 2);
  CHECK(lines(rank.out) == 1);
  CHECK(rank.out.find("--rank 4") != std::string::npos);
  const auto over_input = exec("validate -q --fake traces/h100/gpt2 --json traces/h100/gpt2");
  CHECK(over_input.code == 2);
  CHECK(lines(over_input.out) == 1);
  const std::string dir = dpro::test::fresh_dir("exec_cli_validate");
  dpro::test::write_text(dir + "/plan.json", "not json");
  const auto plan = exec("validate -q --fake traces/h100/gpt2 --plan " + dir + "/plan.json");
  CHECK(plan.code == 2);
  CHECK(lines(plan.out) == 1);
  CHECK(plan.out.find("plan.json") != std::string::npos);
}

// ---- the device profile in dpro-replay's pricing (hw/device_rates.h) -------------------------------

namespace {

dpro::test::Run replay_json(const std::string& args) {
  return run_command(std::string(DPRO_REPLAY_BIN) + " replay -q " + args + " --json - 2>&1");
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The fake's profile as an H100's (a V100's with `gpu`), with an edit.
template <typename Edit>
std::string h100_profile(const std::string& fake, const std::string& out, Edit edit, const char* gpu = "H100-SXM5-80GB") {
  nlohmann::json j = nlohmann::json::parse(read_file(fake));
  j["device"] = gpu;
  edit(j);
  test::write_text(out, j.dump(2));
  return out;
}

}  // namespace

TEST_CASE("dpro-replay --device-profile: calibrate --fake's figures price precision and compression; doubling bf16 throughput shortens the GEMMs") {
  const std::string dir = test::fresh_dir("exec_device_profile");
  REQUIRE(exec("calibrate --fake --quick -q --out " + dir + "/fake.json").code == 0);
  // The fake device runs every kernel in 2 us: every dtype's GEMM has one rate, every cast and
  // compression kernel costs a flat 2 us (no slope).
  const std::string same = h100_profile(dir + "/fake.json", dir + "/h100.json", [](nlohmann::json&) {});
  const std::string doubled = h100_profile(dir + "/fake.json", dir + "/h100x2.json", [](nlohmann::json& j) {
    for (auto& g : j["gemms"])
      if (g["dtype"] == "bf16") g["tflops"] = 2 * g["tflops"].get<double>();
  });
  const std::string trace = "traces/h100/resnet50-emit-nvtx-step --precision-dtype bf16";
  const auto a = replay_json(trace + " --device-profile " + same), b = replay_json(trace + " --device-profile " + doubled),
             prior = replay_json(trace);
  REQUIRE(a.code == 0);
  REQUIRE(b.code == 0);
  REQUIRE(prior.code == 0);
  const auto details = [](const test::Run& r) { return nlohmann::json::parse(r.out)["whatif"]["changes"]["precision"]; };
  const nlohmann::json da = details(a), db = details(b), dp = details(prior);
  CHECK_FALSE(dp.contains("from_profile"));
  for (const char* figure : {"cast_fp32_bf16", "gemm bf16/default", "gemm fp32/tf32"}) {
    INFO(figure);
    const auto& used = da["from_profile"];
    CHECK(std::find(used.begin(), used.end(), figure) != used.end());
  }
  const auto after = [&](const nlohmann::json& d, const char* cls) { return d["lowered"][cls]["after_ns"].get<std::int64_t>(); };
  CHECK(after(db, "conv") < after(da, "conv"));  // compute-bound convolutions at twice the rate
  CHECK(after(db, "gemm") <= after(da, "gemm"));
  CHECK(after(db, "elementwise") == after(da, "elementwise"));  // no GEMM rate in them
  CHECK(db["lowered"]["conv"]["kernels"] == da["lowered"]["conv"]["kernels"]);
  // Each sized cast is the fake's 2 us, each unsized one the latency floor.
  const std::int64_t casts = da["casts"], unsized = da["casts_unsized"], floor = da["latency_floor_ns"];
  CHECK(da["cast_time_ns"].get<std::int64_t>() == 2'000 * (casts - unsized) + floor * unsized);

  // Compression (DLRM on 8 V100s): the profile's top-k curve prices the compression kernels (1 ms each).
  const std::string slow_topk = h100_profile(
      dir + "/fake.json", dir + "/topk.json",
      [](nlohmann::json& j) {
        for (auto& k : j["kernels"])
          if (k["kernel"] == "topk") k["latency_ns"] = 1e6;
      },
      "V100-SXM2-32GB");
  const auto ct = replay_json("traces/dlrm-8xV100 --compress topk:0.01 --device-profile " + slow_topk);
  const auto cp = replay_json("traces/dlrm-8xV100 --compress topk:0.01");
  REQUIRE(ct.code == 0);
  REQUIRE(cp.code == 0);
  const auto topk = [](const test::Run& r) {
    return nlohmann::json::parse(r.out)["whatif"]["changes"]["communication"]["compression"]["methods"]["topk"];
  };
  const nlohmann::json t = topk(ct), p = topk(cp);
  CHECK(t["compress_from_profile"] == "topk:0.01");
  CHECK_FALSE(p.contains("compress_from_profile"));
  const std::int64_t n = t["collectives"], decompress = t["kernel_ns"].get<std::int64_t>() - 1'000'000 * n;
  CHECK(decompress > 0);                                  // what the rule prices: decompression only
  CHECK(decompress < p["kernel_ns"].get<std::int64_t>());  // the rule's compression is gone
}

TEST_CASE("dpro-replay --device-profile: another GPU's or a malformed profile is one line naming the file and item, exit 2") {
  const std::string dir = test::fresh_dir("exec_device_profile_bad");
  REQUIRE(exec("calibrate --fake --quick -q --out " + dir + "/fake.json").code == 0);
  const auto fake = run_command(std::string(DPRO_REPLAY_BIN) + " replay -q traces/h100/resnet50 --precision-dtype bf16 --device-profile " +
                                dir + "/fake.json 2>&1");
  CHECK(fake.code == 2);
  CHECK(lines(fake.out) == 1);
  CHECK(fake.out.find(dir + "/fake.json") != std::string::npos);
  CHECK(fake.out.find("'fake'") != std::string::npos);
  CHECK(fake.out.find("H100-SXM5-80GB") != std::string::npos);
  const std::string a100 = h100_profile(dir + "/fake.json", dir + "/a100.json", [](nlohmann::json& j) { j["device"] = "A100-SXM4-80GB"; });
  const auto other = run_command(std::string(DPRO_REPLAY_BIN) + " replay -q traces/dlrm-8xV100 --compress fp16 --device-profile " + a100 + " 2>&1");
  CHECK(other.code == 2);
  CHECK(other.out.find("A100-SXM4-80GB") != std::string::npos);
  const std::string bad = h100_profile(dir + "/fake.json", dir + "/bad.json", [](nlohmann::json& j) { j["gemms"][0]["tflops"] = -1; });
  const auto malformed = run_command(std::string(DPRO_REPLAY_BIN) + " replay -q traces/h100/resnet50 --precision-dtype bf16 --device-profile " +
                                     bad + " 2>&1");
  CHECK(malformed.code == 2);
  CHECK(lines(malformed.out) == 1);
  CHECK(malformed.out.find("bad.json") != std::string::npos);
  CHECK(malformed.out.find("gemms[0].tflops") != std::string::npos);
  const auto alone = run_command(std::string(DPRO_REPLAY_BIN) + " replay -q traces/h100/resnet50 --device-profile " + bad + " 2>&1");
  CHECK(alone.code == 2);
  CHECK(alone.out.find("--device-profile") != std::string::npos);
}

TEST_CASE("dpro-exec: run --ranks and --all-ranks run several ranks on fake devices joined by collectives") {
  const auto four = exec_stdout("run -q --fake traces/dlrm-8xV100 --ranks 0-3 --iterations 2 --json");
  REQUIRE(four.code == 0);
  const nlohmann::json j = nlohmann::json::parse(four.out);
  REQUIRE(j["ranks"].size() == 4);
  for (int r = 0; r < 4; ++r) {
    CHECK(j["ranks"][r]["rank"] == r);
    CHECK(j["ranks"][r]["iteration_ns"].size() == 2);
  }
  CHECK(j["notes"].dump().find("4 of its 8 recorded members") != std::string::npos);
  const auto all = exec("run -q --fake traces/dlrm-8xV100 --all-ranks --iterations 1");
  REQUIRE(all.code == 0);
  CHECK(all.out.find("8 ranks at once, one device each") != std::string::npos);
  CHECK(all.out.find("rank 7,") != std::string::npos);
  // One GPU: the ranks one after another, collectives as stand-ins.
  const auto one = exec("run -q --fake traces/dlrm-8xV100 --ranks 2,5 --gpus 1 --iterations 1");
  REQUIRE(one.code == 0);
  CHECK(one.out.find("2 ranks one after another on one device") != std::string::npos);
  const auto v = exec_stdout("validate -q --fake traces/dlrm-8xV100 --ranks 0-1 --iterations 1 --json -");
  REQUIRE(v.code == 0);
  CHECK(nlohmann::json::parse(v.out)["ranks"].size() == 2);
}

TEST_CASE("dpro-exec: bad --ranks and --gpus are one line, exit 2") {
  for (const char* args : {"--ranks 0-9", "--ranks 3-1", "--ranks x", "--ranks 0-3 --gpus 3", "--ranks 0-1 --rank 0"}) {
    INFO(args);
    const auto r = exec(std::string("run -q --fake traces/dlrm-8xV100 --iterations 1 ") + args);
    CHECK(r.code == 2);
    CHECK(r.out.find("--") != std::string::npos);  // names the option
  }
  const auto gpus = exec("run -q --fake traces/dlrm-8xV100 --iterations 1 --ranks 0-3 --gpus 3");
  CHECK(gpus.out.find("--gpus 3") != std::string::npos);
  CHECK(lines(gpus.out) == 1);
#if !DPRO_EXECUTOR_CUDA
  const auto no_cuda = exec("run -q traces/dlrm-8xV100 --ranks 0-1 --iterations 1");
  CHECK(no_cuda.code == 2);
  CHECK(no_cuda.out.find("no CUDA executor") != std::string::npos);
#endif
}
