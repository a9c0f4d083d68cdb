// cmd_import: `convgen import onnx MODEL.onnx --out shapes.csv`: runs convgen-onnx-import, the ONNX importer.
// The importer links ONNX and protobuf, which convgen itself must not need (the GPU machine has neither), so it is a
// separate program next to this binary, built where ONNX is installed; every argument after `onnx` goes to it.
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "convgen/error.hpp"
#include "tools/convgen/cli_common.hpp"
#include "tools/convgen/commands.hpp"

namespace convgen::cli {
namespace {

namespace fs = std::filesystem;

void run_onnx_importer(const std::vector<std::string>& args) {
  fs::path folder;
  const std::optional<fs::path> importer = program_beside_convgen("convgen-onnx-import", folder);
  if (!importer)
    throw InputError(fmt::format(
        "import onnx needs convgen-onnx-import, which was not built: it is built next to convgen ({}) where the ONNX "
        "library is installed; install libonnx-dev and libprotobuf-dev (run scripts/setup.sh as root) and configure "
        "and build again",
        folder.string()));
  std::fflush(nullptr);
  if (const int code = run_program(*importer, args); code != 0) throw CLI::RuntimeError(code);
}

}  // namespace

void add_import_command(CLI::App& app) {
  CLI::App* import = app.add_subcommand("import", "Import the conv layers of a model file into a shapes file");
  import->require_subcommand(1);
  CLI::App* onnx = import->add_subcommand(
      "onnx",
      "Every Conv node of an ONNX model as a shapes file: convgen import onnx MODEL.onnx --out shapes.csv "
      "(--help: the importer's options; runs convgen-onnx-import, built where libonnx-dev is installed)");
  // Everything after `onnx`, --help included, is the importer's.
  onnx->set_help_flag();
  onnx->prefix_command();
  onnx->callback([onnx] { run_onnx_importer(onnx->remaining()); });
}

}  // namespace convgen::cli
