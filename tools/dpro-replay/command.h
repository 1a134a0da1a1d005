#pragma once
// Each dpro-replay subcommand is a small class: its flags are members, add_to() declares
// them on the parent CLI app, run() does the work and returns the exit code. InputErrors
// thrown from run() are printed as one line by main() and give exit code 2.
#include <CLI/CLI.hpp>

#include <memory>
#include <vector>

namespace dpro::cli {

class Command {
 public:
  virtual ~Command() = default;
  virtual CLI::App* add_to(CLI::App& parent) = 0;
  virtual int run() = 0;
};

// Every subcommand of this build; defined in commands.cpp (one line per command).
std::vector<std::unique_ptr<Command>> make_commands();

}  // namespace dpro::cli
