// pruning_test: magnitude pruning per output channel, reproducible by seed.
#include "reference/pruning.hpp"

#include <algorithm>
#include <cmath>

#include <gtest/gtest.h>

#include "convgen/weights.hpp"
#include "reference/inputs.hpp"
#include "support/errors.hpp"

namespace convgen {
namespace {

const Problem kProblem{.n = 1, .c = 8, .k = 4, .input = {1, 5, 5}, .filter = {1, 3, 3}, .padding = {0, 1, 1}};

TEST(Pruning, EveryOutputChannelLosesItsSmallestValues) {
  const std::vector<float> pruned = pruned_random_filter(kProblem, 0.9, 7);
  const HostTensor dense = make_tensor(kProblem, TensorRole::filter, DenseRandom{}, 7);
  const std::size_t per_k = 72;
  for (std::size_t k = 0; k < 4; ++k) {
    float smallest_kept = INFINITY, largest_pruned = 0;
    int zeros = 0;
    for (std::size_t i = k * per_k; i < (k + 1) * per_k; ++i) {
      const float original = dense.get(static_cast<std::int64_t>(i));
      if (pruned[i] == 0) {
        ++zeros;
        largest_pruned = std::max(largest_pruned, std::fabs(original));
      } else {
        EXPECT_EQ(pruned[i], original) << i;  // kept values are the dense filter's
        smallest_kept = std::min(smallest_kept, std::fabs(original));
      }
    }
    EXPECT_EQ(zeros, 65) << "k " << k;  // round(0.9 x 72)
    EXPECT_LE(largest_pruned, smallest_kept) << "k " << k;
  }
}

TEST(Pruning, TheSeedReproducesTheFilterAndTheEndsAreDenseAndEmpty) {
  EXPECT_EQ(pruned_random_filter(kProblem, 0.5, 3), pruned_random_filter(kProblem, 0.5, 3));
  EXPECT_NE(pruned_random_filter(kProblem, 0.5, 3), pruned_random_filter(kProblem, 0.5, 4));
  const std::vector<float> dense = pruned_random_filter(kProblem, 0, 3);
  EXPECT_EQ(std::count(dense.begin(), dense.end(), 0.0f), 0);
  const std::vector<float> empty = pruned_random_filter(kProblem, 1, 3);
  EXPECT_EQ(std::count(empty.begin(), empty.end(), 0.0f), 288);
  EXPECT_EQ(testing_support::input_error([] { pruned_random_filter(kProblem, 1.5, 1); }),
            "weight sparsity 1.5 is not a zero fraction in [0, 1]");
}

TEST(Pruning, APrunedProblemIsMeasuredWithItsOwnFilter) {
  Problem p = kProblem;
  EXPECT_EQ(expected_filter(p), TensorSource{DenseRandom{}});
  const std::vector<float> values = pruned_random_filter(p, 0.7, 2);
  const TensorSource source = expected_filter(with_weights(p, values));
  const auto* given = std::get_if<GivenTensor>(&source);
  ASSERT_NE(given, nullptr);
  ASSERT_EQ(given->tensor->size(), 288);
  for (std::int64_t i = 0; i < 288; ++i) EXPECT_EQ(given->tensor->get(i), values[static_cast<std::size_t>(i)]) << i;
  p.weights.pattern = "0123456789abcdef";  // a key parsed back: the pattern without its values
  EXPECT_NE(testing_support::input_error([&] { expected_filter(p); }).find("carries filter pattern 0123456789abcdef "
                                                                          "but not its values"),
            std::string::npos);
}

}  // namespace
}  // namespace convgen
