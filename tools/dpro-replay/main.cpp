// dpro-replay: replays distributed-training traces in a discrete-event simulator and answers
// what-if questions about them.
#include <CLI/CLI.hpp>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>

#include "command.h"
#include "whatif_flags.h"
#include "core/error.h"
#include "costmodel/blas_tuning.h"

namespace {
// Whether the command may run the learned cost model: the costmodel commands, and a --device
// re-timing unless the roofline-share model prices it (--pricer roofline-share: no LibTorch).
bool may_run_learned_model(int argc, char** argv) {
  bool device = false, by_shares = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "costmodel") == 0) return true;
    if (std::strncmp(argv[i], "--device", 8) == 0) device = true;
    if (std::strcmp(argv[i], "--pricer=roofline-share") == 0 ||
        (std::strcmp(argv[i], "--pricer") == 0 && i + 1 < argc && std::strcmp(argv[i + 1], "roofline-share") == 0))
      by_shares = true;
  }
  return device && !by_shares;
}
}  // namespace

int main(int argc, char** argv) {
  // A file size limit (ulimit -f) reached while writing an output is then a failed write, which
  // the output code reports and cleans up after (exit 2), not a kill that leaves a temporary.
  std::signal(SIGXFSZ, SIG_IGN);
  // Commands that run the learned cost model (mostly sgemm) get OpenBLAS's fast kernels.
  if (may_run_learned_model(argc, argv)) dpro::costmodel::reexec_with_fast_blas_if_needed(argv);
  CLI::App app{
      "dpro-replay: replays the traces of a distributed training job (torch.profiler/Kineto JSON, one file per\n"
      "rank, or dpro-profile's native traces) as one global dataflow graph in a discrete-event simulator, and\n"
      "reports where each iteration's time goes and how fast it would be if something changed.\n"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("dpro-replay ") + DPRO_VERSION);
  auto commands = dpro::cli::make_commands();
  std::vector<std::pair<CLI::App*, dpro::cli::Command*>> subcommands;
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
    for (auto& [sub, command] : subcommands) {
      if (sub->parsed()) return command->run();
    }
  } catch (const dpro::OptionError& e) {
    // A library names its options by its own names: the user gave a flag.
    std::fprintf(stderr, "dpro-replay: error: %s\n", dpro::cli::with_flag(e).what());
    return 2;
  } catch (const dpro::InputError& e) {
    std::fprintf(stderr, "dpro-replay: error: %s\n", e.what());
    return 2;
  } catch (const std::filesystem::filesystem_error& e) {
    // A file or folder the command was given could not be read (a link loop, no permission).
    std::fprintf(stderr, "dpro-replay: error: %s: %s\n", e.path1().c_str(), e.code().message().c_str());
    return 2;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "dpro-replay: error: out of memory\n");
    return 2;
  } catch (const std::exception& e) {
    // Not an input error we recognised: a bug, or an input check we lack. One line and a
    // status, never an abort with a library's backtrace.
    std::fprintf(stderr, "dpro-replay: internal error: %s (please report it with the command line)\n", e.what());
    return 1;
  }
  return 2;
}
