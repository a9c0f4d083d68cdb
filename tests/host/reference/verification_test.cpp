// verification_test: error measures, pass limits, output sampling and the deterministic random fill.
#include "reference/reference.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "convgen/error.hpp"

namespace convgen {
namespace {

using Floats = std::vector<float>;
using Doubles = std::vector<double>;

TEST(Compare, IdenticalOutputHasNoError) {
  const ErrorStats stats = compare(Floats{1, 2, 3}, Doubles{1, 2, 3});
  EXPECT_EQ(stats.rel_l2, 0);
  EXPECT_EQ(stats.max_abs, 0);
  EXPECT_EQ(stats.nan_count, 0);
  EXPECT_EQ(stats.compared, 3);
  EXPECT_TRUE(passes(stats, Precision::fp32));
}

TEST(Compare, RelativeL2IsErrorNormOverReferenceNorm) {
  // ||(0, 0.005)|| / ||(3, 4)|| = 0.001.
  const ErrorStats stats = compare(Floats{3, 4.005f}, Doubles{3, 4});
  EXPECT_NEAR(stats.rel_l2, 1e-3, 1e-7);
  EXPECT_NEAR(stats.max_abs, 5e-3, 1e-6);
  EXPECT_FALSE(passes(stats, Precision::fp32));
  EXPECT_TRUE(passes(stats, Precision::tf32));
  EXPECT_TRUE(passes(stats, Precision::fp16));
}

TEST(Compare, AnyNanFailsWhateverThePrecision) {
  const ErrorStats stats = compare(Floats{std::numeric_limits<float>::quiet_NaN(), 4}, Doubles{3, 4});
  EXPECT_EQ(stats.nan_count, 1);
  EXPECT_FALSE(passes(stats, Precision::bf16));
}

TEST(Compare, InfinityFailsLikeNan) {
  const ErrorStats stats = compare(Floats{3, std::numeric_limits<float>::infinity()}, Doubles{3, 4});
  EXPECT_EQ(stats.nan_count, 1);
  EXPECT_FALSE(passes(stats, Precision::fp16));
}

TEST(Compare, ZeroReferenceUsesAbsoluteError) {
  const ErrorStats small = compare(Floats{0, 1e-6f}, Doubles{0, 0});
  EXPECT_NEAR(small.rel_l2, 1e-6, 1e-12);
  EXPECT_TRUE(passes(small, Precision::fp32));
  EXPECT_FALSE(passes(compare(Floats{0, 1}, Doubles{0, 0}), Precision::bf16));
}

// After a saturating activation the error is relative to the norm before it, where that is larger: a clip to
// [-0.5, 0.5] of values near 60 leaves a small output norm that fp32's rounding of the sums would seem large against.
TEST(Compare, AScaleLargerThanTheReferencesNormIsWhatTheErrorIsRelativeTo) {
  const float off = 0.25f + 0x1p-14f;  // 2^-14 from the reference, exactly
  const ErrorStats own = compare(Floats{0.5f, off}, Doubles{0.5, 0.25});
  EXPECT_DOUBLE_EQ(own.rel_l2, 0x1p-14 / std::sqrt(0.3125));
  EXPECT_FALSE(passes(own, Precision::fp32));
  const ErrorStats scaled = compare(Floats{0.5f, off}, Doubles{0.5, 0.25}, 64.0);
  EXPECT_DOUBLE_EQ(scaled.rel_l2, 0x1p-14 / 64);
  EXPECT_TRUE(passes(scaled, Precision::fp32));
  // A smaller scale changes nothing, and a wrong value still fails against the larger scale.
  EXPECT_DOUBLE_EQ(compare(Floats{0.5f, off}, Doubles{0.5, 0.25}, 0.1).rel_l2, own.rel_l2);
  EXPECT_FALSE(passes(compare(Floats{0.5f, -0.5f}, Doubles{0.5, 0.25}, 64.0), Precision::fp32));
  const std::vector<std::int64_t> indices = {1};
  EXPECT_DOUBLE_EQ(compare(Floats{0.5f, off}, Doubles{0.25}, indices, 64.0).rel_l2, 0x1p-14 / 64);
}

TEST(Compare, NothingComparedDoesNotPass) { EXPECT_FALSE(passes(compare(Floats{}, Doubles{}), Precision::fp32)); }

TEST(Compare, SizeMismatchIsRejected) {
  try {
    compare(Floats{1, 2}, Doubles{1, 2, 3});
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "output has 2 elements, expected 3 (the reference's)");
  }
}

TEST(Compare, AtIndicesReadsOnlyThoseOutputs) {
  const Floats output{9, 2, 9, 4};  // the 9s are not sampled
  const std::vector<std::int64_t> indices{1, 3};
  const ErrorStats stats = compare(output, Doubles{2, 4}, indices);
  EXPECT_EQ(stats.compared, 2);
  EXPECT_EQ(stats.rel_l2, 0);
}

TEST(Compare, AtIndicesRejectsAnIndexOutsideTheOutput) {
  try {
    compare(Floats{1, 2}, Doubles{1}, std::vector<std::int64_t>{2});
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "index 2 is out of range for an output of 2 elements");
  }
}

TEST(Compare, AtIndicesNeedsOneReferenceValuePerIndex) {
  try {
    compare(Floats{1, 2}, Doubles{1}, std::vector<std::int64_t>{0, 1});
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "reference has 1 values, expected one per index (2)");
  }
}

TEST(ErrorLimit, FollowsTheDesignLimits) {
  EXPECT_EQ(error_limit(Precision::fp32), 1e-5);
  EXPECT_EQ(error_limit(Precision::tf32), 2e-3);
  EXPECT_EQ(error_limit(Precision::fp16), 1e-2);
  EXPECT_EQ(error_limit(Precision::bf16), 1e-2);
}

TEST(FillRandom, FollowsTheSplitmix64ReferenceStream) {
  // splitmix64 from seed 0 yields 0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4; the top 24 bits m map to
  // (2m + 1 - 2^24) / 2^24.
  Floats data(2);
  fill_random(data, 0);
  EXPECT_EQ(data[0], 12861777.0f / 16777216.0f);
  EXPECT_EQ(data[1], -2297539.0f / 16777216.0f);
}

TEST(FillRandom, SameSeedGivesSameValuesAndOtherSeedsDiffer) {
  Floats a(1000), b(1000), c(1000);
  fill_random(a, 42);
  fill_random(b, 42);
  fill_random(c, 43);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

TEST(FillRandom, ValuesCoverMinusOneToOneAndAreNeverZero) {
  Floats data(10000);
  fill_random(data, 7);
  EXPECT_TRUE(std::none_of(data.begin(), data.end(), [](float v) { return v == 0 || v <= -1 || v >= 1; }));
  EXPECT_LT(*std::min_element(data.begin(), data.end()), -0.99f);
  EXPECT_GT(*std::max_element(data.begin(), data.end()), 0.99f);
  double mean = 0;
  for (float v : data) mean += v;
  EXPECT_NEAR(mean / data.size(), 0.0, 0.05);
}

TEST(SampleOutputIndices, SmallOutputIsTakenWhole) {
  const Problem p{.k = 3, .input = {1, 2, 2}};
  EXPECT_EQ(sample_output_indices(p, 4096, 1), (std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}));
}

TEST(SampleOutputIndices, LargeOutputGivesDistinctSortedIndicesInRange) {
  const Problem p{.n = 2, .c = 1, .k = 64, .input = {1, 56, 56}};
  const auto indices = sample_output_indices(p, 4096, 1);
  ASSERT_EQ(indices.size(), 4096u);
  EXPECT_TRUE(std::is_sorted(indices.begin(), indices.end()));
  EXPECT_EQ(std::adjacent_find(indices.begin(), indices.end()), indices.end());
  EXPECT_GE(indices.front(), 0);
  EXPECT_LT(indices.back(), output_elements(p));
  // Spread over the output, not bunched at one end.
  EXPECT_LT(indices.front(), output_elements(p) / 10);
  EXPECT_GT(indices.back(), output_elements(p) * 9 / 10);
}

TEST(SampleOutputIndices, DeterministicPerSeed) {
  const Problem p{.k = 64, .input = {1, 56, 56}};
  EXPECT_EQ(sample_output_indices(p, 100, 5), sample_output_indices(p, 100, 5));
  EXPECT_NE(sample_output_indices(p, 100, 5), sample_output_indices(p, 100, 6));
}

TEST(SampleOutputIndices, NegativeCountIsRejected) {
  try {
    sample_output_indices(Problem{}, -1, 0);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "sample count must not be negative, got -1");
  }
}

}  // namespace
}  // namespace convgen
