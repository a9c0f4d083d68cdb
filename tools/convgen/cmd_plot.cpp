// cmd_plot: `convgen plot REPORT...`: pictures of bench reports, drawn by bench/plot.py with python3 and matplotlib.
// The script is the one place the pictures are defined (it runs alone too); this command finds it and passes every
// argument on, --help included.
#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

#include "convgen/error.hpp"
#include "tools/convgen/cli_common.hpp"
#include "tools/convgen/commands.hpp"

namespace convgen::cli {
namespace {

namespace fs = std::filesystem;

// bench/plot.py under $CONVGEN_DATA_ROOT, else in the source tree convgen was built from.
fs::path plot_script() {
  std::vector<fs::path> tried;
  if (const auto root = data_root()) tried.push_back(*root / "bench" / "plot.py");
  tried.push_back(fs::path(CONVGEN_SOURCE_DIR) / "bench" / "plot.py");
  for (const fs::path& script : tried)
    if (fs::exists(script)) return script;
  throw InputError(
      fmt::format("plot needs bench/plot.py from convgen's source tree, not found at {}: set "
                  "CONVGEN_DATA_ROOT to the repository",
                  tried.back().string()));
}

}  // namespace

void add_plot_command(CLI::App& app) {
  CLI::App* plot = app.add_subcommand(
      "plot",
      "Draw bench reports (.json or .json.gz) as SVG and PNG: roofline, per-layer speedup, network breakdown "
      "(bench/plot.py with python3 and matplotlib, $CONVGEN_PYTHON to choose the interpreter; `convgen plot --help` "
      "for its options)");
  plot->prefix_command();
  plot->set_help_flag();
  plot->callback([plot] {
    const char* python = std::getenv("CONVGEN_PYTHON");
    std::vector<std::string> args = {plot_script().string()};
    for (const std::string& a : plot->remaining()) args.push_back(a);
    if (const int code = run_program(python && *python ? python : "python3", args); code != 0)
      throw CLI::RuntimeError(code);
  });
}

}  // namespace convgen::cli
