// cmd_analyze: `convgen analyze`: per-layer FLOPs, bytes, intensity and roofline floor, with network totals.
#include <fstream>

#include <fmt/format.h>

#include "convgen/error.hpp"
#include "generator/analysis.hpp"
#include "tools/convgen/cli_common.hpp"
#include "tools/convgen/commands.hpp"

namespace convgen::cli {

void add_analyze_command(CLI::App& app) {
  struct Options {
    std::string shapes, gpu = "h100_sxm", json;
    int batch = 0;
  };
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("analyze", "Print FLOPs, bytes, arithmetic intensity and the roofline floor "
                                                "time per layer on a GPU, with network totals (count-weighted)");
  cmd->add_option("--shapes", opts->shapes, "Shapes file (suite CSV, SEER list or B,C,H,W,N list)")->required();
  cmd->add_option("--gpu", opts->gpu, "GPU descriptor: a name under gpus/ or a path, or 'live'")
      ->capture_default_str();
  cmd->add_option("--batch", opts->batch, "Batch size for every layer (0 keeps the file's)");
  cmd->add_option("--json", opts->json, "Also write the analysis as JSON to this file");
  cmd->callback([opts] {
    const Suite suite = select_layers(load_shapes(opts->shapes), opts->batch, "");
    const Gpu gpu = load_gpu_descriptor(opts->gpu, true);
    const NetworkAnalysis analysis = analyze(suite, gpu);
    fmt::print("{} on {} ({})\n", suite.name, gpu.name, gpu.arch);
    fmt::print("{}", format_analysis_table(analysis, gpu));
    if (!opts->json.empty()) {
      std::ofstream out(opts->json);
      out << analysis_to_json(analysis, gpu) << "\n";
      if (!out) throw InputError(fmt::format("{}: cannot write", opts->json));
    }
  });
}

}  // namespace convgen::cli
