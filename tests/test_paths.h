#pragma once
// Paths of the repository's bundled fixtures, for tests.
#include <string>

namespace dpro::test {

inline std::string source_path(const std::string& relative) {
  return std::string(DPRO_SOURCE_DIR) + "/" + relative;
}
inline std::string binary_path(const std::string& relative) {
  return std::string(DPRO_BINARY_DIR) + "/" + relative;
}

}  // namespace dpro::test
