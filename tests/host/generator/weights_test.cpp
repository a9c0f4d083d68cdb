// weights_test: a problem's own filter: its shape per layout, the pattern hash, the checks when it is attached and
// the key that carries it.
#include "convgen/weights.hpp"

#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "support/errors.hpp"

namespace convgen {
namespace {

using testing_support::input_error;

Problem conv(Layout layout) {
  Problem p{.n = 1, .c = 4, .k = 2, .input = {1, 6, 6}, .filter = {1, 3, 3}, .padding = {0, 1, 1}};
  p.layout = layout;
  return p;
}

TEST(Weights, FilterShapeFollowsTheLayout) {
  EXPECT_EQ(describe(filter_shape(conv(Layout::nchw))), "(2, 4, 3, 3) (K, C, R, S)");
  EXPECT_EQ(describe(filter_shape(conv(Layout::nhwc))), "(2, 3, 3, 4) (K, R, S, C)");
  Problem grouped = conv(Layout::nchw);
  grouped.groups = 2;
  EXPECT_EQ(describe(filter_shape(grouped)), "(2, 2, 3, 3) (K, C, R, S)");
  const Problem volume{.c = 3, .k = 5, .input = {4, 4, 4}, .filter = {2, 3, 3}, .layout = Layout::ndhwc};
  EXPECT_EQ(describe(filter_shape(volume)), "(5, 2, 3, 3, 3) (K, T, R, S, C)");
  const Problem line{.c = 3, .k = 5, .input = {1, 1, 9}, .filter = {1, 1, 3}, .layout = Layout::ncw};
  EXPECT_EQ(describe(filter_shape(line)), "(5, 3, 3) (K, C, S)");
}

TEST(Weights, ThePatternHashSeesWhereTheZerosAreNotTheValues) {
  const Problem p = conv(Layout::nchw);
  std::vector<float> a(72, 1.0f), b(72, -3.0f);
  a[5] = b[5] = 0;
  EXPECT_EQ(weight_pattern_hash(p, a), weight_pattern_hash(p, b));
  b[6] = 0;
  EXPECT_NE(weight_pattern_hash(p, a), weight_pattern_hash(p, b));
  // The same values in another layout are another filter.
  EXPECT_NE(weight_pattern_hash(p, a), weight_pattern_hash(conv(Layout::nhwc), a));
  EXPECT_EQ(weight_pattern_hash(p, a).size(), 16u);
}

TEST(Weights, AttachedFiltersAreCheckedAndJoinTheKey) {
  const Problem p = conv(Layout::nchw);
  EXPECT_EQ(input_error([&] { with_weights(p, std::vector<float>(71, 1.0f), "w/conv.npy"); }),
            "w/conv.npy: 71 values, expected 72 for the filter (2, 4, 3, 3) (K, C, R, S)");
  std::vector<float> bad(72, 1.0f);
  bad[4 * 9 + 2 * 9 + 1 * 3 + 2] = std::numeric_limits<float>::quiet_NaN();  // k 1, c 2, r 1, s 2
  EXPECT_EQ(input_error([&] { with_weights(p, bad, "w/conv.npy"); }),
            "w/conv.npy: element 59 (k 1, c 2, r 1, s 2) is NaN, expected a finite float");
  bad[59] = std::numeric_limits<float>::infinity();
  EXPECT_EQ(input_error([&] { with_weights(p, bad); }),
            "filter: element 59 (k 1, c 2, r 1, s 2) is infinite, expected a finite float");

  std::vector<float> values(72, 0.5f);
  for (int i = 0; i < 36; ++i) values[static_cast<std::size_t>(2 * i)] = 0;
  const Problem carried = with_weights(p, values);
  EXPECT_EQ(weight_zero_fraction(carried), 0.5);
  EXPECT_EQ(carried.weights.pattern, weight_pattern_hash(p, values));
  const std::string key = problem_key(carried);
  EXPECT_EQ(key, problem_key(p) + "_w" + carried.weights.pattern);
  EXPECT_NE(describe(carried).find("its filter (50% zeros)"), std::string::npos) << describe(carried);
  // Parsed back, the key knows the pattern but not the values; problems compare by pattern.
  const Problem back = parse_problem_key(key);
  EXPECT_EQ(back.weights.pattern, carried.weights.pattern);
  EXPECT_EQ(back.weights.values, nullptr);
  EXPECT_EQ(back, carried);
  EXPECT_NE(back, p);
  Problem both = carried;
  both.act_sparsity = 0.5;
  EXPECT_EQ(problem_key(parse_problem_key(problem_key(both))), problem_key(both));
  EXPECT_EQ(input_error([&] { parse_problem_key(problem_key(p) + "_wXYZ"); }),
            "problem key '" + problem_key(p) + "_wXYZ': filter pattern 'wXYZ' must be 'w' and 16 lowercase hex digits");
}

}  // namespace
}  // namespace convgen
