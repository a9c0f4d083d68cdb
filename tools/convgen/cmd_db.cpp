// cmd_db: `convgen db list|show|export|import|merge|calibrate|replay|choices|compile-limit|prune`: read and maintain the tuning database.
#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <sstream>

#include <fmt/chrono.h>
#include <fmt/format.h>

#include "convgen/error.hpp"
#include "convgen/weights.hpp"
#include "generator/gpu_json.hpp"
#include "runtime/jit_cache.hpp"
#include "runtime/thread_pool.hpp"
#include "tools/convgen/cli_common.hpp"
#include "tools/convgen/commands.hpp"
#include "tools/export_file/export_file.hpp"
#include "tuner/calibration.hpp"
#include "tuner/choice_replay.hpp"
#include "tuner/cost_model.hpp"
#include "tuner/search_order.hpp"
#include "tuner/tuner.hpp"
#include "tuner/tuning_db.hpp"

namespace convgen::cli {
namespace {

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

TuningDb open_db(const std::string& path) {
  return TuningDb::open(path.empty() ? TuningDb::default_path() : std::filesystem::path(path));
}

// Whether a --gpu filter names the GPU: a part of its name (any case) or its exact arch.
bool gpu_matches(const Gpu& gpu, const std::string& filter) {
  return lower(gpu.name).find(lower(filter)) != std::string::npos || gpu.arch == filter;
}

// Resolves a --gpu filter against the GPUs the database holds. Nothing when the filter is empty; an error unless
// exactly one GPU matches.
std::optional<Gpu> match_gpu(const TuningDb& db, const std::string& filter) {
  if (filter.empty()) return std::nullopt;
  const std::vector<Gpu> gpus = db.gpus();
  std::vector<Gpu> matches;
  for (const Gpu& g : gpus)
    if (gpu_matches(g, filter)) matches.push_back(g);
  const auto names = [](const std::vector<Gpu>& list) {
    std::string out;
    for (const Gpu& g : list) out += (out.empty() ? "" : ", ") + describe_gpu(g);
    return out.empty() ? std::string("none") : out;
  };
  if (matches.empty())
    throw InputError(
        fmt::format("--gpu '{}' matches no GPU in {}; it holds: {}", filter, db.path().string(), names(gpus)));
  if (matches.size() > 1)
    throw InputError(fmt::format("--gpu '{}' matches several GPUs in {}: {}; give more of the name", filter,
                                 db.path().string(), names(matches)));
  return matches[0];
}

std::string date(std::int64_t unix_seconds) {
  return fmt::format("{:%Y-%m-%d %H:%M}", fmt::gmtime(static_cast<std::time_t>(unix_seconds)));
}

void add_db_option(CLI::App* cmd, std::string& db) {
  cmd->add_option("--db", db, "Tuning database file (default: tuning.sqlite in the user's data folder)");
}

void add_gpu_filter(CLI::App* cmd, std::string& gpu) {
  cmd->add_option("--gpu", gpu, "Only this GPU: a part of its name (any case) or its arch, matching one GPU");
}

// The options of the commands that read measurements without a GPU (replay, choices, compile-limit): --db, --gpu and
// --export, whose files are read instead of the database when given.
void add_measurement_source(CLI::App* cmd, std::string& db, std::string& gpu, std::vector<std::string>& exports) {
  add_db_option(cmd, db);
  add_gpu_filter(cmd, gpu);
  cmd->add_option("--export", exports,
                  "Read the measurements of these `db export` files (plain or gzipped) instead of --db");
}

void list(const std::string& db_path, const std::string& gpu_filter) {
  const TuningDb db = open_db(db_path);
  const auto best = db.list_best(match_gpu(db, gpu_filter));
  if (best.empty()) {
    fmt::print("no best choices in {}\n", db.path().string());
    return;
  }
  const Gpu* heading = nullptr;
  for (const BestChoice& b : best) {
    if (heading == nullptr || !same_gpu(*heading, b.gpu)) {
      fmt::print("{}\n", describe_gpu(b.gpu));
      heading = &b.gpu;
    }
    fmt::print("  {:<62} {:<40} {:>10.3f} us\n", problem_key(b.problem), b.kernel, b.median_us);
  }
  fmt::print("{} best choices\n", best.size());
}

void show(const std::string& db_path, const MeasurementFilter& filter) {
  const std::vector<MeasurementRecord> records = open_db(db_path).measurements(filter);
  const Gpu* heading = nullptr;
  for (const MeasurementRecord& m : records) {
    if (heading == nullptr || !same_gpu(*heading, m.gpu)) {
      fmt::print("{}\n", describe_gpu(m.gpu));
      heading = &m.gpu;
    }
    std::string result;
    if (m.status == MeasurementStatus::ok) {
      result = fmt::format("{:.3f} us (p10 {:.3f}, p90 {:.3f}, {} samples)", m.median_us, m.p10_us, m.p90_us,
                           m.samples_us.size());
      if (m.predicted_us) result += fmt::format(", predicted {:.3f} us", *m.predicted_us);
      if (m.energy_mj) result += fmt::format(", {:.4f} mJ", *m.energy_mj);
    } else {
      result = fmt::format("{}: {}", m.status, m.error_text.substr(0, m.error_text.find('\n')));
    }
    fmt::print("  #{:<6} {}  {}  {}  {}\n", m.id, date(m.created_at), problem_key(m.problem), m.kernel, result);
  }
  fmt::print("{} measurements\n", records.size());
}

// Returns the one GPU the database holds (or --gpu selects); an error when it is ambiguous or there is none.
Gpu the_gpu(const TuningDb& db, const std::string& filter) {
  if (auto gpu = match_gpu(db, filter)) return *gpu;
  const std::vector<Gpu> gpus = db.gpus();
  if (gpus.size() == 1) return gpus[0];
  if (gpus.empty()) throw InputError(fmt::format("{} holds no measurements", db.path().string()));
  std::string names;
  for (const Gpu& g : gpus) names += (names.empty() ? "" : ", ") + describe_gpu(g);
  throw InputError(fmt::format("{} holds several GPUs ({}); choose one with --gpu", db.path().string(), names));
}

struct CalibrateArgs {
  std::vector<std::string> exclude_shapes;
  std::vector<int> exclude_batches;
  std::string samples_csv;
  bool dry_run = false;
  WeightOptions weights;  // how the tune made its filters, to give weight_sparse's measurements theirs again
};

std::string accuracy_text(const RankingAccuracy& a) {
  std::string text = fmt::format(
      "mean Spearman {}, fastest in the top 10 for {:.0f}% of {} problems, predicted fastest within 10% of the "
      "measured best (SEER's right pick) for {:.0f}%, its time {:.3f}x the best's (geometric mean)",
      std::isfinite(a.mean_spearman) ? fmt::format("{:.2f}", a.mean_spearman) : "–", 100 * a.share_best_in_top10,
      a.problems, 100 * a.share_right_pick, a.pick_ratio);
  std::vector<std::string> families;
  for (const auto& [name, f] : a.families)
    families.push_back(
        fmt::format("{} {:.0f}% of {} ({:.3f}x)", name, 100 * f.share_right_pick, f.problems, f.pick_ratio));
  if (!families.empty()) text += fmt::format("; within a family: {}", fmt::join(families, ", "));
  std::vector<std::string> guided;
  for (const auto& [name, f] : a.families)
    if (f.guided_problems > 0)
      guided.push_back(fmt::format("{} {:.3f} over {}", name, f.guided_ratio, f.guided_problems));
  if (!guided.empty())
    text += fmt::format("; a guided tune of 10 replayed, the best over the best of the model's 10 first (geometric "
                        "mean over problems with more candidates): {}",
                        fmt::join(guided, ", "));
  return text;
}

// Each family's untuned default against its measured best: what the default choice runs without tuning (the family's
// estimate picks it; the calibration does not change it).
std::string defaults_text(const DefaultAccuracy& a) {
  std::vector<std::string> families;
  for (const auto& [name, f] : a.families) {
    std::string text = f.measured > 0 ? fmt::format("{} {:.3f}x over {} of {} problems", name, f.ratio, f.measured,
                                                    f.problems)
                                      : fmt::format("{} – (none of {} problems measured its default)", name, f.problems);
    if (f.measured > 0 && f.over_1_2 > 0) text += fmt::format(" ({} more than 1.2x off)", f.over_1_2);
    families.push_back(text);
  }
  if (families.empty()) return "each family's default: no family has a problem with 2 measured kernels";
  return fmt::format("each family's default (its estimate's first candidate) over its measured best, geometric mean "
                     "where the default was measured: {}",
                     fmt::join(families, ", "));
}

// Writes one row per calibration sample: what it is, its measured and predicted times and its unweighted terms.
std::string samples_csv(std::span<const CalibrationRow> rows, const Gpu& gpu, const Coefficients& coefficients) {
  std::string csv = "problem,kernel,family,measured_us,predicted_us";
  for (const auto& [term, name] : EnumNames<CostTerm>::table) csv += fmt::format(",{}", name);
  csv += "\n";
  for (const CalibrationRow& r : rows) {
    const CalibrationSample& s = r.sample;
    const Prediction p = predict(s.family, s.features, s.report, gpu, coefficients);
    csv += fmt::format("{},{},{},{:.6g},{:.6g}", problem_key(r.problem), kernel_name(r.spec), s.family, s.measured_us,
                       p.time_us);
    const std::optional<CostTerms> terms = cost_terms(s.features, s.report, gpu);
    for (std::size_t t = 0; t < cost_term_count; ++t) csv += fmt::format(",{:.6g}", terms ? (*terms)[t] : 0.0);
    csv += "\n";
  }
  return csv;
}

void calibrate_command(const std::string& db_path, const std::string& gpu_filter, const CalibrateArgs& a) {
  if (!a.exclude_batches.empty() && a.exclude_shapes.empty())
    throw InputError("db calibrate: --exclude-batch needs --exclude-shapes (the batch sizes of which layers?)");
  TuningDb db = open_db(db_path);
  const Gpu gpu = the_gpu(db, gpu_filter);
  std::vector<Problem> exclude;
  for (const std::string& file : a.exclude_shapes) {
    const Suite suite = load_shapes(file);
    const std::vector<int> batches = a.exclude_batches.empty() ? std::vector<int>{0} : a.exclude_batches;
    for (int batch : batches)
      for (Layer layer : suite.layers) {
        if (batch > 0) layer.problem.n = batch;
        exclude.push_back(layer.problem);
      }
  }
  if (!a.weights.dir.empty())
    throw InputError(
        "db calibrate: --weights cannot tell which layer a measurement is of; give the --weight-sparsity and --seed "
        "the tune made its filters with");
  FilterRefill refill;
  std::map<std::string, Problem> refilled;  // per problem key: a problem's many measurements share one filter
  if (!a.weights.sparsity.empty())
    refill = [&a, &refilled](const Problem& p) -> std::optional<Problem> {
      const std::string key = problem_key(p);
      if (auto it = refilled.find(key); it != refilled.end()) return it->second;
      const Suite one = with_layer_weights(Suite{.name = "measured", .layers = {Layer{.name = "measured", .problem = p}}},
                                           a.weights);
      return refilled.emplace(key, one.layers.front().problem).first->second;
    };
  const CalibrationData data = calibration_data(db, gpu, exclude, refill);
  fmt::print("{}: {} verified measurements of {} problems on {}", db.path().string(), data.rows.size(), data.problems,
             describe_gpu(gpu));
  if (data.excluded > 0) fmt::print(", {} of excluded problems left out", data.excluded);
  if (data.unusable > 0) fmt::print(", {} of kernels this build does not know left out", data.unusable);
  if (data.without_filter > 0)
    fmt::print(", {} of families whose cost features count the filter's nonzeros left out (the database keeps a "
               "filter's pattern hash, not its values{})",
               data.without_filter,
               a.weights.sparsity.empty() ? ": --weight-sparsity and --seed as the tune had them give it back"
                                          : ", and --weight-sparsity did not make the same pattern");
  fmt::print("\n");
  const std::optional<Calibration> previous = load_calibration(db, gpu);
  const Coefficients before = previous ? previous->coefficients : Coefficients{};
  const Calibration fit = calibrate(samples_of(data.rows), gpu, before);
  fmt::print("before ({}): {}\n", previous ? "the stored calibration" : "the default coefficients",
             accuracy_text(ranking_accuracy(data.rows, gpu, before)));
  fmt::print("after:  {}\n", accuracy_text(ranking_accuracy(data.rows, gpu, fit.coefficients)));
  fmt::print("{}\n", defaults_text(default_accuracy(data.rows, gpu)));
  if (!data.held_out.empty()) {
    // The excluded problems, judged by weights fitted without them (what a study reports).
    fmt::print("held out ({} measurements of the excluded problems), before: {}\n", data.held_out.size(),
               accuracy_text(ranking_accuracy(data.held_out, gpu, before)));
    fmt::print("held out, after: {}\n", accuracy_text(ranking_accuracy(data.held_out, gpu, fit.coefficients)));
  }
  for (const Family* f : all_families()) {
    const auto it = fit.families.find(f->name());
    const FamilyCalibration fc = it != fit.families.end() ? it->second : FamilyCalibration{};
    const std::string weights = describe_weights(f->name(), fit.coefficients.of(f->name()));
    if (fc.samples == 0) {
      fmt::print("  no samples, kept: {}\n", weights);
      continue;
    }
    fmt::print("  {} samples, {}, rms relative error {:.1f}%: {}\n", fc.samples,
               fc.fitted ? "fitted" : fmt::format("too few to fit (< {}), kept", min_calibration_samples),
               100 * fc.rms_relative_error, weights);
  }
  // Terms that are constant within a problem (DRAM bytes, launches) trade places freely when few problems are
  // measured: the fit may reproduce the times yet rank other problems badly.
  constexpr int kFewProblems = 10;
  if (data.problems < kFewProblems)
    fmt::print(
        "warning: only {} problems measured; weights fitted on fewer than {} problems may not carry over to "
        "others (tune more layers with --budget 0 first)\n",
        data.problems, kFewProblems);
  if (!a.samples_csv.empty()) write_output_file(a.samples_csv, samples_csv(data.rows, gpu, fit.coefficients));
  if (a.dry_run) {
    fmt::print("dry run: nothing stored\n");
    return;
  }
  save_calibration(db, gpu, fit);
  fmt::print("stored in {} (model version {}); tune, analyze --candidates and the library now rank with it\n",
             db.path().string(), cost_model_version);
}

// `db replay`: the family's search order on the measurements of a database (or of exports), per problem and in all.
// The measurements of a database, or of `db export` files when any are named, of the GPU the filter names (all
// without one); `source` says where they came from.
std::vector<MeasurementRecord> load_measurements(const std::string& db_path, const std::vector<std::string>& exports,
                                                 const std::string& gpu_filter, std::string& source) {
  std::vector<MeasurementRecord> records;
  if (exports.empty()) {
    const TuningDb tuning = open_db(db_path);
    records = tuning.measurements({.gpu = match_gpu(tuning, gpu_filter)});
    source = tuning.path().string();
    return records;
  }
  for (const std::string& file : exports) {
    std::vector<MeasurementRecord> more = parse_export_json(read_export_file(file), file);
    records.insert(records.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
    source += (source.empty() ? "" : ", ") + file;
  }
  if (!gpu_filter.empty())
    std::erase_if(records, [&](const MeasurementRecord& m) { return !gpu_matches(m.gpu, gpu_filter); });
  return records;
}

// The filters --weight-sparsity and --seed made, given back to the measured problems that carry only their pattern
// (a database keeps a filter's hash, not its values): each problem's shape gets the filter those options make, kept
// where its pattern is the measured one. Says how many problems got theirs.
void give_back_seeded_filters(std::vector<MeasurementRecord>& records, const std::string& sparsity,
                              std::uint64_t seed) {
  std::map<std::string, std::optional<Problem>> made;  // by the measured problem's key
  for (MeasurementRecord& m : records) {
    if (m.problem.weights.values || m.problem.weights.pattern.empty()) continue;
    auto [it, added] = made.try_emplace(problem_key(m.problem));
    if (added) {
      Problem shape = m.problem;
      shape.weights = {};
      Problem with_filter = with_weights(shape, weight_sparsity_filter(shape, sparsity, seed));
      if (with_filter.weights.pattern == m.problem.weights.pattern) it->second = std::move(with_filter);
    }
    if (it->second) m.problem = *it->second;
  }
  const auto matched = std::count_if(made.begin(), made.end(), [](const auto& e) { return e.second.has_value(); });
  fmt::print("--weight-sparsity {} --seed {}: the filter of {} of {} problems that carry only a pattern\n", sparsity,
             seed, matched, made.size());
}

void replay(const std::string& db_path, const std::vector<std::string>& exports, const std::string& family_name,
            const std::string& gpu_filter, const WeightOptions& weights) {
  const Family& fam = family(family_name);
  std::string source;
  std::vector<MeasurementRecord> records = load_measurements(db_path, exports, gpu_filter, source);
  if (!weights.sparsity.empty()) give_back_seeded_filters(records, weights.sparsity, weights.seed);
  const OrderReplay r = replay_search_order(fam, records);
  std::string gpu_shown;
  for (const OrderPick& p : r.picks) {
    if (describe_gpu(p.gpu) != gpu_shown) fmt::print("{}\n", gpu_shown = describe_gpu(p.gpu));
    fmt::print("  {:.3f}  {}  pick {} {:.3f} us", p.ratio(), problem_key(p.problem), p.pick, p.pick_us);
    if (p.pick == p.best)
      fmt::print(", the fastest of {} measured\n", p.measured);
    else
      fmt::print(", fastest {} {:.3f} us of {} measured\n", p.best, p.best_us, p.measured);
  }
  if (r.picks.empty()) {
    fmt::print("{}: no problem with {} kernels its search order lists ({} problems whose measured kernels it no "
               "longer lists)\n",
               source, fam.name(), r.unlisted);
    return;
  }
  fmt::print("{}'s search order picks within {:.3f}x of the fastest measured, geometric mean over {} problems of {}",
             fam.name(), r.geomean_ratio, r.picks.size(), source);
  fmt::print("; it lists the fastest measured for {} of them, its fastest listed within {:.3f}x of it",
             r.best_listed, r.geomean_listed_ratio);
  if (r.unlisted > 0) fmt::print("; {} problems whose measured kernels it no longer lists", r.unlisted);
  if (r.unreadable > 0) fmt::print("; {} measurements of kernels it no longer reads", r.unreadable);
  fmt::print("\n");
}

// `db choices`: the choices made without tuning (first-run default, cost_model_only, the model over everything
// measured) against the fastest measured, per problem and in all.
void choices(const std::string& db_path, const std::vector<std::string>& exports, const std::string& gpu_filter) {
  std::string source;
  const std::vector<MeasurementRecord> records = load_measurements(db_path, exports, gpu_filter, source);
  const ChoiceReplay r = replay_choices(records);
  std::string gpu_shown;
  for (const ProblemChoices& p : r.problems) {
    if (describe_gpu(p.gpu) != gpu_shown) fmt::print("{}\n", gpu_shown = describe_gpu(p.gpu));
    const double fastest = p.fastest.measured_us;
    fmt::print("  {}  first run {:.3f}x {}; cost_model_only {:.3f}x {}; model over all {:.3f}x {}; fastest {:.3f} us {} "
               "of {} measured, {} defaults\n",
               problem_key(p.problem), p.first_run.measured_us / fastest, p.first_run.kernel,
               p.cost_model.measured_us / fastest, p.cost_model.kernel, p.model_all.measured_us / fastest,
               p.model_all.kernel, fastest, p.fastest.kernel, p.measured, p.defaults);
  }
  if (r.problems.empty()) {
    fmt::print("{}: no problem whose families' defaults were all measured ({} with some missing)\n", source,
               r.incomplete);
    return;
  }
  fmt::print("over {} problems of {} (the model with its default coefficients), the time of each choice over the "
             "fastest measured, geometric mean: first-run default {:.3f}x, cost_model_only {:.3f}x (the first-run "
             "default for {}), the model's first of everything measured {:.3f}x",
             r.problems.size(), source, r.first_run_ratio, r.cost_model_ratio, r.cost_model_is_first_run,
             r.model_all_ratio);
  if (r.incomplete > 0) fmt::print("; {} problems left out (a family's default not measured)", r.incomplete);
  fmt::print("\n");
}

// `db compile-limit`: where each problem's fastest measured kernel stands in the order the tuner compiles candidates
// in (Tuner::compile_order: the families' defaults, then the model's estimate without a ptxas report), and how many
// problems each compile limit would have kept it for. A tune compiles the first `--compile` of that order and
// measures the best of those by the report-aware model; a fastest kernel that is among the first L is compiled
// under a limit of L and ranks no lower among fewer, so the same tune would have measured it.
void compile_limit_report(const std::string& db_path, const std::vector<std::string>& exports,
                          const std::vector<std::string>& families, const std::string& gpu_filter) {
  for (const std::string& name : families) family(name);  // an unknown name fails first
  std::string source;
  const std::vector<MeasurementRecord> records = load_measurements(db_path, exports, gpu_filter, source);
  struct Fastest {
    Gpu gpu;
    Problem problem;
    std::string kernel;
    double us = 0;
    int measured = 0;
    std::vector<std::pair<std::string, double>> all;  // every measured kernel and its time
  };
  std::map<std::pair<std::string, std::string>, Fastest> by_problem;  // (describe_gpu, problem key)
  for (const MeasurementRecord& m : records) {
    if (m.status != MeasurementStatus::ok || m.median_us <= 0) continue;
    Fastest& f = by_problem[{describe_gpu(m.gpu), problem_key(m.problem)}];
    f.all.emplace_back(m.kernel, m.median_us);
    if (f.measured++ == 0 || m.median_us < f.us) {
      f.gpu = m.gpu;
      f.problem = m.problem;
      f.kernel = m.kernel;
      f.us = m.median_us;
    }
  }
  constexpr std::array<std::size_t, 8> kLimits = {8, 10, 12, 16, 20, 24, 32, 40};
  // Per limit, the fastest measured among the first `limit` of the order over the fastest of all (a tune under that
  // limit measures at least those), as logs to average, and the worst; a problem with none of them counts as lost.
  std::array<double, kLimits.size()> log_ratio_sum{}, worst_ratio{};
  std::array<std::size_t, kLimits.size()> with_one{};
  if (by_problem.empty()) throw InputError(fmt::format("db compile-limit: no measured kernel in {}", source));

  std::optional<TuningDb> db;
  if (exports.empty()) db = open_db(db_path);
  JitCache cache(std::nullopt);  // nothing is compiled: only the order is computed
  ThreadPool pool(1);
  std::vector<std::size_t> positions;  // 1-based, of the problems whose fastest is a candidate now
  std::size_t not_candidates = 0, largest_order = 0;
  std::string gpu_shown;
  for (const auto& [key, f] : by_problem) {
    if (key.first != gpu_shown) fmt::print("{}\n", gpu_shown = key.first);
    const Tuner tuner(f.gpu, cache, pool, nullptr, db ? coefficients_for(&*db, f.gpu) : Coefficients{}, 0);
    const std::vector<KernelSpec> order = tuner.compile_order(f.problem, tuning_candidates(f.problem, f.gpu, families));
    largest_order = std::max(largest_order, order.size());
    std::optional<KernelSpec> spec;
    try {
      spec = parse_kernel_name(f.kernel);
    } catch (const std::exception&) {
    }
    const auto at = spec ? std::find(order.begin(), order.end(), *spec) : order.end();
    if (at == order.end()) {
      ++not_candidates;
      fmt::print("  {}  fastest {} {:.3f} us (of {} measured): not a candidate now\n", key.second, f.kernel, f.us,
                 f.measured);
      continue;
    }
    positions.push_back(static_cast<std::size_t>(at - order.begin()) + 1);
    for (std::size_t l = 0; l < kLimits.size(); ++l) {
      std::optional<double> kept_us;
      for (const auto& [kernel, us] : f.all) {
        std::optional<KernelSpec> measured;
        try {
          measured = parse_kernel_name(kernel);
        } catch (const std::exception&) {
        }
        const auto place = measured ? std::find(order.begin(), order.end(), *measured) : order.end();
        if (place != order.end() && static_cast<std::size_t>(place - order.begin()) < kLimits[l])
          kept_us = std::min(kept_us.value_or(us), us);
      }
      if (!kept_us) continue;
      ++with_one[l];
      log_ratio_sum[l] += std::log(*kept_us / f.us);
      worst_ratio[l] = std::max(worst_ratio[l], *kept_us / f.us);
    }
    fmt::print("  {}  fastest {} {:.3f} us (of {} measured): {} of {} in the compile order\n", key.second, f.kernel,
               f.us, f.measured, positions.back(), order.size());
  }
  fmt::print("{} problems in {}; the fastest measured kernel's place in the compile order:\n", by_problem.size(),
             source);
  for (std::size_t l = 0; l < kLimits.size(); ++l) {
    const auto kept = std::count_if(positions.begin(), positions.end(), [&](std::size_t p) { return p <= kLimits[l]; });
    fmt::print("  a compile limit of {:>2} keeps it for {} of {}", kLimits[l], kept, positions.size());
    if (with_one[l] > 0)
      fmt::print("; the fastest measured within it is {:.3f}x the fastest (geometric mean), {:.3f}x at worst",
                 std::exp(log_ratio_sum[l] / static_cast<double>(with_one[l])), worst_ratio[l]);
    if (with_one[l] < positions.size())
      fmt::print("; {} problems with none measured within it", positions.size() - with_one[l]);
    fmt::print("\n");
  }
  if (!positions.empty())
    fmt::print("  the last place: {} (of up to {} candidates)\n", *std::max_element(positions.begin(), positions.end()),
               largest_order);
  if (not_candidates > 0)
    fmt::print("  {} problems' fastest kernels are no candidates of today's families (renamed or dropped)\n",
               not_candidates);
}

}  // namespace

void add_db_command(CLI::App& app) {
  struct Options {
    std::string db, gpu, problem, kernel, status, out, file;
    bool allow_other_gpu = false;
    PruneOptions prune;
    int older_than_days = -1;
  };
  auto opts = std::make_shared<Options>();
  CLI::App* db = app.add_subcommand("db", "Read and maintain the tuning database (SQLite)");
  db->require_subcommand(1);

  CLI::App* list_cmd = db->add_subcommand("list", "List the best kernel per GPU, problem and precision");
  add_db_option(list_cmd, opts->db);
  add_gpu_filter(list_cmd, opts->gpu);
  list_cmd->callback([opts] { list(opts->db, opts->gpu); });

  CLI::App* show_cmd = db->add_subcommand("show", "Show measurements, with their samples' statistics or failure");
  add_db_option(show_cmd, opts->db);
  add_gpu_filter(show_cmd, opts->gpu);
  show_cmd->add_option("--problem", opts->problem, "Only this problem key (as `db list` prints it)");
  show_cmd->add_option("--kernel", opts->kernel, "Only this kernel name");
  show_cmd->add_option("--status", opts->status,
                       fmt::format("Only this status: {}", enum_choices<MeasurementStatus>()));
  show_cmd->callback([opts] {
    MeasurementFilter filter{.kernel = opts->kernel};
    if (!opts->problem.empty()) filter.problem = parse_problem_key(opts->problem);
    if (!opts->status.empty()) {
      filter.status = parse_enum<MeasurementStatus>(opts->status);
      if (!filter.status)
        throw InputError(
            fmt::format("--status must be one of {}, got '{}'", enum_choices<MeasurementStatus>(), opts->status));
    }
    if (!opts->gpu.empty()) filter.gpu = match_gpu(open_db(opts->db), opts->gpu);
    show(opts->db, filter);
  });

  CLI::App* export_cmd = db->add_subcommand("export", "Write measurements as JSON, for `db import` on another machine");
  add_db_option(export_cmd, opts->db);
  add_gpu_filter(export_cmd, opts->gpu);
  export_cmd->add_option("--out", opts->out, "Write to this file instead of standard output");
  export_cmd->callback([opts] {
    const TuningDb tuning = open_db(opts->db);
    print_or_write(opts->out, tuning.export_json(match_gpu(tuning, opts->gpu)));
  });

  CLI::App* import_cmd = db->add_subcommand("import",
                                            "Add the measurements of a `db export` file; best choices are "
                                            "replaced only by faster ones");
  add_db_option(import_cmd, opts->db);
  import_cmd->add_option("file", opts->file, "JSON file written by `convgen db export`, plain or gzipped")->required();
  import_cmd->add_option("--gpu", opts->gpu,
                         "The GPU this database serves: a descriptor name under gpus/ or a path "
                         "(default: the present device)");
  import_cmd->add_flag("--allow-other-gpu", opts->allow_other_gpu, "Import records made on another GPU too");
  import_cmd->callback([opts] {
    const std::string text = read_export_file(opts->file);
    // With --allow-other-gpu the local GPU is never compared, so a machine without a device can import.
    Gpu local;
    if (!opts->gpu.empty() && opts->gpu != "live") {
      local = load_gpu_descriptor(opts->gpu, false);
    } else if (!opts->allow_other_gpu) {
      try {
        local = load_gpu_descriptor("live", false);
      } catch (const NoDeviceError& e) {
        throw InputError(
            fmt::format("db import: cannot tell which GPU this database serves ({}); name it with --gpu "
                        "or pass --allow-other-gpu",
                        e.what()));
      }
    }
    TuningDb tuning = open_db(opts->db);
    const ImportStats stats = tuning.import_json(text, local, opts->allow_other_gpu, opts->file);
    fmt::print("imported {} measurements into {} ({} already there), {} best choices added or made faster\n",
               stats.measurements_imported, tuning.path().string(), stats.duplicates_skipped, stats.best_updated);
  });

  auto merge_inputs = std::make_shared<std::vector<std::string>>();
  CLI::App* merge_cmd = db->add_subcommand(
      "merge",
      "Merge tuning databases (the files of a sharded tune) into one: every measurement kept, the fastest "
      "per GPU and problem made the best; merging again changes nothing");
  merge_cmd->add_option("files", *merge_inputs, "Tuning databases to read (SQLite files written by `convgen tune`)")
      ->required();
  merge_cmd->add_option("--into", opts->db, "The database to merge into (created when missing)")->required();
  merge_cmd->add_flag("--allow-other-gpus", opts->allow_other_gpu,
                      "Merge records of GPUs other than the target's (or the first input's) too");
  merge_cmd->callback([opts, merge_inputs] {
    const std::vector<std::filesystem::path> inputs(merge_inputs->begin(), merge_inputs->end());
    TuningDb tuning = open_db(opts->db);
    const std::vector<ImportStats> stats = tuning.merge(inputs, opts->allow_other_gpu);
    ImportStats total;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      fmt::print("{}: {} measurements added ({} already there), {} best choices added or made faster\n",
                 inputs[i].string(), stats[i].measurements_imported, stats[i].duplicates_skipped,
                 stats[i].best_updated);
      total.measurements_imported += stats[i].measurements_imported;
    }
    fmt::print("merged {} databases into {}: {} measurements added, {} measurements and {} best choices in all\n",
               inputs.size(), tuning.path().string(), total.measurements_imported, tuning.measurements().size(),
               tuning.list_best().size());
  });

  auto calibrate_args = std::make_shared<CalibrateArgs>();
  CLI::App* calibrate_cmd = db->add_subcommand(
      "calibrate", "Fit the cost model's coefficients per family to the GPU's verified measurements and store them");
  add_db_option(calibrate_cmd, opts->db);
  add_gpu_filter(calibrate_cmd, opts->gpu);
  calibrate_cmd->add_option("--exclude-shapes", calibrate_args->exclude_shapes,
                            "Leave out measurements of these shapes files' layers, at any activation sparsity, precision and "
                            "layout (e.g. those a study judges)");
  calibrate_cmd
      ->add_option("--exclude-batch", calibrate_args->exclude_batches,
                   "Batch sizes of the excluded shapes, comma-separated (default: the files')")
      ->delimiter(',');
  add_weight_options(calibrate_cmd, calibrate_args->weights);
  calibrate_cmd->add_option("--samples-csv", calibrate_args->samples_csv,
                            "Also write every sample with its measured and predicted time and its terms as CSV");
  calibrate_cmd->add_flag("--dry-run", calibrate_args->dry_run, "Fit and report, but store nothing");
  calibrate_cmd->callback([opts, calibrate_args] { calibrate_command(opts->db, opts->gpu, *calibrate_args); });

  auto replay_exports = std::make_shared<std::vector<std::string>>();
  auto replay_family = std::make_shared<std::string>();
  CLI::App* replay_cmd = db->add_subcommand(
      "replay",
      "Replay a family's search order (its candidates, best estimate first) on measurements: per problem, the first "
      "measured candidate in that order (what the cost model picks among them) against the fastest measured; no GPU "
      "needed");
  add_measurement_source(replay_cmd, opts->db, opts->gpu, *replay_exports);
  replay_cmd->add_option("--family", *replay_family, "The family whose order to replay, e.g. igemm_wgmma")->required();
  auto replay_weights = std::make_shared<WeightOptions>();
  replay_cmd->add_option(
      "--weight-sparsity", replay_weights->sparsity,
      "The measurements were made with `--weight-sparsity` this (a zero fraction or 2:4) and --seed: "
      "give their problems those filters again (a family that reads its filter, such as weight_sparse, "
      "lists no kernel for a problem that carries only its pattern)");
  replay_cmd->add_option("--seed", replay_weights->seed, "Seed of the weights --weight-sparsity makes")
      ->capture_default_str();
  replay_cmd->callback([opts, replay_exports, replay_family, replay_weights] {
    replay(opts->db, *replay_exports, *replay_family, opts->gpu, *replay_weights);
  });

  auto choices_exports = std::make_shared<std::vector<std::string>>();
  CLI::App* choices_cmd = db->add_subcommand(
      "choices",
      "The choices made without tuning, replayed on measurements: per problem whose families' defaults were all "
      "measured, the first-run default, the cost_model_only policy's (the defaults ranked by the model) and the "
      "model's first of everything measured, each against the fastest measured; no GPU needed");
  add_measurement_source(choices_cmd, opts->db, opts->gpu, *choices_exports);
  choices_cmd->callback([opts, choices_exports] { choices(opts->db, *choices_exports, opts->gpu); });

  auto limit_exports = std::make_shared<std::vector<std::string>>();
  auto limit_families = std::make_shared<std::vector<std::string>>();
  CLI::App* limit_cmd = db->add_subcommand(
      "compile-limit",
      "Where each problem's fastest measured kernel stands in the order tune compiles candidates in, and for how "
      "many problems each compile limit (tune --compile) would have kept it; no GPU needed");
  add_measurement_source(limit_cmd, opts->db, opts->gpu, *limit_exports);
  limit_cmd
      ->add_option("--family", *limit_families,
                   "The families the tune had (its --family), comma-separated (default: every family)")
      ->delimiter(',');
  limit_cmd->callback([opts, limit_exports, limit_families] {
    compile_limit_report(opts->db, *limit_exports, *limit_families, opts->gpu);
  });

  CLI::App* prune_cmd = db->add_subcommand("prune", "Remove measurements; a current best is kept unless --everything");
  add_db_option(prune_cmd, opts->db);
  add_gpu_filter(prune_cmd, opts->gpu);
  prune_cmd->add_flag("--not-best", opts->prune.not_best, "Remove measurements that are not a current best");
  prune_cmd->add_flag("--failed", opts->prune.failed, "Remove failed measurements");
  prune_cmd->add_option("--older-than", opts->older_than_days, "Remove measurements older than this many days")
      ->check(CLI::NonNegativeNumber);
  prune_cmd->add_flag("--everything", opts->prune.everything,
                      "Remove every record (of the --gpu GPU, else of all), best choices and calibrations included");
  prune_cmd->callback([opts] {
    TuningDb tuning = open_db(opts->db);
    PruneOptions options = opts->prune;
    if (opts->older_than_days >= 0) options.older_than_days = opts->older_than_days;
    options.gpu = match_gpu(tuning, opts->gpu);
    if (!options.not_best && !options.failed && !options.older_than_days && !options.everything)
      throw InputError("db prune: choose what to remove: --not-best, --failed, --older-than DAYS or --everything");
    const PruneStats stats = tuning.prune(options);
    fmt::print("removed {} measurements and {} best choices from {}\n", stats.measurements_removed, stats.best_removed,
               tuning.path().string());
  });
}

}  // namespace convgen::cli
