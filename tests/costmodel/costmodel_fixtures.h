#pragma once
// Shared helpers of the cost-model tests.
#include <cstdint>
#include <utility>
#include <vector>

#include "costmodel/hw.h"
#include "costmodel/op_desc.h"
#include "test_paths.h"

namespace dpro::test {

inline costmodel::OpDesc make_op(costmodel::OpFamily family, std::vector<std::int64_t> dims) {
  costmodel::OpDesc op;
  op.family = family;
  op.name = costmodel::to_string(family);
  op.dims = std::move(dims);
  return op;
}

// The bundled device specs (configs/devices), loaded once.
inline const costmodel::DeviceCatalog& catalog() {
  static const auto c = costmodel::DeviceCatalog::load_directory(source_path("configs/devices"));
  return c;
}

}  // namespace dpro::test
