#pragma once
// Output files named on the command line: the rules are core/output_file.h's; this adds what
// only a CLI knows, the values of a command's options (its inputs).
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "core/output_file.h"

namespace dpro::cli {

using dpro::check_output_path;
using dpro::check_output_paths;
using dpro::flush_stdout;
using dpro::NamedOutput;
using dpro::write_output;

// The values of every option and positional of `command` (given, or defaults) except the
// options in `outputs`: the paths among them are the command's inputs.
std::vector<std::string> command_line_values(const CLI::App& command, const std::vector<std::string>& outputs);

}  // namespace dpro::cli
