#include "core/install_layout.h"

#include <system_error>

namespace dpro::install {

namespace fs = std::filesystem;

fs::path executable_directory() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : exe.parent_path();
}

fs::path find_upward(const fs::path& dir, const fs::path& relative) {
  if (dir.empty()) return {};
  for (fs::path at = dir;; at = at.parent_path()) {
    std::error_code ec;
    if (fs::exists(at / relative, ec)) return at;
    if (at == at.parent_path()) return {};
  }
}

fs::path resource_root() {
  const fs::path dir = executable_directory();
  // The first folder up the tree that has either layout; at one level the install layout wins.
  for (fs::path at = dir; !at.empty(); at = at.parent_path()) {
    std::error_code ec;
    if (fs::exists(at / "share/dpro/configs/devices", ec)) return at / "share/dpro";
    if (fs::exists(at / "configs/devices", ec) && fs::exists(at / "data", ec)) return at;
    if (at == at.parent_path()) break;
  }
  return dir.empty() ? fs::path("share/dpro") : dir.parent_path() / "share/dpro";
}

fs::path find_library(const std::string& file_name) {
  const fs::path dir = executable_directory();
  if (dir.empty()) return {};
  const fs::path relative = fs::path("lib/dpro") / file_name;
  if (const fs::path at = find_upward(dir, relative); !at.empty()) return at / relative;
  std::error_code ec;
  if (fs::is_regular_file(dir / file_name, ec)) return dir / file_name;
  return {};
}

}  // namespace dpro::install
