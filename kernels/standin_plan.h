#pragma once
// The host-side arithmetic of the stand-in kernel (kernels/standin.cu): how long each block of a
// recorded grid must spin so that the whole grid occupies the GPU for the recorded duration, and
// the per-device calibration that corrects the request for the launch's fixed cost.
//
// A grid of B blocks on S SMs with R resident blocks per SM (the stand-in's occupancy at that
// block size) runs in W = ceil(B / (S * R)) waves; each block spins duration / W, so the waves
// together take the duration. Units: ns.
//
// Blocks time their spin on %globaltimer (ns), which some GPUs update only every microsecond or
// so; a spin shorter than kClockSpinBelow is counted in SM clock cycles (clock64) instead, at
// the rate the calibration measured.
#include <cstdint>
#include <vector>

#include "core/time.h"
#include "executor/device.h"

namespace dpro::kernels {

inline constexpr Nanos kClockSpinBelow = 20'000;

struct StandinCalibration {
  // Measured kernel time ~ fixed_ns + slope * requested spin (one wave), fitted per device.
  double fixed_ns = 0;
  double slope = 1;
  double cycles_per_ns = 0;  // SM clock (clock64) against %globaltimer; 0: unknown, no cycle spins
};

struct StandinPlan {
  std::uint64_t blocks = 0;          // grid x * y * z
  std::uint64_t resident_slots = 0;  // SMs * resident blocks per SM
  std::uint64_t waves = 0;
  Nanos spin_per_block = 0;          // what each block spins for (after calibration)
  std::uint64_t spin_cycles = 0;     // > 0: spin this many clock64 cycles instead (short spins)
};

// Throws std::invalid_argument for an empty grid or block, a block over 1024 threads, or
// sm_count / blocks_per_sm < 1.
StandinPlan plan_standin(const executor::StandinKernel& k, int sm_count, int blocks_per_sm,
                         const StandinCalibration& cal = {});

// One calibration measurement: a one-wave stand-in asked to spin `requested`, measured `measured`.
struct StandinSample {
  Nanos requested = 0;
  Nanos measured = 0;
};
// Least-squares line through the samples; slope held to [0.5, 2] (a spin loop on %globaltimer
// cannot be far off real time; a worse fit means noisy samples) and fixed_ns to >= 0. Throws
// std::invalid_argument with fewer than two distinct requested values.
StandinCalibration fit_standin_calibration(const std::vector<StandinSample>& samples);

}  // namespace dpro::kernels
