#pragma once
// `dpro-replay sweep TRACES --device A,B --ranks 8,16 --set KEY=V1,V2 ...`: the what-if at every
// combination of the values given (whatif/sweep.h), one table (text, --json, --csv).
#include <memory>

#include "command.h"

namespace dpro::cli {

std::unique_ptr<Command> make_sweep_command();

}  // namespace dpro::cli
