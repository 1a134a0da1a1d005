#pragma once
// A cost model prices one op on one device. Implementations compose: the caller asks the
// most specific model first and falls back when it returns nullopt (the op cannot be
// described, or the model is not available in this build).
#include <optional>
#include <string>

#include "core/time.h"
#include "costmodel/device_spec.h"
#include "costmodel/op_desc.h"

namespace dpro::costmodel {

class CostModel {
 public:
  virtual ~CostModel() = default;
  virtual std::string name() const = 0;
  virtual std::optional<Nanos> predict(const OpDesc& op, const DeviceSpec& device) const = 0;
};

inline Nanos millis_to_nanos(double ms) { return static_cast<Nanos>(ms * 1e6 + 0.5); }

}  // namespace dpro::costmodel
