// calibrate() on a real GPU (the CUDA device), with short options: the figures must be those of
// a GPU, within wide bounds any data-centre GPU of the last years meets. Where
// open_cuda_device finds no usable GPU the case prints "no usable GPU" and ctest counts it as
// skipped; issue 33 runs it on a GPU machine. The profile is printed for the run's log.
#include <catch2/catch.hpp>

#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>

#include "executor/calibration.h"
#include "executor/cuda/cuda_device.h"

namespace dpro::executor {

TEST_CASE("calibration on the GPU: figures of a GPU, and the profile printed", "[calibration][cuda]") {
  std::unique_ptr<Device> device;
  try {
    device = open_cuda_device(0);
  } catch (const std::runtime_error& e) {
    if (std::string(e.what()).rfind("no usable GPU", 0) != 0) throw;
    std::cout << e.what() << "\n";
    return;
  }
  CalibrationOptions o;
  o.gemm_shapes = {{1024, 1024, 1024, 1}, {4096, 4096, 4096, 1}};
  o.kernel_elements = {1 << 16, 1 << 20, 1 << 22};
  const DeviceProfile p = calibrate(*device, o, [](const CalibrationStep& s) {
    std::cerr << "[" << s.index + 1 << "/" << s.total << "] " << s.what << "\n";
  });
  std::cout << device_profile_json(p);
  CHECK(p.launch.gpu_ns_per_launch > 300);
  CHECK(p.launch.gpu_ns_per_launch < 20'000);
  CHECK(p.launch.host_ns_per_launch > 100);
  CHECK(p.launch.host_ns_per_launch < 50'000);
  REQUIRE(p.copies.size() == 3);
  for (const CopyCurve& c : p.copies) {
    INFO(hw::to_string(c.kind) << ": " << c.latency_ns << " ns + bytes / " << c.bandwidth_gbps << " GB/s");
    CHECK(c.bandwidth_gbps > 1);
    CHECK(c.latency_ns < 100'000);
  }
  for (const GemmSample& g : p.gemms) {
    INFO(hw::to_string(g.dtype) << " " << hw::to_string(g.math) << " " << g.m << ": " << g.tflops << " TFLOP/s");
    CHECK(g.tflops > 0.5);
  }
  for (const KernelCurve& c : p.kernels) {
    INFO(c.kernel);
    CHECK(c.samples.size() == 3);
    CHECK(c.samples.back().ns > 0);
  }
  for (const StandinError& s : p.standin) CHECK(s.measured_ns > 0);
}

}  // namespace dpro::executor
