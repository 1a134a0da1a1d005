#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <sys/wait.h>

#include "core/byte_source.h"
#include "core/time.h"
#include "cli/cli_run.h"
#include "trace_fixtures.h"

using namespace dpro;
using dpro::test::Run;
using dpro::test::run;
using dpro::test::run_command;

namespace {

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
  // The DLRM job on a 4 GB/s intra-node fabric: about 1 % slower, all of it communication (at
  // 5 GB/s its all-reduces still fit beside its host-bound step).
  REQUIRE(run("replay -q --set network.intra_node_gbps=4 --json " + slow + " " + test::dlrm_dir()).code == 0);
  const Run same = run("compare " + base + " " + base + " --max-slowdown 0");
  CHECK(same.code == 0);
  CHECK_THAT(same.out, Catch::Contains("+0.00%") && Catch::Contains("ok:"));
  const Run strict = run("compare " + base + " " + slow + " --max-slowdown 0.5");
  CHECK(strict.code == 1);
  CHECK_THAT(strict.out, Catch::Contains("REGRESSION") && Catch::Contains("the what-if's prediction") &&
                             Catch::Contains("ncclKernel_AllReduce"));
  // The job is 1 % slower, within 3 %; rank 7's step (the rank the others waited for) grew 8 %: its
  // check fails, unless the job alone is to decide.
  const Run ranks = run("compare " + base + " " + slow + " --max-slowdown 3");
  CHECK(ranks.code == 1);
  CHECK_THAT(ranks.out, Catch::Contains("ok: +1.04% is within --max-slowdown 3%") && Catch::Contains("REGRESSION: rank 7 +8.13%"));
  CHECK(run("compare " + base + " " + slow + " --max-slowdown 3 --job-only").code == 0);
  CHECK(run("compare " + slow + " " + base + " --max-slowdown 0").code == 0);  // faster
  const Run j = run_command(std::string(DPRO_REPLAY_BIN) + " compare --json - " + base + " " + slow);
  REQUIRE(j.code == 0);
  const auto c = nlohmann::json::parse(j.out);
  CHECK(c.at("change").get<double>() > 0.005);
  CHECK(c.at("same_job") == true);
  // Every per-op change is the true one: each report lists every op of its critical path, so the
  // difference computed here from the two reports' own lists must match (issue 34: ops outside a
  // report's top 10 used to count as 0 ns).
  auto path_ops = [](const std::string& file, bool whatif) {
    auto r = nlohmann::json::parse(read_whole_file(file));
    if (whatif) r = r.at("whatif");
    std::map<std::string, double> ns;
    for (const auto& it : r.at("iterations")) {
      CHECK(it.at("job").at("top_ops_complete") == true);
      for (const auto& op : it.at("job").at("top_ops"))
        ns[op.at("category").get<std::string>() + "|" + op.at("name").get<std::string>()] += op.at("time_ns").get<double>();
    }
    for (auto& [k, v] : ns) v /= static_cast<double>(r.at("iterations").size());
    return ns;
  };
  const auto before = path_ops(base, false), after = path_ops(slow, true);
  REQUIRE(c.at("ops").size() >= 3);
  for (const auto& op : c.at("ops")) {
    const std::string key = op.at("category").get<std::string>() + "|" + op.at("name").get<std::string>();
    const double truth = (after.contains(key) ? after.at(key) : 0.0) - (before.contains(key) ? before.at(key) : 0.0);
    CHECK(op.at("delta_ns").get<double>() == Approx(truth).margin(1));
  }
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
  CHECK(c.at("sized_by_trace") == 64);  // their nccl:* ranges; the host execution traces agree
  CHECK(c.at("sized_by_host_et") == 0);
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

TEST_CASE("replay --precision-dtype bf16 gives the precision what-if's figures as JSON") {
  const Run r = run("replay -q --json - " + test::source_path("traces/h100/resnet50-emit-nvtx-step") +
                    " --precision-dtype bf16");
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  const auto& c = j.at("whatif").at("changes").at("precision");
  CHECK(c.at("dtype") == "bf16");
  CHECK(c.at("device") == "H100-SXM5-80GB");
  CHECK(c.at("casts").get<int>() > 0);
  CHECK(c.at("lowered").at("conv").at("after_ns").get<std::int64_t>() <
        c.at("lowered").at("conv").at("before_ns").get<std::int64_t>());
  CHECK(c.at("gpu_after_ns").get<std::int64_t>() < c.at("gpu_before_ns").get<std::int64_t>());
  CHECK_THAT(j.at("whatif").at("notes").at(0).get<std::string>(), Catch::Contains("precision bf16"));
}

TEST_CASE("Outputs are written through a FIFO without --force, and through a symbolic link into its target") {
  const std::string dir = test::fresh_dir("cli_output_kinds");
  const std::string trace = test::source_path("traces/hta/triton.json.gz");
  const std::string fifo = dir + "/pipe";
  REQUIRE(run_command("mkfifo " + fifo).code == 0);
  // The reader gives up after 30 s, should the writer never open the FIFO.
  const Run piped = run_command("timeout 30 cat " + fifo + " > " + dir + "/drained.json & " + DPRO_REPLAY_BIN + " replay -q --json " +
                                fifo + " " + trace + " >/dev/null 2>&1; status=$?; wait; exit $status");
  CHECK(piped.code == 0);
  CHECK(std::filesystem::is_fifo(fifo));  // not replaced by a regular file
  CHECK_NOTHROW(nlohmann::json::parse(read_whole_file(dir + "/drained.json")).at("iterations"));
  CHECK_FALSE(std::filesystem::exists(fifo + ".partial"));

  const std::string target = dir + "/target.json", link = dir + "/link.json";
  test::write_text(target, "kept");
  std::filesystem::create_symlink("target.json", link);
  const Run refused = run("replay -q --json " + link + " " + trace);
  CHECK(refused.code == 2);
  CHECK_THAT(refused.out, Catch::Contains("target.json") && Catch::Contains("--force"));
  CHECK(read_whole_file(target) == "kept");
  REQUIRE(run("replay -q --force --json " + link + " " + trace).code == 0);
  CHECK(std::filesystem::is_symlink(link));
  CHECK(nlohmann::json::parse(read_whole_file(target)).at("iterations").size() == 1);
}

TEST_CASE("Option --force never writes an output over a file that any option reads") {
  const std::string dir = test::fresh_dir("cli_protected_inputs");
  const std::string trace = test::source_path("traces/hta/triton.json.gz");
  // A host execution trace given as a file, and a cluster file inside the --clusters-dir given.
  const std::string host_et = dir + "/host_et.json";
  test::write_text(host_et, R"({"nodes": []})");
  std::filesystem::create_directory(dir + "/clusters");
  const std::string cluster = dir + "/clusters/dgx-a100.json";
  std::filesystem::copy_file(test::source_path("configs/clusters/dgx-a100.json"), cluster);
  const std::string cluster_bytes = read_whole_file(cluster);
  Run r = run("replay -q --force --json " + host_et + " --ranks 2 --comm-sizes " + host_et + " " + trace);
  CHECK(r.code == 2);
  CHECK(lines(r.out) == 1);
  CHECK_THAT(r.out, Catch::Contains("refusing to write an output over the input " + host_et));
  CHECK(read_whole_file(host_et) == R"({"nodes": []})");
  r = run("replay -q --force --timeline " + cluster + " --cluster dgx-a100 --clusters-dir " + dir + "/clusters " + trace);
  CHECK(r.code == 2);
  CHECK_THAT(r.out, Catch::Contains(cluster) && Catch::Contains("input directory " + dir + "/clusters"));
  CHECK(read_whole_file(cluster) == cluster_bytes);
  CHECK_FALSE(std::filesystem::exists(cluster + ".partial"));
}

TEST_CASE("Two outputs of one run never go to the same file, nor both to stdout") {
  const std::string dir = test::fresh_dir("cli_same_output");
  const std::string trace = test::source_path("traces/hta/triton.json.gz");
  std::filesystem::create_directory(dir + "/sub");
  Run r = run("replay -q --json " + dir + "/x.json --timeline " + dir + "/sub/../x.json " + trace);
  CHECK(r.code == 2);
  CHECK_THAT(r.out, Catch::Contains("--timeline") && Catch::Contains("--json"));
  CHECK_FALSE(std::filesystem::exists(dir + "/x.json"));
  r = run("replay -q --json - --timeline - " + trace);
  CHECK(r.code == 2);
  CHECK_THAT(r.out, Catch::Contains("standard output"));
  // --timeline - alone: stdout holds the timeline and nothing else.
  const Run timeline = run_command(std::string(DPRO_REPLAY_BIN) + " replay --timeline - " + trace + " 2>/dev/null");
  REQUIRE(timeline.code == 0);
  CHECK(nlohmann::json::parse(timeline.out).at("traceEvents").size() > 3);
  CHECK_THAT(run("replay --help").out, Catch::Contains("'-' = stdout, no text") && Catch::Contains(".gz is gzip"));
}

TEST_CASE("replay and compare outputs whose names end in .gz are gzip-compressed") {
  const std::string dir = test::fresh_dir("cli_gzip_outputs");
  const std::string trace = test::source_path("traces/hta/triton.json.gz");
  REQUIRE(run("replay -q --json " + dir + "/r.json.gz --timeline " + dir + "/t.json.gz " + trace).code == 0);
  REQUIRE(run("compare --json " + dir + "/c.json.gz " + dir + "/r.json.gz " + dir + "/r.json.gz").code == 0);
  for (const char* name : {"r.json.gz", "t.json.gz", "c.json.gz"}) {
    INFO(name);
    std::ifstream in(dir + "/" + name, std::ios::binary);
    std::array<unsigned char, 2> magic{};
    in.read(reinterpret_cast<char*>(magic.data()), 2);
    CHECK(magic == std::array<unsigned char, 2>{0x1f, 0x8b});
    CHECK_NOTHROW(nlohmann::json::parse(read_whole_file(dir + "/" + name)));  // inflates
  }
}

TEST_CASE("A failed write exits 2 and leaves no .partial file; so does a report lost on stdout") {
  const std::string dir = test::fresh_dir("cli_failed_writes");
  const std::string trace = test::source_path("traces/hta/triton.json.gz");
  std::filesystem::create_directory(dir + "/out");
  Run r = run("replay -q --force --json " + dir + "/out " + trace);
  CHECK(r.code == 2);
  CHECK_THAT(r.out, Catch::Contains(dir + "/out: is a directory"));
  CHECK(std::filesystem::is_directory(dir + "/out"));
  CHECK_FALSE(std::filesystem::exists(dir + "/out.partial"));
  r = run_command("printf 'OPName,B,M,N,K\\nbmm,2,64,64,64\\n' > " + dir + "/ops.csv; " + DPRO_REPLAY_BIN +
                  " costmodel predict --device T4 " + dir + "/ops.csv -o " + dir + "/out --force 2>&1");
  CHECK(r.code == 2);
  CHECK_FALSE(std::filesystem::exists(dir + "/out.partial"));
  // A file size limit fails the write midway (SIGXFSZ ignored: the write returns EFBIG).
  r = run_command("trap '' XFSZ; ulimit -f 1; " + std::string(DPRO_REPLAY_BIN) + " replay -q --json " + dir +
                  "/big.json " + test::source_path("traces/hta/cuda-event-sync.json.gz") + " 2>&1 >/dev/null");
  CHECK(r.code == 2);
  CHECK_THAT(r.out, Catch::Contains("big.json: write failed"));
  CHECK_FALSE(std::filesystem::exists(dir + "/big.json"));
  CHECK_FALSE(std::filesystem::exists(dir + "/big.json.partial"));
  // stdout on a full device: the text report, --json -, convert -o -, compare's text.
  for (const std::string& args : {"replay " + trace, "replay -q --json - " + trace,
                                  "convert -o - " + test::source_path("tests/profiler/data/sample_v1_0.dpro")}) {
    INFO(args);
    r = run_command(std::string(DPRO_REPLAY_BIN) + " " + args + " 2>&1 >/dev/full");
    CHECK(r.code == 2);
    CHECK_THAT(r.out, Catch::Contains("cannot write to standard output: No space left on device"));
  }
}

namespace {

// The what-if table's value in the row starting with `label` ("job", "0", ...): "19.547 ms".
std::string whatif_row(const std::string& out, const std::string& label) {
  const std::size_t table = out.find("what-if: baseline");
  if (table == std::string::npos) return "";
  std::istringstream in(out.substr(table));
  for (std::string line; std::getline(in, line);) {
    std::istringstream cols(line);
    std::string first, base_value, base_unit, value, unit;
    if (cols >> first >> base_value >> base_unit >> value >> unit && first == label) return value + " " + unit;
  }
  return "";
}

}  // namespace

TEST_CASE("Scale-in, --ranks below the trace's ranks: the what-if table and JSON are the smaller job, and compare sees it") {
  const std::string dir = test::fresh_dir("cli_scale_in");
  const std::string sizes = " --comm-sizes " + test::source_path("tests/comm/data/dlrm-host-et");
  const Run text = run("replay " + test::dlrm_dir() + sizes + " --ranks 4");
  REQUIRE(text.code == 0);
  REQUIRE(run("replay -q " + test::dlrm_dir() + sizes + " --ranks 4 --json " + dir + "/r4.json").code == 0);
  REQUIRE(run("replay -q " + test::dlrm_dir() + sizes + " --ranks 8 --json " + dir + "/r8.json").code == 0);
  const auto r4 = nlohmann::json::parse(read_whole_file(dir + "/r4.json")).at("whatif");
  const auto r8 = nlohmann::json::parse(read_whole_file(dir + "/r8.json")).at("whatif");
  const Nanos job4 = r4.at("iterations").at(0).at("job").at("predicted_ns").get<Nanos>();
  const Nanos job8 = r8.at("iterations").at(0).at("job").at("predicted_ns").get<Nanos>();
  // Before, the JSON and the table gave the 8 trace ranks' job (20.816 ms) and only the note the
  // 4-rank one: now the job row is the 4-rank job from the graph of ranks 0..3.
  CHECK(whatif_row(text.out, "job") == format_duration(job4));
  CHECK(job4 != job8);
  CHECK(job4 < job8);
  CHECK_THAT(text.out, Catch::Contains("Trace ranks 4..7 are not part of the 4-rank job"));
  std::vector<int> ranks;
  for (const auto& r : r4.at("iterations").at(0).at("ranks")) ranks.push_back(r.at("rank").get<int>());
  CHECK(ranks == std::vector<int>{0, 1, 2, 3});
  CHECK(whatif_row(text.out, "4").empty());
  // compare reads the 4-rank job.
  const Run c = run_command(std::string(DPRO_REPLAY_BIN) + " compare --json - " + dir + "/r8.json " + dir + "/r4.json");
  REQUIRE(c.code == 0);
  CHECK(nlohmann::json::parse(c.out).at("new").at("median_job_ns").get<Nanos>() == job4);
  // --timeline shows the baseline's 8 ranks and, beside them, the 4-rank job: slices, counters
  // and process/thread names of ranks 0..3 only (each view's critical path is a process of its own).
  REQUIRE(run("replay -q " + test::dlrm_dir() + sizes + " --ranks 4 --timeline " + dir + "/t.json").code == 0);
  std::set<int> pids[2], named[2];
  const auto timeline = nlohmann::json::parse(read_whole_file(dir + "/t.json"));
  for (const auto& e : timeline.at("traceEvents")) {
    // replayer/timeline.h: view v's rank r is process v x 2^21 + r, its critical path v x 2^21 + 2^20.
    const int pid = e.at("pid").get<int>(), view = pid >> 21, rank = pid & ((1 << 21) - 1);
    REQUIRE(view < 2);
    if (rank == (1 << 20)) continue;
    (e.at("ph") == "X" ? pids[view] : named[view]).insert(rank);
  }
  CHECK(pids[0] == std::set<int>{0, 1, 2, 3, 4, 5, 6, 7});
  CHECK(pids[1] == std::set<int>{0, 1, 2, 3});
  CHECK(named[1] == pids[1]);
  // --iteration K: the what-if reports step K alone (before, the note listed all 40 steps).
  const Run one = run("replay " + test::source_path("traces/h100/resnet18-gloo2") + " --ranks 1 --iteration 5");
  REQUIRE(one.code == 0);
  const std::string whatif = one.out.substr(one.out.find("what-if: baseline"));
  CHECK_THAT(whatif, Catch::Contains("ProfilerStep#5") && !Catch::Contains("ProfilerStep#6") &&
                         Catch::Contains("Trace rank 1 is not part of the 1-rank job"));
}

TEST_CASE("Scale-out with --allow-partial: --ranks does not claim the missing ranks are exact by symmetry") {
  const auto files = test::dlrm_files();
  const Run r = run("replay --allow-partial --ranks 8 " + files[0] + " " + files[1] + " " + files[2]);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("The trace has 3 of the job's 8 ranks (0..2): the missing ranks are stood in for "
                                    "by the present ones") &&
                        !Catch::Contains("exact by symmetry"));
}

TEST_CASE("compare refuses a base whose job time is 0 ns, and replay warns of a step of length 0") {
  const std::string dir = test::fresh_dir("cli_zero_step");
  test::write_text(dir + "/zero.json",
                   R"({"traceEvents": [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 5, "dur": 0},
                       {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 5, "dur": 0}]})");
  const Run replay = run("replay --json " + dir + "/zero_rep.json " + dir + "/zero.json");
  REQUIRE(replay.code == 0);
  CHECK_THAT(replay.out, Catch::Contains("warning: measured step length 0 ns: ProfilerStep#1 on rank 0"));
  const std::string base = test::dlrm_dir();
  REQUIRE(run("replay -q --json " + dir + "/dlrm.json " + base).code == 0);
  // Before: "+0.00%", "ok:" and exit 0 whatever the new report said.
  const Run c = run("compare " + dir + "/zero_rep.json " + dir + "/dlrm.json --max-slowdown 3");
  CHECK(c.code == 2);
  CHECK(lines(c.out) == 1);
  CHECK_THAT(c.out, Catch::Contains(dir + "/zero_rep.json") && Catch::Contains("job time is 0 ns"));
  // Faster is no regression, but a 1-rank job is not the 8-rank one: with a limit, that fails the check.
  const Run other = run("compare " + dir + "/dlrm.json " + dir + "/zero_rep.json --max-slowdown 3");
  CHECK(other.code == 1);
  CHECK_THAT(other.out, Catch::Contains("FAILED: the two reports describe different recorded jobs") &&
                            !Catch::Contains("REGRESSION"));
}

TEST_CASE("replay --compress prints and gives as JSON what compression did to the all-reduces") {
  const std::string args = test::dlrm_dir() + " --compress topk:0.01 --set cluster.gpus_per_node=1 --set network.inter_node_gbps=1.25";
  const Run text = run("replay " + args);
  REQUIRE(text.code == 0);
  CHECK_THAT(text.out, Catch::Contains("Compression of 24 gradient all-reduces") && Catch::Contains("topk on 24"));
  const Run r = run("replay -q --json - " + args);
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  const auto& c = j.at("whatif").at("changes").at("communication").at("compression");
  CHECK(c.at("allreduces") == 24);
  CHECK(c.at("kernels_inserted") == 48);
  const auto& topk = c.at("methods").at("topk");
  CHECK(topk.at("wire_bytes_after").get<std::int64_t>() * 40 < topk.at("wire_bytes_before").get<std::int64_t>());
  CHECK(topk.at("residual_bytes_per_rank").get<std::int64_t>() > 0);
  // The inserted kernels are in the timeline under their own names.
  const std::string dir = test::fresh_dir("cli_compress");
  REQUIRE(run("replay -q --timeline " + dir + "/t.json " + args).code == 0);
  const std::string timeline = read_whole_file(dir + "/t.json");
  CHECK_THAT(timeline, Catch::Contains("\"dpro::compress(topk)\"") && Catch::Contains("\"dpro::decompress(topk)\""));
  const Run bad = run("replay " + test::dlrm_dir() + " --compress topk:2");
  CHECK(bad.code == 2);
  CHECK_THAT(bad.out, Catch::Contains("--compress topk:2") && Catch::Contains("(0, 1]"));
}

TEST_CASE("errors of the what-if options name the option and state the bound") {
  const std::string trace = test::source_path("traces/hta/cuda-event-sync.json.gz");
  const std::string dlrm = test::dlrm_dir();
  const std::string empty = test::fresh_dir("cli_empty_clusters");
  const std::pair<std::string, std::vector<std::string>> cases[] = {
      {dlrm + " --cluster dgx-a100 --origin-cluster nonexist", {"--origin-cluster nonexist: unknown cluster"}},
      {dlrm + " --bucket-mb 1e20", {"--bucket-mb 1e+20", "to 1048576 MB (1 TiB)"}},
      {trace + " --device H100-SXM5-80GB --origin-device nonexist", {"--origin-device nonexist: unknown device"}},
      {trace + " --device nonexist", {"--device nonexist: unknown device"}},
      {dlrm + " --ranks 2 --clusters-dir " + empty, {empty, "the clusters directory has no cluster files"}},
      // Options that would do nothing: before, silently ignored.
      {trace + " --origin-cluster dgx-a100", {"--origin-cluster: does nothing without --cluster, --set, --ranks, --bucket-mb or --compress"}},
      {trace + " --device-samples x.csv", {"--device-samples: does nothing without --device"}},
      {trace + " --origin-device A100-SXM4-80GB", {"--origin-device: does nothing without --device"}},
      {trace + " --costmodel x.dpcm", {"--costmodel: does nothing without --device"}},
      {trace + " --device-specs configs/devices", {"--device-specs: does nothing without --device, --compress or --precision-dtype"}},
      {trace + " --precision-classes gemm", {"--precision-classes: does nothing without --precision-dtype"}},
      {trace + " --precision-dtype int4", {"--precision-dtype int4: not a dtype an op can be lowered to"}},
      {trace + " --precision-dtype bf16 --precision-classes attention", {"--precision-classes attention: unknown op class"}},
      {trace + " --iteration-marker ''", {"--iteration-marker: empty"}},
      {trace + " --top -1", {"--top", "-1", "0 to 1000000"}},
  };
  for (const auto& [args, parts] : cases) {
    INFO(args);
    const Run r = run("replay -q " + args);
    CHECK(r.code == 2);
    for (const auto& part : parts) CHECK_THAT(r.out, Catch::Contains(part));
    CHECK_THAT(r.out, !Catch::Contains("--cluster nonexist"));
  }
  CHECK(run("compare --top -1 a.json b.json").code == 2);
}

TEST_CASE("a cluster file with a misspelled or missing latency is refused naming the file and the key") {
  const std::string dir = test::fresh_dir("cli_cluster_keys");
  std::filesystem::copy(test::source_path("configs/clusters"), dir);
  std::string text = read_whole_file(dir + "/dgx-a100.json");
  const std::size_t at = text.find("\"latency_us\": 1.0");
  REQUIRE(at != std::string::npos);
  test::write_text(dir + "/dgx-a100.json", text.replace(at, 12, "\"latency_usec\""));
  const Run r = run("replay -q " + test::dlrm_dir() + " --cluster dgx-a100 --clusters-dir " + dir);
  CHECK(r.code == 2);
  CHECK(lines(r.out) == 1);
  CHECK_THAT(r.out, Catch::Contains(dir + "/dgx-a100.json") && Catch::Contains("inter_node.latency_usec: unknown key"));
  // Every bundled file loads (they give their latencies).
  CHECK(run("replay -q " + test::dlrm_dir() + " --cluster dgx-h200").code == 0);
}

TEST_CASE("an H200 trace is guessed as a DGX H200") {
  const Run r = run("replay " + test::source_path("traces/h200/bert-ddp-emit-nvtx-step") + " --ranks 1");
  CHECK(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("cluster dgx-h200 (guessed from the trace's GPUs)"));
}

TEST_CASE("a what-if whose GPU work outlives the step says the step time leaves it out") {
  const std::string trace = test::source_path("traces/hta/sampled-ws128-rank1.json.gz");
  const Run slow = run_command(std::string(DPRO_REPLAY_BIN) + " replay -q --json - " + trace +
                               " --origin-cluster dgx-a100 --set network.inter_node_gbps=0.01");
  REQUIRE(slow.code == 0);
  const auto j = nlohmann::json::parse(slow.out).at("whatif");
  REQUIRE(j.at("gpu_work_after_step").size() == 2);
  const auto& c = j.at("gpu_work_after_step").at(0);
  CHECK(c.at("gpu_end_after_step_ns").get<Nanos>() > c.at("step_ns").get<Nanos>());
  CHECK_THAT(j.at("notes").dump(), Catch::Contains("do not include it"));
  const Run text = run("replay " + trace + " --origin-cluster dgx-a100 --set network.inter_node_gbps=0.01");
  CHECK_THAT(text.out, Catch::Contains("warning: in 2 of the 2 reported (step, rank) pairs the re-timed GPU work"));
  // An unchanged network: no such case.
  const Run same = run_command(std::string(DPRO_REPLAY_BIN) + " replay -q --json - " + trace +
                               " --origin-cluster dgx-a100 --set network.inter_node_gbps=25");
  REQUIRE(same.code == 0);
  CHECK(nlohmann::json::parse(same.out).at("whatif").at("gpu_work_after_step").empty());
}

TEST_CASE("dpro-replay host-speed measures the --set host.cpu_speed that a what-if on the origin takes") {
  const std::string h100 = test::source_path("traces/h100/gpt2-emit-nvtx-step");
  const std::string h200 = test::source_path("traces/h200/gpt2-emit-nvtx-step");
  const Run text = run("host-speed -q " + h100 + " " + h200);
  REQUIRE(text.code == 0);
  CHECK_THAT(text.out, Catch::StartsWith("host.cpu_speed=") && Catch::Contains("cudaLaunchKernel") &&
                           Catch::Contains("--set host.cpu_speed="));
  const Run json = run("host-speed -q --json - " + h100 + " " + h200);
  REQUIRE(json.code == 0);
  const auto j = nlohmann::json::parse(json.out);
  const double speed = j.at("cpu_speed");
  CHECK(speed > 1.0);
  CHECK(j.at("ops").at(0).at("name") == "cudaLaunchKernel");
  // The speed it printed, given to the what-if: the host's summary line and JSON say what changed.
  const Run w = run("replay -q --json - " + h100 + " --set host.cpu_speed=" + std::to_string(speed));
  REQUIRE(w.code == 0);
  const auto r = nlohmann::json::parse(w.out);
  const auto& host = r.at("whatif").at("changes").at("host");
  CHECK(host.at("cpu_speed").get<double>() == Approx(speed).epsilon(1e-5));
  CHECK(host.at("op_time_after_ns").get<std::int64_t>() < host.at("op_time_before_ns").get<std::int64_t>());
  CHECK(r.at("whatif").at("iterations").at(0).at("job").at("predicted_ns").get<std::int64_t>() <
        r.at("iterations").at(0).at("job").at("measured_ns").get<std::int64_t>());
}

TEST_CASE("A bad host setting exits 2 naming --set and the value") {
  const Run r = run("replay " + test::dlrm_dir() + " --set host.cpu_speed=0");
  CHECK(r.code == 2);
  CHECK(lines(r.out) == 1);
  CHECK_THAT(r.out, Catch::Contains("--set host.cpu_speed=0") && Catch::Contains("positive number"));
  const Run missing = run("host-speed " + test::dlrm_dir() + " /nonexistent/trace.json");
  CHECK(missing.code == 2);
  CHECK_THAT(missing.out, Catch::Contains("/nonexistent/trace.json"));
  // Issue 37: a host so slow that the job would last beyond the replay clock was an internal
  // error (a failed report check, exit 1) after its times overflowed; now one line, exit 2.
  const Run slow = run("replay " + test::dlrm_dir() + " --set host.cpu_speed=1e-300");
  CHECK(slow.code == 2);
  CHECK(lines(slow.out) == 1);
  CHECK_THAT(slow.out, Catch::Contains("beyond the replay clock's bound") && Catch::Contains("host.cpu_speed"));
  const Run fast = run("replay " + test::dlrm_dir() + " --set host.cpu_speed=1e300");
  CHECK(fast.code == 2);
  CHECK_THAT(fast.out, Catch::Contains("up to 1000000"));
}

TEST_CASE("A what-if that leaves the step where it was says why in one sentence, and in JSON") {
  // DLRM's steps on the V100s are bound by their host: another GPU re-times its kernels and the
  // step stays.
  const Run text = run("replay " + test::dlrm_dir() + " --device A100-SXM4-80GB");
  REQUIRE(text.code == 0);
  CHECK_THAT(text.out, Catch::Contains("The step moved +0.00% although the what-if re-timed GPU work") &&
                           Catch::Contains("the step is bound by its host"));
  const Run json = run("replay -q --json - " + test::dlrm_dir() + " --device A100-SXM4-80GB");
  REQUIRE(json.code == 0);
  const auto j = nlohmann::json::parse(json.out);
  const auto& u = j.at("whatif").at("unmoved");
  CHECK(u.at("gpu_after_ns").get<std::int64_t>() < u.at("gpu_before_ns").get<std::int64_t>());
  CHECK(u.at("critical_path_gpu_ns").get<std::int64_t>() * 2 < u.at("critical_path_ns").get<std::int64_t>());
  // A what-if that moves the step (GPT-2 on a slower GPU) says nothing of the kind.
  const Run moved = run("replay -q --json - " + test::source_path("traces/h100/gpt2-emit-nvtx-step") + " --device L4");
  REQUIRE(moved.code == 0);
  CHECK_FALSE(nlohmann::json::parse(moved.out).at("whatif").contains("unmoved"));
}

TEST_CASE("A communication what-if warns when message sizes had to be inferred, and not when they are given") {
  // DLRM as a trace taken without record_shapes has it: its nccl:* ranges record no inputs.
  const std::string dir = test::fresh_dir("cli_unsized");
  for (const std::string& file : test::dlrm_files()) {
    std::string text = read_whole_file(file);
    for (std::size_t at = text.find("\"name\": \"nccl:"); at != std::string::npos; at = text.find("\"name\": \"nccl:", at + 1)) {
      const std::size_t dims = text.find("\"Input Dims\"", at);
      if (dims != std::string::npos && dims < text.find('}', at)) text.replace(dims, 12, "\"Input Dimz\"");
    }
    test::write_text(dir + "/" + std::filesystem::path(file).stem().string(), text);  // drops .gz
  }
  const Run inferred = run("replay " + dir + " --ranks 16");
  REQUIRE(inferred.code == 0);
  CHECK_THAT(inferred.out,
             Catch::Contains("warning: 64 of 64 NCCL ops have no recorded message size (40 of them all-to-alls") &&
                 Catch::Contains("--comm-sizes"));
  const Run given = run("replay " + dir + " --ranks 16 --comm-sizes " + test::source_path("tests/comm/data/dlrm-host-et"));
  REQUIRE(given.code == 0);
  CHECK_THAT(given.out, !Catch::Contains("no recorded message size"));
  const Run recorded = run("replay " + test::dlrm_dir() + " --ranks 16");
  REQUIRE(recorded.code == 0);
  CHECK_THAT(recorded.out, !Catch::Contains("no recorded message size") && Catch::Contains("64 sized by the trace"));
}

TEST_CASE("A bad --profiler-cost exits 2 naming the option and the value, before any trace loads") {
  const std::string trace = test::source_path("traces/hta/cuda-event-sync.json.gz");
  for (const char* bad : {"runtime=2", "runtime=2us,bogus=1us", "runtime=-1us", "runtime=1us,runtime=2us", "runtime=2s"}) {
    INFO(bad);
    const Run r = run("replay -q " + trace + " --profiler-cost '" + bad + "'");
    CHECK(r.code == 2);
    CHECK(lines(r.out) == 1);
    CHECK_THAT(r.out, Catch::StartsWith(std::string("dpro-replay: error: --profiler-cost ") + bad + ": "));
  }
  // A value for a trace that does not exist: the option is checked first.
  CHECK_THAT(run("replay -q /nonexistent --profiler-cost runtime=x").out, Catch::Contains("--profiler-cost runtime=x"));
  const Run both = run("replay -q " + trace + " --profiler-cost runtime=1us --keep-profiler-cost");
  CHECK(both.code == 2);
  CHECK_THAT(both.out, Catch::Contains("excludes"));
}

TEST_CASE("replay --profiler-cost takes the given cost out of a torch.profiler trace and says so; without it the trace replays exactly") {
  const std::string trace = test::source_path("traces/hta/cuda-event-sync.json.gz");
  const Run plain = run("replay -q --json - " + trace);
  REQUIRE(plain.code == 0);
  const auto p = nlohmann::json::parse(plain.out);
  CHECK_FALSE(p.contains("profiler_cost"));
  const auto& step = p.at("iterations").at(0).at("job");
  CHECK(step.at("predicted_ns") == step.at("measured_ns"));
  const Run taken = run("replay -q --json - " + trace + " --profiler-cost runtime=1us,cpu_op=500ns");
  REQUIRE(taken.code == 0);
  const auto t = nlohmann::json::parse(taken.out);
  const auto& cost = t.at("profiler_cost");
  CHECK(cost.at("source") == "given");
  CHECK(cost.at("removed_per_step_ns").get<Nanos>() > 0);
  CHECK(cost.at("classes").at(0).at("class") == "runtime");
  CHECK(cost.at("classes").at(0).at("ns_each_min") == 1000);
  CHECK(t.at("iterations").at(0).at("job").at("predicted_ns").get<Nanos>() < step.at("measured_ns").get<Nanos>());
  const Run text = run("replay " + trace + " --profiler-cost runtime=1us");
  CHECK_THAT(text.out, Catch::Contains("profiler's own cost taken out of the CPU side (given, 1 of 1 ranks): runtime "));
}

TEST_CASE("replay -q prints nothing but errors and still writes its JSON report") {
  const std::string dir = test::fresh_dir("cli_quiet");
  const Run r = run("replay -q --json " + dir + "/r.json " + test::dlrm_dir());
  CHECK(r.code == 0);
  CHECK(r.out.empty());
  CHECK(std::filesystem::file_size(dir + "/r.json") > 1000);
  const Run bad = run("replay -q " + dir + "/missing.json");
  CHECK(bad.code == 2);
  CHECK(lines(bad.out) == 1);
}

TEST_CASE("replay --iteration N --timeline writes that step's window of the timeline only") {
  const std::string dir = test::fresh_dir("cli_timeline_window");
  const std::string trace = test::source_path("traces/h100/gpt2");
  REQUIRE(run("replay -q --timeline " + dir + "/all.json " + trace).code == 0);
  REQUIRE(run("replay -q --iteration 5 --timeline " + dir + "/five.json " + trace).code == 0);
  auto slices = [&](const std::string& file, std::set<std::string>& steps) {
    const auto t = nlohmann::json::parse(read_whole_file(file));
    std::size_t n = 0;
    for (const auto& e : t.at("traceEvents")) {
      if (e.at("ph") != "X") continue;
      ++n;
      const std::string name = e.at("name");
      if (name.rfind("ProfilerStep#", 0) == 0) steps.insert(name);
    }
    return n;
  };
  std::set<std::string> all_steps, five_steps;
  const std::size_t all = slices(dir + "/all.json", all_steps), five = slices(dir + "/five.json", five_steps);
  CHECK(all_steps.size() == 40);
  CHECK(five_steps == std::set<std::string>{"ProfilerStep#5"});
  CHECK(five > 1000);
  CHECK(five * 20 < all);
}

TEST_CASE("replay --table prints GPU-op and collective tables; --csv writes the one asked for") {
  const std::string dir = test::fresh_dir("cli_tables");
  Run r = run("replay --table gpu_ops,collectives --top 3 " + test::dlrm_dir());
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("GPU ops over 1 iteration(s)") && Catch::Contains("collectives over 1 iteration(s)") &&
                        Catch::Contains("bus GB/s"));
  r = run("replay -q --table collectives --csv " + dir + "/c.csv " + test::dlrm_dir());
  REQUIRE(r.code == 0);
  CHECK(read_whole_file(dir + "/c.csv").rfind("rank,op,name,count,bytes", 0) == 0);
  r = run("replay -q --table collectives,gpu_ops --csv " + dir + "/two.csv " + test::dlrm_dir());
  CHECK(r.code == 2);
  CHECK_THAT(r.out, Catch::Contains("--csv") && Catch::Contains("exactly one --table"));
  CHECK(run("replay -q --table kernels_and_more " + test::dlrm_dir()).code == 2);
}

TEST_CASE("replay --table operators,overlap,idle,memory,phases: text, CSV, --help names them, an unknown name is one line") {
  const std::string dir = test::fresh_dir("cli_views");
  const std::string a100 = test::source_path("traces/hta/a100-ws2-rank0-nccl.json.gz");
  Run r = run("replay --table operators,overlap,idle,memory,phases --top 5 " + a100);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("CPU operators over") && Catch::Contains("communication vs computation") &&
                        Catch::Contains("GPU idle time by cause") && Catch::Contains("not recorded") &&
                        Catch::Contains("forward") && Catch::Contains("backward") && Catch::Contains("optimizer"));
  for (const std::string name : {"operators", "overlap", "idle", "memory", "phases"}) {
    const std::string file = dir + "/" + name + ".csv";
    REQUIRE(run("replay -q --table " + name + " --csv " + file + " " + a100).code == 0);
    const std::string csv = read_whole_file(file);
    CHECK(csv.rfind("rank,", 0) == 0);
    CHECK(std::count(csv.begin(), csv.end(), '\n') >= 2);
  }
  const Run help = run("replay --help");
  for (const std::string name : {"gpu_ops", "collectives", "operators", "overlap", "idle", "memory", "phases"})
    CHECK_THAT(help.out, Catch::Contains(name));
  r = run("replay -q --table overlap,kernels_and_more " + a100);
  CHECK(r.code == 2);
  CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 1);
  CHECK_THAT(r.out, Catch::Contains("kernels_and_more"));
}

TEST_CASE("replay --pricer: a value that is no pricer or a pricer without --device is one line and exit 2") {
  const std::string trace = test::source_path("traces/hta/cuda-event-sync.json.gz");
  Run r = run("replay -q " + trace + " --device H100-SXM5-80GB --pricer roofline");
  CHECK(r.code == 2);
  CHECK(lines(r.out) == 1);
  CHECK_THAT(r.out, Catch::Contains("--pricer roofline") && Catch::Contains("learned or roofline-share"));
  r = run("replay -q " + trace + " --pricer roofline-share");
  CHECK(r.code == 2);
  CHECK(lines(r.out) == 1);
  CHECK_THAT(r.out, Catch::Contains("give --device"));
  r = run("replay -q " + trace + " --device H100-SXM5-80GB --pricer roofline-share");
  CHECK(r.code == 0);
}

TEST_CASE("replay --pricer roofline-share --device-samples: samples of another GPU are one line and exit 2") {
  const std::string trace = test::source_path("traces/hta/cuda-event-sync.json.gz");
  const std::string samples = test::binary_path("cli_share_samples.csv");
  std::ofstream(samples) << "OPName,Latency,Device,B,M,N,K\nbmm,1.0,NVIDIA H200,64,512,512,512\n";
  Run r = run("replay -q " + trace + " --device H100-SXM5-80GB --pricer roofline-share --device-samples " + samples);
  CHECK(r.code == 2);
  CHECK(lines(r.out) == 1);
  CHECK_THAT(r.out, Catch::Contains(samples + ": row 2") && Catch::Contains("measured on H200-SXM-141GB") &&
                        Catch::Contains("not on H100-SXM5-80GB"));
  // Of the target: fitted and priced, the summary says by how many.
  std::ofstream(samples) << "OPName,Latency,Device,B,M,N,K\n"
                            "bmm,1.0,NVIDIA H100 80GB HBM3,64,512,512,512\nbmm,1.1,NVIDIA H100 80GB HBM3,64,512,512,512\n"
                            "bmm,0.9,NVIDIA H100 80GB HBM3,64,512,512,512\n";
  r = run("replay " + trace + " --device H100-SXM5-80GB --pricer roofline-share --device-samples " + samples);
  CHECK(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("share scalars fitted on 3 ops measured on H100-SXM5-80GB"));
}
