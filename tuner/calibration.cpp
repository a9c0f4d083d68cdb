// calibration: measurements from the tuning database turned into the cost model's calibration samples.
#include "tuner/calibration.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <string>

#include "convgen/error.hpp"
#include "generator/family.hpp"
#include "generator/kernel_spec.hpp"

namespace convgen {

namespace {

// A layer's key however it was measured: at any activation sparsity, precision and layout. A layer excluded from a
// calibration is excluded in every form (a shapes file's act_sparsity column need not match the study's dense
// inputs, nor its fp32 channels-first rows a study measured in fp16 channels-last).
Layout channels_first(Layout layout) {
  switch (layout) {
    case Layout::nwc: return Layout::ncw;
    case Layout::nhwc: return Layout::nchw;
    case Layout::ndhwc: return Layout::ncdhw;
    default: return layout;
  }
}

std::string layer_key(Problem p) {
  p.act_sparsity = 0;
  p.precision = Precision::fp32;
  p.layout = channels_first(p.layout);
  return problem_key(p);
}

}  // namespace

CalibrationData calibration_data(const TuningDb& db, const Gpu& gpu, std::span<const Problem> exclude,
                                 const FilterRefill& refill) {
  std::set<std::string> excluded_keys;
  for (const Problem& p : exclude) excluded_keys.insert(layer_key(p));
  CalibrationData data;
  std::set<std::string> problems;
  for (const MeasurementRecord& m : db.measurements({.gpu = gpu, .status = MeasurementStatus::ok})) {
    const bool excluded = excluded_keys.contains(layer_key(m.problem));
    data.excluded += excluded;
    KernelSpec spec;
    try {
      spec = parse_kernel_name(m.kernel);
    } catch (const InputError&) {
      data.unusable += !excluded;
      continue;
    }
    Problem problem = m.problem;
    if (family(spec.family).cost_features_need_filter_values() && !problem.weights.values) {
      std::optional<Problem> refilled = refill ? refill(problem) : std::nullopt;
      if (!refilled || refilled->weights.pattern != problem.weights.pattern || !refilled->weights.values) {
        data.without_filter += !excluded;
        continue;
      }
      problem = std::move(*refilled);
    }
    if (!excluded) problems.insert(problem_key(problem));
    (excluded ? data.held_out : data.rows)
        .push_back(
            {.problem = problem,
             .spec = spec,
             .sample = {
                 .family = spec.family,
                 .features = cost_features_for(problem, spec),
                 .report = {.registers = m.registers, .spill_store_bytes = m.spill_bytes, .smem_bytes = m.smem_bytes},
                 .measured_us = m.median_us}});
  }
  data.problems = static_cast<int>(problems.size());
  return data;
}

std::vector<CalibrationSample> samples_of(std::span<const CalibrationRow> rows) {
  std::vector<CalibrationSample> samples;
  samples.reserve(rows.size());
  for (const CalibrationRow& r : rows) samples.push_back(r.sample);
  return samples;
}

// SEER's rule: a pick is right within 10% of the measured best.
constexpr double kRightPickTolerance = 0.1;
// The tuner's default budget, which the guided ratio replays (convgen tune --budget).
constexpr std::size_t kGuidedBudget = 10;

namespace {

// The measured time of the candidate predicted fastest (the first of ties) over the fastest measured.
double pick_ratio(std::span<const double> predicted, std::span<const double> measured) {
  const std::size_t pick =
      static_cast<std::size_t>(std::min_element(predicted.begin(), predicted.end()) - predicted.begin());
  return measured[pick] / *std::min_element(measured.begin(), measured.end());
}

// The best measured time over the best among the k predicted fastest (1: the best is among them).
double top_k_best_ratio(std::span<const double> predicted, std::span<const double> measured, std::size_t k) {
  std::vector<std::size_t> order(predicted.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return predicted[a] < predicted[b]; });
  double best_of_top = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < std::min(k, order.size()); ++i) best_of_top = std::min(best_of_top, measured[order[i]]);
  return *std::min_element(measured.begin(), measured.end()) / best_of_top;
}

}  // namespace

RankingAccuracy ranking_accuracy(std::span<const CalibrationRow> rows, const Gpu& gpu,
                                 const Coefficients& coefficients) {
  using Series = std::pair<std::vector<double>, std::vector<double>>;  // predicted, measured
  std::map<std::string, Series> by_problem;
  std::map<std::string, std::map<std::string, Series>> by_family;  // family -> problem -> series
  for (const CalibrationRow& r : rows) {
    const Prediction p = predict(r.sample.family, r.sample.features, r.sample.report, gpu, coefficients);
    if (!std::isfinite(p.time_us) || !(r.sample.measured_us > 0)) continue;
    for (Series* series : {&by_problem[problem_key(r.problem)], &by_family[r.sample.family][problem_key(r.problem)]}) {
      series->first.push_back(p.time_us);
      series->second.push_back(r.sample.measured_us);
    }
  }
  RankingAccuracy accuracy;
  double spearman_sum = 0;
  int spearmans = 0, top10 = 0, right = 0;
  double log_ratio_sum = 0;
  for (const auto& [key, series] : by_problem) {
    const auto& [predicted, measured] = series;
    if (predicted.size() < 2) continue;
    ++accuracy.problems;
    const double rho = spearman(predicted, measured);
    if (std::isfinite(rho)) {
      spearman_sum += rho;
      ++spearmans;
    }
    top10 += best_in_top_k(predicted, measured, 10);
    right += best_in_top_k(predicted, measured, 1, kRightPickTolerance);
    log_ratio_sum += std::log(pick_ratio(predicted, measured));
  }
  if (spearmans > 0) accuracy.mean_spearman = spearman_sum / spearmans;
  if (accuracy.problems > 0) {
    accuracy.share_best_in_top10 = static_cast<double>(top10) / accuracy.problems;
    accuracy.share_right_pick = static_cast<double>(right) / accuracy.problems;
    accuracy.pick_ratio = std::exp(log_ratio_sum / accuracy.problems);
  }
  for (const auto& [name, problems] : by_family) {
    RankingAccuracy::Family f;
    int family_right = 0;
    double family_log_ratio_sum = 0, guided_log_ratio_sum = 0;
    for (const auto& [key, series] : problems) {
      if (series.first.size() < 2) continue;
      ++f.problems;
      family_right += best_in_top_k(series.first, series.second, 1, kRightPickTolerance);
      family_log_ratio_sum += std::log(pick_ratio(series.first, series.second));
      if (series.first.size() > kGuidedBudget) {
        ++f.guided_problems;
        guided_log_ratio_sum += std::log(top_k_best_ratio(series.first, series.second, kGuidedBudget));
      }
    }
    if (f.problems == 0) continue;
    f.share_right_pick = static_cast<double>(family_right) / f.problems;
    f.pick_ratio = std::exp(family_log_ratio_sum / f.problems);
    if (f.guided_problems > 0) f.guided_ratio = std::exp(guided_log_ratio_sum / f.guided_problems);
    accuracy.families[name] = f;
  }
  return accuracy;
}

DefaultAccuracy default_accuracy(std::span<const CalibrationRow> rows, const Gpu& gpu) {
  struct Measured {
    const Problem* problem = nullptr;
    std::map<std::string, double> fastest;  // kernel name (as this build names it) -> its fastest measurement
  };
  std::map<std::string, std::map<std::string, Measured>> by_family;  // family -> problem key -> measured
  for (const CalibrationRow& r : rows) {
    if (!(r.sample.measured_us > 0)) continue;
    Measured& m = by_family[r.sample.family][problem_key(r.problem)];
    m.problem = &r.problem;
    const std::string name = kernel_name(r.spec);
    const auto it = m.fastest.find(name);
    if (it == m.fastest.end() || r.sample.measured_us < it->second) m.fastest[name] = r.sample.measured_us;
  }
  DefaultAccuracy accuracy;
  for (const auto& [name, problems] : by_family) {
    DefaultAccuracy::Family f;
    double log_ratio_sum = 0;
    for (const auto& [key, m] : problems) {
      if (m.fastest.size() < 2) continue;
      ++f.problems;
      const std::optional<KernelSpec> chosen = family(name).default_spec(*m.problem, gpu);
      const auto it = chosen ? m.fastest.find(kernel_name(*chosen)) : m.fastest.end();
      if (it == m.fastest.end()) continue;
      double best = it->second;
      for (const auto& [kernel, us] : m.fastest) best = std::min(best, us);
      ++f.measured;
      log_ratio_sum += std::log(it->second / best);
      f.over_1_2 += it->second > 1.2 * best;
    }
    if (f.problems == 0) continue;
    if (f.measured > 0) f.ratio = std::exp(log_ratio_sum / f.measured);
    accuracy.families[name] = f;
  }
  return accuracy;
}

}  // namespace convgen
