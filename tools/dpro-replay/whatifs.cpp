#include "whatif_cluster.h"
#include "whatif_device.h"
#include "whatif_option.h"

namespace dpro::cli {

std::vector<std::unique_ptr<WhatIfOption>> make_whatif_options() {
  std::vector<std::unique_ptr<WhatIfOption>> options;
  options.push_back(make_device_whatif());
  options.push_back(make_cluster_whatif());
  return options;
}

}  // namespace dpro::cli
