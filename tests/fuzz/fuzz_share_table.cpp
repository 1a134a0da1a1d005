// Fuzz target: a roofline-share table (data/costmodel/shares.json, costmodel/roofline_share.h; a
// user's `--shares F.json`). Oracles: a table the parser accepts prices a probe op of every family
// it has curves for on two GPUs with a finite time of at least the family's kernel floor, a
// latency of at least that time, and a finite, positive ratio between the GPUs; it survives its
// own JSON (written, read back and written again: the same text). Bad input is an InputError,
// never another exception, a crash or a hang.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "costmodel/roofline_share.h"
#include "fuzz_support.h"
#include "hw/device_spec.h"

namespace {

namespace cm = dpro::costmodel;

const dpro::hw::DeviceSpec& gpu(bool second) {
  static const dpro::hw::DeviceSpec a = dpro::hw::parse_device_spec(
      R"({"name": "FUZZ-A", "memory_gb": 32, "memory_bandwidth_gbs": 900, "sms": 80, "fp32_cores_per_sm": 64,
          "boost_clock_mhz": 1380, "l2_cache_mb": 6, "peak_tflops": {"fp32": 14.0, "fp16": 112.0}})",
      "fuzz-a.json");
  static const dpro::hw::DeviceSpec b = dpro::hw::parse_device_spec(
      R"({"name": "FUZZ-B", "memory_gb": 80, "memory_bandwidth_gbs": 3350, "sms": 132, "fp32_cores_per_sm": 128,
          "boost_clock_mhz": 1980, "l2_cache_mb": 50, "peak_tflops": {"fp32": 67.0, "tf32": 494.7, "fp16": 989.4}})",
      "fuzz-b.json");
  return second ? b : a;
}

// A describable op of `family`: a mid-sized one of its shape.
cm::OpDesc probe(cm::OpFamily family) {
  cm::OpDesc op;
  op.family = family;
  switch (family) {
    case cm::OpFamily::kBmm: op.dims = {8, 512, 512, 512}; break;
    case cm::OpFamily::kLinear: op.dims = {1, 1024, 1024, 1024}; break;
    case cm::OpFamily::kConv2d: op.dims = {32, 64, 64, 3, 56, 1, 1}; break;
    default: op.dims = {1024, 1024}; break;
  }
  return op;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  cm::ShareTable table;
  try {
    table = cm::share_table_from_json(text, "fuzz-shares.json");
  } catch (const dpro::InputError& e) {
    dpro::fuzz::note(e.what());
    return 0;
  }
  dpro::fuzz::note("accepted");
  for (const auto& [family, f] : table.families) {
    const cm::OpDesc op = probe(family);
    if (!op.describable()) continue;
    for (const bool second : {false, true}) {
      const auto kernel = table.kernel_ms(op, gpu(second));
      const auto latency = table.latency_ms(op, gpu(second));
      DPRO_FUZZ_CHECK(kernel && latency, std::string(cm::to_string(family)) + " in " + text);
      DPRO_FUZZ_CHECK(std::isfinite(*kernel) && *kernel > 0 && *kernel >= f.kernel_floor_ms,
                      std::string(cm::to_string(family)) + ": kernel " + std::to_string(*kernel));
      DPRO_FUZZ_CHECK(std::isfinite(*latency) && *latency >= *kernel,
                      std::string(cm::to_string(family)) + ": latency " + std::to_string(*latency));
    }
    const auto ratio = cm::share_kernel_ratio(table, op, gpu(false), gpu(true));
    DPRO_FUZZ_CHECK(ratio && std::isfinite(*ratio) && *ratio > 0, std::string(cm::to_string(family)) + ": ratio");
  }
  const std::string once = cm::share_table_to_json(table);
  std::string twice;
  try {
    twice = cm::share_table_to_json(cm::share_table_from_json(once, "fuzz-shares-written.json"));
  } catch (const dpro::InputError& e) {
    DPRO_FUZZ_CHECK(false, std::string("its own JSON refused: ") + e.what());
  }
  DPRO_FUZZ_CHECK(once == twice, once);
  return 0;
}
