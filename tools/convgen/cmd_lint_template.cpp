// cmd_lint_template: `convgen lint-template FILE...`: runs the template linter (convgen-template-scan --lint).
// The scanner links Clang, which convgen itself must not need (the GPU machine has no libclang), so it is a separate
// program: next to this binary, or named by $CONVGEN_TEMPLATE_SCAN.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "convgen/error.hpp"
#include "generator/embedded_templates.hpp"
#include "tools/convgen/cli_common.hpp"
#include "tools/convgen/commands.hpp"

namespace convgen::cli {
namespace {

namespace fs = std::filesystem;

fs::path scanner_path() {
  if (const char* named = std::getenv("CONVGEN_TEMPLATE_SCAN"); named && *named) {
    if (!fs::exists(named))
      throw InputError(fmt::format("CONVGEN_TEMPLATE_SCAN names {}, which does not exist", named));
    return named;
  }
  fs::path folder;
  const std::optional<fs::path> scanner = program_beside_convgen("convgen-template-scan", folder);
  if (!scanner)
    throw InputError(
        fmt::format("lint-template needs convgen-template-scan, which is built with Clang "
                    "(scripts/setup.sh installs it); not found next to {}",
                    (folder / "convgen").string()));
  return *scanner;
}

// The folder of common.cuh and interface.cuh: the template's own folder when it has them (editing templates/),
// else a temporary copy of the headers embedded in convgen.
struct IncludeDir {
  fs::path path;
  bool temporary = false;
  ~IncludeDir() {
    std::error_code ignored;
    if (temporary) fs::remove_all(path, ignored);
  }
};

void find_include_dir(const std::string& first_file, IncludeDir& dir) {
  const fs::path own = fs::absolute(first_file).parent_path();
  if (fs::exists(own / "interface.cuh") && fs::exists(own / "common.cuh")) {
    dir.path = own;
    return;
  }
  dir.path = fs::temp_directory_path() / fmt::format("convgen_lint_{}", getpid());
  fs::create_directories(dir.path);
  dir.temporary = true;
  for (const EmbeddedTemplate& t : embedded_templates()) {
    if (!t.name.ends_with(".cuh")) continue;
    std::ofstream(dir.path / t.name, std::ios::binary) << t.text;
  }
}

}  // namespace

void add_lint_template_command(CLI::App& app) {
  auto files = std::make_shared<std::vector<std::string>>();
  CLI::App* lint =
      app.add_subcommand("lint-template",
                         "Check kernel templates: dynamic indexing of per-thread arrays, entry pointers without "
                         "__restrict__, includes outside the allowed set, unused parameters, static_asserts without a "
                         "message");
  lint->add_option("files", *files, "Template files (.cu)")->required()->check(CLI::ExistingFile);
  lint->callback([files] {
    const fs::path scanner = scanner_path();
    IncludeDir include;
    find_include_dir(files->front(), include);
    std::vector<std::string> args = {"--lint", "-I", include.path.string()};
    args.insert(args.end(), files->begin(), files->end());
    if (const int code = run_program(scanner, args); code != 0) throw CLI::RuntimeError(code);
  });
}

}  // namespace convgen::cli
