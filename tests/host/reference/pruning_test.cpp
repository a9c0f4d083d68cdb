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

// 2:4: in every chunk of 4 consecutive values of a channel's row (from the row's start, the last chunk shorter when
// the row length is not a multiple of 4) the 2 largest magnitudes are kept, the others zeroed.
TEST(Pruning, TwoFourKeepsTheTwoLargestOfEveryChunkOfFourInEachRow) {
  for (const Problem& p : {kProblem, Problem{.n = 1, .c = 3, .k = 2, .input = {1, 5, 5}, .filter = {1, 1, 3}}}) {
    const std::vector<float> pruned = two_four_pruned_random_filter(p, 7);
    const HostTensor dense = make_tensor(p, TensorRole::filter, DenseRandom{}, 7);
    const std::size_t per_k = pruned.size() / static_cast<std::size_t>(p.k);
    for (std::size_t k = 0; k < static_cast<std::size_t>(p.k); ++k)
      for (std::size_t chunk = 0; chunk < per_k; chunk += 4) {
        const std::size_t size = std::min<std::size_t>(4, per_k - chunk);
        float smallest_kept = INFINITY, largest_pruned = 0;
        std::size_t kept = 0;
        for (std::size_t i = k * per_k + chunk; i < k * per_k + chunk + size; ++i) {
          const float original = dense.get(static_cast<std::int64_t>(i));
          if (pruned[i] == 0) {
            largest_pruned = std::max(largest_pruned, std::fabs(original));
          } else {
            EXPECT_EQ(pruned[i], original) << i;
            smallest_kept = std::min(smallest_kept, std::fabs(original));
            ++kept;
          }
        }
        EXPECT_EQ(kept, std::min<std::size_t>(2, size)) << "k " << k << " chunk " << chunk;
        EXPECT_LE(largest_pruned, smallest_kept) << "k " << k << " chunk " << chunk;
      }
    EXPECT_TRUE(is_two_four_sparse(with_weights(p, pruned)));
    EXPECT_EQ(pruned, two_four_pruned_random_filter(p, 7));
  }
}

// is_two_four_sparse counts chunks from each row's start: 3 nonzeros in one chunk fail, the same 3 split over two
// chunks pass; a problem without values is not 2:4.
TEST(Pruning, TwoFourSparsityIsCheckedChunkByChunkFromEachRowsStart) {
  const Problem p{.n = 1, .c = 3, .k = 2, .input = {1, 5, 5}, .filter = {1, 1, 3}};  // rows of 9
  EXPECT_FALSE(is_two_four_sparse(p));
  std::vector<float> v(18, 0.0f);
  v[9] = v[10] = 1;  // row 1, chunk 0: 2 nonzeros
  v[16] = v[17] = 1;  // row 1: one in chunk 13..16, one in the short last chunk (17)
  EXPECT_TRUE(is_two_four_sparse(with_weights(p, v)));
  v[11] = 1;  // row 1, chunk 0: 3 nonzeros
  EXPECT_FALSE(is_two_four_sparse(with_weights(p, v)));
  std::vector<float> across(18, 0.0f);
  across[2] = across[3] = across[4] = 1;  // 3 nonzeros in a row: chunk 0 (0..3) holds 2, chunk 1 (4..7) one
  EXPECT_TRUE(is_two_four_sparse(with_weights(p, across)));
  across[8] = 1;
  across[5] = 1;  // chunk 1 (4..7) now 2, the last chunk (8) 1
  EXPECT_TRUE(is_two_four_sparse(with_weights(p, across)));
  across[6] = 1;  // chunk 1: 3
  EXPECT_FALSE(is_two_four_sparse(with_weights(p, across)));
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
