// Stand-alone `dpro-costmodel` (the `costmodel` subcommand of dpro-replay without the rest
// of dpro-replay): used by tools/costmodel/train.sh and the CLI tests, and buildable while
// the replayer is not.
#include <iostream>

#include "cmd_costmodel.h"
#include "core/error.h"
#include "costmodel/blas_tuning.h"

int main(int argc, char** argv) {
  dpro::costmodel::reexec_with_fast_blas_if_needed(argv);
  CLI::App app{"dpro cost models"};
  app.require_subcommand(1);
  auto command = dpro::cli::make_costmodel_command();
  command->add_to(app);
  CLI11_PARSE(app, argc, argv);
  try {
    return command->run();
  } catch (const dpro::InputError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  }
}
