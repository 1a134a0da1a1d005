#pragma once
// The calibration's probe in a traced process: cudaGetDevice (a runtime API record) and
// cuDeviceGetCount (a driver API record), taken from the CUDA runtime and driver the job has
// already loaded (dlopen with RTLD_NOLOAD: nothing is loaded that the job did not load; a job
// with a statically linked runtime gets no runtime probe). Ready once cuInit has completed.
#include <memory>

#include "profiler/record_cost.h"

namespace dpro::profiler {

std::unique_ptr<CostProbe> make_real_cost_probe();

}  // namespace dpro::profiler
