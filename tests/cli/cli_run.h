#pragma once
// Runs dpro-replay as a user does, for the CLI tests: a command line in, exit code and output out.
#include <catch2/catch.hpp>

#include <array>
#include <cstdio>
#include <string>
#include <sys/wait.h>

namespace dpro::test {

struct Run {
  int code = -1;
  std::string out;  // stdout and stderr
};

// Runs a shell command line and collects its output.
inline Run run_command(const std::string& command) {
  Run r;
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe);
  std::array<char, 4096> buf{};
  while (std::size_t n = std::fread(buf.data(), 1, buf.size(), pipe)) r.out.append(buf.data(), n);
  const int status = pclose(pipe);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

inline Run run(const std::string& args) { return run_command(std::string(DPRO_REPLAY_BIN) + " " + args + " 2>&1"); }

}  // namespace dpro::test
