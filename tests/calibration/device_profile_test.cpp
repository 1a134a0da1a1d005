// The device profile's JSON file: a calibrated profile survives the round trip, and a bad file
// is one InputError that names the file and the key.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include "calibration/timed_fake_device.h"
#include "core/error.h"
#include "executor/calibration.h"
#include "executor/device_profile.h"

namespace dpro::executor {
namespace {

namespace fs = std::filesystem;

DeviceProfile small_profile() {
  test::TimedFakeDevice device;
  CalibrationOptions o;
  o.date = "2026-11-26T15:00:00Z";
  o.gemm_shapes = {{512, 256, 128, 1}, {64, 64, 32, 12}};
  o.kernel_elements = {1 << 12, 1 << 16};
  o.copy_bytes = {4096, 1 << 20};
  o.standin_durations = {5'000, 50'000};
  return calibrate(device, o);
}

// A fresh folder for this test's files, removed at the end.
struct TempDir {
  fs::path path = fs::temp_directory_path() / ("dpro_profile_" + std::to_string(::getpid()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path / name) << text;
    return (path / name).string();
  }
};

// The InputError that reading `text` as the file `name` throws (fails the test if none).
InputError read_error(const TempDir& dir, const std::string& name, const std::string& text) {
  const std::string file = dir.write(name, text);
  try {
    read_device_profile(file);
  } catch (const InputError& e) {
    return e;
  }
  FAIL("no InputError for " << name);
  return InputError("", "", "");
}

// The profile's JSON with one edit.
template <typename Edit>
std::string edited(Edit edit) {
  nlohmann::json j = nlohmann::json::parse(device_profile_json(small_profile()));
  edit(j);
  return j.dump(2);
}

}  // namespace

TEST_CASE("device profile: a calibrated profile survives the JSON round trip", "[calibration]") {
  const DeviceProfile p = small_profile();
  const std::string text = device_profile_json(p);
  TempDir dir;
  const std::string file = dir.path / "profile.json";
  write_device_profile(file, p, false);
  const DeviceProfile back = read_device_profile(file);
  CHECK(device_profile_json(back) == text);
  CHECK(back.device == "timed fake");
  CHECK(back.repetitions == 7);
  REQUIRE(back.copies.size() == 3);
  CHECK(back.copies[2].kind == hw::CopyDirection::kDeviceToDevice);
  CHECK(back.copies[0].bandwidth_gbps == p.copies[0].bandwidth_gbps);
  REQUIRE(back.gemms.size() == 8);
  CHECK(back.gemms[1].batch == 12);
  CHECK(back.gemms[3].math == hw::GemmMath::kTF32);
  CHECK(back.gemms[7].dtype == hw::DType::kBFloat16);
  REQUIRE(back.kernels.size() == 6);
  CHECK(back.kernels[5].kernel == "powersgd");
  CHECK(back.kernels[5].samples[1].elements == 1 << 16);
  REQUIRE(back.standin.size() == 4);
  CHECK(back.standin[3].blocks == 2000);
  CHECK(back.standin[3].error_ns == p.standin[3].error_ns);
  // The file says what it is and its units.
  const auto j = nlohmann::json::parse(text);
  CHECK(j["format"] == "dpro-device-profile");
  CHECK(j["version"] == 1);
  CHECK(j["copies"][0].contains("latency_ns"));
  CHECK(j["gemms"][0].contains("tflops"));
}

TEST_CASE("device profile: unknown keys are ignored, missing tables are empty", "[calibration]") {
  TempDir dir;
  const std::string file = dir.write("p.json", edited([](nlohmann::json& j) {
    j["nccl"] = {{"later", true}};
    j.erase("gemms");
  }));
  const DeviceProfile p = read_device_profile(file);
  CHECK(p.gemms.empty());
  CHECK(p.copies.size() == 3);
}

TEST_CASE("device profile: a bad file is one InputError naming the file and the key", "[calibration]") {
  TempDir dir;
  const auto check = [&](const InputError& e, const std::string& item, const std::string& words) {
    INFO(e.what());
    CHECK(e.item() == item);
    CHECK(std::string(e.what()).find(words) != std::string::npos);
    CHECK(std::string(e.what()).find('\n') == std::string::npos);
    CHECK(std::string(e.what()).rfind(dir.path.string(), 0) == 0);  // starts with the file
  };
  check(read_error(dir, "bandwidth.json", edited([](nlohmann::json& j) { j["copies"][1]["bandwidth_gbps"] = -5; })),
        "copies[1].bandwidth_gbps", "got -5");
  check(read_error(dir, "kind.json", edited([](nlohmann::json& j) { j["copies"][0]["kind"] = "h2h"; })),
        "copies[0].kind", "\"h2h\"");
  check(read_error(dir, "dtype.json", edited([](nlohmann::json& j) { j["gemms"][2]["dtype"] = 16; })),
        "gemms[2].dtype", "must be a string");
  check(read_error(dir, "sample.json",
                   edited([](nlohmann::json& j) { j["kernels"][3]["samples"][1].erase("elements"); })),
        "kernels[3].samples[1].elements", "missing");
  check(read_error(dir, "launch.json", edited([](nlohmann::json& j) { j.erase("launch"); })), "launch", "missing");
  check(read_error(dir, "table.json", edited([](nlohmann::json& j) { j["standin"] = 3; })), "standin",
        "must be an array");
  check(read_error(dir, "format.json", edited([](nlohmann::json& j) { j["format"] = "dpro-plan"; })), "format",
        "not a device profile");
  check(read_error(dir, "version.json", edited([](nlohmann::json& j) { j["version"] = 2; })), "version", "newer");
  check(read_error(dir, "broken.json", "{\"format\": \"dpro-device-profile\", "), "", "not valid JSON");
  // A number beyond a double's range: the parser's out_of_range, one InputError like a syntax error.
  check(read_error(dir, "overflow.json", "{\"format\": \"dpro-device-profile\", \"version\": 1e999}"), "",
        "not valid JSON");
  check(read_error(dir, "array.json", "[1, 2]"), "", "no JSON object");
}

TEST_CASE("device profile: a file nested deeper than 256 levels is one InputError, not a stack overflow", "[calibration]") {
  // Fuzzing finding 5 (docs/fuzzing.md): a value nested 200,000 deep where an object belongs was
  // written into the message by nlohmann's dump, which recursed until the stack overflowed.
  TempDir dir;
  const auto nested = [](std::size_t levels) { return std::string(levels, '[') + std::string(levels, ']'); };
  const std::string head = R"({"format": "dpro-device-profile", "version": 1, "device": "x", "date": "y", )"
                           R"("repetitions": 1, "warmup": 0, "launch": )";
  const InputError e = read_error(dir, "deep.json", head + nested(200000) + "}");
  CHECK(e.item() == "");
  CHECK_THAT(e.what(), Catch::Contains("deep.json") && Catch::Contains("deeper than 256 levels"));
  // 256 levels, the file's object included, are read (an unknown key nested that deep is ignored).
  const std::string good = edited([](nlohmann::json&) {});
  const std::string body = good.substr(0, good.rfind('}'));
  CHECK_NOTHROW(read_device_profile(dir.write("limit.json", body + R"(, "deeper": )" + nested(255) + "}")));
  CHECK_THAT(read_error(dir, "over.json", body + R"(, "deeper": )" + nested(256) + "}").what(),
             Catch::Contains("deeper than 256 levels"));
}

TEST_CASE("device profile: a missing file or a folder is an InputError naming it", "[calibration]") {
  TempDir dir;
  const std::string missing = (dir.path / "none.json").string();
  CHECK_THROWS_WITH(read_device_profile(missing), Catch::Contains(missing));
  CHECK_THROWS_AS(read_device_profile(dir.path.string()), InputError);
}

}  // namespace dpro::executor
