#include "output_file.h"

#include <filesystem>
#include <fstream>
#include <iostream>

#include "core/error.h"

namespace dpro::cli {
namespace fs = std::filesystem;

void check_output_path(const std::string& path, const std::vector<std::string>& inputs, bool force) {
  if (path == "-") return;
  std::error_code ec;
  for (const std::string& input : inputs) {
    if (fs::exists(input, ec) && fs::exists(path, ec) && fs::equivalent(input, path, ec)) {
      throw InputError(path, "", "refusing to write an output over one of its inputs");
    }
  }
  if (fs::exists(path, ec) && !force) throw InputError(path, "", "exists; pass --force to overwrite it");
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty() && !fs::is_directory(parent, ec)) throw InputError(path, "", "its directory does not exist");
}

void write_output(const std::string& path, const std::function<void(std::ostream&)>& write) {
  if (path == "-") {
    write(std::cout);
    std::cout.flush();
    return;
  }
  const std::string temporary = path + ".partial";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) throw InputError(path, "", "cannot open for writing");
    write(out);
    out.flush();
    if (!out) throw InputError(path, "", "write failed");
  }
  std::error_code ec;
  fs::rename(temporary, path, ec);
  if (ec) throw InputError(path, "", "cannot rename the finished output into place: " + ec.message());
}

}  // namespace dpro::cli
