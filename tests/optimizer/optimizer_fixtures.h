#pragma once
// What the optimizer's tests and benchmark build on: the resources a search reads (the cost
// model, the GPU specs and the cluster files), taken from the tree itself.
#include "costmodel/paths.h"
#include "optimizer/space.h"
#include "test_paths.h"

namespace dpro::test {

// The tree's cost model, GPU specs and clusters; no device profile.
inline optimizer::ResourcePaths resource_paths() {
  return {costmodel::default_model_path(), costmodel::default_device_dir(), source_path("configs/clusters"), ""};
}

}  // namespace dpro::test
