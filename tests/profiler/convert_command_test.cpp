// `dpro-replay convert`: native trace -> Kineto-style Chrome JSON that Perfetto opens.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <filesystem>

#include "cmd_convert.h"
#include "core/byte_source.h"
#include "core/error.h"
#include "core/output_file.h"
#include "native_trace_builder.h"
#include "temp_dir.h"

using namespace dpro;
using namespace dpro::native;

namespace {

constexpr std::uint64_t kT0 = 1'700'000'000'000'000'000ull + 123'456;

void write_trace(const std::string& path) {
  test::NativeTraceBuilder b(test::header_for(3, "node-z", 4));
  b.add(DeviceRecord{0, "NVIDIA H100 80GB HBM3", 80ull << 30, 9, 0, 132});
  b.add(ApiRecord{ApiKind::kRuntime, 211, kT0, kT0 + 1500, 10, 11, 7, "cudaLaunchKernel_v7000"});
  b.add(KernelRecord{kT0 + 2000, kT0 + 9000, 0, 1, 7, 7, "gemm \"quoted\"", {1, 2, 3}, {4, 5, 6}, 0, 0});
  b.add(MarkerRecord{kMarkerStart, kT0, 1, 10, 11, "ProfilerStep#4", ""});
  b.add(MarkerRecord{kMarkerEnd, kT0 + 10000, 1, 10, 11, "", ""});
  b.write(path);
}

int run_convert(const std::vector<std::string>& args) {
  CLI::App app;
  auto command = cli::make_convert_command();
  CLI::App* sub = command->add_to(app);
  std::vector<std::string> argv = {"dpro-replay", "convert"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<const char*> c;
  for (auto& a : argv) c.push_back(a.c_str());
  app.parse(static_cast<int>(c.size()), c.data());
  REQUIRE(sub->parsed());
  dpro::forget_opened_inputs();  // each run is its own command, as in its own process
  return command->run();
}

}  // namespace

TEST_CASE("convert writes Kineto-style Chrome JSON", "[convert]") {
  test::TempDir dir("convert");
  write_trace(dir.file("r3.dpro"));
  REQUIRE(run_convert({dir.file("r3.dpro"), "-o", dir.file("r3.json"), "-q"}) == 0);
  auto j = nlohmann::json::parse(read_whole_file(dir.file("r3.json")));
  CHECK(j["schemaVersion"] == 1);
  CHECK(j["distributedInfo"]["rank"] == 3);
  CHECK(j["distributedInfo"]["world_size"] == 4);
  CHECK(j["deviceProperties"][0]["numSms"] == 132);
  std::int64_t base = j["baseTimeNanoseconds"];
  const nlohmann::json* kernel = nullptr;
  int flows = 0, steps = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "X" && e["cat"] == "kernel") kernel = &e;
    if ((e["ph"] == "s" || e["ph"] == "f") && e["cat"] == "ac2g") ++flows;
    if (e["ph"] == "X" && e["cat"] == "user_annotation" && e["name"] == "ProfilerStep#4") ++steps;
  }
  REQUIRE(kernel);
  CHECK((*kernel)["name"] == "gemm \"quoted\"");
  CHECK((*kernel)["pid"] == 0);
  CHECK((*kernel)["tid"] == 7);
  CHECK((*kernel)["args"]["correlation"] == 7);
  CHECK((*kernel)["args"]["grid"] == nlohmann::json::array({1, 2, 3}));
  double ts = (*kernel)["ts"];
  CHECK(base + static_cast<std::int64_t>(ts * 1000 + 0.5) == static_cast<std::int64_t>(kT0 + 2000));
  CHECK((*kernel)["dur"].get<double>() == Approx(7.0));
  CHECK(flows == 2);
  CHECK(steps == 1);
}

TEST_CASE("convert writes gzip when asked and refuses to overwrite without --force", "[convert]") {
  test::TempDir dir("convertgz");
  write_trace(dir.file("r.dpro"));
  REQUIRE(run_convert({dir.file("r.dpro"), "-o", dir.file("r.json.gz"), "-q"}) == 0);
  ByteSource source(dir.file("r.json.gz"));
  char head[4] = {};
  source.read(head, 1);
  CHECK(source.gzipped());
  CHECK(nlohmann::json::parse(read_whole_file(dir.file("r.json.gz")))["traceEvents"].size() > 3);
  CHECK_THROWS_WITH(run_convert({dir.file("r.dpro"), "-o", dir.file("r.json.gz"), "-q"}),
                    Catch::Contains("--force"));
  CHECK(run_convert({dir.file("r.dpro"), "-o", dir.file("r.json.gz"), "-q", "--force"}) == 0);
}

TEST_CASE("convert rejects input that is not a native trace, naming the file", "[convert]") {
  test::TempDir dir("convertbad");
  std::ofstream(dir.file("x.dpro")) << "{}";
  CHECK_THROWS_AS(run_convert({dir.file("x.dpro"), "-o", dir.file("x.json")}), InputError);
  CHECK_THROWS_WITH(run_convert({dir.file("x.dpro"), "-o", dir.file("x.json")}), Catch::Contains("x.dpro"));
  CHECK_FALSE(std::filesystem::exists(dir.file("x.json")));
}
