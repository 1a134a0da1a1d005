#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <array>
#include <cstdio>
#include <filesystem>
#include <sys/wait.h>

#include "core/byte_source.h"
#include "trace_fixtures.h"

using namespace dpro;

namespace {

struct Run {
  int code = -1;
  std::string out;  // stdout and stderr
};

// Runs a shell command line and collects its output.
Run run_command(const std::string& command) {
  Run r;
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe);
  std::array<char, 4096> buf{};
  while (std::size_t n = std::fread(buf.data(), 1, buf.size(), pipe)) r.out.append(buf.data(), n);
  const int status = pclose(pipe);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

Run run(const std::string& args) { return run_command(std::string(DPRO_REPLAY_BIN) + " " + args + " 2>&1"); }

std::size_t lines(const std::string& s) { return std::count(s.begin(), s.end(), '\n'); }

}  // namespace

TEST_CASE("dpro-replay replay prints measured vs predicted per rank and for the job") {
  const Run r = run("replay " + test::dlrm_dir());
  CHECK(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("ProfilerStep#10") && Catch::Contains("job") && Catch::Contains("20.823 ms") &&
                        Catch::Contains("critical path") && Catch::Contains("8 collective instances matched"));
}

TEST_CASE("dpro-replay --json - writes the report as JSON on stdout") {
  const Run r = run("replay -q --json - " + test::source_path("traces/hta/cuda-event-sync.json.gz"));
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j.at("iterations").at(0).at("name") == "ProfilerStep#100");
  CHECK(j.at("iterations").at(0).at("job").at("measured_ns") == 3154000);
}

TEST_CASE("dpro-replay replay of a trace without ProfilerStep compares the whole trace and its what-if") {
  // The AlexNet trace was recorded without a profiler schedule: no ProfilerStep#N.
  const std::string trace = test::source_path("traces/hta/alexnet-a100-single.json.gz");
  const Run r = run("replay " + trace + " --device H100-SXM5-80GB --origin-device A100-SXM4-80GB");
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("whole trace (no ProfilerStep#N in the traces)") &&
                        Catch::Contains("what-if: baseline (replay of the trace as measured) vs predicted") &&
                        !Catch::Contains("nothing to compare"));
  const Run j = run_command(std::string(DPRO_REPLAY_BIN) + " replay -q --json - " + trace +
                            " --device H100-SXM5-80GB --origin-device A100-SXM4-80GB");
  REQUIRE(j.code == 0);
  const auto report = nlohmann::json::parse(j.out);
  const auto& base = report.at("iterations").at(0);
  const auto& whatif = report.at("whatif").at("iterations").at(0);
  CHECK(base.at("whole_trace") == true);
  CHECK(base.at("number").is_null());
  CHECK(whatif.at("whole_trace") == true);
  // The GPU ops get faster on an H100; the window is dominated by the host (CUDA start-up inside
  // the profile), so it shrinks, by less than the GPU time it holds.
  const auto base_ns = base.at("job").at("predicted_ns").get<std::int64_t>();
  const auto whatif_ns = whatif.at("job").at("predicted_ns").get<std::int64_t>();
  CHECK(whatif_ns < base_ns);
  CHECK(whatif_ns > base_ns * 9 / 10);
}

TEST_CASE("dpro-replay replay --iteration-marker reports the occurrences of a record_function scope") {
  // The AlexNet trace has no ProfilerStep#N but one record_function scope per forward pass.
  const std::string trace = test::source_path("traces/hta/alexnet-a100-single.json.gz");
  const Run r = run_command(std::string(DPRO_REPLAY_BIN) + " replay -q --json - --iteration-marker '*|forward]' " + trace);
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  const auto& its = j.at("iterations");
  REQUIRE(its.size() >= 2);
  CHECK(its.at(0).at("name") == "[param|pytorch.model.alex_net|0|0|0|warmup|forward] #1");
  CHECK(its.at(0).at("number") == 1);
  CHECK(its.at(0).at("whole_trace") == false);
  for (const auto& it : its) CHECK(std::abs(it.at("job").at("error").get<double>()) < 0.01);
  const Run one = run("replay --iteration-marker '*|forward]' --iteration 2 " + trace);
  CHECK(one.code == 0);
  CHECK_THAT(one.out, Catch::Contains("|measure|forward] #2") && !Catch::Contains("] #1"));
  const Run none = run("replay --iteration-marker no_such_scope " + trace);
  CHECK(none.code == 2);
  CHECK_THAT(none.out, Catch::Contains("alexnet-a100-single.json.gz") && Catch::Contains("--iteration-marker no_such_scope"));
}

TEST_CASE("dpro-replay compare is a CI check: exit 1 on a slowdown beyond --max-slowdown, 2 on bad input") {
  const std::string dir = test::fresh_dir("cli_compare");
  const std::string base = dir + "/base.json", slow = dir + "/slow.json";
  REQUIRE(run("replay -q --json " + base + " " + test::dlrm_dir()).code == 0);
  // The DLRM job on a 5 GB/s intra-node fabric: about 1 % slower, all of it communication.
  REQUIRE(run("replay -q --set network.intra_node_gbps=5 --json " + slow + " " + test::dlrm_dir()).code == 0);
  const Run same = run("compare " + base + " " + base + " --max-slowdown 0");
  CHECK(same.code == 0);
  CHECK_THAT(same.out, Catch::Contains("+0.00%") && Catch::Contains("ok:"));
  const Run strict = run("compare " + base + " " + slow + " --max-slowdown 0.5");
  CHECK(strict.code == 1);
  CHECK_THAT(strict.out, Catch::Contains("REGRESSION") && Catch::Contains("the what-if's prediction") &&
                             Catch::Contains("ncclKernel_AllReduce"));
  CHECK(run("compare " + base + " " + slow + " --max-slowdown 3").code == 0);
  CHECK(run("compare " + slow + " " + base + " --max-slowdown 0").code == 0);  // faster
  const Run j = run_command(std::string(DPRO_REPLAY_BIN) + " compare --json - " + base + " " + slow);
  REQUIRE(j.code == 0);
  const auto c = nlohmann::json::parse(j.out);
  CHECK(c.at("change").get<double>() > 0.005);
  CHECK(c.at("critical_path_change_ns").at("communication_ns").get<std::int64_t>() > 1000000);
  // Bad input: a trace instead of a report, a missing file, a negative limit.
  const Run trace = run("compare " + test::dlrm_files()[0] + " " + base);
  CHECK(trace.code == 2);
  CHECK_THAT(trace.out, Catch::Contains("worker0") && Catch::Contains("iterations: missing"));
  CHECK(run("compare " + dir + "/absent.json " + base).code == 2);
  CHECK(run("compare " + base + " " + slow + " --max-slowdown -1").code == 2);
}

TEST_CASE("Scaling out a trace without collectives warns that the job would never communicate") {
  const std::string trace = test::source_path("traces/hta/cuda-event-sync.json.gz");
  const Run r = run("replay " + trace + " --ranks 8 --origin-cluster dgx-a100");
  CHECK(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("dpro: warning: the trace has no NCCL collectives") &&
                        Catch::Contains("8 copies of this one that never communicate"));
  const Run network = run("replay " + trace + " --set network.inter_node_gbps=10 --origin-cluster dgx-a100");
  CHECK(network.code == 0);
  CHECK_THAT(network.out, Catch::Contains("change nothing") && !Catch::Contains("never communicate"));
  // A multi-rank job that talked through gloo (CPU collectives, none in the trace) is told so,
  // not to record itself on 2 ranks.
  const Run gloo = run("replay " + test::source_path("traces/h100/resnet18-gloo2") + " --iteration 5 --ranks 8");
  CHECK(gloo.code == 0);
  CHECK_THAT(gloo.out, Catch::Contains("copies of these 2 ranks") && Catch::Contains("did not go through NCCL") &&
                           !Catch::Contains("at least 2 ranks"));
  // A trace with collectives gets no such warning.
  CHECK_THAT(run("replay " + test::dlrm_dir() + " --ranks 16").out, !Catch::Contains("no NCCL collectives"));
}

TEST_CASE("Bad input gives one line naming the file, and exit code 2") {
  const std::string dir = test::fresh_dir("cli_bad");
  test::write_text(dir + "/malformed.json", R"({"traceEvents": [{"ph": "X",, }]})");
  test::write_text(dir + "/negative.json",
                   R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 5, "dur": -1}]})");
  test::write_text(dir + "/empty.json", "");
  const std::string whole = read_whole_file(test::dlrm_files()[0]);
  test::write_text(dir + "/truncated.json", whole.substr(0, 1000));
  {
    const std::string gz = [] {
      std::ifstream in(test::dlrm_files()[0], std::ios::binary);
      return std::string(std::istreambuf_iterator<char>(in), {});
    }();
    test::write_text(dir + "/truncated.json.gz", gz.substr(0, gz.size() / 3));
  }
  for (const char* name : {"malformed.json", "negative.json", "empty.json", "truncated.json", "truncated.json.gz"}) {
    INFO(name);
    const Run r = run("replay " + dir + "/" + name);
    CHECK(r.code == 2);
    CHECK(lines(r.out) == 1);
    CHECK_THAT(r.out, Catch::StartsWith("dpro-replay: error: " + dir + "/" + name));
  }
}

TEST_CASE("A multi-rank set with a rank missing is refused, with a way out") {
  const std::string dir = test::fresh_dir("cli_missing_rank");
  const auto files = test::dlrm_files();
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (i != 6) std::filesystem::copy_file(files[i], dir + "/" + std::filesystem::path(files[i]).filename().string());
  }
  Run r = run("replay " + dir);
  CHECK(r.code == 2);
  CHECK(lines(r.out) == 1);
  CHECK_THAT(r.out, Catch::Contains("rank 6"));
  r = run("replay -q --allow-partial " + dir);
  CHECK(r.code == 0);
}

TEST_CASE("Outputs never overwrite an existing file without --force, nor an input ever") {
  const std::string dir = test::fresh_dir("cli_outputs");
  const std::string trace = test::source_path("traces/hta/cuda-event-sync.json.gz");
  Run r = run("replay -q --timeline " + dir + "/t.json " + trace);
  REQUIRE(r.code == 0);
  const auto timeline = nlohmann::json::parse(read_whole_file(dir + "/t.json"));
  CHECK(timeline.at("traceEvents").size() > 10);
  r = run("replay -q --timeline " + dir + "/t.json " + trace);
  CHECK(r.code == 2);
  CHECK_THAT(r.out, Catch::Contains("--force"));
  CHECK(run("replay -q --force --timeline " + dir + "/t.json " + trace).code == 0);
  const std::string copy = dir + "/input.json.gz";
  std::filesystem::copy_file(trace, copy);
  r = run("replay -q --force --json " + copy + " " + copy);
  CHECK(r.code == 2);
  CHECK(read_whole_file(copy).size() == read_whole_file(trace).size());
}

TEST_CASE("dpro-replay replay --help explains the subcommand and unknown flags exit 2") {
  Run r = run("replay --help");
  CHECK(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("--timeline") && Catch::Contains("--iteration") && Catch::Contains("--json"));
  r = run("replay --no-such-flag x");
  CHECK(r.code == 2);
}

TEST_CASE("Collectives that cannot be matched across ranks: one line naming the file, exit 2") {
  const std::string dir = test::fresh_dir("cli_unmatched");
  const auto files = test::dlrm_files();
  for (std::size_t i = 0; i < files.size(); ++i) {
    const std::string name = std::filesystem::path(files[i]).filename().string();
    if (i != 5) {
      std::filesystem::copy_file(files[i], dir + "/" + name);
      continue;
    }
    // Rank 5 claims its first all-reduce was an all-gather: its peers' all-reduces go unmatched.
    std::string text = read_whole_file(files[i]);
    const std::size_t at = text.find("ncclKernel_AllReduce");
    REQUIRE(at != std::string::npos);
    text.replace(at, 20, "ncclKernel_AllGather");
    test::write_text(dir + "/" + name.substr(0, name.size() - 3), text);  // plain .json
  }
  const Run r = run("replay " + dir);
  CHECK(r.code == 2);
  CHECK(lines(r.out) == 1);
  CHECK_THAT(r.out, Catch::Contains("cannot be matched") && Catch::Contains("worker"));
}

TEST_CASE("A name that is not UTF-8 in a native trace still gives a JSON report") {
  // The native format stores names as bytes; JSON output replaces invalid sequences (U+FFFD)
  // instead of failing at the end of the run.
  std::string bytes = read_whole_file(test::source_path("tests/profiler/data/sample_v1_0.dpro"));
  const auto at = bytes.find("cudaLaunchKernel");
  REQUIRE(at != std::string::npos);
  bytes[at + 9] = '\xff';
  const std::string dir = test::fresh_dir("cli_utf8");
  test::write_text(dir + "/r.dpro", bytes);
  const Run r = run("replay -q --json - " + dir + "/r.dpro");
  REQUIRE(r.code == 0);
  CHECK_NOTHROW(nlohmann::json::parse(r.out));
  CHECK_THAT(r.out, Catch::Contains("cudaLaunc\xef\xbf\xbdKernel"));
}

TEST_CASE("costmodel predict reads its CSV from a pipe") {
  // The first bytes (read to tell gzip from plain text) are kept, not re-read by seeking back.
  const Run r = run_command(std::string("printf 'OPName,B,M,N,K\\nbmm,2,64,64,64\\n' | ") + DPRO_REPLAY_BIN +
                            " costmodel predict --device T4 /dev/stdin 2>/dev/null");
  CHECK(r.code == 0);
  CHECK_THAT(r.out, Catch::StartsWith("OPName,B,M,N,K,predicted_ms\nbmm,2,64,64,64,"));
}

TEST_CASE("replay --json gives each what-if's figures as JSON, not only its summary line") {
  const Run r = run("replay -q --json - " + test::dlrm_dir() + " --ranks 16 --bucket-mb 25 --comm-sizes " +
                    test::source_path("tests/comm/data/dlrm-host-et") + " --cluster dgx-a100");
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  const auto& c = j.at("whatif").at("changes").at("communication");
  CHECK(c.at("origin_cluster") == "dgx1-v100");
  CHECK(c.at("origin_guessed") == true);
  CHECK(c.at("target_cluster") == "dgx-a100");
  CHECK(c.at("ops_retimed") == 64);
  CHECK(c.at("sized_by_host_et") == 64);
  CHECK(c.at("sizes_inferred") == 0);
  CHECK(c.at("transfer_before_ns").get<std::int64_t>() > 0);
  CHECK(c.at("calibration").at("operations").at("allreduce").at("from") == "operation");
  CHECK(c.at("calibration").at("operations").at("allreduce").at("samples").get<int>() > 0);
  CHECK(c.at("calibration").at("operations").at("gather").at("from") == "family");
  CHECK(c.at("buckets").at("allreduces_per_rank") == 3);
  CHECK(c.at("ranks").at("from") == 8);
  CHECK(c.at("ranks").at("to") == 16);
  CHECK(c.at("ranks").at("nodes") == 2);
  CHECK(c.at("ranks").at("exact_by_symmetry") == true);
  // The summary line is still there, beside the figures.
  CHECK_THAT(j.at("whatif").at("notes").at(0).get<std::string>(), Catch::Contains("communication what-if"));
}
