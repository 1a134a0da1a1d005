#pragma once
// `dpro-replay compare BASE.json NEW.json [--max-slowdown PCT] [--json OUT]`: two replay
// reports side by side (median iteration time, critical path, the ops that changed); exit 1
// when NEW is slower than --max-slowdown allows (a CI check).
#include <memory>

#include "command.h"

namespace dpro::cli {

std::unique_ptr<Command> make_compare_command();

}  // namespace dpro::cli
