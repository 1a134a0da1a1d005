#include "output_file.h"

#include <algorithm>

namespace dpro::cli {

std::vector<std::string> command_line_values(const CLI::App& command, const std::vector<std::string>& outputs) {
  std::vector<std::string> values;
  for (const CLI::Option* option : command.get_options()) {
    if (std::any_of(outputs.begin(), outputs.end(), [&](const std::string& o) { return option->check_name(o); }))
      continue;
    if (option->count() > 0) values.insert(values.end(), option->results().begin(), option->results().end());
    else if (!option->get_default_str().empty()) values.push_back(option->get_default_str());
  }
  return values;
}

}  // namespace dpro::cli
