// cmd_run: `convgen run`: runs one kernel for one layer on the GPU and verifies it against the float64 reference.
#include <fmt/format.h>

#include "convgen/error.hpp"
#include "measure/verify.hpp"
#include "reference/inputs.hpp"
#include "runtime/device.hpp"
#include "runtime/module.hpp"
#include "runtime/paths.hpp"
#include "tools/convgen/cli_common.hpp"
#include "tools/convgen/commands.hpp"

namespace convgen::cli {
namespace {

struct Options {
  std::string shapes, layer, problem, kernel, gpu = "live", precision, layout;
  int batch = 0;
  std::optional<double> act_sparsity;
  FusionOptions fusion;
  WeightOptions weights;
  std::string pattern = "blob";
  std::uint64_t seed = 1;
  bool all_layers = false;
};

// Verifies one layer; returns true when it passed.
bool run_layer(const Layer& layer, const Options& opts, const Gpu& gpu, JitCache& cache) {
  // A problem too large for the device or the host is refused before compiling or making inputs.
  check_memory_fits_here(layer.problem, 1);
  const KernelSpec spec = opts.kernel.empty() ? default_choice(layer.problem, gpu) : parse_kernel_name(opts.kernel);
  const BuiltKernel kernel = build_kernel(layer.problem, spec, gpu, cache);
  const SparsityPattern pattern = parse_sparsity_pattern(opts.pattern);
  const Verification v = verify_on_gpu(kernel, expected_inputs(layer.problem, pattern, opts.seed));
  const auto& r = kernel.cubin.report;
  fmt::print("{} ({})\n  kernel {}: {} registers, {} B spilled, {} B static smem\n", layer.name,
             describe(layer.problem), kernel.source.entry, r.registers, r.spill_store_bytes, r.smem_bytes);
  fmt::print(
      "  {}: rel L2 error {:.3g}, max abs error {:.3g}, {} NaN, over {} {}outputs (limit {:.0e}); one "
      "launch {:.4f} ms\n",
      v.passed ? "PASS" : "FAIL", v.stats.rel_l2, v.stats.max_abs, v.stats.nan_count, v.stats.compared,
      v.sampled ? "sampled " : "", error_limit(layer.problem.precision), v.kernel_ms);
  if (!v.passed) fmt::print("  {}\n", v.failure);
  return v.passed;
}

void run_run(const Options& opts) {
  Suite suite;
  if (!opts.problem.empty()) {
    suite.name = "problem";
    suite.layers.push_back({.name = opts.problem, .problem = parse_problem_key(opts.problem), .count = 1});
  } else if (!opts.shapes.empty()) {
    if (opts.layer.empty() && !opts.all_layers)
      throw InputError("run: give --layer NAME (or --all-layers) with --shapes");
    suite = select_layers(load_shapes(opts.shapes), opts.batch, opts.layer, opts.act_sparsity);
  } else {
    throw InputError("run: give --shapes FILE with --layer NAME, or --problem KEY");
  }
  // Layout first: a layer's filter is read (or made) in its final layout.
  suite = with_fusion(with_precision_and_layout(std::move(suite), opts.precision, opts.layout), opts.fusion);
  WeightOptions weights = opts.weights;
  weights.seed = opts.seed;
  suite = with_layer_weights(suite, weights);
  const Gpu gpu = load_gpu_descriptor(opts.gpu, true);
  Context context(0);
  fmt::print("on {} ({}, {} SMs)\n", gpu.name, gpu.arch, gpu.sm_count);
  JitCache cache(user_cache_dir() / "jit");
  int failed = 0;
  for (const Layer& layer : suite.layers) failed += run_layer(layer, opts, gpu, cache) ? 0 : 1;
  if (failed > 0) throw Error(fmt::format("{} of {} layers failed verification", failed, suite.layers.size()));
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("run",
                                     "Run one kernel (the default choice, or --kernel) for a layer on the GPU "
                                     "and verify it against the float64 CPU reference");
  cmd->add_option("--shapes", opts->shapes, "Shapes file");
  cmd->add_option("--layer", opts->layer, "Layer name in the shapes file");
  cmd->add_flag("--all-layers", opts->all_layers, "Every layer of the shapes file");
  cmd->add_option("--problem", opts->problem, "A problem key instead of a shapes file (see `convgen analyze`)");
  cmd->add_option("--kernel", opts->kernel, "Kernel canonical name (default: the default choice)");
  cmd->add_option("--gpu", opts->gpu, "GPU descriptor; the present device's properties win")->capture_default_str();
  cmd->add_option("--batch", opts->batch, "Batch size (0 keeps the file's)");
  add_act_sparsity_option(cmd, opts->act_sparsity);
  add_fusion_options(cmd, opts->fusion);
  cmd->add_option("--sparsity-pattern", opts->pattern, "Where the activation's zeros lie: uniform, channel or blob")
      ->capture_default_str();
  cmd->add_option("--precision", opts->precision, "Run in fp32, tf32, fp16 or bf16 (default: the file's or key's)");
  cmd->add_option("--layout", opts->layout,
                  "Channels-first (nchw) or channels-last (nhwc), at the layer's rank (default: the file's or key's)");
  cmd->add_option("--seed", opts->seed, "Random seed of the inputs (and of --weight-sparsity's weights)")
      ->capture_default_str();
  add_weight_options(cmd, opts->weights);
  cmd->callback([opts] { run_run(*opts); });
}

}  // namespace convgen::cli
