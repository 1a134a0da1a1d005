#pragma once
// Default locations of the cost models' inputs in this source tree; each can be overridden
// by an environment variable (for installed binaries) and by the commands' flags. And the
// check that an input path given as a file is not a directory.
#include <string>

namespace dpro::costmodel {

std::string default_device_dir();   // $DPRO_DEVICE_DIR or <source>/configs/devices
std::string default_model_path();   // $DPRO_COSTMODEL_MODEL or <source>/data/costmodel/model.dpcm
std::string default_data_dir();     // $DPRO_COSTMODEL_DATA or <source>/../shared/data/neusight/train
std::string test_subset_dir();      // <source>/data/costmodel/subset

// Throws InputError "<path>: is a directory, expected <expected>" when `path` is a directory
// (reading one fails deep inside the C library with no word of what was wrong).
void reject_directory(const std::string& path, const std::string& expected);

}  // namespace dpro::costmodel
