// Finding what ships with dpro from the program's own location (core/install_layout.h).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "core/install_layout.h"

namespace fs = std::filesystem;
using namespace dpro;

TEST_CASE("find_upward finds the nearest folder at or above a start that holds a relative path") {
  const fs::path root = fs::temp_directory_path() / ("dpro-layout-" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "prefix/lib/dpro");
  fs::create_directories(root / "prefix/tools/dpro-replay");
  std::ofstream(root / "prefix/lib/dpro/libx.so") << "x";
  CHECK(install::find_upward(root / "prefix/tools/dpro-replay", "lib/dpro/libx.so") == root / "prefix");
  CHECK(install::find_upward(root / "prefix", "lib/dpro/libx.so") == root / "prefix");  // the start itself
  CHECK(install::find_upward(root / "prefix/tools", "lib/dpro/liby.so").empty());
  CHECK(install::find_upward({}, "lib").empty());
  fs::remove_all(root);
}

TEST_CASE("The test program finds the build tree's resources and libraries from its own folder") {
  const fs::path dir = install::executable_directory();
  REQUIRE_FALSE(dir.empty());
  const fs::path root = install::resource_root();
  CHECK(fs::exists(root / "configs/devices"));
  CHECK(fs::exists(root / "data/costmodel"));
  // Tests live under the build tree, whose share/dpro links to the source's folders.
  CHECK(root.filename() == "dpro");
  CHECK(install::find_library("no-such-library.so").empty());
}
