// cmd_analyze: `convgen analyze`: per-layer FLOPs, bytes, intensity and roofline floor, with network totals,
// (--candidates) every candidate ranked by the cost model, and (--defaults) why the default choice is what it is.
#include <algorithm>
#include <fstream>

#include <fmt/format.h>

#include "convgen/error.hpp"
#include "generator/analysis.hpp"
#include "generator/family.hpp"
#include "runtime/jit_cache.hpp"
#include "runtime/thread_pool.hpp"
#include "tools/convgen/cli_common.hpp"
#include "tools/convgen/commands.hpp"
#include "tuner/tuner.hpp"

namespace convgen::cli {
namespace {

// Returns the term that contributes most to a prediction ("fma", "serial_steps", …), or "cannot launch".
std::string largest_of(const Prediction& p) {
  if (p.resident_blocks_per_sm == 0) return "cannot launch";
  return std::string(to_string(p.largest_term()));
}

// Prints every family's candidates per layer ranked by the cost model, compiling each for its ptxas report through
// the JIT cache; with a `compile_limit`, only the first that many in the order tune compiles them (the families'
// defaults always among them). The coefficients are the database's calibration for the GPU when `db_path` names a
// database that has one, else the defaults.
void print_candidates(const Suite& suite, const Gpu& gpu, const std::string& db_path, int compile_limit) {
  Coefficients coefficients;
  std::string source = "the default coefficients";
  if (!db_path.empty()) {
    const TuningDb db = TuningDb::open(db_path);
    if (const auto calibration = load_calibration(db, gpu)) {
      coefficients = calibration->coefficients;
      source = fmt::format("the calibration in {} ({} measurements)", db_path, calibration->samples);
    } else {
      source = fmt::format("the default coefficients ({} has no calibration for {})", db_path, describe_gpu(gpu));
    }
  }
  JitCache cache(default_jit_cache_dir());
  ThreadPool pool;
  Tuner tuner(gpu, cache, pool, nullptr, coefficients);
  Progress progress("compiling candidates", suite.layers.size());
  std::string text;
  for (const Layer& layer : suite.layers) {
    progress.step(layer.name);
    const TuneResult r = tuner.rank_only(layer.problem, compile_limit);
    text += fmt::format("\n{} ({}): {} candidates{}, predicted with {}\n", layer.name, problem_key(layer.problem),
                        r.candidates.size(),
                        compile_limit > 0 ? fmt::format(" (compile limit {})", compile_limit) : std::string(), source);
    text += fmt::format("{:>4}  {:<44} {:>12} {:>7} {:>9} {:<15} {:>4} {:>7}\n", "rank", "kernel", "predicted us",
                        "waves", "blocks/SM", "largest term", "regs", "smem");
    for (std::size_t i = 0; i < r.candidates.size(); ++i) {
      const CandidateOutcome& c = r.candidates[i];
      if (!c.prediction) {
        text += fmt::format("{:>4}  {:<44} {}: {}\n", i + 1, kernel_name(c.spec), c.status,
                            c.error.substr(0, c.error.find('\n')));
        continue;
      }
      const Prediction& p = *c.prediction;
      text += fmt::format("{:>4}  {:<44} {:>12.2f} {:>7.2f} {:>9} {:<15} {:>4} {:>7}\n", i + 1, kernel_name(c.spec),
                          p.time_us, p.waves, p.resident_blocks_per_sm, largest_of(p), c.report.registers,
                          c.report.smem_bytes);
    }
  }
  progress.done();
  fmt::print("{}", text);
}

// Prints, per layer, the default choice (no tuning) and every family in default_choice's order: its default_rank and
// its default configuration, or why it serves none of the layer.
void print_defaults(const Suite& suite, const Gpu& gpu) {
  std::string text =
      "\ndefault choice per layer (families in default_choice's order: rank, family, its default or why it serves "
      "none)\n";
  for (const Layer& layer : suite.layers) {
    const std::vector<FamilyDefault> families = family_defaults(layer.problem, gpu);
    const auto chosen = std::find_if(families.begin(), families.end(), [](const FamilyDefault& d) { return d.spec; });
    text += fmt::format("{} {} -> {}\n", layer.name, problem_key(layer.problem),
                        chosen == families.end() ? "none" : kernel_name(*chosen->spec));
    for (const FamilyDefault& d : families)
      text += fmt::format("  {:>4}  {:<14} {}\n", d.rank, d.family,
                          d.spec ? kernel_name(*d.spec) : "-  (" + d.reason + ")");
  }
  fmt::print("{}", text);
}

}  // namespace

void add_analyze_command(CLI::App& app) {
  struct Options {
    std::string shapes, gpu = "h100_sxm", json, db, precision, layout, layer;
    std::vector<std::string> problems;
    int batch = 0;
    std::optional<double> act_sparsity;
    FusionOptions fusion;
    WeightOptions weights;
    bool candidates = false;
    int compile_limit = 0;
    bool defaults = false;
  };
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("analyze",
                                     "Print FLOPs, bytes, arithmetic intensity and the roofline floor "
                                     "time per layer on a GPU, with network totals (count-weighted)");
  CLI::Option* shapes =
      cmd->add_option("--shapes", opts->shapes, "Shapes file (suite CSV, SEER list or B,C,H,W,N list)");
  cmd->add_option("--problem", opts->problems,
                  "Problem keys instead of a shapes file, e.g. "
                  "n1_c64_k64_i1x56x56_f1x3x3_s1x1x1_p0x1x1_d1x1x1_g1_nchw_fp32 (as the reports and the tuning "
                  "database name them; repeatable)")
      ->excludes(shapes);
  cmd->add_option("--gpu", opts->gpu, "GPU descriptor: a name under gpus/ or a path, or 'live'")->capture_default_str();
  cmd->add_option("--batch", opts->batch, "Batch size for every layer (0 keeps the file's)");
  cmd->add_option("--layer", opts->layer, "Only the layer of this name (with --candidates: compile only its candidates)");
  add_precision_layout_options(cmd, opts->precision, opts->layout);
  add_act_sparsity_option(cmd, opts->act_sparsity);
  add_fusion_options(cmd, opts->fusion);
  add_weight_options(cmd, opts->weights);
  cmd->add_option("--json", opts->json, "Also write the analysis as JSON to this file");
  cmd->add_flag("--candidates", opts->candidates,
                "Also list, per layer, every family's candidates ranked by the cost model's predicted time (with "
                "waves, resident blocks per SM and the largest term), compiling each for its ptxas report");
  cmd->add_option("--compile", opts->compile_limit,
                  "With --candidates: rank only the first N candidates in the order tune compiles them (the "
                  "families' defaults, always kept, then the model's best before compiling): a tune compiles "
                  "max(16, 4 x budget); 1 keeps the defaults alone, what the cost_model_only policy ranks first; 0: "
                  "every candidate")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--db", opts->db,
                  "With --candidates: predict with this tuning database's calibration for the GPU (default: the "
                  "model's default coefficients)");
  cmd->add_flag("--defaults", opts->defaults,
                "Also list, per layer, the default choice (no tuning) and every family in its order: rank, family, "
                "its default configuration or why it serves none");
  cmd->callback([opts] {
    Suite layers;
    if (!opts->problems.empty()) {
      layers.name = "problems";
      for (const std::string& key : opts->problems)
        layers.layers.push_back({.name = key, .problem = parse_problem_key(key), .count = 1});
    } else if (!opts->shapes.empty()) {
      layers = load_shapes(opts->shapes);
    } else {
      throw InputError("analyze: give --shapes FILE or --problem KEY");
    }
    const Suite suite = with_layer_weights(
        with_fusion(with_precision_and_layout(select_layers(layers, opts->batch, opts->layer, opts->act_sparsity),
                                              opts->precision, opts->layout),
                    opts->fusion),
        opts->weights);
    const Gpu gpu = load_gpu_descriptor(opts->gpu, true);
    const NetworkAnalysis analysis = analyze(suite, gpu);
    fmt::print("{} on {} ({})\n", suite.name, gpu.name, gpu.arch);
    fmt::print("{}", format_analysis_table(analysis, gpu));
    if (opts->candidates) print_candidates(suite, gpu, opts->db, opts->compile_limit);
    if (opts->defaults) print_defaults(suite, gpu);
    if (!opts->json.empty()) write_output_file(opts->json, analysis_to_json(analysis, gpu) + "\n");
  });
}

}  // namespace convgen::cli
