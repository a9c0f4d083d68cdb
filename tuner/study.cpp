// study: runs exhaustive and guided tunes per layer, compares them, and renders the tuning study as Markdown.
#include "tuner/study.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>

#include <fmt/format.h>

#include "convgen/error.hpp"
#include "generator/analysis.hpp"
#include "runtime/jit_cache.hpp"

namespace convgen {
namespace {

// A fresh folder for a cold JIT cache, removed when it goes out of scope.
class FreshFolder {
 public:
  explicit FreshFolder(const std::filesystem::path& root) {
    static std::atomic<int> counter{0};
    path_ = root / fmt::format("convgen-study-cache-{}-{}", getpid(), counter++);
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~FreshFolder() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  FreshFolder(const FreshFolder&) = delete;
  FreshFolder& operator=(const FreshFolder&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

std::string fmt_us(double us) { return us > 0 ? fmt::format("{:.1f}", us) : "–"; }
std::string fmt_s(double ms) { return fmt::format("{:.1f}", ms / 1000); }

}  // namespace

StudyLayer compare_tunes(const TuneResult& exhaustive, const TuneResult& guided) {
  StudyLayer row{.problem = exhaustive.problem};
  row.candidates = static_cast<int>(exhaustive.candidates.size());
  row.exhaustive_measured = exhaustive.measured;
  row.guided_measured = guided.measured;
  for (const CandidateOutcome& c : exhaustive.candidates) row.failed += c.status != MeasurementStatus::ok;
  row.exhaustive_cold_ms = exhaustive.wall_ms;
  row.exhaustive_compile_ms = exhaustive.compile_wall_ms;
  row.guided_warm_ms = guided.wall_ms;
  row.guided_warm_compile_ms = guided.compile_wall_ms;

  if (!exhaustive.best) {
    row.note = "no candidate verified";
    return row;
  }
  const CandidateOutcome& best = exhaustive.candidates[*exhaustive.best];
  row.exhaustive_kernel = kernel_name(best.spec);
  row.exhaustive_us = headline_us(*best.timing);

  std::vector<double> predicted, measured;
  for (const CandidateOutcome& c : exhaustive.candidates) {
    if (!c.timing || !c.prediction || !std::isfinite(c.prediction->time_us)) continue;
    predicted.push_back(c.prediction->time_us);
    measured.push_back(headline_us(*c.timing));
  }
  if (predicted.size() >= 2) row.spearman = spearman(predicted, measured);
  if (!predicted.empty()) row.best_in_top10 = best_in_top_k(predicted, measured, 10);

  if (!guided.best) {
    row.note = "the guided run verified no candidate";
    return row;
  }
  const CandidateOutcome& pick = guided.candidates[*guided.best];
  row.guided_kernel = kernel_name(pick.spec);
  row.guided_own_us = headline_us(*pick.timing);
  for (const CandidateOutcome& c : exhaustive.candidates)
    if (c.spec == pick.spec && c.timing) row.guided_us = headline_us(*c.timing);
  if (row.guided_us == 0) {
    // The exhaustive run did not time the guided pick (it failed there): compare with the guided run's own time.
    row.guided_us = row.guided_own_us;
    row.note = "guided pick not timed by the exhaustive run; its own time used";
  }
  row.ratio = row.exhaustive_us / row.guided_us;
  return row;
}

std::vector<StudySummary> summarize_study(std::span<const StudyLayer> layers) {
  std::vector<StudySummary> out;
  for (const StudyLayer& l : layers) {
    auto it = std::find_if(out.begin(), out.end(),
                           [&](const StudySummary& s) { return s.suite == l.suite && s.batch == l.batch; });
    if (it == out.end()) it = out.insert(out.end(), StudySummary{.suite = l.suite, .batch = l.batch});
    ++it->layers;
  }
  for (StudySummary& s : out) {
    double log_sum = 0, spearman_sum = 0;
    int ratios = 0, spearmans = 0, top10 = 0;
    for (const StudyLayer& l : layers) {
      if (l.suite != s.suite || l.batch != s.batch) continue;
      if (l.ratio > 0) {
        log_sum += std::log(l.ratio);
        ++ratios;
      }
      if (std::isfinite(l.spearman)) {
        spearman_sum += l.spearman;
        ++spearmans;
      }
      top10 += l.best_in_top10;
      s.mean_exhaustive_cold_ms += l.exhaustive_cold_ms / s.layers;
      s.mean_guided_warm_ms += l.guided_warm_ms / s.layers;
      s.mean_guided_cold_ms += l.guided_cold_ms / s.layers;
    }
    s.geomean_ratio = ratios > 0 ? std::exp(log_sum / ratios) : 0;
    if (spearmans > 0) s.mean_spearman = spearman_sum / spearmans;
    s.share_best_in_top10 = static_cast<double>(top10) / s.layers;
  }
  return out;
}

std::string study_markdown(const StudyReport& report) {
  const StudyOptions& o = report.options;
  std::string md = "# Tuning study: exhaustive search against the model-guided tuner\n\n";
  md += fmt::format("GPU: {}\n\nCommand: `{}`\n\n", report.gpu, report.command_line);
  md += fmt::format(
      "Method. Per layer and batch: (a) an exhaustive tune measures every candidate of every family that compiles "
      "and verifies (rounds of 8, the best so far re-measured in each), with a fresh JIT cache folder: its wall time "
      "is the cold time, compilation included; (b) the guided tuner, limited to {} measurements, with the same cache "
      "folder (warm: compiles come from disk); (c) the guided tuner again with another fresh folder (cold). No tuning "
      "database is read, so the guided runs see nothing of the exhaustive one. The cost model's coefficients: {} "
      "({}). Stop ratio {}. Timing per round: {} samples × {} calls, "
      "{} warm-up calls, {}, L2 kept cold by rotating buffer sets — fewer samples than the benchmark protocol, to fit "
      "the exhaustive runs. Every candidate is verified against the float64 reference before it is timed.\n\n",
      o.budget, o.coefficients_source, describe_coefficients(o.coefficients), o.stop_ratio,
      o.timing.samples, o.timing.calls_per_sample, o.timing.warmup_calls,
      o.timing.graph ? "graph replays (stream where not capturable)" : "back-to-back stream launches");
  md += "Ratio = exhaustive best time ÷ the guided pick's time, both as measured in the exhaustive run (same "
        "conditions), so ≤ 1; 1 means the guided tuner found the best. Spearman: the model's predicted times against "
        "the measured ones over every candidate the exhaustive run measured. Top 10: the exhaustive best is among the "
        "10 candidates predicted fastest (of those measured).\n\n";

  md += "## Summary\n\n| suite | batch | layers | geomean ratio (target ≥ 0.95) | mean Spearman | best in top 10 | "
        "exhaustive cold s/layer | guided warm s/layer | guided cold s/layer |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const StudySummary& s : summarize_study(report.layers))
    md += fmt::format("| {} | {} | {} | {:.3f} | {} | {:.0f}% | {} | {} | {} |\n", s.suite, s.batch, s.layers,
                      s.geomean_ratio, std::isfinite(s.mean_spearman) ? fmt::format("{:.2f}", s.mean_spearman) : "–",
                      100 * s.share_best_in_top10, fmt_s(s.mean_exhaustive_cold_ms), fmt_s(s.mean_guided_warm_ms),
                      fmt_s(s.mean_guided_cold_ms));

  md +=
      "\n## Layers\n\nTimes in µs per call; wall times in seconds (compile phase in parentheses). Floor: the layer's "
      "roofline floor on the GPU (max of FLOPs at the precision's peak and the fewest bytes at DRAM bandwidth; "
      "Winograd's fewer multiplies in parentheses where it applies), and the exhaustive best ÷ it.\n\n"
      "| suite | batch | layer | candidates | failed | exhaustive best | µs | floor µs | ÷ floor | guided pick | µs | "
      "ratio | guided measured | Spearman | top 10 | exhaustive cold s | guided warm s | guided cold s | note |\n"
      "|---|---:|---|---:|---:|---|---:|---:|---:|---|---:|---:|---:|---:|---|---:|---:|---:|---|\n";
  for (const StudyLayer& l : report.layers) {
    const std::string floor = l.floor_us <= 0 ? "–"
                              : l.winograd_floor_us > 0
                                  ? fmt::format("{:.2f} ({:.2f})", l.floor_us, l.winograd_floor_us)
                                  : fmt::format("{:.2f}", l.floor_us);
    const std::string over_floor =
        l.floor_us > 0 && l.exhaustive_us > 0 ? fmt::format("{:.1f}", l.exhaustive_us / l.floor_us) : "–";
    md += fmt::format(
        "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} ({}) | {} ({}) | {} "
        "({}) | {} |\n",
        l.suite, l.batch, l.layer, l.candidates, l.failed, l.exhaustive_kernel, fmt_us(l.exhaustive_us), floor,
        over_floor, l.guided_kernel, fmt_us(l.guided_us), l.ratio > 0 ? fmt::format("{:.3f}", l.ratio) : "–",
        l.guided_measured, std::isfinite(l.spearman) ? fmt::format("{:.2f}", l.spearman) : "–",
        l.best_in_top10 ? "yes" : "no", fmt_s(l.exhaustive_cold_ms), fmt_s(l.exhaustive_compile_ms),
        fmt_s(l.guided_warm_ms), fmt_s(l.guided_warm_compile_ms), fmt_s(l.guided_cold_ms),
        fmt_s(l.guided_cold_compile_ms), l.note);
  }
  return md;
}

std::vector<StudyLayer> run_study(const Suite& suite, const Gpu& gpu, const StudyOptions& options, ThreadPool& pool,
                                  int device, const StudyProgress& progress, TuningDb* record) {
  if (options.budget <= 0)
    throw InputError(fmt::format("study budget: expected a positive number of measurements, got {}", options.budget));
  const std::filesystem::path root =
      options.cache_root.empty() ? std::filesystem::temp_directory_path() : options.cache_root;
  const std::vector<int> batches = options.batches.empty() ? std::vector<int>{0} : options.batches;
  const TuneOptions exhaustive_options{.budget = 0, .timing = options.timing, .record = record != nullptr,
                                       .seed = options.seed, .stop_ratio = options.stop_ratio, .reuse_best = false};
  TuneOptions guided_options = exhaustive_options;
  guided_options.budget = options.budget;
  guided_options.record = false;

  std::vector<StudyLayer> rows;
  const std::size_t total = batches.size() * suite.layers.size();
  for (int batch : batches) {
    for (const Layer& layer : suite.layers) {
      Problem p = layer.problem;
      if (batch > 0) p.n = batch;
      if (progress) progress(rows.size(), total, fmt::format("{} n{}", layer.name, p.n));
      FreshFolder shared(root), cold(root);
      TuneResult exhaustive, guided, guided_cold;
      {
        JitCache cache(shared.path());
        exhaustive = Tuner(gpu, cache, pool, record, options.coefficients, device).tune(p, exhaustive_options);
      }
      {
        JitCache cache(shared.path());  // a new cache object on the same folder: the warm case of a new process
        guided = Tuner(gpu, cache, pool, nullptr, options.coefficients, device).tune(p, guided_options);
      }
      {
        JitCache cache(cold.path());
        guided_cold = Tuner(gpu, cache, pool, nullptr, options.coefficients, device).tune(p, guided_options);
      }
      StudyLayer row = compare_tunes(exhaustive, guided);
      row.suite = suite.name;
      row.layer = layer.name;
      row.batch = p.n;
      row.guided_cold_ms = guided_cold.wall_ms;
      row.guided_cold_compile_ms = guided_cold.compile_wall_ms;
      try {
        const LayerAnalysis roofline = analyze_layer({.name = layer.name, .problem = p}, gpu);
        row.floor_us = roofline.floor_us;
        row.winograd_floor_us = roofline.winograd_floor_us;
      } catch (const InputError&) {
        // The descriptor lacks a peak or the bandwidth: no floor (0), the report shows a dash.
      }
      rows.push_back(std::move(row));
    }
  }
  return rows;
}

}  // namespace convgen
