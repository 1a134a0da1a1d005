// Whole processes under the profiler, with a fake job that loads the injection library as
// the CUDA driver and NCCL do: exit and kill handling, fork after init, InitializeInjection
// with no GPU driver, and the dpro-profile launcher with torchrun/multiprocessing-style
// worker processes.
#include <catch2/catch.hpp>

#include <dlfcn.h>

#include <filesystem>

#include "run_process.h"
#include "temp_dir.h"
#include "trace/native/clock_alignment.h"
#include "trace/native/native_importer.h"
#include "trace/native/native_reader.h"

using namespace dpro;
namespace fs = std::filesystem;

namespace {

using Env = std::vector<std::pair<std::string, std::string>>;

// The .dpro files in `dir`; none where the directory was never made (a build without CUDA makes
// it only when something is written).
std::vector<std::string> traces_in(const std::string& dir) {
  std::vector<std::string> out;
  if (!fs::is_directory(dir)) return out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".dpro") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

Env job_env(const test::TempDir& dir, const std::string& flush_ms = "0") {
  return {{"NCCL_PROFILER_PLUGIN", DPRO_INJECT_LIB},
          {"DPRO_PROFILE_OUT", dir.path() + "/traces"},
          {"DPRO_PROFILE_FLUSH_MS", flush_ms},
          {"RANK", "1"},
          {"LOCAL_RANK", "1"}};
}

native::NativeCapture only_trace(const test::TempDir& dir, int expected_warnings) {
  auto files = traces_in(dir.path() + "/traces");
  REQUIRE(files.size() == 1);
  Logger log(LogLevel::kQuiet);
  auto c = native::read_native_capture(files[0], log);
  CHECK(log.warning_count() == expected_warnings);
  return c;
}

std::size_t count_func(const native::NativeCapture& c, std::string_view func) {
  std::size_t n = 0;
  for (const auto& x : c.nccl_colls) n += c.str(x.func) == func;
  return n;
}

}  // namespace

TEST_CASE("a job that exits normally writes all records and an end record", "[process]") {
  test::TempDir dir("exit");
  auto r = test::run_process({FAKE_JOB, "--colls", "4"}, job_env(dir), dir.file("job"));
  REQUIRE(r.code == 0);
  auto c = only_trace(dir, 0);
  CHECK(c.has_footer);
  CHECK(count_func(c, "AllReduce") == 4);
  CHECK(c.header.rank == 1);
  CHECK(c.header.local_rank == 1);
  CHECK(c.header.nccl_version == 22809);  // from the job's ncclGetVersion
  CHECK(c.metadata.at("nccl_profiler_abi") == "v5");
  CHECK(fs::path(c.path).filename().string().starts_with("rank1.local1."));
}

TEST_CASE("a child forked after init writes none of the parent's data", "[process]") {
  test::TempDir dir("fork");
  auto r = test::run_process({FAKE_JOB, "--colls", "2", "--fork-child"}, job_env(dir), dir.file("job"));
  REQUIRE(r.code == 0);  // 93/94: the child could still flush
  auto c = only_trace(dir, 0);  // one file: the child created none
  CHECK(c.has_footer);
  CHECK(count_func(c, "AllReduce") == 2);  // not duplicated by the child's exit handler
  CHECK(count_func(c, "ChildOp") == 0);
}

TEST_CASE("a killed job keeps what was flushed and the loader warns about the missing end", "[process]") {
  test::TempDir dir("kill");
  SECTION("explicit flush, then SIGKILL") {
    auto r = test::run_process({FAKE_JOB, "--colls", "3", "--end", "flush-kill"}, job_env(dir), dir.file("job"));
    CHECK(r.code == 128 + 9);
    auto c = only_trace(dir, 1);
    CHECK_FALSE(c.has_footer);
    CHECK(count_func(c, "AllReduce") == 3);
  }
  SECTION("periodic flush, then SIGKILL") {
    auto r = test::run_process({FAKE_JOB, "--colls", "3", "--end", "sleep-kill"}, job_env(dir, "50"), dir.file("job"));
    CHECK(r.code == 128 + 9);
    auto c = only_trace(dir, 1);
    CHECK(count_func(c, "AllReduce") == 3);
  }
  SECTION("_exit without any flush loses only the tail") {
    auto r = test::run_process({FAKE_JOB, "--colls", "3", "--end", "abandon"}, job_env(dir), dir.file("job"));
    CHECK(r.code == 0);
    auto c = only_trace(dir, 1);
    CHECK(c.nccl_colls.empty());
    CHECK(c.header.rank == 1);
  }
}

TEST_CASE("InitializeInjection without a GPU driver warns once and the job runs on", "[process]") {
  void* lib = dlopen(DPRO_INJECT_LIB, RTLD_NOW | RTLD_LOCAL);
  REQUIRE(lib);
  bool has_injection = dlsym(lib, "InitializeInjection") != nullptr;
  dlclose(lib);
  if (!has_injection) {
    WARN("built without CUPTI: InitializeInjection is not exported");
    return;
  }
  test::TempDir dir("inject");
  Env env = job_env(dir);
  env.emplace_back("CUDA_INJECTION64_PATH", DPRO_INJECT_LIB);
  auto r = test::run_process({FAKE_JOB, "--inject", "--colls", "2"}, env, dir.file("job"));
  CHECK(r.code == 0);
  INFO("stderr: " << r.err);
  std::size_t lines = 0;
  for (std::size_t p = r.err.find("dpro-profile:"); p != std::string::npos; p = r.err.find("dpro-profile:", p + 1)) ++lines;
  CHECK(lines == 1);
  CHECK(r.err.find("CUDA tracing is off") != std::string::npos);
  auto c = only_trace(dir, 0);  // the NCCL side still records
  CHECK(count_func(c, "AllReduce") == 2);
  CHECK(c.header.cupti_version >= 130000);  // cuptiGetVersion works without a driver
}

TEST_CASE("a process that recorded nothing leaves no trace file", "[process]") {
  // Seen on the H100: torchrun's agent starts CUDA, runs nothing, and its empty trace stopped
  // `dpro-replay replay <dir>`. Here CUPTI cannot start (no driver) and NCCL is not used.
  test::TempDir dir("nothing");
  Env env = {{"CUDA_INJECTION64_PATH", DPRO_INJECT_LIB},
             {"DPRO_PROFILE_OUT", dir.path() + "/traces"},
             {"DPRO_PROFILE_FLUSH_MS", "0"}};
  auto r = test::run_process({FAKE_JOB, "--inject", "--cuda-only"}, env, dir.file("job"));
  CHECK(r.code == 0);
  CHECK(traces_in(dir.path() + "/traces").empty());
  // The same process with one NCCL collective keeps its file.
  env.emplace_back("NCCL_PROFILER_PLUGIN", DPRO_INJECT_LIB);
  r = test::run_process({FAKE_JOB, "--inject", "--colls", "1"}, env, dir.file("job2"));
  CHECK(r.code == 0);
  CHECK(traces_in(dir.path() + "/traces").size() == 1);
}

#ifdef DPRO_PROFILE_BIN
TEST_CASE("dpro-profile runs a multi-process job: one trace per rank, the job's exit code", "[process][launcher]") {
  test::TempDir dir("launch");
  std::string out = dir.file("out");
  auto r = test::run_process({DPRO_PROFILE_BIN, "--out", out, "--steps", "1:2", "--", FAKE_JOB,
                              "--spawn", "2", "--colls", "3", "--code", "3"},
                             {}, dir.file("launcher"));
  CHECK(r.code == 3);
  INFO("stderr: " << r.err);
  CHECK(r.err.find("2 trace file(s)") != std::string::npos);
  auto files = traces_in(out);
  REQUIRE(files.size() == 2);
  CHECK(fs::path(files[0]).filename().string().starts_with("rank0.local0."));
  CHECK(fs::path(files[1]).filename().string().starts_with("rank1.local1."));
  trace::TraceSet set;
  Logger log(LogLevel::kQuiet);
  for (const auto& f : files) {
    auto capture = native::read_native_capture(f, log);
    CHECK(capture.metadata.at("steps") == "1:2");
    CHECK(capture.header.world_size == 2);
    CHECK(count_func(capture, "AllReduce") == 3);
    set.ranks.push_back(trace::make_native_importer()->read(f, set.strings, {}, log));
  }
  CHECK(set.ranks[1].rank == 1);
  trace::align_clocks(set, log);  // one host: unchanged
  CHECK_FALSE(set.ranks[1].clock_offset);
  // A second run into the same folder is told that the folder's traces would replay as one job.
  auto again = test::run_process({DPRO_PROFILE_BIN, "--out", out, "--", FAKE_JOB, "--colls", "1"}, {}, dir.file("again"));
  CHECK(again.code == 0);
  CHECK(again.err.find("already holds 2 trace file(s) of earlier runs") != std::string::npos);
}

TEST_CASE("dpro-profile rejects bad options and reports a command that cannot start", "[process][launcher]") {
  test::TempDir dir("badopt");
  auto bad = test::run_process({DPRO_PROFILE_BIN, "--steps", "5:1", "--", "true"}, {}, dir.file("a"));
  CHECK(bad.code == 2);
  CHECK(bad.err.find("--steps") != std::string::npos);
  auto none = test::run_process({DPRO_PROFILE_BIN, "--out", dir.file("o")}, {}, dir.file("b"));
  CHECK(none.code == 2);
  auto missing = test::run_process({DPRO_PROFILE_BIN, "--out", dir.file("o"), "--json", "--",
                                    dir.file("no-such-program")}, {}, dir.file("c"));
  CHECK(missing.code == 127);
  CHECK(missing.out.find("\"exit_code\": 127") != std::string::npos);
}
#endif
