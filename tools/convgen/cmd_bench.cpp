// cmd_bench: `convgen bench`: every layer of a shapes file against every cuDNN route, verified, in both timing modes.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include <fmt/format.h>

#include "bench/bench_runner.hpp"
#include "bench/provenance.hpp"
#include "convgen/error.hpp"
#include "generator/family.hpp"
#include "reference/inputs.hpp"
#include "runtime/module.hpp"
#include "tools/convgen/cli_common.hpp"
#include "tools/convgen/commands.hpp"
#include "tuner/tuning_db.hpp"

namespace convgen::cli {
namespace {

struct Options {
  std::string shapes, layer, out = "bench-results", precision = "fp32", layout, gpu = "live", db, cudnn_also;
  std::vector<int> batches;
  std::vector<std::string> families;
  std::vector<double> act_sparsity;
  FusionOptions fusion;
  std::string pattern = "blob";
  WeightOptions weights;
  bool warm = false;
  bool chain = false;
  bool ours_only = false;
  int samples = kProtocolSamples, calls = kProtocolCallsPerSample, candidates = 3, finalists = 8;
  std::uint64_t seed = 1;
};

// The reports' path without extension: OUT/<suite>_<precision>[_n<batches>][_<layout>][_warm]<suffix>.
std::filesystem::path report_stem(const Options& opts, const BenchOptions& options, const Suite& suite,
                                  const std::string& suffix);
void write_reports(const std::filesystem::path& stem, const BenchReport& report);

void run_bench_command(const Options& opts, const std::string& command_line) {
  WeightOptions weights = opts.weights;
  weights.seed = opts.seed;
  const Suite file_suite =
      with_layer_weights(with_fusion(select_layers(load_shapes(opts.shapes), 0, opts.layer), opts.fusion), weights);
  BenchOptions options{.batches = opts.batches,
                       .warm = opts.warm,
                       .chain = opts.chain,
                       .candidates_per_family = opts.candidates,
                       .finalists = opts.finalists,
                       .cudnn_routes = !opts.ours_only,
                       .seed = opts.seed};
  const auto precision = parse_enum<Precision>(opts.precision);
  if (!precision)
    throw InputError(
        fmt::format("--precision: unknown '{}', expected one of {}", opts.precision, enum_choices<Precision>()));
  options.precision = *precision;
  if (!opts.cudnn_also.empty()) {
    const auto also = parse_enum<Precision>(opts.cudnn_also);
    if (!also)
      throw InputError(
          fmt::format("--cudnn-also: unknown '{}', expected one of {}", opts.cudnn_also, enum_choices<Precision>()));
    if (*also == options.precision)
      throw InputError(fmt::format("--cudnn-also {} is the run's own precision: cuDNN is already timed in it", *also));
    options.cudnn_also = also;
  }
  if (!opts.layout.empty()) {
    const auto layout = parse_enum<Layout>(opts.layout);
    if (!layout || rank(*layout) != 2)
      throw InputError(fmt::format("--layout: expected nchw or nhwc, got '{}'", opts.layout));
    options.layout = layout;
  }
  for (const std::string& name : opts.families) family(name);  // an unknown name is an error listing the families
  options.families = opts.families;
  options.timing.samples = opts.samples;
  options.timing.calls_per_sample = opts.calls;
  if (opts.samples < kProtocolSamples || opts.calls < kProtocolCallsPerSample)
    fmt::print(stderr, "convgen: warning: fewer samples or calls than the protocol's {} x {}: not for publication\n",
               kProtocolSamples, kProtocolCallsPerSample);

  const Gpu gpu = load_gpu_descriptor(opts.gpu, true);
  Context context(0);
  // Ours includes the tuning database's best for each problem, when the database has one (`convgen tune`).
  const std::filesystem::path db_path = opts.db.empty() ? TuningDb::default_path() : std::filesystem::path(opts.db);
  std::optional<TuningDb> db;
  if (std::filesystem::exists(db_path)) {
    db.emplace(TuningDb::open(db_path));
  } else if (!opts.db.empty()) {
    throw InputError(fmt::format("--db {}: no such tuning database", opts.db));
  }
  // The problems of a run the database has a choice for, those it has only a dense input's choice for, and those it
  // has none for (said after the run: a choice is kept per GPU, precision, layout and activation-sparsity bucket).
  // A sparse problem also runs the same problem's choice for dense input: any kernel is right on any input, and a
  // dense family's time does not depend on the zeros, so a network tuned once dense is benched tuned at every zero
  // fraction, beside what was tuned for that fraction.
  std::set<std::string> tuned, dense_tuned, untuned;
  if (db)
    options.extra_candidates = [&](const Problem& p) {
      std::vector<KernelSpec> specs;
      const std::optional<BestChoice> best = db->best(gpu, p);
      if (best) specs.push_back(parse_kernel_name(best->kernel));
      std::optional<BestChoice> dense_best;
      if (p.act_sparsity != 0) {
        Problem dense = p;
        dense.act_sparsity = 0;
        dense_best = db->best(gpu, dense);
        if (dense_best && (!best || best->kernel != dense_best->kernel))
          specs.push_back(parse_kernel_name(dense_best->kernel));
      }
      (best ? tuned : dense_best ? dense_tuned : untuned).insert(problem_key(p));
      return specs;
    };
  const SparsityPattern pattern = parse_sparsity_pattern(opts.pattern);
  options.pattern = pattern;
  for (double z : opts.act_sparsity)
    if (!(z >= 0 && z <= 1)) throw InputError(fmt::format("--act-sparsity: {} is not a zero fraction in [0, 1]", z));
  // One run per zero fraction, which every layer then expects (its problem carries it: our candidates are chosen
  // for it); without --act-sparsity one run where each layer has its shapes file's act_sparsity. Both sides are
  // verified and timed on the same activation.
  const std::vector<std::optional<double>> runs =
      opts.act_sparsity.empty()
          ? std::vector<std::optional<double>>{std::nullopt}
          : std::vector<std::optional<double>>(opts.act_sparsity.begin(), opts.act_sparsity.end());
  const bool file_has_sparsity = std::any_of(file_suite.layers.begin(), file_suite.layers.end(),
                                             [](const Layer& l) { return l.problem.act_sparsity != 0; });
  for (const std::optional<double>& zeros : runs) {
    const Suite suite = select_layers(file_suite, 0, "", zeros);
    if (zeros)
      fmt::print("activation: {}\n",
                 describe(zeros == 0.0 ? TensorSource{DenseRandom{}} : TensorSource{SparseRandom{pattern, *zeros}}));
    else if (file_has_sparsity)
      fmt::print("activation: each layer's act_sparsity from {}, zeros in the {} pattern\n", opts.shapes, pattern);
    std::string suffix;
    if (zeros)
      suffix = fmt::format("_z{}_{}", static_cast<int>(std::lround(*zeros * 100)), pattern);
    else if (file_has_sparsity)
      suffix = fmt::format("_zfile_{}", pattern);
    const std::filesystem::path stem = report_stem(opts, options, suite, suffix);
    // The layers done so far, rewritten after each one (JSON and Markdown; removed when the run completes): a run cut
    // short (a time limit, a crash, Ctrl-C) keeps what it measured.
    std::filesystem::path partial_json = stem, partial_md = stem;
    partial_json += ".partial.json";
    partial_md += ".partial.md";
    options.on_row = [&](const BenchReport& so_far) {
      // Written beside, then renamed over the last one: a run killed while writing keeps the previous layers'.
      for (const auto& [path, text] : {std::pair{partial_json, report_json(so_far)},
                                       std::pair{partial_md, report_markdown(so_far)}}) {
        std::filesystem::path next = path;
        next += ".next";
        write_output_file(next, text);
        std::filesystem::rename(next, path);
      }
    };
    Progress progress("bench", suite.layers.size() * std::max<std::size_t>(1, opts.batches.size()));
    std::size_t last = static_cast<std::size_t>(-1);
    const BenchReport report =
        run_bench(suite, gpu, options, command_line, [&](std::size_t index, std::size_t, const std::string& what) {
          if (index != last) progress.step(what);
          last = index;
        });
    progress.done();
    const std::size_t problems = untuned.size() + dense_tuned.size() + tuned.size();
    if (!dense_tuned.empty())
      fmt::print(stderr,
                 "convgen: note: the tuning database {} has no choice at this run's zeros for {} of the {} problems "
                 "of this run, but one for dense input, which ran among our candidates (tune with --act-sparsity for "
                 "the sparse families' choice)\n",
                 db_path.string(), dense_tuned.size(), problems);
    if (!untuned.empty())
      fmt::print(stderr,
                 "convgen: note: the tuning database {} has no choice for {} of the {} problems of this run; they "
                 "ran our untuned candidates only (choices are kept per GPU, precision, layout and activation "
                 "sparsity: tune with this run's --batch, --precision, --layout and --act-sparsity)\n",
                 db_path.string(), untuned.size(), problems);
    tuned.clear();
    dense_tuned.clear();
    untuned.clear();
    write_reports(stem, report);
    std::filesystem::remove(partial_json);
    std::filesystem::remove(partial_md);
  }
}

std::filesystem::path report_stem(const Options& opts, const BenchOptions& options, const Suite& suite,
                                  const std::string& suffix) {
  std::string stem = fmt::format("{}_{}", suite.name, options.precision);
  if (!opts.batches.empty()) stem += fmt::format("_n{}", fmt::join(opts.batches, "-"));
  if (options.layout) stem += fmt::format("_{}", *options.layout);
  if (opts.warm) stem += "_warm";
  stem += suffix;
  const std::filesystem::path dir = opts.out;
  std::filesystem::create_directories(dir);
  return dir / stem;
}

void write_reports(const std::filesystem::path& stem_path, const BenchReport& report) {
  const std::string stem = stem_path.string();
  write_output_file(stem + ".json", report_json(report));
  write_output_file(stem + ".csv", report_csv(report));
  const std::string markdown = report_markdown(report);
  write_output_file(stem + ".md", markdown);
  fmt::print("{}\nwrote {}.{{json,csv,md}}\n", markdown, stem);
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "bench",
      "Benchmark every layer against every cuDNN forward route (legacy algorithms and graph-API engines) in "
      "the same math mode: both verified against float64 first, timed interleaved by stream launches and "
      "graph replay, with energy; writes JSON, CSV and Markdown");
  cmd->add_option("--shapes", opts->shapes, "Shapes file")->required();
  cmd->add_option("--batch", opts->batches, "Batch sizes, e.g. 1,2,4,8 (default: the file's)")->delimiter(',');
  cmd->add_option("--precision", opts->precision, "fp32 (strict FMA, no TF32), tf32, fp16 or bf16 (tensor-op math)")
      ->capture_default_str();
  cmd->add_option("--layout", opts->layout, "nchw or nhwc (3-D layers take the matching 3-D layout)");
  cmd->add_option("--cudnn-also", opts->cudnn_also,
                  "Also verify and time cuDNN's routes in this precision (its own math mode) on every layer, after "
                  "ours in the same run, e.g. fp16 beside an fp32 run of weight_sparse kernels: a table and its "
                  "speedups in the report");
  cmd->add_option("--families", opts->families,
                  "Our kernels only from these families, e.g. igemm,direct (default: all)")
      ->delimiter(',');
  cmd->add_option("--act-sparsity", opts->act_sparsity,
                  "Zero fractions of every layer's activation, e.g. 0,0.5,0.7,0.9: one run each, both sides on the "
                  "same input (default: each layer's act_sparsity column of the shapes file, else dense)")
      ->delimiter(',');
  add_fusion_options(cmd, opts->fusion);
  cmd->add_option("--sparsity-pattern", opts->pattern, "Where the zeros lie: uniform, channel or blob")
      ->capture_default_str();
  cmd->add_flag("--warm", opts->warm, "Allow L2 residency (default: rotate buffer sets past twice the L2)");
  add_early_launch_option(cmd);
  cmd->add_flag("--chain", opts->chain,
                "After each batch, time the network as one chain of our fastest kernels (each layer count times, "
                "in network order, warm buffers), with early launch and without, against the per-layer sum");
  cmd->add_flag("--ours-only", opts->ours_only,
                "Run no cuDNN route: our kernels alone, verified and timed (and the chain with --chain), e.g. to "
                "compare builds of ours quickly; no speedup is reported")
      ->excludes(cmd->get_option("--cudnn-also"));
  cmd->add_option("--out", opts->out, "Output folder")->capture_default_str();
  cmd->add_option("--layer", opts->layer, "Only this layer");
  cmd->add_option("--samples", opts->samples, "Samples per candidate and mode")->capture_default_str();
  cmd->add_option("--calls", opts->calls, "Calls per sample")->capture_default_str();
  cmd->add_option("--candidates", opts->candidates, "Our candidates per family besides the defaults")
      ->capture_default_str();
  cmd->add_option("--finalists", opts->finalists,
                  "cuDNN routes (fastest in a 3-sample screening round) taken to the full protocol; 0: all")
      ->capture_default_str();
  cmd->add_option("--db", opts->db, "Tuning database whose best kernels join ours (default: the user's, if it exists)");
  cmd->add_option("--seed", opts->seed, "Random seed of the inputs (and of --weight-sparsity's weights)")
      ->capture_default_str();
  add_weight_options(cmd, opts->weights);
  cmd->callback([opts] { run_bench_command(*opts, invocation()); });
}

}  // namespace convgen::cli
