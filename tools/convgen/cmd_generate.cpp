// cmd_generate: `convgen generate`: per layer, the chosen kernel's source and cubin, and a manifest.json.
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "conv/conv_kernel.hpp"
#include "convgen/error.hpp"
#include "convgen/version.hpp"
#include "runtime/paths.hpp"
#include "tools/convgen/cli_common.hpp"
#include "tools/convgen/commands.hpp"

namespace convgen::cli {
namespace {

struct Options {
  std::string shapes, gpu = "h100_sxm", out = "generated", layer, kernel, precision, layout;
  int batch = 0;
  std::optional<double> act_sparsity;
  FusionOptions fusion;
  WeightOptions weights;
  unsigned jobs = 0;
  bool all = false, no_cache = false;
};

nlohmann::json manifest_entry(const Layer& layer, const BuiltKernel& k, const std::filesystem::path& stem) {
  const auto& g = k.plan.main_geometry();
  const auto& r = k.cubin.report;
  return {
      {"layer", layer.name},
      {"count", layer.count},
      {"problem", problem_key(k.problem)},
      {"description", describe(k.problem)},
      {"kernel", k.source.entry},
      {"family", k.spec.family},
      {"source", stem.string() + ".cu"},
      {"cubin", stem.string() + ".cubin"},
      {"arch", k.cubin.arch},
      {"grid", g.grid},
      {"block", g.block},
      {"dynamic_smem_bytes", g.dynamic_smem_bytes},
      {"zero_output_first", k.plan.zeroes_output_first()},
      {"relu_prologue", !k.plan.activation_buffer.empty()},
      {"launches", k.plan.run.size()},
      {"setup_launches", k.plan.setup.size()},
      {"workspace_bytes", k.workspace_bytes()},
      {"persistent_bytes", k.plan.persistent_bytes()},
      {"registers", r.registers},
      {"spill_store_bytes", r.spill_store_bytes},
      {"spill_load_bytes", r.spill_load_bytes},
      {"smem_bytes", r.smem_bytes},
      {"stack_bytes", r.stack_bytes},
      {"compile_ms", k.cubin.compile_ms},
  };
}

void run_generate(const Options& opts) {
  const Suite suite = with_layer_weights(
      with_fusion(
          with_precision_and_layout(select_layers(load_shapes(opts.shapes), opts.batch, opts.layer, opts.act_sparsity),
                                    opts.precision, opts.layout),
          opts.fusion),
      opts.weights);
  const Gpu gpu = load_gpu_descriptor(opts.gpu, false);

  // One request per (layer, kernel): the default choice, a named kernel, or every candidate of every family.
  std::vector<BuildRequest> requests;
  std::vector<const Layer*> request_layer;
  for (const Layer& layer : suite.layers) {
    std::vector<KernelSpec> specs;
    if (!opts.kernel.empty()) {
      specs.push_back(parse_kernel_name(opts.kernel));
    } else if (opts.all) {
      for (const Family* f : all_families())
        for (const KernelSpec& s : f->enumerate(layer.problem, gpu)) specs.push_back(s);
    } else {
      specs.push_back(default_choice(layer.problem, gpu));
    }
    for (const KernelSpec& s : specs) {
      requests.push_back({layer.problem, s});
      request_layer.push_back(&layer);
    }
  }

  JitCache cache(opts.no_cache ? std::nullopt : std::optional(user_cache_dir() / "jit"));
  ThreadPool pool(opts.jobs > 0 ? opts.jobs : usable_cores());
  Progress progress("compiling", requests.size());
  const std::vector<BuildOutcome> outcomes = build_kernels(requests, gpu, cache, pool, [&](std::size_t i) {
    progress.step(fmt::format("{} {}", request_layer[i]->name, kernel_name(requests[i].spec)));
  });
  progress.done();

  const std::filesystem::path out_dir = opts.out;
  std::filesystem::create_directories(out_dir);
  nlohmann::json manifest = {{"suite", suite.name},
                             {"gpu", gpu.name},
                             {"arch", gpu.arch},
                             {"convgen", build_version()},
                             {"commit", build_commit()},
                             {"nvrtc", nvrtc_version()},
                             {"kernels", nlohmann::json::array()},
                             {"failures", nlohmann::json::array()}};
  int failures = 0;
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    const Layer& layer = *request_layer[i];
    if (auto* error = std::get_if<std::exception_ptr>(&outcomes[i])) {
      ++failures;
      std::string what;
      try {
        std::rethrow_exception(*error);
      } catch (const std::exception& e) {
        what = e.what();
      }
      fmt::print(stderr, "convgen: error: {}: {}: {}\n", layer.name, kernel_name(requests[i].spec), what);
      manifest["failures"].push_back(
          {{"layer", layer.name}, {"kernel", kernel_name(requests[i].spec)}, {"error", what}});
      continue;
    }
    const BuiltKernel& k = std::get<BuiltKernel>(outcomes[i]);
    const std::filesystem::path stem = std::filesystem::path(layer.name) / k.source.entry;
    std::filesystem::create_directories(out_dir / layer.name);
    write_output_file(out_dir / (stem.string() + ".cu"), k.source.text);
    write_output_file(out_dir / (stem.string() + ".cubin"),
                      std::string_view(k.cubin.image.data(), k.cubin.image.size()));
    manifest["kernels"].push_back(manifest_entry(layer, k, stem));
  }
  write_output_file(out_dir / "manifest.json", manifest.dump(2) + "\n");
  const auto stats = cache.stats();
  fmt::print("generated {} kernels for {} layers of {} for {} ({}) in {} ({} compiled, {} from cache)\n",
             manifest["kernels"].size(), suite.layers.size(), suite.name, gpu.name, gpu.arch, out_dir.string(),
             stats.compiles, stats.memory_hits + stats.disk_hits);
  if (failures > 0) throw Error(fmt::format("{} of {} kernels failed to build", failures, requests.size()));
}

}  // namespace

void add_generate_command(CLI::App& app) {
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "generate",
      "Render and compile kernels for every layer of a shapes file for a GPU (no GPU needed): writes "
      "<out>/<layer>/<kernel>.cu and .cubin, and <out>/manifest.json");
  cmd->add_option("--shapes", opts->shapes, "Shapes file (suite CSV, SEER list or B,C,H,W,N list)")->required();
  cmd->add_option("--gpu", opts->gpu, "GPU descriptor: a name under gpus/ or a path")->capture_default_str();
  cmd->add_option("--out", opts->out, "Output folder")->capture_default_str();
  cmd->add_option("--batch", opts->batch, "Batch size for every layer (0 keeps the file's)");
  add_act_sparsity_option(cmd, opts->act_sparsity);
  add_fusion_options(cmd, opts->fusion);
  add_weight_options(cmd, opts->weights);
  cmd->add_option("--layer", opts->layer, "Only this layer");
  add_precision_layout_options(cmd, opts->precision, opts->layout);
  cmd->add_option("--kernel", opts->kernel, "Use this kernel (canonical name) instead of the default choice");
  cmd->add_flag("--all", opts->all, "Emit every candidate configuration of every family, not only the default");
  cmd->add_option("--jobs", opts->jobs, "Parallel compiles (0: one per core this process may run on)");
  cmd->add_flag("--no-cache", opts->no_cache, "Do not read or write the on-disk JIT cache");
  cmd->callback([opts] { run_generate(*opts); });
}

}  // namespace convgen::cli
