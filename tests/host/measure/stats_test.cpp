// stats_test: exact percentiles, mean and outlier counts of small sample sets, and the errors for bad samples.
#include "measure/stats.hpp"

#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "convgen/error.hpp"

namespace convgen {
namespace {

template <class F>
std::string input_error_of(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "no InputError";
}

TEST(Stats, ThreeSamplesInterpolateBetweenOrderStatistics) {
  const std::vector<double> samples{3, 1, 2};
  const SampleStats s = summarize(samples);
  EXPECT_EQ(s.median, 2);
  EXPECT_DOUBLE_EQ(s.p10, 1.2);  // h = 2 x 0.1 = 0.2: 1 + 0.2 x (2 - 1)
  EXPECT_DOUBLE_EQ(s.p90, 2.8);
  EXPECT_EQ(s.min, 1);
  EXPECT_EQ(s.max, 3);
  EXPECT_EQ(s.mean, 2);
  EXPECT_EQ(s.count, 3);
  EXPECT_EQ(s.outliers, 0);
}

TEST(Stats, AnEvenCountAveragesTheMiddleTwo) {
  const std::vector<double> samples{4, 1, 3, 2};
  const SampleStats s = summarize(samples);
  EXPECT_EQ(s.median, 2.5);
  EXPECT_DOUBLE_EQ(s.p10, 1.3);
  EXPECT_DOUBLE_EQ(s.p90, 3.7);
  EXPECT_EQ(s.mean, 2.5);
}

TEST(Stats, TenSamplesGiveTheNumPyLinearPercentiles) {
  std::vector<double> samples;
  for (int i = 10; i >= 1; --i) samples.push_back(i);
  const SampleStats s = summarize(samples);
  EXPECT_EQ(s.median, 5.5);
  EXPECT_DOUBLE_EQ(s.p10, 1.9);  // numpy.percentile(range(1, 11), 10) == 1.9
  EXPECT_DOUBLE_EQ(s.p90, 9.1);
  EXPECT_EQ(s.outliers, 0);
}

TEST(Stats, OneSampleIsItsOwnSummary) {
  const std::vector<double> samples{7.5};
  EXPECT_EQ(summarize(samples),
            (SampleStats{.median = 7.5, .p10 = 7.5, .p90 = 7.5, .min = 7.5, .max = 7.5, .mean = 7.5, .count = 1}));
}

TEST(Stats, AFarSampleIsCountedButNotRemoved) {
  // Median 10, MAD 0.5: the limit is 5 x 1.4826 x 0.5 = 3.7065 from the median; only 100 is beyond it.
  const std::vector<double> samples{9.5, 10, 10.5, 10, 9.5, 10.5, 10, 100, 13.5};
  const SampleStats s = summarize(samples);
  EXPECT_EQ(s.median, 10);
  EXPECT_EQ(s.outliers, 1);
  EXPECT_EQ(s.max, 100);
  EXPECT_EQ(s.count, 9);
  EXPECT_DOUBLE_EQ(s.mean, 183.5 / 9);
}

TEST(Stats, ASampleJustInsideTheLimitIsNotAnOutlier) {
  // Median 10, MAD 1: 17.4 is 7.4 away (limit 7.413), 17.5 is 7.5 away.
  EXPECT_EQ(summarize(std::vector<double>{9, 10, 11, 10, 17.4}).outliers, 0);
  EXPECT_EQ(summarize(std::vector<double>{9, 10, 11, 10, 17.5}).outliers, 1);
}

TEST(Stats, WithAZeroMadEverySampleOffTheMedianCounts) {
  EXPECT_EQ(summarize(std::vector<double>{5, 5, 5, 6}).outliers, 1);
  EXPECT_EQ(summarize(std::vector<double>{5, 5, 5, 5}).outliers, 0);
}

TEST(Stats, QuantileEndsAreTheExtremes) {
  const std::vector<double> sorted{1, 4, 9};
  EXPECT_EQ(quantile_sorted(sorted, 0), 1);
  EXPECT_EQ(quantile_sorted(sorted, 1), 9);
  EXPECT_EQ(quantile_sorted(sorted, 0.75), 6.5);
}

TEST(Stats, NoSamplesIsAnInputError) {
  EXPECT_EQ(input_error_of([] { summarize({}); }), "no samples to summarize: expected at least one");
  EXPECT_EQ(input_error_of([] { quantile_sorted({}, 0.5); }),
            "no samples to take a quantile of: expected at least one");
}

TEST(Stats, ASampleThatIsNotFiniteIsNamedByIndex) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(input_error_of([&] {
              summarize(std::vector<double>{1, nan});
            }),
            "sample 1 is nan: expected a finite number");
  EXPECT_EQ(input_error_of([&] { summarize(std::vector<double>{inf}); }), "sample 0 is inf: expected a finite number");
}

TEST(Stats, AQuantileOutsideZeroToOneIsAnInputError) {
  const std::vector<double> sorted{1, 2};
  EXPECT_EQ(input_error_of([&] { quantile_sorted(sorted, 1.5); }), "quantile 1.5: expected a value in [0, 1]");
  EXPECT_EQ(input_error_of([&] { quantile_sorted(sorted, -0.1); }), "quantile -0.1: expected a value in [0, 1]");
}

}  // namespace
}  // namespace convgen
