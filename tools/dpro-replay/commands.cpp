#include "cmd_replay.h"
#include "command.h"

namespace dpro::cli {

std::vector<std::unique_ptr<Command>> make_commands() {
  std::vector<std::unique_ptr<Command>> commands;
  commands.push_back(make_replay_command());
  return commands;
}

}  // namespace dpro::cli
