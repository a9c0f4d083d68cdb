// stats: robust summary statistics of timing samples (median, p10/p90, outliers counted, never removed).
#pragma once

#include <span>

namespace convgen {

// The summary of a set of samples. Percentiles interpolate linearly between order statistics: with the samples
// sorted as x[0] <= ... <= x[n-1], the q-quantile is at position h = (n - 1) q, and is
// x[floor(h)] + (h - floor(h)) (x[floor(h) + 1] - x[floor(h)]) (Hyndman and Fan's type 7, NumPy's default).
// The median is the 0.5-quantile, so an even count averages the middle two.
struct SampleStats {
  double median = 0;
  double p10 = 0;
  double p90 = 0;
  double min = 0;
  double max = 0;
  double mean = 0;
  int count = 0;
  // Samples farther than 5 robust standard deviations (5 x 1.4826 x MAD, the median absolute deviation) from the
  // median. They are counted, not removed: the median does not need them removed, and a count above zero tells
  // the reader that something (a clock change, another process) disturbed the run. When the MAD is 0 (more
  // than half the samples are equal) every sample that differs from the median counts.
  int outliers = 0;
  bool operator==(const SampleStats&) const = default;
};

// The robust-sigma factor of the MAD (1 / Phi^-1(3/4)) and the multiple of it beyond which a sample is an outlier.
inline constexpr double kMadToSigma = 1.4826;
inline constexpr double kOutlierSigmas = 5.0;

// Returns the q-quantile (0 <= q <= 1) of samples already sorted ascending, by the definition above.
// Throws InputError for no samples or q outside [0, 1].
double quantile_sorted(std::span<const double> sorted, double q);

// Summarizes samples in any order. Throws InputError for no samples or a sample that is not finite.
//   SampleStats s = summarize(std::vector<double>{3, 1, 2});  // s.median == 2, s.p10 == 1.2
SampleStats summarize(std::span<const double> samples);

}  // namespace convgen
