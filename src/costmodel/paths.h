#pragma once
// Default locations of the cost models' inputs, under the resource folder found from the
// program's location (core/install_layout.h: <source> below is it in a build tree). A CLI may
// override them (tools/dpro-replay/resource_paths.h: environment variables, flags); no
// library reads the environment.
#include <string>

namespace dpro::costmodel {

std::string default_device_dir();   // <source>/configs/devices
std::string default_model_path();   // <source>/data/costmodel/model.dpcm
std::string default_shares_path();  // <source>/data/costmodel/shares.json (roofline_share.h)
std::string default_data_dir();     // <source>/../shared/data/neusight/train
std::string test_subset_dir();      // <source>/data/costmodel/subset

}  // namespace dpro::costmodel
