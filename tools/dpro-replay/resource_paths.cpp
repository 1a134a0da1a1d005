#include "resource_paths.h"

#include <cstdlib>

#include "costmodel/paths.h"
#include "hw/cluster.h"
#include "hw/device_spec.h"

namespace dpro::cli {

namespace {
std::string env_or(const char* name, std::string fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : fallback;
}
}  // namespace

const ResourcePaths& resource_paths() {
  static const ResourcePaths paths{
      env_or("DPRO_DEVICE_DIR", hw::DeviceCatalog::default_directory()),
      env_or("DPRO_CLUSTER_DIR", comm::ClusterCatalog::default_directory()),
      env_or("DPRO_COSTMODEL_MODEL", costmodel::default_model_path()),
      env_or("DPRO_COSTMODEL_DATA", costmodel::default_data_dir()),
      env_or("DPRO_COSTMODEL_SHARES", costmodel::default_shares_path()),
  };
  return paths;
}

}  // namespace dpro::cli
