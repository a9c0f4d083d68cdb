// cmd_bench_unavailable: `convgen bench` in a build configured without cuDNN (main.cpp adds it instead of
// cmd_bench.cpp's, which such a build leaves out): the command is listed, and says why it cannot run and how to get
// it.
#include "convgen/error.hpp"
#include "tools/convgen/commands.hpp"

namespace convgen::cli {

void add_bench_unavailable_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "bench",
      "Benchmark every layer against every cuDNN forward route (not in this build: it was configured without "
      "cuDNN)");
  cmd->allow_extras();
  cmd->callback([] {
    throw InputError(
        "bench: this convgen was built without cuDNN (CMake did not find it), and bench measures every layer against "
        "cuDNN's routes; install cuDNN 9 (scripts/setup.sh does) or set CUDNN_ROOT, then configure and build again");
  });
}

}  // namespace convgen::cli
