// calibrate() against a fake device whose times follow known formulas (timed_fake_device.h): the
// profile must give those formulas' constants back. Tolerance: 1 % on every fitted constant and
// figure (the fake is exact; the margin covers integer ns and the fits' rounding). A 30 % error
// on one run in nine (preemption) and a 1 ms first launch must not show in any figure.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "calibration/timed_fake_device.h"
#include "core/error.h"
#include "executor/calibration.h"

namespace dpro::executor {
namespace {

using test::FakeCosts;
using test::TimedFakeDevice;

constexpr double kTolerance = 0.01;

bool near(double got, double want) { return std::abs(got - want) <= kTolerance * std::abs(want) + 1e-9; }

const CopyCurve& curve_of(const DeviceProfile& p, CopyKind kind) {
  for (const CopyCurve& c : p.copies) {
    if (c.kind == profile_direction(kind)) return c;
  }
  FAIL("no copy curve " << copy_kind_name(kind));
  return p.copies.front();
}

const KernelCurve& curve_of(const DeviceProfile& p, const std::string& kernel) {
  for (const KernelCurve& c : p.kernels) {
    if (c.kernel == kernel) return c;
  }
  FAIL("no kernel curve " << kernel);
  return p.kernels.front();
}

CalibrationOptions dated() {
  CalibrationOptions o;
  o.date = "2026-11-26T15:00:00Z";
  return o;
}

}  // namespace

TEST_CASE("calibration: launch cost is the GPU's back-to-back time, not the host's issue rate", "[calibration]") {
  FakeCosts costs;  // the host issues a launch in 5 us, the GPU runs an empty one in 3 us
  TimedFakeDevice device(costs);
  const DeviceProfile p = calibrate(device, dated());
  INFO("gpu " << p.launch.gpu_ns_per_launch << " ns, host " << p.launch.host_ns_per_launch << " ns");
  CHECK(near(p.launch.gpu_ns_per_launch, 3'000));
  CHECK(near(p.launch.host_ns_per_launch, 5'000));
  CHECK(p.launch.launches == 200);
  CHECK(p.device == "timed fake");
  CHECK(p.date == "2026-11-26T15:00:00Z");
}

TEST_CASE("calibration: copy curves give each direction's latency and bandwidth", "[calibration]") {
  TimedFakeDevice device;
  const DeviceProfile p = calibrate(device, dated());
  REQUIRE(p.copies.size() == 3);
  const struct {
    CopyKind kind;
    double latency, gbps;
  } want[] = {{CopyKind::kHostToDevice, 2'000, 20},
              {CopyKind::kDeviceToHost, 2'500, 25},
              {CopyKind::kDeviceToDevice, 1'500, 1'000}};
  for (const auto& w : want) {
    const CopyCurve& c = curve_of(p, w.kind);
    INFO(copy_kind_name(w.kind) << ": latency " << c.latency_ns << " ns, " << c.bandwidth_gbps << " GB/s");
    CHECK(near(c.latency_ns, w.latency));
    CHECK(near(c.bandwidth_gbps, w.gbps));
    REQUIRE(c.samples.size() == 5);
    CHECK(c.samples.back().bytes == 64u << 20);
    CHECK(near(static_cast<double>(c.samples.back().ns), w.latency + (64 << 20) / w.gbps));
  }
}

TEST_CASE("calibration: GEMM throughput per dtype and math mode at each shape", "[calibration]") {
  TimedFakeDevice device;
  const CalibrationOptions o = dated();
  const DeviceProfile p = calibrate(device, o);
  REQUIRE(p.gemms.size() == o.gemm_variants.size() * o.gemm_shapes.size());
  for (const GemmSample& g : p.gemms) {
    const double flops = 2.0 * g.m * g.n * g.k * g.batch;
    const double rate = g.dtype != hw::DType::kFloat32 ? 100e3 : g.math == hw::GemmMath::kTF32 ? 50e3 : 25e3;  // flops/ns
    const double ns = 2'000 + flops / rate;
    INFO(hw::to_string(g.dtype) << " " << hw::to_string(g.math) << " " << g.m << "x" << g.n << "x" << g.k << "x" << g.batch
                            << ": " << g.ns << " ns, " << g.tflops << " TFLOP/s");
    CHECK(near(static_cast<double>(g.ns), ns));
    CHECK(near(g.tflops, flops / ns / 1e3));
  }
  // The 8192^3 half-precision GEMMs come within 0.1 % of the fake's 100 TFLOP/s.
  const GemmSample& big_fp16 = p.gemms[2 * o.gemm_shapes.size() + 2];
  REQUIRE(big_fp16.dtype == hw::DType::kFloat16);
  REQUIRE(big_fp16.m == 8192);
  CHECK(big_fp16.tflops == Approx(100).epsilon(0.001));
}

TEST_CASE("calibration: cast and compression curves give latency and per-element cost", "[calibration]") {
  FakeCosts costs;
  TimedFakeDevice device(costs);
  const DeviceProfile p = calibrate(device, dated());
  REQUIRE(p.kernels.size() == costs.kernels.size());
  for (const auto& [name, want] : costs.kernels) {
    const KernelCurve& c = curve_of(p, name);
    INFO(name << ": " << c.latency_ns << " ns + " << c.ns_per_element << " ns/element");
    CHECK(near(c.latency_ns, want.first));
    CHECK(near(c.ns_per_element, want.second));
    CHECK(c.samples.size() == 4);
  }
  CHECK(curve_of(p, "topk").param == 0.01);
  CHECK(curve_of(p, "powersgd").param == 4);
  CHECK(curve_of(p, "signpack").param == 0);
}

TEST_CASE("calibration: stand-in accuracy is reported, requested against measured", "[calibration]") {
  TimedFakeDevice device;  // a stand-in of d ns runs 3 us + 1.01 d
  const CalibrationOptions o = dated();
  const DeviceProfile p = calibrate(device, o);
  REQUIRE(p.standin.size() == o.standin_durations.size() * o.standin_footprints.size());
  for (const StandinError& s : p.standin) {
    const double want = 3'000 + 0.01 * static_cast<double>(s.requested_ns);
    INFO(s.blocks << "x" << s.threads << " " << s.requested_ns << " ns: measured " << s.measured_ns);
    CHECK(near(static_cast<double>(s.error_ns), want));
    CHECK(s.measured_ns - s.requested_ns == s.error_ns);
    CHECK(s.error_pct == Approx(100.0 * s.error_ns / s.requested_ns));
  }
  CHECK(p.standin.front().requested_ns == 5'000);
  CHECK(p.standin.back().requested_ns == 5'000'000);
  CHECK(p.standin.back().blocks == 2000);
}

TEST_CASE("calibration: one slow run in nine does not move any figure (median)", "[calibration]") {
  FakeCosts clean;
  clean.preempt_every = 0;
  TimedFakeDevice quiet(clean), noisy;
  const DeviceProfile a = calibrate(quiet, dated());
  const DeviceProfile b = calibrate(noisy, dated());
  CHECK(device_profile_json(a) == device_profile_json(b));
}

TEST_CASE("calibration: reports progress and frees what it allocated", "[calibration]") {
  TimedFakeDevice device;
  CalibrationOptions o = dated();
  o.gemm_shapes = {{256, 256, 256, 1}};
  std::vector<CalibrationStep> steps;
  calibrate(device, o, [&](const CalibrationStep& s) { steps.push_back(s); });
  const int total = 2 + 3 * 5 + 4 * 1 + 6 * 4 + 2 * 10;
  REQUIRE(static_cast<int>(steps.size()) == total);
  for (int i = 0; i < total; ++i) {
    CHECK(steps[i].index == i);
    CHECK(steps[i].total == total);
  }
  CHECK(steps[2].what == "copy h2d 4096 bytes");
  CHECK(steps[17].what == "gemm fp32 default 256x256x256x1");
  CHECK(device.live_bytes() == 0);
  // One table's buffers at a time: the largest is the compression table's at 2^24 elements, a
  // 64 MiB gradient, its residual and a payload buffer twice its size.
  CHECK(device.peak_bytes() == 4 * (64ull << 20));
}

TEST_CASE("calibration: empty tables are skipped", "[calibration]") {
  TimedFakeDevice device;
  CalibrationOptions o = dated();
  o.copy_bytes.clear();
  o.gemm_shapes.clear();
  o.kernel_elements.clear();
  o.standin_durations.clear();
  const DeviceProfile p = calibrate(device, o);
  CHECK(p.copies.empty());
  CHECK(p.gemms.empty());
  CHECK(p.kernels.empty());
  CHECK(p.standin.empty());
  CHECK(near(p.launch.gpu_ns_per_launch, 3'000));
}

TEST_CASE("calibration: bad options are refused, naming the option", "[calibration]") {
  TimedFakeDevice device;
  const auto refused = [&](const CalibrationOptions& o, const std::string& option) {
    try {
      calibrate(device, o);
    } catch (const OptionError& e) {
      CHECK(e.option() == option);
      return;
    }
    FAIL("no OptionError for " << option);
  };
  CalibrationOptions o;
  o.repetitions = 0;
  refused(o, "repetitions");
  o = {};
  o.launches = 5000;
  refused(o, "launches");
  o = {};
  o.kernel_elements = {1 << 20, 100};
  refused(o, "kernel_elements");
  o = {};
  o.gemm_shapes = {{16, 0, 16, 1}};
  refused(o, "gemm_shapes");
  o = {};
  o.standin_footprints = {{4, 2048}};
  refused(o, "standin_footprints");
  o = {};
  o.sparsity_density = 0.9;
  refused(o, "sparsity_density");
  CHECK(device.launches() == 0);
}

TEST_CASE("calibration: fit_line", "[calibration]") {
  const LinearFit exact = fit_line({1, 2, 4}, {12, 14, 18});
  CHECK(exact.fixed == Approx(10));
  CHECK(exact.slope == Approx(2));
  const LinearFit origin = fit_line({10, 20}, {5, 30});  // intercept -20: refitted through 0
  CHECK(origin.fixed == 0);
  CHECK(origin.slope == Approx((10 * 5 + 20 * 30) / 500.0));
  const LinearFit falling = fit_line({1, 2}, {10, 8});
  CHECK(falling.slope == 0);
  CHECK(falling.fixed == Approx(9));
  const LinearFit one = fit_line({3, 3}, {4, 6});
  CHECK(one.slope == 0);
  CHECK(one.fixed == Approx(5));
}

}  // namespace dpro::executor
