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

CalibrationData calibration_data(const TuningDb& db, const Gpu& gpu, std::span<const Problem> exclude) {
  std::set<std::string> excluded_keys;
  for (const Problem& p : exclude) excluded_keys.insert(problem_key(p));
  CalibrationData data;
  std::set<std::string> problems;
  for (const MeasurementRecord& m : db.measurements({.gpu = gpu, .status = MeasurementStatus::ok})) {
    if (excluded_keys.contains(problem_key(m.problem))) {
      ++data.excluded;
      continue;
    }
    KernelSpec spec;
    try {
      spec = parse_kernel_name(m.kernel);
    } catch (const InputError&) {
      ++data.unusable;
      continue;
    }
    problems.insert(problem_key(m.problem));
    data.rows.push_back(
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

RankingAccuracy ranking_accuracy(std::span<const CalibrationRow> rows, const Gpu& gpu,
                                 const Coefficients& coefficients) {
  std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> by_problem;  // predicted, measured
  for (const CalibrationRow& r : rows) {
    const Prediction p = predict(r.sample.family, r.sample.features, r.sample.report, gpu, coefficients);
    if (!std::isfinite(p.time_us) || !(r.sample.measured_us > 0)) continue;
    auto& [predicted, measured] = by_problem[problem_key(r.problem)];
    predicted.push_back(p.time_us);
    measured.push_back(r.sample.measured_us);
  }
  RankingAccuracy accuracy;
  double spearman_sum = 0;
  int spearmans = 0, top10 = 0;
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
  }
  if (spearmans > 0) accuracy.mean_spearman = spearman_sum / spearmans;
  if (accuracy.problems > 0) accuracy.share_best_in_top10 = static_cast<double>(top10) / accuracy.problems;
  return accuracy;
}

}  // namespace convgen
