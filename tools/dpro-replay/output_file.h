#pragma once
// Output files named on the command line: never overwrite an input, and never overwrite an
// existing file unless the user passed --force. Writes go to a temporary file renamed into
// place, so a failed run leaves no half-written output.
#include <functional>
#include <ostream>
#include <string>
#include <vector>

namespace dpro::cli {

// Throws InputError if `path` may not be written. "-" means standard output.
void check_output_path(const std::string& path, const std::vector<std::string>& inputs, bool force);

// Calls write(stream) for `path` ("-" = stdout); throws InputError on I/O failure.
void write_output(const std::string& path, const std::function<void(std::ostream&)>& write);

}  // namespace dpro::cli
