// run_convgen: runs a shell command, or the built convgen program, and returns its exit code and output.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace convgen::testing_support {

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

// Runs `command` through the shell; returns its exit code and its standard output and error together.
inline CommandResult run_command(const std::string& command) {
  CommandResult result;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return result;
  std::array<char, 4096> buffer;
  while (std::size_t n = fread(buffer.data(), 1, buffer.size(), pipe)) result.output.append(buffer.data(), n);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

// Runs `environment convgen args` through the shell (environment: "NAME=value ..." or "").
inline CommandResult run_convgen(const std::string& args, const std::string& environment = "") {
  return run_command(environment + " " + std::string(CONVGEN_BINARY_DIR) + "/tools/convgen/convgen " + args);
}

}  // namespace convgen::testing_support
