#pragma once
// `dpro-replay costmodel train|eval|predict|devices`: train the learned cost model, print
// its error tables, price operator rows of a CSV on a chosen GPU, list the known GPUs.
#include <memory>

#include "command.h"

namespace dpro::cli {

std::unique_ptr<Command> make_costmodel_command();

}  // namespace dpro::cli
