#include "kernels/standin_plan.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace dpro::kernels {

StandinPlan plan_standin(const executor::StandinKernel& k, int sm_count, int blocks_per_sm,
                         const StandinCalibration& cal) {
  std::uint64_t threads = std::uint64_t{k.block[0]} * k.block[1] * k.block[2];
  StandinPlan plan;
  plan.blocks = std::uint64_t{k.grid[0]} * k.grid[1] * k.grid[2];
  if (plan.blocks == 0 || threads == 0) throw std::invalid_argument("stand-in kernel: empty grid or block");
  if (threads > 1024) throw std::invalid_argument("stand-in kernel: block of " + std::to_string(threads) + " threads (> 1024)");
  if (sm_count < 1 || blocks_per_sm < 1) throw std::invalid_argument("stand-in kernel: no SM or no resident block");
  plan.resident_slots = std::uint64_t(sm_count) * std::uint64_t(blocks_per_sm);
  plan.waves = (plan.blocks + plan.resident_slots - 1) / plan.resident_slots;
  // Each wave after the first pays no extra launch cost, so the fixed cost comes off once.
  double spin_total = (static_cast<double>(std::max<Nanos>(k.duration, 0)) - cal.fixed_ns) / cal.slope;
  plan.spin_per_block = static_cast<Nanos>(std::max(0.0, spin_total) / static_cast<double>(plan.waves));
  if (cal.cycles_per_ns > 0 && plan.spin_per_block > 0 && plan.spin_per_block < kClockSpinBelow) {
    plan.spin_cycles = static_cast<std::uint64_t>(std::llround(static_cast<double>(plan.spin_per_block) * cal.cycles_per_ns));
  }
  return plan;
}

StandinCalibration fit_standin_calibration(const std::vector<StandinSample>& samples) {
  double n = static_cast<double>(samples.size()), sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const StandinSample& s : samples) {
    double x = static_cast<double>(s.requested), y = static_cast<double>(s.measured);
    sx += x, sy += y, sxx += x * x, sxy += x * y;
  }
  double denominator = n * sxx - sx * sx;
  if (samples.size() < 2 || denominator <= 0) {
    throw std::invalid_argument("stand-in calibration needs samples at two or more requested durations");
  }
  StandinCalibration cal;
  cal.slope = std::clamp((n * sxy - sx * sy) / denominator, 0.5, 2.0);
  cal.fixed_ns = std::max(0.0, (sy - cal.slope * sx) / n);
  return cal;
}

}  // namespace dpro::kernels
