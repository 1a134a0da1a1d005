#pragma once
// Output files named on the command line. Rules, checked before any work is done:
// - never over an input: a file the command reads, or a file inside a directory it reads;
// - never over an existing file unless the user passed --force; a symbolic link is followed
//   (the rules apply to its target, which is rewritten, and the link kept);
// - a FIFO or character device (/dev/null, a pipe) is written straight into, --force or not,
//   and so is an open file of the process (/dev/stdout, appended to);
//   a directory or any other kind of file is refused;
// - two outputs of one command never name the same file, nor both '-' (standard output).
// Regular files are written to PATH.partial renamed into place, so a failed run leaves neither
// a half-written output nor the .partial file. A name ending in .gz is gzip-compressed.
#include <CLI/CLI.hpp>

#include <functional>
#include <ostream>
#include <string>
#include <vector>

namespace dpro::cli {

// An output option as given: its flag ("--json") and its path ("-" = standard output).
struct NamedOutput {
  std::string option;
  std::string path;
};

// Throws InputError if one of `outputs` may not be written; empty paths are skipped. `inputs`
// are every file or directory the command may read.
void check_output_paths(const std::vector<NamedOutput>& outputs, const std::vector<std::string>& inputs, bool force);
void check_output_path(const std::string& path, const std::vector<std::string>& inputs, bool force);

// The values of every option and positional of `command` (given, or defaults) except the
// options in `outputs`: the paths among them are the command's inputs.
std::vector<std::string> command_line_values(const CLI::App& command, const std::vector<std::string>& outputs);

// Calls write(stream) for `path` ("-" = stdout); throws InputError on I/O failure.
void write_output(const std::string& path, const std::function<void(std::ostream&)>& write);

// Flushes std::cout; throws InputError if anything written to it was lost (a full disk, a
// closed pipe), so that a run whose report went nowhere does not exit 0.
void flush_stdout();

}  // namespace dpro::cli
