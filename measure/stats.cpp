// stats: percentiles by linear interpolation, mean, and the MAD-based outlier count.
#include "measure/stats.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include <fmt/format.h>

#include "convgen/error.hpp"

namespace convgen {

double quantile_sorted(std::span<const double> sorted, double q) {
  if (sorted.empty()) throw InputError("no samples to take a quantile of: expected at least one");
  if (!(q >= 0 && q <= 1)) throw InputError(fmt::format("quantile {}: expected a value in [0, 1]", q));
  const double h = static_cast<double>(sorted.size() - 1) * q;
  const auto below = static_cast<std::size_t>(std::floor(h));
  if (below + 1 >= sorted.size()) return sorted[below];
  return sorted[below] + (h - static_cast<double>(below)) * (sorted[below + 1] - sorted[below]);
}

SampleStats summarize(std::span<const double> samples) {
  if (samples.empty()) throw InputError("no samples to summarize: expected at least one");
  for (std::size_t i = 0; i < samples.size(); ++i)
    if (!std::isfinite(samples[i]))
      throw InputError(fmt::format("sample {} is {}: expected a finite number", i, samples[i]));
  std::vector<double> sorted(samples.begin(), samples.end());
  std::ranges::sort(sorted);
  SampleStats stats{
      .median = quantile_sorted(sorted, 0.5),
      .p10 = quantile_sorted(sorted, 0.1),
      .p90 = quantile_sorted(sorted, 0.9),
      .min = sorted.front(),
      .max = sorted.back(),
      .mean = std::accumulate(sorted.begin(), sorted.end(), 0.0) / static_cast<double>(sorted.size()),
      .count = static_cast<int>(sorted.size()),
  };
  std::vector<double> deviations;
  deviations.reserve(sorted.size());
  for (const double x : sorted) deviations.push_back(std::abs(x - stats.median));
  std::ranges::sort(deviations);
  const double limit = kOutlierSigmas * kMadToSigma * quantile_sorted(deviations, 0.5);
  stats.outliers = static_cast<int>(std::ranges::count_if(deviations, [&](double d) { return d > limit; }));
  return stats;
}

}  // namespace convgen
