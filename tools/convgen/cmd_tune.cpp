// cmd_tune: `convgen tune` (tune every layer into the tuning database, one worker per GPU) and `convgen tune-study`
// (exhaustive search against the model-guided tuner, written as a Markdown report).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <exception>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "convgen/error.hpp"
#include "runtime/device.hpp"
#include "runtime/driver.hpp"
#include "runtime/jit_cache.hpp"
#include "runtime/module.hpp"
#include "runtime/thread_pool.hpp"
#include "tools/convgen/cli_common.hpp"
#include "tools/convgen/commands.hpp"
#include "tuner/shard.hpp"
#include "tuner/study.hpp"
#include "tuner/tuner.hpp"
#include "tuner/tuning_db.hpp"

namespace convgen::cli {
namespace {

// Parses --gpus: "all" (every device) or a comma-separated list of ordinals, each below `count`.
std::vector<int> parse_gpus(const std::string& text, int count) {
  if (count == 0) throw NoDeviceError(fmt::format("no CUDA device: {}", no_device_reason()));
  std::vector<int> ordinals;
  if (text == "all") {
    for (int i = 0; i < count; ++i) ordinals.push_back(i);
    return ordinals;
  }
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, end - start);
    int ordinal = -1;
    try {
      std::size_t used = 0;
      ordinal = std::stoi(item, &used);
      if (used != item.size()) ordinal = -1;
    } catch (const std::exception&) {
      ordinal = -1;
    }
    if (ordinal < 0)
      throw InputError(fmt::format("--gpus: expected 'all' or device ordinals like 0,1, got '{}'", text));
    if (ordinal >= count)
      throw InputError(fmt::format("--gpus: device {} does not exist ({} device(s) present)", ordinal, count));
    if (std::find(ordinals.begin(), ordinals.end(), ordinal) == ordinals.end()) ordinals.push_back(ordinal);
    start = end + 1;
  }
  return ordinals;
}

struct TuneArgs {
  std::vector<std::string> shapes;
  std::vector<int> batches;
  std::string layer, gpus = "0", db, out, record, pattern = "blob", precision, layout, shard;
  std::optional<double> act_sparsity;
  FusionOptions fusion;
  WeightOptions weights;
  std::vector<std::string> families;
  int budget = 10, samples = 10, calls = 10;
  std::optional<int> compile;
  bool warm = false, force = false, no_graph = false, graph = false, dry_run = false, serial_compile = false;
  std::uint64_t seed = 1;
};

TimingOptions timing_of(const TuneArgs& a) {
  return {.samples = a.samples, .calls_per_sample = a.calls, .graph = !a.no_graph};
}

// One (layer, batch) to tune.
struct Job {
  std::string label;
  Problem problem;
};

std::vector<Job> jobs_of(const TuneArgs& a) {
  std::vector<Job> jobs;
  const std::vector<int> batches = a.batches.empty() ? std::vector<int>{0} : a.batches;
  for (const std::string& file : a.shapes) {
    WeightOptions weights = a.weights;
    weights.seed = a.seed;
    const Suite suite = with_layer_weights(
        with_fusion(with_precision_and_layout(select_layers(load_shapes(file), 0, a.layer, a.act_sparsity), a.precision,
                                              a.layout),
                    a.fusion),
        weights);
    for (int batch : batches)
      for (const Layer& layer : suite.layers) {
        Problem p = layer.problem;
        if (batch > 0) p.n = batch;
        jobs.push_back({fmt::format("{} {} n{}", suite.name, layer.name, p.n), p});
      }
  }
  return jobs;
}

std::string describe(const TuneResult& r) {
  if (r.from_db) return fmt::format("{} {:.2f} us (from the database)", r.from_db->kernel, r.from_db->median_us);
  int failed = 0;
  for (const CandidateOutcome& c : r.candidates) failed += c.status != MeasurementStatus::ok;
  const std::string counts =
      fmt::format("{} measured of {}, {} failed, {:.1f} s", r.measured, r.candidates.size(), failed, r.wall_ms / 1000);
  if (!r.best) return fmt::format("no verified candidate ({})", counts);
  return fmt::format("{} {:.2f} us ({})", kernel_name(r.candidates[*r.best].spec), *best_time_us(r), counts);
}

// This process's shard: --shard, else the launcher's variables (Slurm array, MPI ranks), else the whole work.
std::optional<ShardOrigin> shard_of(const TuneArgs& a) {
  if (!a.shard.empty()) return ShardOrigin{.shard = parse_shard(a.shard), .source = "--shard"};
  return shard_from_environment(process_environment());
}

// Keeps the shard's share of the jobs, balanced by predicted cost (the same split in every task), and says so.
std::vector<Job> select_shard(const std::vector<Job>& jobs, const std::optional<ShardOrigin>& origin) {
  if (!origin) return jobs;
  std::vector<ShardJob> costed;
  for (const Job& job : jobs) costed.push_back({.key = problem_key(job.problem), .cost = tune_cost(job.problem)});
  const std::vector<int> shard_of_job = split_jobs(costed, origin->shard.count);
  std::vector<Job> mine;
  double mine_cost = 0, total_cost = 0;
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    total_cost += costed[j].cost;
    if (shard_of_job[j] != origin->shard.index) continue;
    mine.push_back(jobs[j]);
    mine_cost += costed[j].cost;
  }
  fmt::print("shard {}/{} from {}: {} of {} jobs, {:.0f}% of the predicted cost\n", origin->shard.index,
             origin->shard.count, origin->source, mine.size(), jobs.size(),
             total_cost > 0 ? 100 * mine_cost / total_cost : 0.0);
  return mine;
}

// Where a tune's wall time went: before the first problem's tune began (devices, contexts, the database), in the
// problems' tunes (summed over the GPUs), in starting the next problem's compiles between two tunes (summed), and
// after the last one ended (the workers' and the JIT cache's teardown).
struct TuneClock {
  using Clock = std::chrono::steady_clock;
  Clock::time_point start = Clock::now();
  std::optional<Clock::time_point> first_begin, last_end;
  double tunes_s = 0, prefetch_starts_s = 0;

  static double seconds(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
  }
  void tuned(Clock::time_point begin, Clock::time_point end) {  // under the caller's lock
    first_begin = first_begin ? std::min(*first_begin, begin) : begin;
    last_end = last_end ? std::max(*last_end, end) : end;
    tunes_s += seconds(begin, end);
  }
  void prefetch_started(Clock::time_point begin, Clock::time_point end) {  // under the caller's lock
    prefetch_starts_s += seconds(begin, end);
  }
  std::string summary(std::size_t problems, std::size_t gpus) const {
    const auto now = Clock::now();
    if (!first_begin) return fmt::format("tuned no problem, {:.1f} s", seconds(start, now));
    return fmt::format(
        "tuned {} problems on {} GPU{} in {:.1f} s: {:.1f} s before the first began, {:.1f} s in their "
        "tunes (summed over the GPUs), {:.1f} s starting the next one's compiles, {:.1f} s after the last ended",
        problems, gpus, gpus == 1 ? "" : "s", seconds(start, now), seconds(start, *first_begin), tunes_s,
        prefetch_starts_s, seconds(*last_end, now));
  }
};

// How many jobs past the one it tunes a worker has compiling: enough that the slowest compiles (seconds, for some
// unrolled kernels) finish while the layers before them are measured, few enough that the GPUs' share stays even.
constexpr std::size_t kPrefetchDepth = 8;

void run_tune(const TuneArgs& a) {
  TuneClock clock;
  for (const std::string& name : a.families) family(name);  // an unknown name fails before any device work
  const std::optional<ShardOrigin> origin = shard_of(a);
  const std::vector<Job> jobs = select_shard(jobs_of(a), origin);
  const Shard shard = origin ? origin->shard : Shard{};
  const std::filesystem::path db_path =
      a.db.empty() ? TuningDb::default_path() : std::filesystem::path(shard_path(a.db, shard));
  if (shard.count > 1 && a.db.find("{shard}") == std::string::npos)
    fmt::print(
        "note: every shard writes to {}; one file per shard (--db 'tune-{{shard}}.sqlite') keeps SQLite off "
        "a shared file system's locks, then `convgen db merge`\n",
        db_path.string());
  if (a.dry_run) {
    for (const Job& job : jobs)
      fmt::print("{}: {} (predicted cost {:.2f})\n", job.label, problem_key(job.problem), tune_cost(job.problem));
    fmt::print("database: {}\n", db_path.string());
    return;
  }
  const std::vector<int> ordinals = parse_gpus(a.gpus, device_count());
  const SparsityPattern pattern = parse_sparsity_pattern(a.pattern);
  const TuneOptions options{.budget = a.budget,
                            .timing = timing_of(a),
                            .warm = a.warm,
                            .seed = a.seed,
                            .reuse_best = !a.force,
                            .pattern = pattern,
                            .families = a.families,
                            .compile_limit = a.compile};
  check_timing_options(options.timing);
  TuningDb::open(db_path);  // creates or migrates it once, before the workers race to

  std::vector<std::string> results(jobs.size());
  std::vector<std::exception_ptr> errors(ordinals.size());
  {  // the JIT cache, the pool and the workers end here, within the clock
    JitCache cache(default_jit_cache_dir());
    ThreadPool pool;
    std::mutex mutex;  // the progress display and the results
    Progress progress("tune", jobs.size());
    std::atomic<std::size_t> next{0};
    std::atomic<bool> failed{false};
    const auto worker = [&](std::size_t w) {
      try {
        Context context(ordinals[w]);
        const Gpu gpu = query_device(ordinals[w]);
        TuningDb db = TuningDb::open(db_path);
        Tuner tuner(gpu, cache, pool, &db, coefficients_for(&db, gpu), ordinals[w]);
        // Each worker claims the jobs it will tune kPrefetchDepth ahead, and their candidates compile (prefetch)
        // while it measures the job at hand: a layer whose slowest compile takes seconds is ready by its turn.
        std::deque<std::size_t> claimed;
        const auto claim = [&] {
          const std::size_t j = next++;
          if (j >= jobs.size()) return;
          claimed.push_back(j);
          const auto prefetch_begin = TuneClock::Clock::now();
          if (!a.serial_compile) tuner.prefetch(jobs[j].problem, options);
          std::lock_guard lock(mutex);
          clock.prefetch_started(prefetch_begin, TuneClock::Clock::now());
        };
        for (std::size_t i = 0; i <= kPrefetchDepth; ++i) claim();
        while (!claimed.empty() && !failed) {
          const std::size_t j = claimed.front();
          claimed.pop_front();
          {
            std::lock_guard lock(mutex);
            progress.step(ordinals.size() > 1 ? fmt::format("gpu {}: {}", ordinals[w], jobs[j].label) : jobs[j].label);
          }
          const auto begin = TuneClock::Clock::now();
          const std::string text = describe(tuner.tune(jobs[j].problem, options));
          {
            std::lock_guard lock(mutex);
            clock.tuned(begin, TuneClock::Clock::now());
            results[j] = text;
          }
          claim();
        }
      } catch (...) {
        errors[w] = std::current_exception();
        failed = true;  // the others stop after their current layer
      }
    };
    std::vector<std::thread> threads;
    for (std::size_t w = 0; w < ordinals.size(); ++w) threads.emplace_back(worker, w);
    for (std::thread& t : threads) t.join();
    progress.done();
  }
  for (std::size_t j = 0; j < jobs.size(); ++j)
    if (!results[j].empty()) fmt::print("{}: {}\n", jobs[j].label, results[j]);
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
  fmt::print("database: {}\n", db_path.string());
  fmt::print("{}\n", clock.summary(jobs.size(), ordinals.size()));
}

void run_tune_study(const TuneArgs& a) {
  if (a.out.empty()) throw InputError("tune-study: --out FILE.md is required");
  const std::vector<int> ordinals = parse_gpus(a.gpus, device_count());
  if (ordinals.size() != 1) throw InputError(fmt::format("--gpus: the study runs on one device, got '{}'", a.gpus));
  Context context(ordinals[0]);
  const Gpu gpu = query_device(ordinals[0]);
  StudyOptions options{.batches = a.batches, .budget = a.budget, .seed = a.seed};
  options.timing.samples = a.samples;
  options.timing.calls_per_sample = a.calls;
  options.timing.graph = a.graph;
  check_timing_options(options.timing);
  if (!a.db.empty()) {
    // Only the calibration is read: the guided runs must not see measurements of the problems they are judged on.
    const TuningDb db = TuningDb::open(a.db);
    const std::optional<Calibration> calibration = load_calibration(db, gpu);
    if (!calibration)
      throw InputError(
          fmt::format("--db {}: no calibration of the cost model (version {}) for {}; run `convgen db "
                      "calibrate --db {}` first",
                      a.db, cost_model_version, describe_gpu(gpu), a.db));
    options.coefficients = calibration->coefficients;
    options.coefficients_source =
        fmt::format("the calibration for this GPU in {}, fitted on {} measurements", a.db, calibration->samples);
  }
  std::optional<TuningDb> record;
  if (!a.record.empty()) record = TuningDb::open(a.record);
  StudyReport report{.gpu = describe_gpu(gpu), .command_line = invocation(), .options = options};
  ThreadPool pool;
  for (const std::string& file : a.shapes) {
    WeightOptions weights = a.weights;
    weights.seed = a.seed;
    const Suite suite = with_layer_weights(
        with_fusion(with_precision_and_layout(select_layers(load_shapes(file), 0, a.layer, a.act_sparsity), a.precision,
                                              a.layout),
                    a.fusion),
        weights);
    Progress progress(fmt::format("tune-study {}", suite.name),
                      suite.layers.size() * std::max<std::size_t>(1, a.batches.size()));
    const std::vector<StudyLayer> rows = run_study(
        suite, gpu, options, pool, ordinals[0],
        [&](std::size_t, std::size_t, const std::string& what) { progress.step(what); }, record ? &*record : nullptr);
    progress.done();
    report.layers.insert(report.layers.end(), rows.begin(), rows.end());
    // Written after every suite, so a long study that is cut short still leaves what it measured.
    const std::string md = study_markdown(report);
    std::filesystem::path out(a.out);
    if (out.has_parent_path()) std::filesystem::create_directories(out.parent_path());
    write_output_file(out, md);
  }
  fmt::print("{}wrote {}\n", study_markdown(report), a.out);
}

void add_common_options(CLI::App* cmd, TuneArgs& a) {
  cmd->add_option("--shapes", a.shapes, "Shapes file(s) (suite CSV, SEER list or B,C,H,W,N list)")->required();
  cmd->add_option("--batch", a.batches, "Batch sizes, comma-separated (default: the file's)")->delimiter(',');
  cmd->add_option("--layer", a.layer, "Only the layer of this name");
  add_precision_layout_options(cmd, a.precision, a.layout);
  cmd->add_option("--samples", a.samples, "Timing samples per candidate and round")->capture_default_str();
  cmd->add_option("--calls", a.calls, "Calls per timing sample")->capture_default_str();
  cmd->add_option("--seed", a.seed, "Seed of the verification inputs")->capture_default_str();
  add_act_sparsity_option(cmd, a.act_sparsity);
  add_fusion_options(cmd, a.fusion);
  add_weight_options(cmd, a.weights);
}

}  // namespace

void add_tune_command(CLI::App& app) {
  auto tune = std::make_shared<TuneArgs>();
  CLI::App* cmd = app.add_subcommand(
      "tune",
      "Tune every layer: candidates ranked by the cost model, the top ones verified and measured in rounds "
      "until a stop rule, the best recorded in the tuning database (one worker per GPU; --shard I/N for one "
      "task of a cluster job, then `db merge`)");
  add_common_options(cmd, *tune);
  cmd->add_option("--budget", tune->budget, "Candidates measured at most per layer (0: every candidate)")
      ->capture_default_str();
  cmd->add_option("--compile", tune->compile,
                  "Candidates compiled at most per layer, the model's best before compiling (default: max(16, 4 x "
                  "budget), every one with --budget 0; 0: every one)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--gpus", tune->gpus, "Devices to tune on: 'all' or ordinals like 0,1")->capture_default_str();
  cmd->add_option("--db", tune->db,
                  "Tuning database (default: the user's data folder); '{shard}' in it becomes the shard index");
  cmd->add_option("--shard", tune->shard,
                  "Tune only shard I of N (I from 0 to N-1): a share of the layer x batch jobs balanced by predicted "
                  "cost, the same split in every task (default: from SLURM_ARRAY_TASK_ID/_MIN/_COUNT, "
                  "OMPI_COMM_WORLD_RANK/_SIZE or PMI_RANK/PMI_SIZE when set, else every job)");
  cmd->add_flag(
      "--dry-run", tune->dry_run,
      "Print this shard's jobs with their predicted cost and the database path; tune nothing (no GPU needed)");
  cmd->add_flag("--warm", tune->warm, "Allow L2 residency (else buffer sets rotate past 2 x L2)");
  add_early_launch_option(cmd);
  cmd->add_flag("--no-graph", tune->no_graph, "Time stream launches only (no CUDA graph replays): faster");
  cmd->add_flag("--force", tune->force, "Tune again layers the database already knows");
  cmd->add_flag("--serial-compile", tune->serial_compile,
                "Compile a layer's candidates when its tuning starts (default: while the layers before it are "
                "measured, up to 8 ahead); the results are the same either way");
  cmd->add_option("--family", tune->families,
                  "Only candidates of these kernel families, comma-separated (default: every family)")
      ->delimiter(',');
  cmd->add_option("--sparsity-pattern", tune->pattern,
                  "Where the zeros of a sparse layer's activation lie while candidates are measured: uniform, channel "
                  "or blob")
      ->capture_default_str();
  cmd->callback([tune] { run_tune(*tune); });

  auto study = std::make_shared<TuneArgs>();
  CLI::App* s = app.add_subcommand(
      "tune-study",
      "Per layer, the exhaustive best against the model-guided tuner with --budget measurements, the "
      "model's rank correlation and the tuning wall time with a cold and a warm JIT cache, as Markdown");
  add_common_options(s, *study);
  s->add_option("--budget", study->budget, "Measurements of the guided tuner per layer")->capture_default_str();
  s->add_option("--gpus", study->gpus, "The device to run on (one ordinal)")->capture_default_str();
  s->add_flag("--graph", study->graph, "Time CUDA graph replays too (default: stream launches only)");
  s->add_option("--out", study->out, "Markdown report to write")->required();
  s->add_option("--db", study->db,
                "Rank with this tuning database's calibration for the GPU (only the calibration is read; default: the "
                "model's default coefficients)");
  s->add_option("--record", study->record,
                "Also record the exhaustive runs' measurements in this tuning database (data for a calibration)");
  s->callback([study] { run_tune_study(*study); });
}

}  // namespace convgen::cli
