#pragma once
#include <memory>

#include "command.h"

namespace dpro::cli {

// `dpro-replay replay <traces...>`: replays the traces of one job and reports measured vs
// predicted iteration times, the critical path and a breakdown; what-if flags re-time the
// graph and report baseline vs predicted.
std::unique_ptr<Command> make_replay_command();

}  // namespace dpro::cli
