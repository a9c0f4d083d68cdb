// cmd_emit_lib: `convgen emit-lib`: a CMake project building a static library of a suite's kernels, cubins embedded.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "bench/provenance.hpp"
#include "convgen/error.hpp"
#include "emit/emit_library.hpp"
#include "runtime/paths.hpp"
#include "tools/convgen/cli_common.hpp"
#include "tools/convgen/commands.hpp"
#include "tuner/tuning_db.hpp"

namespace convgen::cli {
namespace {

struct Options {
  std::string shapes, name, out, db, fallback, precision, layout;
  std::vector<std::string> gpus;
  int batch = 0;
  std::optional<double> act_sparsity;
  FusionOptions fusion;
  WeightOptions weights;
  unsigned jobs = 0;
  bool no_cache = false;
};

// The command that tunes what the library needs into the database: the same shapes and batch.
std::string tune_command(const Options& opts) {
  std::vector<std::string> args = {"convgen", "tune", "--shapes", opts.shapes};
  if (opts.batch > 0) args.insert(args.end(), {"--batch", std::to_string(opts.batch)});
  if (!opts.precision.empty()) args.insert(args.end(), {"--precision", opts.precision});
  if (!opts.layout.empty()) args.insert(args.end(), {"--layout", opts.layout});
  if (opts.act_sparsity) args.insert(args.end(), {"--act-sparsity", fmt::format("{}", *opts.act_sparsity)});
  for (std::string& arg : fusion_arguments(opts.fusion)) args.push_back(std::move(arg));
  args.insert(args.end(), {"--db", opts.db});
  return shell_join(args);
}

// Where a GPU named by --gpu has no records in the database but another of the same architecture and SM count does
// (a descriptor named otherwise than the device reports itself, e.g. another board of the same chip: the descriptors
// under gpus/ carry the driver's names), says which, and how to name it; else empty.
std::string other_gpus_hint(const TuningDb& db, const std::vector<Gpu>& gpus) {
  const std::vector<Gpu> recorded = db.gpus();
  std::string hint;
  for (const Gpu& gpu : gpus) {
    if (std::any_of(recorded.begin(), recorded.end(), [&](const Gpu& r) { return same_gpu(r, gpu); })) continue;
    for (const Gpu& r : recorded)
      if (r.arch == gpu.arch && r.sm_count == gpu.sm_count)
        hint += fmt::format("the database has no records for {} but has some for {} ({}, {} SMs): to use them, pass "
                            "--gpu a descriptor named as that GPU reports itself (`convgen gpu detect --out gpu.json` "
                            "on it)\n",
                            gpu.name, r.name, r.arch, r.sm_count);
  }
  if (!hint.empty()) hint.pop_back();
  return hint;
}

void run_emit_lib(const Options& opts) {
  if (!opts.fallback.empty() && opts.db.empty())
    throw InputError("--fallback: only with --db (without a database every kernel is the default choice)");
  check_library_name(opts.name);
  const auto start = std::chrono::steady_clock::now();
  const Suite suite = with_layer_weights(
      with_fusion(with_precision_and_layout(select_layers(load_shapes(opts.shapes), opts.batch, "", opts.act_sparsity),
                                            opts.precision, opts.layout),
                  opts.fusion),
      opts.weights);
  std::vector<Gpu> gpus;
  for (const std::string& g : opts.gpus) gpus.push_back(load_gpu_descriptor(g, false));

  LibraryChoice choice;
  std::optional<TuningDb> db;
  if (!opts.db.empty()) {
    // Read only: a missing file is an error, not a new empty database.
    if (!std::filesystem::is_regular_file(opts.db))
      throw InputError(fmt::format("--db {}: no such tuning database", opts.db));
    db.emplace(TuningDb::open(opts.db));
    choice.tuned = [&db](const Gpu& gpu, const Problem& problem) -> std::optional<TunedKernel> {
      const std::optional<BestChoice> best = db->best(gpu, problem);
      if (!best) return std::nullopt;
      return TunedKernel{.kernel = best->kernel, .median_us = best->median_us, .measurement_id = best->measurement_id};
    };
    choice.fallback_default = opts.fallback == "default";
    choice.source = "--db " + opts.db;
    choice.tune_command = tune_command(opts);
    choice.hint = other_gpus_hint(*db, gpus);
  }

  JitCache cache(opts.no_cache ? std::nullopt : std::optional(user_cache_dir() / "jit"));
  ThreadPool pool(opts.jobs != 0 ? opts.jobs : usable_cores());
  Progress progress("compiling", distinct_problems(suite).size() * gpus.size());
  const LibraryDescription library =
      build_library(opts.name, suite, gpus, cache, pool, choice, [&](const std::string& item) { progress.step(item); });
  progress.done();

  const std::map<std::string, std::string> files = render_library(library);
  write_library(opts.out, files);
  std::size_t tuned = 0;
  for (const LibraryProblem& p : library.problems)
    for (const LibraryKernel& k : p.kernels) tuned += k.tuned.has_value();
  std::size_t bytes = 0;
  for (const auto& [path, text] : files) bytes += text.size();
  const auto stats = cache.stats();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fmt::print(
      "emitted {} ({} problems x {} architectures, {} compiled, {} from cache; {} kernels from the tuning database, "
      "{} default) in {}: {} files, {:.1f} MB, {:.1f} s\n",
      library.name, library.problems.size(), gpus.size(), stats.compiles, stats.memory_hits + stats.disk_hits, tuned,
      library.problems.size() * gpus.size() - tuned, opts.out, files.size(), bytes / 1e6, seconds);
  fmt::print("build it: cmake -S {0} -B {0}/build -G Ninja && cmake --build {0}/build && {0}/build/{1}_example\n",
             opts.out, library.name);
}

}  // namespace

void add_emit_lib_command(CLI::App& app) {
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "emit-lib",
      "Write a CMake project that builds lib<name>.a: for every layer of a shapes file, the chosen kernel (the "
      "tuning database's best with --db) and its launch plan, compiled to a cubin for each --gpu's architecture and "
      "embedded, a C/C++ header that dispatches on "
      "the exact problem, and a CMake package (no NVRTC or convgen at run time; no GPU needed)");
  cmd->add_option("--shapes", opts->shapes, "Shapes file (suite CSV, SEER list or B,C,H,W,N list)")->required();
  cmd->add_option("--gpu", opts->gpus, "GPU descriptor (a name under gpus/ or a path); repeat for more architectures")
      ->required();
  cmd->add_option("--name", opts->name, "Library name, a C identifier: lib<name>.a, <name>.h, <name>::<name>")
      ->required();
  cmd->add_option("--out", opts->out, "Output folder of the project")->required();
  cmd->add_option("--db", opts->db,
                  "Tuning database: each problem's kernel is its best verified one on the GPU (default: convgen's "
                  "default choice, untuned)");
  cmd->add_option("--fallback", opts->fallback,
                  "With --db: 'default' takes convgen's default choice for problems the database lacks (else they "
                  "are an error)")
      ->check(CLI::IsMember({"default"}));
  cmd->add_option("--batch", opts->batch, "Batch size for every layer (0 keeps the file's)");
  add_precision_layout_options(cmd, opts->precision, opts->layout);
  add_act_sparsity_option(cmd, opts->act_sparsity);
  add_fusion_options(cmd, opts->fusion);
  add_weight_options(cmd, opts->weights);
  cmd->add_option("--jobs", opts->jobs, "Parallel compiles (0: one per core this process may run on)");
  cmd->add_flag("--no-cache", opts->no_cache, "Do not read or write the on-disk JIT cache");
  cmd->callback([opts] { run_emit_lib(*opts); });
}

}  // namespace convgen::cli
