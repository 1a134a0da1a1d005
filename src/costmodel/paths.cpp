#include "costmodel/paths.h"


#include <filesystem>
#include <system_error>

#include "core/install_layout.h"
#include "costmodel/hw.h"

namespace dpro::costmodel {

namespace {
std::string in_data(const char* relative) { return (install::resource_root() / "data" / relative).string(); }
}  // namespace

std::string default_device_dir() { return DeviceCatalog::default_directory(); }
std::string default_model_path() { return in_data("costmodel/model.dpcm"); }
std::string default_shares_path() { return in_data("costmodel/shares.json"); }
// The shared data sits beside a source tree (<source>/../shared); data/ in a build tree is a link
// to <source>/data, so the link is resolved first.
std::string default_data_dir() {
  std::error_code ec;
  const auto data = std::filesystem::weakly_canonical(install::resource_root() / "data", ec);
  return ((ec ? install::resource_root() / "data" : data).parent_path().parent_path() / "shared/data/neusight/train").string();
}
std::string test_subset_dir() { return in_data("costmodel/subset"); }

}  // namespace dpro::costmodel
