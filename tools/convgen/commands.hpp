// commands: each subcommand registers its options and its action on the CLI11 app.
#pragma once

#include <CLI/CLI.hpp>

namespace convgen::cli {

void add_generate_command(CLI::App& app);
void add_analyze_command(CLI::App& app);
void add_gpu_command(CLI::App& app);
void add_run_command(CLI::App& app);
void add_bench_command(CLI::App& app);
// `bench` in a build without cuDNN: listed, and refusing with how to get it.
void add_bench_unavailable_command(CLI::App& app);
void add_emit_lib_command(CLI::App& app);
void add_db_command(CLI::App& app);
void add_tune_command(CLI::App& app);
void add_lint_template_command(CLI::App& app);
void add_plot_command(CLI::App& app);
void add_import_command(CLI::App& app);
void add_fold_command(CLI::App& app);
void add_stress_command(CLI::App& app);

}  // namespace convgen::cli
