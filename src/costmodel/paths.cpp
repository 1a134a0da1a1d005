#include "costmodel/paths.h"

#include <cstdlib>

#include "costmodel/device_spec.h"

namespace dpro::costmodel {

namespace {
std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : fallback;
}
const std::string kSource = DPRO_COSTMODEL_SOURCE_DIR;
}  // namespace

std::string default_device_dir() { return DeviceCatalog::default_directory(); }
std::string default_model_path() { return env_or("DPRO_COSTMODEL_MODEL", kSource + "/data/costmodel/model.dpcm"); }
std::string default_data_dir() { return env_or("DPRO_COSTMODEL_DATA", kSource + "/../shared/data/neusight/train"); }
std::string test_subset_dir() { return kSource + "/data/costmodel/subset"; }

}  // namespace dpro::costmodel
