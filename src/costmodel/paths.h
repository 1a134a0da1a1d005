#pragma once
// Default locations of the cost models' inputs in this source tree; each can be overridden
// by an environment variable (for installed binaries) and by the commands' flags.
#include <string>

namespace dpro::costmodel {

std::string default_device_dir();   // $DPRO_DEVICE_DIR or <source>/configs/devices
std::string default_model_path();   // $DPRO_COSTMODEL_MODEL or <source>/data/costmodel/model.dpcm
std::string default_data_dir();     // $DPRO_COSTMODEL_DATA or <source>/../shared/data/neusight/train
std::string test_subset_dir();      // <source>/data/costmodel/subset

}  // namespace dpro::costmodel
