// main: the convgen command line and its subcommands.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>

#include <fmt/format.h>

#include "convgen/version.hpp"
#include "runtime/compiler_processes.hpp"
#include "tools/convgen/cli_common.hpp"
#include "tools/convgen/commands.hpp"

namespace {

// Returns an error naming the first word where a subcommand is due that names none, or "" when there is none.
// CLI11 alone would print the main help for `convgen fold --help` and exit 0, and say only "A subcommand is
// required" for `convgen fold`. Only the word right after a command with subcommands is checked: options may sit
// between a command and its subcommand (`db --db FILE list`), and then CLI11's own check applies.
std::string unknown_subcommand(CLI::App& app, int argc, char** argv) {
  CLI::App* current = &app;
  std::string path = "convgen";
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    const auto subcommands = current->get_subcommands([](CLI::App*) { return true; });
    if (subcommands.empty() || word.starts_with("-")) return {};
    const auto match =
        std::find_if(subcommands.begin(), subcommands.end(), [&](CLI::App* sub) { return sub->get_name() == word; });
    if (match == subcommands.end()) {
      std::string names;
      for (CLI::App* sub : subcommands) names += (names.empty() ? "" : ", ") + sub->get_name();
      return fmt::format("unknown subcommand '{}' of {}, expected one of {} (`{} --help` describes them)", word, path,
                         names, path);
    }
    current = *match;
    path += " " + word;
  }
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "convgen: specialized CUDA convolution kernels, generated for your shapes and GPU, compiled with "
      "NVRTC, verified against a float64 reference"};
  app.set_version_flag("--version", fmt::format("convgen {} ({})", convgen::build_version(), convgen::build_commit()));
  app.require_subcommand(1);
  convgen::cli::add_generate_command(app);
  convgen::cli::add_analyze_command(app);
  convgen::cli::add_gpu_command(app);
  convgen::cli::add_run_command(app);
#ifdef CONVGEN_HAVE_CUDNN
  convgen::cli::add_bench_command(app);
#else
  convgen::cli::add_bench_unavailable_command(app);
#endif
  convgen::cli::add_emit_lib_command(app);
  convgen::cli::add_db_command(app);
  convgen::cli::add_tune_command(app);
  convgen::cli::add_lint_template_command(app);
  convgen::cli::add_plot_command(app);
  convgen::cli::add_import_command(app);
  convgen::cli::add_fold_command(app);
  convgen::cli::add_stress_command(app);
  convgen::cli::set_invocation(argc, argv);
  if (const std::string error = unknown_subcommand(app, argc, argv); !error.empty()) {
    fmt::print(stderr, "convgen: error: {}\n", error);
    return 1;
  }
  // NVRTC in many threads of one process does not scale (issue 16): the commands' JIT cache misses compile in worker
  // processes (convgen-nvrtc-worker beside this program), as many at once as a default thread pool has threads.
  const convgen::WorkerCompiles worker_compiles;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    fmt::print(stderr, "convgen: error: {}\n", e.what());
    return 1;
  }
  return 0;
}
