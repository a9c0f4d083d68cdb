// calibration: measurements from the tuning database turned into the cost model's calibration samples.
#include "tuner/calibration.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>

#include "convgen/error.hpp"
#include "generator/family.hpp"
#include "generator/kernel_spec.hpp"

namespace convgen {

namespace {

// A problem's key at any activation sparsity: a layer excluded from a calibration is excluded however sparse its
// input was when measured (a shapes file's act_sparsity column need not match the study's dense inputs).
std::string key_at_any_sparsity(Problem p) {
  p.act_sparsity = 0;
  return problem_key(p);
}

}  // namespace

CalibrationData calibration_data(const TuningDb& db, const Gpu& gpu, std::span<const Problem> exclude) {
  std::set<std::string> excluded_keys;
  for (const Problem& p : exclude) excluded_keys.insert(key_at_any_sparsity(p));
  CalibrationData data;
  std::set<std::string> problems;
  for (const MeasurementRecord& m : db.measurements({.gpu = gpu, .status = MeasurementStatus::ok})) {
    const bool excluded = excluded_keys.contains(key_at_any_sparsity(m.problem));
    data.excluded += excluded;
    KernelSpec spec;
    try {
      spec = parse_kernel_name(m.kernel);
    } catch (const InputError&) {
      data.unusable += !excluded;
      continue;
    }
    if (!excluded) problems.insert(problem_key(m.problem));
    (excluded ? data.held_out : data.rows).push_back(
        {.problem = m.problem,
         .spec = spec,
         .sample = {.family = spec.family,
                    .features = family(spec.family).cost_features(m.problem, spec),
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
  }
  if (spearmans > 0) accuracy.mean_spearman = spearman_sum / spearmans;
  if (accuracy.problems > 0) {
    accuracy.share_best_in_top10 = static_cast<double>(top10) / accuracy.problems;
    accuracy.share_right_pick = static_cast<double>(right) / accuracy.problems;
  }
  for (const auto& [name, problems] : by_family) {
    RankingAccuracy::Family f;
    int family_right = 0;
    for (const auto& [key, series] : problems) {
      if (series.first.size() < 2) continue;
      ++f.problems;
      family_right += best_in_top_k(series.first, series.second, 1, kRightPickTolerance);
    }
    if (f.problems == 0) continue;
    f.share_right_pick = static_cast<double>(family_right) / f.problems;
    accuracy.families[name] = f;
  }
  return accuracy;
}

}  // namespace convgen
