#pragma once
// What the optimizer's tests and benchmark build on: the resources a search reads (the cost
// model, the GPU specs and the cluster files), taken from the tree itself.
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "costmodel/paths.h"
#include "optimizer/space.h"
#include "optimizer/tolerances.h"
#include "test_paths.h"

namespace dpro::test {

// The tree's cost model, GPU specs and clusters; no device profile.
inline optimizer::ResourcePaths resource_paths() {
  return {costmodel::default_model_path(), costmodel::default_device_dir(), source_path("configs/clusters"), ""};
}

// A tolerance file's rules from JSON text, as read from "tol.json".
inline optimizer::Tolerances parse_tolerance_text(const char* text) {
  return optimizer::parse_tolerances(nlohmann::json::parse(text), "tol.json");
}

// The InputError message of a bad tolerance file ("" when it parses).
inline std::string tolerance_error(const char* text) {
  try {
    parse_tolerance_text(text);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace dpro::test
