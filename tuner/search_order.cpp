#include "tuner/search_order.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "convgen/error.hpp"
#include "generator/kernel_spec.hpp"

namespace convgen {

OrderReplay replay_search_order(const Family& family, std::span<const MeasurementRecord> measurements) {
  struct Measured {
    Gpu gpu;
    Problem problem;
    std::map<std::string, double> kernels;  // canonical name -> fastest median
  };
  std::map<std::pair<std::string, std::string>, Measured> by_problem;  // (describe_gpu, problem key)
  int unreadable = 0;
  for (const MeasurementRecord& m : measurements) {
    if (m.status != MeasurementStatus::ok || family_name_of(m.kernel) != family.name()) continue;
    std::string name;
    try {
      name = kernel_name(parse_kernel_name(m.kernel));
    } catch (const InputError&) {  // a value the family no longer has: it lists no such kernel
      ++unreadable;
      continue;
    }
    Measured& entry = by_problem[{describe_gpu(m.gpu), problem_key(m.problem)}];
    entry.gpu = m.gpu;
    entry.problem = m.problem;
    const auto [it, added] = entry.kernels.emplace(name, m.median_us);
    if (!added) it->second = std::min(it->second, m.median_us);
  }
  OrderReplay replay{.unreadable = unreadable};
  double log_sum = 0, log_listed_sum = 0;
  for (const auto& [key, entry] : by_problem) {
    const auto fastest = std::min_element(entry.kernels.begin(), entry.kernels.end(),
                                          [](const auto& a, const auto& b) { return a.second < b.second; });
    OrderPick pick{.gpu = entry.gpu,
                   .problem = entry.problem,
                   .best = fastest->first,
                   .best_us = fastest->second,
                   .measured = static_cast<int>(entry.kernels.size())};
    for (const KernelSpec& spec : family.enumerate(entry.problem, entry.gpu)) {
      const auto found = entry.kernels.find(kernel_name(spec));
      if (found == entry.kernels.end()) continue;
      if (pick.pick.empty()) {
        pick.pick = found->first;
        pick.pick_us = found->second;
      }
      if (pick.listed_best_us == 0 || found->second < pick.listed_best_us) pick.listed_best_us = found->second;
    }
    if (pick.pick.empty()) {
      ++replay.unlisted;
      continue;
    }
    if (pick.best_listed()) ++replay.best_listed;
    log_sum += std::log(pick.ratio());
    log_listed_sum += std::log(pick.listed_best_us / pick.best_us);
    replay.picks.push_back(std::move(pick));
  }
  if (!replay.picks.empty()) {
    replay.geomean_ratio = std::exp(log_sum / static_cast<double>(replay.picks.size()));
    replay.geomean_listed_ratio = std::exp(log_listed_sum / static_cast<double>(replay.picks.size()));
  }
  return replay;
}

}  // namespace convgen
