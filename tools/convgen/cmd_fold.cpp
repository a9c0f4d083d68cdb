// cmd_fold: `convgen fold`: a suite folded the FoldedCNNs way (or exactly, in groups), as a shapes file, with the
// arithmetic intensity of the network before and after.
#include <cmath>

#include <fmt/format.h>

#include "convgen/error.hpp"
#include "generator/analysis.hpp"
#include "generator/fold.hpp"
#include "tools/convgen/cli_common.hpp"
#include "tools/convgen/commands.hpp"

namespace convgen::cli {
namespace {

// One line of the seed's arithmetic-intensity analysis (its ai.py): the network's FLOPs for `images` images over the
// bytes of every weight once and every activation in and out, at the suite's batch.
std::string intensity_line(const char* what, const Suite& suite, const Gpu& gpu, int images_per_input) {
  const NetworkAnalysis a = analyze(suite, gpu);
  const int batch = suite.layers.front().problem.n;
  return fmt::format("{:<9} {:<28} batch {:>5} ({:>5} images): {:>8.3f} GFLOP, {:>9.3f} MB, {:>7.1f} FLOP/B, "
                     "{:.3f} MFLOP per image\n",
                     what, suite.name, batch, batch * images_per_input, a.total_flops / 1e9, a.total_bytes / 1e6,
                     a.total_flops / a.total_bytes, a.total_flops / 1e6 / (batch * images_per_input));
}

}  // namespace

void add_fold_command(CLI::App& app) {
  struct Options {
    std::string shapes, out, gpu = "h100_sxm";
    int factor = 0, batch = 0;
    bool exact = false;
  };
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "fold",
      "Fold a suite the FoldedCNNs way: f images become one input at batch N/f; the first layer's input channels x f, "
      "the last layer's outputs x f, every other width x sqrt(f) (truncated, as the seed's models do), or with "
      "--exact the same function computed folded (every layer x f in f groups); writes the folded shapes file and "
      "prints the network's arithmetic intensity before and after (the seed's ai.py)");
  cmd->add_option("--shapes", opts->shapes, "Shapes file (its first and last rows are the network's first and last)")
      ->required();
  cmd->add_option("--factor", opts->factor, "Fold factor f: images per folded input")
      ->required()
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--batch", opts->batch, "Images per pass, a multiple of f (0 keeps the file's batch)");
  cmd->add_flag("--exact", opts->exact,
                "Fold exactly: every layer's channels x f in f groups (block-diagonal weights, the same function)");
  cmd->add_option("--out", opts->out, "Write the folded shapes file here (default: standard output)");
  cmd->add_option("--gpu", opts->gpu, "GPU descriptor for the byte sizes of the analysis (a name under gpus/ or a path)")
      ->capture_default_str();
  cmd->callback([opts] {
    const Suite suite = select_layers(load_shapes(opts->shapes), opts->batch, "");
    const FoldKind kind = opts->exact ? FoldKind::exact : FoldKind::seed;
    const Suite folded = fold_suite(suite, opts->factor, kind);
    const Gpu gpu = load_gpu_descriptor(opts->gpu, false);
    std::string text = fmt::format("# {} folded by {} ({} way) by `convgen fold`: batch {} of {} images each\n",
                                   suite.name, opts->factor, to_string(kind), folded.layers.front().problem.n,
                                   opts->factor);
    text += write_suite_csv(folded);
    if (opts->out.empty())
      fmt::print("{}", text);
    else
      write_output_file(opts->out, text);
    fmt::print(stderr, "{}{}", intensity_line("unfolded", suite, gpu, 1),
               intensity_line("folded", folded, gpu, opts->factor));
    if (!opts->out.empty()) fmt::print(stderr, "wrote {}\n", opts->out);
  });
}

}  // namespace convgen::cli
