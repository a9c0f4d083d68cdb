// main: the convgen command line and its subcommands.
#include <cstdio>
#include <exception>

#include <fmt/format.h>

#include "convgen/version.hpp"
#include "tools/convgen/cli_common.hpp"
#include "tools/convgen/commands.hpp"

int main(int argc, char** argv) {
  CLI::App app{"convgen: specialized CUDA convolution kernels, generated for your shapes and GPU, compiled with "
               "NVRTC, verified against a float64 reference"};
  app.set_version_flag("--version", fmt::format("convgen {} ({})", convgen::build_version(), convgen::build_commit()));
  app.require_subcommand(1);
  convgen::cli::add_generate_command(app);
  convgen::cli::add_analyze_command(app);
  convgen::cli::add_gpu_command(app);
  convgen::cli::add_run_command(app);
  convgen::cli::add_bench_command(app);
  convgen::cli::add_emit_lib_command(app);
  convgen::cli::add_db_command(app);
  convgen::cli::add_tune_command(app);
  convgen::cli::add_lint_template_command(app);
  convgen::cli::add_plot_command(app);
  convgen::cli::add_import_command(app);
  convgen::cli::set_invocation(argc, argv);
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
