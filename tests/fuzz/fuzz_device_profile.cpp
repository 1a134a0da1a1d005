// Fuzz target: a device profile (hw/device_profile.h), what `dpro-exec calibrate` writes and a user
// gives as `--device-profile F.json`. Oracles: every figure of a profile the reader accepts is
// finite and within the bounds the reader documents (device_profile.cpp: times 0 to 1e15 ns, rates
// 0 to 1e9, GEMM dimensions 1 to 1e9, threads 1 to 1024, ...); the device and date are not empty;
// written (device_profile_json) and read back, it gives the same text. Bad input is an InputError naming the file,
// never another exception, a crash or a hang.
#include <cmath>
#include <cstdint>
#include <string>

#include "core/error.h"
#include "fuzz_support.h"
#include "hw/device_profile.h"

namespace {

namespace hw = dpro::hw;

bool within(double x, double lo, double hi) { return std::isfinite(x) && x >= lo && x <= hi; }
bool whole_within(double x, double lo, double hi) { return within(x, lo, hi) && std::floor(x) == x; }

constexpr double kMaxNanos = 1e15;  // kNanosRange, kCountRange
constexpr double kMaxRate = 1e9;    // kRateRange

void check_bounds(const hw::DeviceProfile& p) {
  DPRO_FUZZ_CHECK(!p.device.empty() && !p.date.empty(), "device or date empty");
  DPRO_FUZZ_CHECK(p.repetitions >= 1 && p.repetitions <= 1000000, std::to_string(p.repetitions));
  DPRO_FUZZ_CHECK(p.warmup >= 0 && p.warmup <= 1000000, std::to_string(p.warmup));
  DPRO_FUZZ_CHECK(within(p.launch.gpu_ns_per_launch, 0, kMaxRate), std::to_string(p.launch.gpu_ns_per_launch));
  DPRO_FUZZ_CHECK(within(p.launch.host_ns_per_launch, 0, kMaxRate), std::to_string(p.launch.host_ns_per_launch));
  DPRO_FUZZ_CHECK(p.launch.launches >= 0 && p.launch.launches <= 1000000000, std::to_string(p.launch.launches));
  for (const hw::CopyCurve& c : p.copies) {
    DPRO_FUZZ_CHECK(within(c.latency_ns, 0, kMaxRate) && within(c.bandwidth_gbps, 0, kMaxRate), "copy fit");
    for (const hw::CopySample& s : c.samples)
      DPRO_FUZZ_CHECK(s.bytes <= kMaxNanos && s.ns >= 0 && s.ns <= kMaxNanos, "copy sample");
  }
  for (const hw::GemmSample& g : p.gemms) {
    for (const std::int64_t d : {g.m, g.n, g.k, g.batch}) DPRO_FUZZ_CHECK(d >= 1 && d <= 1000000000, std::to_string(d));
    DPRO_FUZZ_CHECK(g.ns >= 0 && g.ns <= kMaxNanos, std::to_string(g.ns));
    DPRO_FUZZ_CHECK(within(g.tflops, 0, kMaxRate), std::to_string(g.tflops));
  }
  for (const hw::KernelCurve& k : p.kernels) {
    DPRO_FUZZ_CHECK(!k.kernel.empty(), "kernel name empty");
    DPRO_FUZZ_CHECK(within(k.param, 0, kMaxRate) && within(k.latency_ns, 0, kMaxRate) &&
                        within(k.ns_per_element, 0, kMaxRate),
                    k.kernel);
    for (const hw::KernelSample& s : k.samples)
      DPRO_FUZZ_CHECK(s.elements >= 0 && s.elements <= kMaxNanos && s.ns >= 0 && s.ns <= kMaxNanos, "kernel sample");
  }
  for (const hw::StandinError& s : p.standin) {
    DPRO_FUZZ_CHECK(s.blocks >= 1 && s.threads >= 1 && s.threads <= 1024, "stand-in grid");
    DPRO_FUZZ_CHECK(s.requested_ns >= 0 && s.requested_ns <= kMaxNanos && s.measured_ns >= 0 &&
                        s.measured_ns <= kMaxNanos,
                    "stand-in times");
    DPRO_FUZZ_CHECK(whole_within(static_cast<double>(s.error_ns), -kMaxNanos, kMaxNanos), std::to_string(s.error_ns));
    DPRO_FUZZ_CHECK(within(s.error_pct, -1e9, 1e9), std::to_string(s.error_pct));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  hw::DeviceProfile profile;
  try {
    profile = hw::parse_device_profile(text, "fuzz-profile.json");
  } catch (const dpro::InputError& e) {
    dpro::fuzz::note(e.what());
    // One line naming the file (an OptionError names a command-line option instead: not this file's).
    DPRO_FUZZ_CHECK(e.file() == "fuzz-profile.json", e.what());
    return 0;
  }
  dpro::fuzz::note("accepted");
  check_bounds(profile);
  const std::string once = hw::device_profile_json(profile);
  std::string twice;
  try {
    twice = hw::device_profile_json(hw::parse_device_profile(once, "fuzz-profile-written.json"));
  } catch (const dpro::InputError& e) {
    DPRO_FUZZ_CHECK(false, std::string("its own JSON refused: ") + e.what());
  }
  DPRO_FUZZ_CHECK(once == twice, once);
  return 0;
}
