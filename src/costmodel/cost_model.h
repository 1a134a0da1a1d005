#pragma once
// A cost model prices one op on one device. Implementations compose: the caller asks the
// most specific model first and falls back when it returns nullopt (the op cannot be
// described, or the model is not available in this build). The learned model's times are
// latencies as its training data timed them, from the host: a trace kernel's time is that
// less a measurement overhead (kernel_time.h), which a ratio between two GPUs must remove.
#include <cmath>
#include <optional>
#include <string>

#include "core/time.h"
#include "costmodel/hw.h"
#include "costmodel/op_desc.h"

namespace dpro::costmodel {

class CostModel {
 public:
  virtual ~CostModel() = default;
  virtual std::string name() const = 0;
  virtual std::optional<Nanos> predict(const OpDesc& op, const DeviceSpec& device) const = 0;
};

// Saturates at 1e15 ns (11.6 days for one op; NaN included), so that sums over many ops stay
// within the integer clock.
inline Nanos millis_to_nanos(double ms) {
  const double ns = ms * 1e6 + 0.5;
  constexpr double kMax = 1.0e15;
  if (!(ns < kMax)) return static_cast<Nanos>(kMax);  // too large, or NaN
  return ns > 0 ? static_cast<Nanos>(ns) : 0;
}

}  // namespace dpro::costmodel
