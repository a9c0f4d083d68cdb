// cmd_import: `convgen import onnx MODEL.onnx --out shapes.csv`: runs convgen-onnx-import, the ONNX importer.
// The importer links ONNX and protobuf, which convgen itself must not need (the GPU machine has neither), so it is a
// separate program next to this binary, built where ONNX is installed; every argument after `onnx` goes to it.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "convgen/error.hpp"
#include "tools/convgen/commands.hpp"

namespace convgen::cli {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void exec_onnx_importer(const std::vector<std::string>& args) {
  const fs::path self = fs::read_symlink("/proc/self/exe");
  const fs::path importer = self.parent_path() / "convgen-onnx-import";
  if (!fs::exists(importer))
    throw InputError(fmt::format(
        "import onnx needs convgen-onnx-import, which was not built: it is built next to convgen ({}) where the ONNX "
        "library is installed; install libonnx-dev and libprotobuf-dev (run scripts/setup.sh as root) and configure "
        "and build again",
        self.parent_path().string()));
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(importer.c_str()));
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::fflush(nullptr);
  execv(importer.c_str(), argv.data());
  throw Error(fmt::format("import onnx: cannot run {}: {}", importer.string(), std::strerror(errno)));
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
  onnx->callback([onnx] { exec_onnx_importer(onnx->remaining()); });
}

}  // namespace convgen::cli
