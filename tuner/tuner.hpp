// tuner: picks the fastest verified kernel for a problem: candidates ranked by the cost model, the top ones
// measured round-robin until a stop rule, every failure classified and recorded, never fatal.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "measure/timing.hpp"
#include "convgen/gpu.hpp"
#include "convgen/problem.hpp"
#include "generator/kernel_spec.hpp"
#include "reference/inputs.hpp"
#include "reference/reference.hpp"
#include "runtime/jit_cache.hpp"
#include "runtime/thread_pool.hpp"
#include "tuner/cost_model.hpp"
#include "tuner/tuning_db.hpp"

namespace convgen {

// How the tuner measures. The rounds and the stop rule (plan_round below):
//   candidates are ordered by the cost model, except that each family's default configuration goes first;
//   round 1 measures the first 4 (the defaults and the fastest predicted); each later round the next 3 by prediction plus the
//   current best again (interleaved with them, so the newcomers are compared with it under the same conditions);
//   the exhaustive mode (budget 0) measures every candidate, in rounds of 8 plus the best.
//   Stop when `budget` candidates are measured, when none is left, or (not in exhaustive mode) when the next
//   candidate's predicted time, rescaled by the model's observed error (the median of measured ÷ predicted over
//   the candidates measured so far), exceeds stop_ratio × the best measured time: the model, corrected for its
//   bias on this problem, says the rest are slower by more than its usual error.
struct TuneOptions {
  int budget = 10;       // candidates measured at most; 0 = every candidate (exhaustive)
  TimingOptions timing;  // per measurement round; buffer_sets is set per layer (1 when warm)
  bool warm = false;     // allow L2 residency (else rotate buffer sets past 2 × L2)
  bool record = true;    // write measurements and best into the database (when one is given)
  std::uint64_t seed = 1;  // of the verification inputs
  // The stop rule's margin. The model's error on one candidate reaches 2x (rms relative error ~11% for igemm,
  // ~40% for direct after calibration on an H200), so wide: with the first model, 1.5 stopped after 4 of 10
  // measurements and missed the best.
  double stop_ratio = 3.0;
  bool reuse_best = true;   // with a database that knows a best for the problem, return it without measuring
  // The inputs candidates are verified and timed on (a sparse layer's best kernel differs from a dense one's).
  // No activation: the problem's expected one (expected_activation: dense, or its act_sparsity in `pattern`).
  std::optional<TensorSource> activation;
  SparsityPattern pattern = SparsityPattern::blob;
  // No filter: the problem's own (expected_filter: its weights, else dense random).
  std::optional<TensorSource> filter;
  // Only these families' candidates (names as registered); empty: every family.
  std::vector<std::string> families;
  // Candidates compiled at most: the families' defaults and the best the model predicts before compiling (without
  // the ptxas report: occupancy from threads and shared memory alone); the rest are never built. A first tune is
  // bound by compiling (100-150 candidates a layer against 4-10 measured), hence the default (compile_limit()):
  // max(16, 4 x budget), every candidate when budget is 0 (exhaustive). 0: every candidate.
  std::optional<int> compile_limit;
};

// The candidates `options` compile at most per problem (0: all), as TuneOptions::compile_limit says.
int compile_limit(const TuneOptions& options);

struct CandidateOutcome {
  KernelSpec spec;
  MeasurementStatus status = MeasurementStatus::ok;  // ok also for candidates never measured (timing empty)
  std::string error;
  std::optional<Prediction> prediction;  // empty when it did not compile
  std::optional<TimingResult> timing;    // empty when not measured; the latest round's when measured in several
  std::optional<ErrorStats> verification;
  double compile_ms = 0;  // 0 when it came from the JIT cache
  PtxasReport report;     // of the compiled kernel (zeros when it did not compile)
};

struct TuneResult {
  Problem problem;
  std::vector<CandidateOutcome> candidates;  // in the model's rank order (not compiled last)
  // Index of the fastest verified, measured candidate; on a database hit (from_db), the database's best.
  std::optional<std::size_t> best;
  int measured = 0;                   // distinct candidates timed
  int rounds = 0;                     // timing rounds run
  double wall_ms = 0;                 // the whole tune
  double compile_wall_ms = 0;         // the compile phase within it (a prefetch's: spent before the tune began)
  bool prefetched = false;            // the candidates were built by a prefetch() while another problem was tuned
  std::optional<BestChoice> from_db;  // set when the database already knew the best: nothing compiled or measured
};

// The time a measurement is judged by: the graph replay median where there is one, else the stream median.
double headline_us(const TimingResult& timing);

// Returns the best candidate's time per call (measured now, or the database's), or nothing without a best.
std::optional<double> best_time_us(const TuneResult& result);

// A candidate as the round planner sees it, in rank order.
enum class PlanState { pending, measured, failed };
struct PlanEntry {
  double predicted_us = 0;  // infinite when the model says it cannot launch
  PlanState state = PlanState::pending;
  double measured_us = 0;  // when measured
  bool operator==(const PlanEntry&) const = default;
};

// The next round: pending candidates to measure for the first time, and the best so far to measure again.
struct RoundPlan {
  std::vector<std::size_t> fresh;
  std::optional<std::size_t> carried_best;
  bool operator==(const RoundPlan&) const = default;
};

// Median of measured ÷ predicted over the measured entries with a finite, positive prediction; 1 when none.
double model_scale(std::span<const PlanEntry> entries);

// Plans the next round over `entries` (in rank order) by the rules above (TuneOptions). `measured` is how many
// distinct candidates were measured so far. An empty `fresh` means stop.
RoundPlan plan_round(std::span<const PlanEntry> entries, int budget, double stop_ratio);

// Returns the indices of the candidates in rank order: those with a prediction by ascending predicted time (ties
// keep their order, cannot-launch after), those without one (did not compile) last.
std::vector<std::size_t> candidate_order(std::span<const std::optional<Prediction>> predictions);

// Classifies a failed launch (or module load) by its message: resources when the driver refused it for resources
// (CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, or CUDA_ERROR_INVALID_VALUE for a block the model says does not fit an SM:
// too many threads, registers or shared memory), else launch_error.
MeasurementStatus classify_launch_failure(std::string_view message, const std::optional<Prediction>& prediction);

// Tunes problems on the device of the current CUDA context.
//   Context context(0);
//   JitCache cache; ThreadPool pool; TuningDb db = TuningDb::open(TuningDb::default_path());
//   Tuner tuner(query_device(0), cache, pool, &db, coefficients_for(&db, gpu));
//   TuneResult r = tuner.tune(problem, {.budget = 10});
class Tuner {
 public:
  // A CUDA context must be current (on CUDA device `device`, whose NVML clocks are recorded). `db` may be null
  // (nothing recorded or read).
  Tuner(const Gpu& gpu, JitCache& cache, ThreadPool& pool, TuningDb* db, Coefficients coefficients = {},
        int device = 0);
  ~Tuner();  // waits for the prefetches still compiling
  // A prefetch runs on this object: it stays where it is.
  Tuner(const Tuner&) = delete;
  Tuner& operator=(const Tuner&) = delete;

  // Builds every family's candidates, ranks them by the model, verifies and measures by the rules of TuneOptions
  // and records every outcome. Failures of single candidates are outcomes, not exceptions; an error that is not a
  // candidate's (no device, the database) propagates.
  TuneResult tune(const Problem& problem, const TuneOptions& options);

  // Starts building and ranking the candidates of `problem` as tune(problem, options) would, on a thread of its own
  // (the compiles on the pool), so that they compile while this tuner measures another problem: the next tune() of
  // this problem with the same families takes them, and its results are those of a tune without the prefetch (the
  // same candidates in the same order; measuring is untouched). Starts nothing when tune() would return the
  // database's best, or when this problem's prefetch is already running. Several run at once (their compiles queue
  // on the pool in the order they were started), so that a pipeline can start the problems it will tune next while
  // the one at hand is still compiling. Past kMaxPrefetches not taken, a further prefetch waits for the oldest and
  // drops it (its compiles stay in the JIT cache), as the destructor does. Not thread-safe, like tune().
  void prefetch(const Problem& problem, const TuneOptions& options);
  static constexpr std::size_t kMaxPrefetches = 16;
  // Of `candidates`, those worth compiling when at most `limit` are (0: all): the families' defaults, then the
  // best the model predicts without a ptxas report.
  std::vector<KernelSpec> worth_compiling(const Problem& problem, std::vector<KernelSpec> candidates, int limit) const;
  // Every one of `candidates` worth compiling, in the order worth_compiling keeps them (a compile limit of L keeps
  // the first L): the families' defaults, then by the model's estimate without a ptxas report; those the model
  // cannot estimate (they would not build) are left out unless a default.
  std::vector<KernelSpec> compile_order(const Problem& problem, const std::vector<KernelSpec>& candidates) const;

  // Ranks by the model without measuring: compiles the candidates worth compiling under `compile_limit` (0: every
  // candidate; else the first that many in compile_order, as tune() keeps them) for their ptxas reports, and orders
  // those by the model's estimate with the report. The cost-model-only policy, and `convgen analyze --candidates`.
  TuneResult rank_only(const Problem& problem, int compile_limit = 0);

  const Gpu& gpu() const { return gpu_; }
  const Coefficients& coefficients() const { return coefficients_; }

 private:
  struct Prepared;
  struct Prefetch;
  Prepared prepare(const Problem& problem, const std::vector<std::string>& families = {}, int compile_limit = 0);
  // The prefetched preparation of `problem` with `families`, waited for, when prefetch() started it; else nothing.
  std::optional<Prepared> take_prefetched(const Problem& problem, const std::vector<std::string>& families,
                                          int compile_limit);
  // The database's best for the problem when tune() with `options` would return it without measuring.
  std::optional<BestChoice> known_best(const Problem& problem, const TuneOptions& options) const;

  Gpu gpu_;
  JitCache& cache_;
  ThreadPool& pool_;
  TuningDb* db_;
  Coefficients coefficients_;
  int device_;
  // The preparations prefetch() started, oldest first, each until a tune() takes it.
  std::deque<std::unique_ptr<Prefetch>> prefetches_;
};

// Returns every family's enumerated candidates for the problem, without duplicates, in family order.
std::vector<KernelSpec> tuning_candidates(const Problem& problem, const Gpu& gpu,
                                          const std::vector<std::string>& families = {});

// Loads the GPU's calibration from the database when there is one, else the default coefficients.
Coefficients coefficients_for(const TuningDb* db, const Gpu& gpu);

}  // namespace convgen
