#include "tuner/choice_replay.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <utility>

#include "convgen/error.hpp"
#include "generator/family.hpp"
#include "generator/kernel_spec.hpp"

namespace convgen {
namespace {

struct Measured {
  double median_us = 0;
  PtxasReport report;
};

struct ByProblem {
  Gpu gpu;
  Problem problem;
  std::map<std::string, Measured> kernels;  // canonical name -> fastest median and its report
};

// The model's estimate for a measured kernel, or nothing where it cannot make one (features that need the filter's
// values, a launch that fits no SM).
std::optional<double> predicted_us(const std::string& name, const Measured& m, const Problem& problem, const Gpu& gpu,
                                   const Coefficients& coefficients) {
  try {
    const KernelSpec spec = parse_kernel_name(name);
    const Family& fam = family(spec.family);
    if (fam.cost_features_need_filter_values() && !problem.weights.values) return std::nullopt;
    const Prediction p = predict(spec.family, cost_features_for(problem, spec), m.report, gpu, coefficients);
    if (p.resident_blocks_per_sm == 0) return std::nullopt;
    return p.time_us;
  } catch (const InputError&) {
    return std::nullopt;
  }
}

// Of `names` (measured), the one the model predicts fastest (the first of ties); empty when it predicts none.
ChoicePick model_first(const std::vector<std::string>& names, const ByProblem& entry,
                       const Coefficients& coefficients) {
  ChoicePick pick;
  double best = std::numeric_limits<double>::infinity();
  for (const std::string& name : names) {
    const Measured& m = entry.kernels.at(name);
    const std::optional<double> p = predicted_us(name, m, entry.problem, entry.gpu, coefficients);
    if (p && *p < best) {
      best = *p;
      pick = {.kernel = name, .measured_us = m.median_us};
    }
  }
  return pick;
}

}  // namespace

ChoiceReplay replay_choices(std::span<const MeasurementRecord> measurements, const Coefficients& coefficients) {
  std::map<std::pair<std::string, std::string>, ByProblem> by_problem;  // (describe_gpu, problem key)
  for (const MeasurementRecord& m : measurements) {
    if (m.status != MeasurementStatus::ok) continue;
    std::string name;
    try {
      name = kernel_name(parse_kernel_name(m.kernel));
    } catch (const InputError&) {  // a family or value this convgen no longer has
      continue;
    }
    ByProblem& entry = by_problem[{describe_gpu(m.gpu), problem_key(m.problem)}];
    entry.gpu = m.gpu;
    entry.problem = m.problem;
    const Measured measured{
        .median_us = m.median_us,
        .report = {.registers = m.registers, .spill_store_bytes = m.spill_bytes, .smem_bytes = m.smem_bytes}};
    const auto [it, added] = entry.kernels.emplace(name, measured);
    if (!added && m.median_us < it->second.median_us) it->second = measured;
  }

  ChoiceReplay replay;
  double log_first = 0, log_model = 0, log_all = 0;
  for (const auto& [key, entry] : by_problem) {
    std::vector<std::string> defaults;
    bool complete = true;
    for (const FamilyDefault& d : family_defaults(entry.problem, entry.gpu)) {
      if (!d.spec) continue;
      const std::string name = kernel_name(*d.spec);
      if (!entry.kernels.contains(name)) complete = false;
      defaults.push_back(name);
    }
    if (defaults.empty() || !complete) {
      ++replay.incomplete;
      continue;
    }
    std::vector<std::string> every;
    for (const auto& [name, m] : entry.kernels) every.push_back(name);
    const auto fastest = std::min_element(entry.kernels.begin(), entry.kernels.end(), [](const auto& a, const auto& b) {
      return a.second.median_us < b.second.median_us;
    });
    ProblemChoices choices{
        .gpu = entry.gpu,
        .problem = entry.problem,
        .defaults = static_cast<int>(defaults.size()),
        .measured = static_cast<int>(entry.kernels.size()),
        .first_run = {.kernel = defaults.front(), .measured_us = entry.kernels.at(defaults.front()).median_us},
        .cost_model = model_first(defaults, entry, coefficients),
        .model_all = model_first(every, entry, coefficients),
        .fastest = {.kernel = fastest->first, .measured_us = fastest->second.median_us}};
    if (choices.cost_model.kernel.empty() || choices.model_all.kernel.empty()) {  // the model predicts none of them
      ++replay.incomplete;
      continue;
    }
    replay.cost_model_is_first_run += choices.cost_model.kernel == choices.first_run.kernel;
    log_first += std::log(choices.first_run.measured_us / choices.fastest.measured_us);
    log_model += std::log(choices.cost_model.measured_us / choices.fastest.measured_us);
    log_all += std::log(choices.model_all.measured_us / choices.fastest.measured_us);
    replay.problems.push_back(std::move(choices));
  }
  if (!replay.problems.empty()) {
    const double n = static_cast<double>(replay.problems.size());
    replay.first_run_ratio = std::exp(log_first / n);
    replay.cost_model_ratio = std::exp(log_model / n);
    replay.model_all_ratio = std::exp(log_all / n);
  }
  return replay;
}

}  // namespace convgen
