#pragma once
// Where the commands find their resources: the libraries' defaults (this source tree's
// configs/devices, configs/clusters, data/costmodel/model.dpcm and the shared training data),
// each overridden by an environment variable for installed binaries, and by the commands'
// flags. The one place dpro-replay reads them; no library reads the environment.
//   DPRO_DEVICE_DIR, DPRO_CLUSTER_DIR, DPRO_COSTMODEL_MODEL, DPRO_COSTMODEL_DATA, DPRO_COSTMODEL_SHARES
#include <string>

namespace dpro::cli {

struct ResourcePaths {
  std::string device_dir;
  std::string cluster_dir;
  std::string model_path;
  std::string data_dir;
  std::string shares_path;
};

const ResourcePaths& resource_paths();

}  // namespace dpro::cli
