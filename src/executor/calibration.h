#pragma once
// Device calibration: measures, on any executor::Device, the costs the cost models price with
// priors today (launch overhead, copy bandwidths, GEMM throughput, cast and compression kernels)
// and how closely the stand-in kernel meets a requested duration, into a DeviceProfile
// (device_profile.h, which also documents the JSON file).
//
// How a figure is measured: the call runs `warmup` times untimed (cuBLASLt's heuristic, NVRTC,
// first touch of memory), then `repetitions` timed runs; the figure is their median (robust to a
// preempted run). A timed run is: a stand-in that holds the stream while the host issues the
// run (so the GPU is never starved by the host's launch rate), an event, the call `count` times
// back to back, an event; the figure is the events' elapsed time / count. `count` is chosen per
// call so that a run lasts about `target_run_ns` (event timing resolves about 0.5 us).
//
// Plain C++ over the Device interface: tested with a fake device whose times follow known
// formulas (tests/calibration). Allocates what a table (a GEMM: its figure) needs and frees it
// before the next.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/time.h"
#include "executor/device.h"
#include "executor/device_profile.h"

namespace dpro::executor {

struct GemmShape {
  std::int64_t m = 0, n = 0, k = 0, batch = 1;  // GemmCall's meaning: C (m x n) = A (m x k) B (k x n)
};
struct GemmVariant {
  DType dtype = DType::kF32;
  MathMode math = MathMode::kDefault;
};

// A stand-in footprint whose accuracy is measured: `blocks` x `threads` (x dimensions only).
struct StandinFootprint {
  std::uint32_t blocks = 1, threads = 128;
};

// Square GEMMs (1024, 4096, 8192) and transformer layers' (GPT-2 small QKV / MLP and a 7B
// model's projections at 8192 tokens, attention scores of 96 heads x 1024 x 1024 x 64).
std::vector<GemmShape> default_gemm_shapes();

struct CalibrationOptions {
  int repetitions = 7;  // timed runs per figure (median)
  int warmup = 2;       // untimed runs before them
  int launches = 200;   // empty kernels per timed run of the launch cost; also the most calls of any run
  Nanos target_run_ns = 200 * kNanosPerMicro;
  std::vector<std::uint64_t> copy_bytes = {4 << 10, 64 << 10, 1 << 20, 16 << 20, 64 << 20};
  std::vector<GemmShape> gemm_shapes = default_gemm_shapes();
  std::vector<GemmVariant> gemm_variants = {{DType::kF32, MathMode::kDefault},
                                            {DType::kF32, MathMode::kTF32},
                                            {DType::kF16, MathMode::kDefault},
                                            {DType::kBF16, MathMode::kDefault}};
  // Casts and compression kernels run at each of these fp32 element counts (each >= 1024).
  std::vector<std::int64_t> kernel_elements = {1 << 16, 1 << 20, 1 << 22, 1 << 24};
  double sparsity_density = 0.01;  // top-k and random-k
  int powersgd_rank = 4;
  std::vector<Nanos> standin_durations = {5'000,   10'000,  20'000,    50'000,    100'000,
                                          200'000, 500'000, 1'000'000, 2'000'000, 5'000'000};
  std::vector<StandinFootprint> standin_footprints = {{1, 128}, {2000, 256}};
  std::string date;  // the profile's date; empty: now (UTC)
};

// Throws OptionError (option named as the member above: "repetitions", "copy_bytes", ...) for a
// value calibrate() cannot use. An empty list is allowed: that table is left empty.
void validate(const CalibrationOptions& options);

// Before each figure: what is measured ("gemm fp16 default 4096x4096x4096x1"), its index from 0
// and the number of figures in all.
struct CalibrationStep {
  std::string what;
  int index = 0;
  int total = 0;
};
using CalibrationProgress = std::function<void(const CalibrationStep&)>;

// Runs the calibration on `device` (its own stream and events; the device should be otherwise
// idle) and returns the profile. Throws OptionError for bad options and whatever the device
// throws (std::runtime_error when it has no room for a table's buffers).
DeviceProfile calibrate(Device& device, const CalibrationOptions& options, const CalibrationProgress& progress = {});

// Least-squares line y = fixed + slope x. A negative intercept (noise at small sizes) is refitted
// through the origin; a negative slope is taken as 0 (fixed = mean y). Fewer than two distinct x:
// fixed = mean y, slope 0. x and y have the same size.
LinearFit fit_line(const std::vector<double>& x, const std::vector<double>& y);

}  // namespace dpro::executor
