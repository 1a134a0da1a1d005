#pragma once
// Where a dpro program finds what ships with it (the device and cluster catalogs in configs/, the
// cost model's files in data/, the profiler's and the learned model's libraries), found from the
// program's own location at run time, so that no path of the machine that built it is compiled
// in and a build tree or an installed copy can be moved.
//
// Layouts found, walking up from the program's folder:
//   <prefix>/share/dpro/{configs,data} and <prefix>/lib/dpro/*.so  (`cmake --install`; a build
//       tree, where CMake links share/dpro/configs and share/dpro/data to the source's and puts
//       the libraries in lib/dpro);
//   <source>/configs, <source>/data                                 (a build folder inside the source tree).
// No environment is read here (a CLI may override each folder: tools/dpro-replay/resource_paths.h).
#include <filesystem>
#include <string>

namespace dpro::install {

// The running program's folder; empty when /proc/self/exe cannot be read.
std::filesystem::path executable_directory();

// The first of `dir`, its parent, its parent's parent ... up to the root, under which `relative`
// exists; empty when none has it (or `dir` is empty).
std::filesystem::path find_upward(const std::filesystem::path& dir, const std::filesystem::path& relative);

// The folder holding configs/ and data/ (see above). When none is found: <program>/../share/dpro,
// where an install would put it, so that a missing file is reported under the path expected.
std::filesystem::path resource_root();

// A library shipped with dpro, by file name: lib/dpro/NAME at or above the program's folder, or
// NAME beside the program; empty when neither exists.
std::filesystem::path find_library(const std::string& file_name);

}  // namespace dpro::install
