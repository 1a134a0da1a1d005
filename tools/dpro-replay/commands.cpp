#include "cmd_compare.h"
#include "cmd_convert.h"
#include "cmd_costmodel.h"
#include "cmd_host_speed.h"
#include "cmd_optimize.h"
#include "cmd_replay.h"
#include "cmd_sweep.h"
#include "command.h"

namespace dpro::cli {

std::vector<std::unique_ptr<Command>> make_commands() {
  std::vector<std::unique_ptr<Command>> commands;
  commands.push_back(make_replay_command());
  commands.push_back(make_sweep_command());
  commands.push_back(make_optimize_command());
  commands.push_back(make_compare_command());
  commands.push_back(make_convert_command());
  commands.push_back(make_host_speed_command());
  commands.push_back(make_costmodel_command());
  return commands;
}

}  // namespace dpro::cli
