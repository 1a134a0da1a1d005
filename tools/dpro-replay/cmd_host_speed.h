#pragma once
// `dpro-replay host-speed ORIGIN TARGET`: how fast TARGET's host ran the CPU ops both captures
// ran, relative to ORIGIN's (whatif/host_speed.h): the `--set host.cpu_speed` to give a
// what-if on ORIGIN that should run its host like TARGET's.
#include <memory>

#include "command.h"

namespace dpro::cli {

std::unique_ptr<Command> make_host_speed_command();

}  // namespace dpro::cli
