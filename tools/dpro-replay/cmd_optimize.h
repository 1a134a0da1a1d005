#pragma once
#include <memory>

#include "command.h"

namespace dpro::cli {

// `dpro-replay optimize <traces...>`: searches the plans of src/optimizer for the job (under the
// what-if flags' conditions) and prints the Pareto set, the chosen plan and its gains; --plan-out
// writes the plan that `replay --plan` applies.
std::unique_ptr<Command> make_optimize_command();

}  // namespace dpro::cli
