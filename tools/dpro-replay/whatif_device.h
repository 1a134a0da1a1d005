#pragma once
// `dpro-replay replay --device NAME`: re-times every GPU op of the trace as if it ran on
// another GPU. Kernels the learned cost model can describe are priced by it, relative to
// the measured time on the trace's GPU (T_target = T_measured * f(target) / f(origin));
// other kernels, device-to-device copies and memsets use cross-device scaling; collectives
// and host<->device copies keep their measured durations. The summary says how much of the
// measured GPU time each model covered.
#include <memory>

#include "whatif_option.h"

namespace dpro::cli {

std::unique_ptr<WhatIfOption> make_device_whatif();

}  // namespace dpro::cli
