// run_convgen: runs the built convgen program with arguments and returns its exit code and output.
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

// Runs `environment convgen args` through the shell (environment: "NAME=value ..." or "").
inline CommandResult run_convgen(const std::string& args, const std::string& environment = "") {
  const std::string command =
      environment + " " + std::string(CONVGEN_BINARY_DIR) + "/tools/convgen/convgen " + args + " 2>&1";
  CommandResult result;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  std::array<char, 4096> buffer;
  while (std::size_t n = fread(buffer.data(), 1, buffer.size(), pipe)) result.output.append(buffer.data(), n);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

}  // namespace convgen::testing_support
