#include "kernels/standin_plan.h"

#include <catch2/catch.hpp>

#include <stdexcept>

using dpro::executor::StandinKernel;
using namespace dpro::kernels;

TEST_CASE("stand-in: a grid that fits in one wave spins the whole duration", "[kernels][standin]") {
  StandinKernel k{{132, 1, 1}, {256, 1, 1}, 50'000};
  StandinPlan p = plan_standin(k, 132, 8);
  CHECK(p.blocks == 132);
  CHECK(p.resident_slots == 1056);
  CHECK(p.waves == 1);
  CHECK(p.spin_per_block == 50'000);
}

TEST_CASE("stand-in: blocks beyond the resident slots split the duration into waves", "[kernels][standin]") {
  // 108 SMs x 2 resident = 216 slots; 40 x 20 x 1 = 800 blocks -> 4 waves (3.7 rounded up).
  StandinKernel k{{40, 20, 1}, {32, 16, 2}, 1'000'000};
  StandinPlan p = plan_standin(k, 108, 2);
  CHECK(p.blocks == 800);
  CHECK(p.waves == 4);
  CHECK(p.spin_per_block == 250'000);
  // One more SM's worth of slots does not change the rounding: 800 / 218 is still 4 waves.
  CHECK(plan_standin(k, 109, 2).waves == 4);
  CHECK(plan_standin(k, 200, 2).waves == 2);
}

TEST_CASE("stand-in: the calibration's fixed cost comes off once and its slope scales the spin", "[kernels][standin]") {
  StandinKernel k{{1, 1, 1}, {128, 1, 1}, 12'000};
  StandinCalibration cal{2'000, 1.25};
  CHECK(plan_standin(k, 10, 4, cal).spin_per_block == 8'000);  // (12000 - 2000) / 1.25
  k.duration = 1'500;  // shorter than the launch itself: no spin at all
  CHECK(plan_standin(k, 10, 4, cal).spin_per_block == 0);
}

TEST_CASE("stand-in: bad shapes are refused", "[kernels][standin]") {
  CHECK_THROWS_AS(plan_standin(StandinKernel{{0, 1, 1}, {32, 1, 1}, 10}, 10, 1), std::invalid_argument);
  CHECK_THROWS_AS(plan_standin(StandinKernel{{1, 1, 1}, {64, 32, 1}, 10}, 10, 1), std::invalid_argument);
  CHECK_THROWS_AS(plan_standin(StandinKernel{{1, 1, 1}, {32, 1, 1}, 10}, 0, 1), std::invalid_argument);
}

TEST_CASE("stand-in calibration: a least-squares line recovers launch cost and slope", "[kernels][standin]") {
  std::vector<StandinSample> samples;
  for (dpro::Nanos r : {0, 10'000, 50'000, 200'000}) {
    // measured = 3 us + 1.02 * requested, with +-100 ns of alternating noise
    dpro::Nanos noise = (r / 10'000) % 2 ? 100 : -100;
    samples.push_back({r, 3'000 + r + r / 50 + noise});
  }
  StandinCalibration cal = fit_standin_calibration(samples);
  CHECK(cal.slope == Approx(1.02).epsilon(0.005));
  CHECK(cal.fixed_ns == Approx(3'000).margin(150));
  CHECK_THROWS_AS(fit_standin_calibration({{5, 10}, {5, 12}}), std::invalid_argument);
}

TEST_CASE("stand-in: short spins are counted in SM cycles at the calibrated clock rate", "[kernels][standin]") {
  StandinCalibration cal{1'000, 1.0, 1.755};  // a 1755 MHz SM clock
  StandinPlan p = plan_standin(StandinKernel{{10, 1, 1}, {256, 1, 1}, 9'000}, 10, 2, cal);
  CHECK(p.spin_per_block == 8'000);
  CHECK(p.spin_cycles == 14'040);
  p = plan_standin(StandinKernel{{10, 1, 1}, {256, 1, 1}, 200'000}, 10, 2, cal);
  CHECK(p.spin_cycles == 0);  // long enough for %globaltimer
  cal.cycles_per_ns = 0;      // no clock rate measured: always the timer
  CHECK(plan_standin(StandinKernel{{10, 1, 1}, {256, 1, 1}, 9'000}, 10, 2, cal).spin_cycles == 0);
}
