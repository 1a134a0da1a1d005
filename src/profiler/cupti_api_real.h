#pragma once
// CuptiApi backed by the real libcupti. CUPTI's buffer callbacks carry no user pointer, so
// the tracer registered last receives them (one per process).
#include <memory>

#include "profiler/cupti_api.h"

namespace dpro::profiler {

std::unique_ptr<CuptiApi> make_real_cupti_api();

}  // namespace dpro::profiler
