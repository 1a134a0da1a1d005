#pragma once
// Inputs of the learned model for one (op, device) pair: the op's serialised compact AST
// (token rows) and a vector of global features (device specs, and the op's roofline terms on
// that device). The model predicts log(latency / roofline time), so that what it learns is
// an efficiency that transfers between GPUs.
#include <optional>

#include "costmodel/compact_ast.h"
#include "costmodel/device_spec.h"
#include "costmodel/op_desc.h"

namespace dpro::costmodel {

constexpr int kGlobalFeatures = 14;

struct FeatureRow {
  float tokens[kMaxAstTokens * kTokenFeatures] = {};
  float global[kGlobalFeatures] = {};
  int token_count = 0;
  double roofline_ms = 0;  // the baseline the model's output multiplies
};

// Fills `row` from a compact AST; false when it cannot be serialised.
bool make_features(const CompactAst& ast, const OpDesc& op, const DeviceSpec& device, FeatureRow& row);
// build_ast + make_features; false when the op is not describable.
bool make_features(const OpDesc& op, const DeviceSpec& device, FeatureRow& row);

// Device-only features (first 7 global features), also used by k-means and reports.
void device_features(const DeviceSpec& device, float* out);

}  // namespace dpro::costmodel
