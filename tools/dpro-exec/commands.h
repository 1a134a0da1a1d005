#pragma once
// dpro-exec's subcommands: each a small class with its flags as members (as in dpro-replay).
#include <CLI/CLI.hpp>

#include <memory>
#include <vector>

namespace dpro::exec_cli {

class Command {
 public:
  virtual ~Command() = default;
  virtual CLI::App* add_to(CLI::App& parent) = 0;
  virtual int run() = 0;
};

std::unique_ptr<Command> make_schedule_command();
std::unique_ptr<Command> make_run_command();
std::unique_ptr<Command> make_calibrate_command();
std::unique_ptr<Command> make_validate_command();

}  // namespace dpro::exec_cli
