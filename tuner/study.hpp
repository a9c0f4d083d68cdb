// study: the tuning study: per layer, the exhaustive best against the model-guided tuner's pick, the model's rank
// correlation, and the tuning wall time with a cold and a warm JIT cache.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "measure/timing.hpp"
#include "convgen/gpu.hpp"
#include "generator/shapes.hpp"
#include "runtime/thread_pool.hpp"
#include "tuner/cost_model.hpp"
#include "tuner/tuner.hpp"

namespace convgen {

struct StudyOptions {
  std::vector<int> batches;  // empty: the shapes file's batch
  int budget = 10;           // the guided tuner's measurements per layer
  // Fewer samples than the benchmark protocol (10 samples × 10 calls, stream launches only) so that the
  // exhaustive runs fit in minutes; both runs use the same.
  TimingOptions timing{.warmup_calls = 3, .samples = 10, .calls_per_sample = 10, .graph = false};
  double stop_ratio = 3.0;  // as TuneOptions
  std::uint64_t seed = 1;
  Coefficients coefficients;         // the model the guided tuner ranks with (both runs predict with it)
  std::string coefficients_source = "the model's default coefficients";  // where they came from, for the report
  std::filesystem::path cache_root;  // fresh JIT cache folders are made (and removed) under it
};

// One layer at one batch.
struct StudyLayer {
  std::string suite;
  std::string layer;
  int batch = 0;
  Problem problem;
  int candidates = 0;           // enumerated
  int exhaustive_measured = 0;  // verified and timed by the exhaustive run
  int guided_measured = 0;
  int failed = 0;  // candidates the exhaustive run found failing (compile, resources, launch, wrong result)
  std::string exhaustive_kernel;
  std::string guided_kernel;
  double exhaustive_us = 0;  // the exhaustive best
  double guided_us = 0;      // the guided pick's time as measured in the exhaustive run (same conditions)
  double guided_own_us = 0;  // the guided pick's time as the guided run measured it
  double ratio = 0;          // exhaustive_us / guided_us: 1 when the guided tuner found the best; 0 with no pick
  double spearman = std::numeric_limits<double>::quiet_NaN();  // predicted vs measured, exhaustive's measured ones
  bool best_in_top10 = false;  // the exhaustive best is among the 10 predicted fastest of those measured
  double exhaustive_cold_ms = 0, exhaustive_compile_ms = 0;
  double guided_warm_ms = 0, guided_warm_compile_ms = 0;
  double guided_cold_ms = 0, guided_cold_compile_ms = 0;
  double floor_us = 0;           // the layer's roofline floor on the GPU (generator/analysis.hpp); 0: unknown
  double winograd_floor_us = 0;  // the same with Winograd's fewer multiplies; 0 where it does not apply
  std::string note;              // why a figure is missing
};

// Compares an exhaustive and a guided tune of the same problem; fills every field but the suite, layer, batch
// and wall times of the cold guided run.
StudyLayer compare_tunes(const TuneResult& exhaustive, const TuneResult& guided);

// Per (suite, batch): geometric mean of the ratios (layers with a ratio), mean Spearman (where defined), share of
// layers whose best is in the model's top 10, and mean wall times.
struct StudySummary {
  std::string suite;
  int batch = 0;
  int layers = 0;
  double geomean_ratio = 0;
  double mean_spearman = std::numeric_limits<double>::quiet_NaN();
  double share_best_in_top10 = 0;
  double mean_exhaustive_cold_ms = 0, mean_guided_warm_ms = 0, mean_guided_cold_ms = 0;
};

std::vector<StudySummary> summarize_study(std::span<const StudyLayer> layers);

struct StudyReport {
  std::string gpu;  // describe_gpu
  std::string command_line;
  StudyOptions options;
  std::vector<StudyLayer> layers;
};

// Renders the study as Markdown: method, summaries, then one row per layer.
std::string study_markdown(const StudyReport& report);

// Called before each layer: (index, total, text).
using StudyProgress = std::function<void(std::size_t, std::size_t, const std::string&)>;

// Runs the study over a suite on the device of the current context (`device` its ordinal): per layer and batch
// an exhaustive tune with a fresh JIT cache folder, a guided tune with the same folder (warm), and a guided tune
// with another fresh folder (cold). No database is read: the guided run sees nothing of the exhaustive one; the
// model uses options.coefficients. With `record`, the exhaustive runs' measurements are written there (the data a
// later calibration can use).
std::vector<StudyLayer> run_study(const Suite& suite, const Gpu& gpu, const StudyOptions& options, ThreadPool& pool,
                                  int device = 0, const StudyProgress& progress = {}, TuningDb* record = nullptr);

}  // namespace convgen
