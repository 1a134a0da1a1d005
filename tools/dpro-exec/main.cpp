// dpro-exec: runs one rank's recorded iteration of a training job, or a plan's version of it, on
// a GPU without the framework or the user's code (the reference executor, docs/executor.md).
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <filesystem>

#include "commands.h"
#include "core/error.h"

int main(int argc, char** argv) {
  CLI::App app{
      "dpro-exec: the reference executor. Lowers one rank's recorded iteration (and an optional plan from\n"
      "`dpro-replay optimize --plan-out`) into host threads, CUDA streams, events and kernels, and runs it on a\n"
      "GPU: GEMMs, fused elementwise chains, casts and compression as real kernels, other ops as stand-ins that\n"
      "occupy the recorded grid for the recorded time, collectives as stand-ins on one GPU. `schedule` shows\n"
      "what would run and needs no GPU; `validate` compares a run with dpro-replay's prediction of it.\n"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("dpro-exec ") + DPRO_VERSION);
  std::vector<std::unique_ptr<dpro::exec_cli::Command>> commands;
  commands.push_back(dpro::exec_cli::make_schedule_command());
  commands.push_back(dpro::exec_cli::make_run_command());
  commands.push_back(dpro::exec_cli::make_calibrate_command());
  commands.push_back(dpro::exec_cli::make_validate_command());
  std::vector<std::pair<CLI::App*, dpro::exec_cli::Command*>> subcommands;
  for (auto& command : commands) subcommands.emplace_back(command->add_to(app), command.get());
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  }
  try {
    for (auto& [sub, command] : subcommands)
      if (sub->parsed()) return command->run();
  } catch (const dpro::OptionError& e) {
    std::fprintf(stderr, "dpro-exec: error: %s\n", e.what());
    return 2;
  } catch (const dpro::InputError& e) {
    std::fprintf(stderr, "dpro-exec: error: %s\n", e.what());
    return 2;
  } catch (const std::filesystem::filesystem_error& e) {
    std::fprintf(stderr, "dpro-exec: error: %s: %s\n", e.path1().c_str(), e.code().message().c_str());
    return 2;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "dpro-exec: error: out of memory\n");
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dpro-exec: internal error: %s (please report it with the command line)\n", e.what());
    return 1;
  }
  return 2;
}
