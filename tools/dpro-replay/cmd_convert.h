#pragma once
// `dpro-replay convert IN.dpro[.gz] -o OUT.json[.gz] [--force]`: a dpro-profile native trace
// as Kineto-style Chrome JSON (opens in Perfetto and in tools that read torch.profiler
// traces).
#include <memory>

#include "command.h"

namespace dpro::cli {

std::unique_ptr<Command> make_convert_command();

}  // namespace dpro::cli
