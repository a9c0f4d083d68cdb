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

// bench/plot.py under $CONVGEN_DATA_ROOT, else the copy the build put beside convgen (convgen-plot/plot.py).
fs::path plot_script() {
  if (const auto root = data_root(); root && fs::exists(*root / "bench" / "plot.py"))
    return *root / "bench" / "plot.py";
  fs::path folder;
  if (const auto beside = program_beside_convgen("convgen-plot/plot.py", folder)) return *beside;
  throw InputError(
      fmt::format("plot needs bench/plot.py, which the build copies to {}/convgen-plot/ and which is "
                  "not there: build again, or set CONVGEN_DATA_ROOT to the repository",
                  folder.string()));
}

// $CONVGEN_PYTHON; else the first of python3 on PATH and Debian's /usr/bin/python3 that imports matplotlib (a
// pyenv or venv python3 ahead on PATH often lacks it, while scripts/setup.sh installs python3-matplotlib); else
// python3, whose own message says what is missing.
std::string plot_interpreter() {
  if (const char* python = std::getenv("CONVGEN_PYTHON"); python && *python) return python;
  for (const char* python : {"python3", "/usr/bin/python3"})
    if (run_program(python, {"-c", "import matplotlib"}, /*quiet=*/true) == 0) return python;
  return "python3";
}

}  // namespace

void add_plot_command(CLI::App& app) {
  CLI::App* plot = app.add_subcommand(
      "plot",
      "Draw bench reports (.json or .json.gz) as SVG and PNG: roofline, per-layer speedup, network breakdown "
      "(bench/plot.py with python3 and matplotlib, $CONVGEN_PYTHON to choose the interpreter, else the first python3 "
      "with matplotlib; `convgen plot --help` "
      "for its options)");
  plot->prefix_command();
  plot->set_help_flag();
  plot->callback([plot] {
    std::vector<std::string> args = {plot_script().string()};
    for (const std::string& a : plot->remaining()) args.push_back(a);
    if (const int code = run_program(plot_interpreter(), args); code != 0) throw CLI::RuntimeError(code);
  });
}

}  // namespace convgen::cli
