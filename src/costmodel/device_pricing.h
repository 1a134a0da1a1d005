#pragma once
// How the learned model prices a GPU, decided from its file's header alone (the GPUs it was
// trained on and their datasheet figures): with the identity of a GPU of its training data
// (the GPU itself, its twin or its sibling), or by its unseen-GPU network. The torch backend
// prices by it, and `costmodel devices` shows it without loading LibTorch.
#include <map>
#include <set>
#include <string>
#include <vector>

#include "costmodel/hw.h"

namespace dpro::costmodel {

// `as`: the GPU of the training data whose identity prices this one: the GPU itself, its twin
// (the same datasheet inputs) or its sibling (the same chip: SM count and fp32 cores per SM;
// its own clock, bandwidth, ... in the op-relative features); empty: a GPU outside the data,
// priced by the unseen-GPU network.
struct DevicePricing {
  std::string as;
  enum Kind { kUnseen, kTrained, kTwin, kSibling } kind = kUnseen;
  const char* kind_name() const;  // "unseen", "trained", "twin", "sibling"
};

// `known_devices`: canonical names of the GPUs trained on; `known_features`: their
// device_features (features.h). A sibling is the closest GPU of the same chip by the summed
// differences of those features.
DevicePricing device_pricing(const std::set<std::string>& known_devices,
                             const std::map<std::string, std::vector<float>>& known_features, const DeviceSpec& device);

}  // namespace dpro::costmodel
