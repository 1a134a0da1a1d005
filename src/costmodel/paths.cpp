#include "costmodel/paths.h"


#include "costmodel/hw.h"

namespace dpro::costmodel {

namespace {
const std::string kSource = DPRO_COSTMODEL_SOURCE_DIR;
}  // namespace

std::string default_device_dir() { return DeviceCatalog::default_directory(); }
std::string default_model_path() { return kSource + "/data/costmodel/model.dpcm"; }
std::string default_shares_path() { return kSource + "/data/costmodel/shares.json"; }
std::string default_data_dir() { return kSource + "/../shared/data/neusight/train"; }
std::string test_subset_dir() { return kSource + "/data/costmodel/subset"; }

}  // namespace dpro::costmodel
