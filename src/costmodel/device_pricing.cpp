#include "costmodel/device_pricing.h"

#include <cmath>

#include "costmodel/features.h"

namespace dpro::costmodel {

const char* DevicePricing::kind_name() const {
  switch (kind) {
    case kUnseen: return "unseen";
    case kTrained: return "trained";
    case kTwin: return "twin";
    case kSibling: return "sibling";
  }
  return "?";
}

DevicePricing device_pricing(const std::set<std::string>& known_devices,
                             const std::map<std::string, std::vector<float>>& known_features, const DeviceSpec& device) {
  if (known_devices.count(device.name)) return {device.name, DevicePricing::kTrained};
  std::vector<float> f(kDeviceIdentityFeatures);
  device_features(device, f.data());
  DevicePricing best;
  double best_distance = 0;
  for (const auto& [name, features] : known_features) {
    if (features == f) return {name, DevicePricing::kTwin};
    if (features[kSmsFeature] != f[kSmsFeature] || features[kCoresFeature] != f[kCoresFeature]) continue;
    double distance = 0;
    for (int i = 0; i < kDeviceIdentityFeatures; ++i) distance += std::abs(features[i] - f[i]);
    if (best.as.empty() || distance < best_distance) {
      best = {name, DevicePricing::kSibling};
      best_distance = distance;
    }
  }
  return best;
}

}  // namespace dpro::costmodel
