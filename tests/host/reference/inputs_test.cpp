// inputs_test: the input generators: zero fractions within 1% of the request for every pattern on several shapes,
// whole zero channels, clustered blobs, determinism, the 0 and 1 edge cases, given tensors and data identities.
#include "reference/inputs.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "convgen/error.hpp"
#include "support/errors.hpp"

namespace convgen {
namespace {

const Problem kShapes[] = {
    {.n = 1, .c = 64, .k = 64, .input = {1, 56, 56}, .filter = {1, 3, 3}, .padding = {0, 1, 1}},
    {.n = 4, .c = 32, .k = 16, .input = {1, 14, 14}, .filter = {1, 3, 3}, .layout = Layout::nhwc},
    {.n = 2, .c = 100, .k = 8, .input = {4, 9, 9}, .filter = {3, 3, 3}, .layout = Layout::ncdhw},
    {.n = 8, .c = 48, .k = 48, .input = {1, 7, 7}, .filter = {1, 1, 1}, .precision = Precision::fp16},
};
constexpr SparsityPattern kPatterns[] = {SparsityPattern::uniform, SparsityPattern::channel, SparsityPattern::blob};

HostTensor activation(const Problem& p, SparsityPattern pattern, double fraction, std::uint64_t seed = 1) {
  return make_tensor(p, TensorRole::activation, SparseRandom{pattern, fraction}, seed);
}

// Calls fn(n, c, d, h, w, value) for every activation element.
template <class Fn>
void for_each_activation(const Problem& p, const HostTensor& t, Fn fn) {
  const bool last = channels_last(p.layout);
  for (int n = 0; n < p.n; ++n)
    for (int c = 0; c < p.c; ++c)
      for (int d = 0; d < p.input.d; ++d)
        for (int h = 0; h < p.input.h; ++h)
          for (int w = 0; w < p.input.w; ++w) {
            const std::int64_t spatial = (std::int64_t{d} * p.input.h + h) * p.input.w + w;
            const std::int64_t plane = std::int64_t{p.input.d} * p.input.h * p.input.w;
            const std::int64_t i = last ? (std::int64_t{n} * plane + spatial) * p.c + c
                                        : (std::int64_t{n} * p.c + c) * plane + spatial;
            fn(n, c, d, h, w, t.get(i));
          }
}

TEST(Inputs, EveryPatternHitsTheZeroFractionWithinOnePercent) {
  for (const Problem& p : kShapes)
    for (SparsityPattern pattern : kPatterns)
      for (double fraction : {0.5, 0.7, 0.9, 0.99}) {
        const HostTensor t = activation(p, pattern, fraction);
        EXPECT_NEAR(zero_fraction(t), fraction, 0.01) << problem_key(p) << " " << to_string(pattern);
        EXPECT_EQ(t.type(), storage_type(p.precision));
      }
}

TEST(Inputs, NoZerosAndAllZerosAreExact) {
  for (const Problem& p : kShapes)
    for (SparsityPattern pattern : kPatterns) {
      const HostTensor dense = make_tensor(p, TensorRole::activation, DenseRandom{}, 5);
      EXPECT_EQ(activation(p, pattern, 0.0, 5), dense) << to_string(pattern);
      EXPECT_EQ(zero_fraction(dense), 0.0);
      EXPECT_EQ(zero_fraction(activation(p, pattern, 1.0, 5)), 1.0) << to_string(pattern);
    }
}

TEST(Inputs, NonzeroValuesAreTheDenseOnes) {
  const Problem& p = kShapes[0];
  const HostTensor dense = make_tensor(p, TensorRole::activation, DenseRandom{}, 9);
  const HostTensor sparse = activation(p, SparsityPattern::blob, 0.6, 9);
  for (std::int64_t i = 0; i < dense.size(); ++i) {
    if (sparse.get(i) != 0.0f) {
      ASSERT_EQ(sparse.get(i), dense.get(i)) << i;
    }
  }
}

// With relu_on_load the activation is what a producer wrote before its ReLU: where the source has a zero, the
// negated magnitude of the dense value; elsewhere the magnitude. So max(0, x) gives back exactly the source's zeros.
TEST(Inputs, AnActivationLoadedThroughAReluIsNegativeWhereTheSourceIsZero) {
  for (Problem p : kShapes)
    for (SparsityPattern pattern : kPatterns)
      for (double fraction : {0.0, 0.5, 0.9, 1.0}) {
        const HostTensor source = activation(p, pattern, fraction, 7);
        const HostTensor dense = make_tensor(p, TensorRole::activation, DenseRandom{}, 7);
        p.relu_on_load = true;
        const HostTensor before_relu = activation(p, pattern, fraction, 7);
        EXPECT_EQ(zero_fraction(before_relu), 0.0);
        EXPECT_EQ(loaded_zero_fraction(p, before_relu), zero_fraction(source));
        for (std::int64_t i = 0; i < source.size(); ++i) {
          const float expected = source.get(i) == 0.0f ? -std::fabs(dense.get(i)) : std::fabs(source.get(i));
          ASSERT_EQ(before_relu.get(i), expected) << problem_key(p) << " " << i;
        }
        p.relu_on_load = false;
        EXPECT_EQ(loaded_zero_fraction(p, source), zero_fraction(source));
      }
}

TEST(Inputs, ChannelPatternZeroesWholeChannelsOnly) {
  for (const Problem& p : kShapes) {
    const HostTensor t = activation(p, SparsityPattern::channel, 0.5);
    std::vector<int> zeros(static_cast<std::size_t>(p.n) * p.c, 0);
    for_each_activation(p, t, [&](int n, int c, int, int, int, float v) {
      zeros[static_cast<std::size_t>(n) * p.c + c] += v == 0.0f;
    });
    const int plane = p.input.d * p.input.h * p.input.w;
    int zero_planes = 0;
    for (int z : zeros) {
      EXPECT_TRUE(z == 0 || z == plane) << problem_key(p) << ": a channel with " << z << " zeros of " << plane;
      zero_planes += z == plane;
    }
    EXPECT_EQ(zero_planes, std::lround(0.5 * p.n * p.c)) << problem_key(p);
  }
}

// The fraction of a zero's in-plane neighbours (h and w, 4-connected) that are zero too.
double zero_neighbour_fraction(const Problem& p, const HostTensor& t) {
  std::vector<float> values(static_cast<std::size_t>(t.size()));  // in N C D H W order whatever the layout
  for_each_activation(p, t, [&](int n, int c, int d, int h, int w, float v) {
    values[static_cast<std::size_t>((((std::int64_t{n} * p.c + c) * p.input.d + d) * p.input.h + h) * p.input.w +
                                    w)] = v;
  });
  const auto at = [&](int n, int c, int d, int h, int w) {
    return values[static_cast<std::size_t>((((std::int64_t{n} * p.c + c) * p.input.d + d) * p.input.h + h) *
                                               p.input.w + w)];
  };
  std::int64_t neighbours = 0, zero_neighbours = 0;
  for_each_activation(p, t, [&](int n, int c, int d, int h, int w, float v) {
    if (v != 0.0f) return;
    const int dh[] = {-1, 1, 0, 0}, dw[] = {0, 0, -1, 1};
    for (int i = 0; i < 4; ++i) {
      const int hh = h + dh[i], ww = w + dw[i];
      if (hh < 0 || hh >= p.input.h || ww < 0 || ww >= p.input.w) continue;
      ++neighbours;
      zero_neighbours += at(n, c, d, hh, ww) == 0.0f;
    }
  });
  return neighbours == 0 ? 0 : static_cast<double>(zero_neighbours) / static_cast<double>(neighbours);
}

TEST(Inputs, BlobZerosAreClusteredAndUniformZerosAreNot) {
  for (const Problem& p : {kShapes[0], kShapes[1], kShapes[2]})
    for (double fraction : {0.3, 0.5, 0.7}) {
      const double blob = zero_neighbour_fraction(p, activation(p, SparsityPattern::blob, fraction));
      const double uniform = zero_neighbour_fraction(p, activation(p, SparsityPattern::uniform, fraction));
      EXPECT_GT(blob, fraction + 0.5 * (1 - fraction)) << problem_key(p) << " at " << fraction;
      EXPECT_NEAR(uniform, fraction, 0.05) << problem_key(p) << " at " << fraction;
    }
}

TEST(Inputs, BlobZerosVaryByChannelThroughTheBias) {
  const Problem& p = kShapes[0];
  const HostTensor t = activation(p, SparsityPattern::blob, 0.5);
  std::vector<int> zeros(static_cast<std::size_t>(p.c), 0);
  for_each_activation(p, t, [&](int, int c, int, int, int, float v) { zeros[static_cast<std::size_t>(c)] += v == 0; });
  const auto [lo, hi] = std::minmax_element(zeros.begin(), zeros.end());
  EXPECT_GT(*hi - *lo, p.input.h * p.input.w / 2);  // some channels mostly zero, others mostly dense
}

TEST(Inputs, AreDeterministicPerSeed) {
  for (SparsityPattern pattern : kPatterns) {
    const Problem& p = kShapes[1];
    EXPECT_EQ(activation(p, pattern, 0.7, 3), activation(p, pattern, 0.7, 3));
    EXPECT_NE(activation(p, pattern, 0.7, 3), activation(p, pattern, 0.7, 4));
  }
  const ConvInputs inputs{.activation = SparseRandom{SparsityPattern::blob, 0.5}, .seed = 11};
  const InputTensors a = make_inputs(kShapes[1], inputs), b = make_inputs(kShapes[1], inputs);
  EXPECT_EQ(a.activation, b.activation);
  EXPECT_EQ(a.filter, b.filter);
  EXPECT_EQ(a.filter, make_tensor(kShapes[1], TensorRole::filter, DenseRandom{}, 11 ^ 0x9e3779b97f4a7c15ull));
}

TEST(Inputs, FilterPatternsZeroWholeFilterSlices) {
  const Problem& p = kShapes[0];
  const HostTensor t = make_tensor(p, TensorRole::filter, SparseRandom{SparsityPattern::channel, 0.25}, 1);
  EXPECT_NEAR(zero_fraction(t), 0.25, 1e-9);
  for (std::int64_t slice = 0; slice < std::int64_t{p.k} * p.c; ++slice) {
    int zeros = 0;
    for (int s = 0; s < 9; ++s) zeros += t.get(slice * 9 + s) == 0.0f;
    ASSERT_TRUE(zeros == 0 || zeros == 9) << slice;
  }
}

TEST(Inputs, GivenTensorIsUsedAsItIsInTheProblemsType) {
  Problem p = kShapes[0];
  auto pruned = std::make_shared<HostTensor>(DataType::fp32, filter_elements(p));
  for (std::int64_t i = 0; i < pruned->size(); i += 3) pruned->set(i, 0.25f);
  EXPECT_EQ(make_tensor(p, TensorRole::filter, GivenTensor{pruned}, 1), *pruned);
  p.precision = Precision::bf16;
  const HostTensor converted = make_tensor(p, TensorRole::filter, GivenTensor{pruned}, 1);
  EXPECT_EQ(converted.type(), DataType::bf16);
  EXPECT_EQ(converted.get(3), 0.25f);
  EXPECT_EQ(testing_support::input_error([&] { make_tensor(p, TensorRole::activation, GivenTensor{pruned}, 1); }),
            "the given activation has 36864 elements, expected 200704 for " + problem_key(p));
}

TEST(Inputs, RejectAZeroFractionOutsideTheUnitInterval) {
  EXPECT_EQ(testing_support::input_error([&] { activation(kShapes[0], SparsityPattern::uniform, 1.5); }),
            "zero fraction must be in [0, 1], got 1.5");
  EXPECT_EQ(testing_support::input_error([&] { activation(kShapes[0], SparsityPattern::blob, -0.1); }),
            "zero fraction must be in [0, 1], got -0.1");
}

TEST(DataIdentity, TellsGeneratorsParametersSeedsAndGivenDataApart) {
  const std::string dense = data_identity(DenseRandom{}, 1);
  EXPECT_EQ(dense.size(), 16u);
  EXPECT_EQ(dense, data_identity(DenseRandom{}, 1));
  EXPECT_NE(dense, data_identity(DenseRandom{}, 2));
  EXPECT_NE(data_identity(SparseRandom{SparsityPattern::blob, 0.5}, 1),
            data_identity(SparseRandom{SparsityPattern::blob, 0.7}, 1));
  EXPECT_NE(data_identity(SparseRandom{SparsityPattern::blob, 0.5}, 1),
            data_identity(SparseRandom{SparsityPattern::uniform, 0.5}, 1));
  auto a = std::make_shared<HostTensor>(DataType::fp32, 4);
  auto b = std::make_shared<HostTensor>(DataType::fp32, 4);
  EXPECT_EQ(data_identity(GivenTensor{a}, 1), data_identity(GivenTensor{b}, 2));  // the data, not the seed
  b->set(2, 1.0f);
  EXPECT_NE(data_identity(GivenTensor{a}, 1), data_identity(GivenTensor{b}, 1));
  EXPECT_NE(data_identity(ConvInputs{}), data_identity(ConvInputs{.filter = GivenTensor{a}}));
  const Problem& p = kShapes[0];
  EXPECT_EQ(data_key(p, dense), problem_key(p) + "_data" + dense);
}

TEST(DataIdentity, DescribesTheSource) {
  EXPECT_EQ(describe(DenseRandom{}), "dense random");
  EXPECT_EQ(describe(SparseRandom{SparsityPattern::blob, 0.7}), "blob sparse, 70% zeros");
  EXPECT_EQ(describe(GivenTensor{std::make_shared<HostTensor>(DataType::bf16, 1)}), "given bf16 tensor");
}

TEST(Inputs, ExpectedActivationFollowsTheProblemsSparsity) {
  Problem p{.n = 1, .c = 4, .k = 4, .input = {1, 8, 8}, .filter = {1, 3, 3}};
  EXPECT_EQ(expected_activation(p), TensorSource{DenseRandom{}});
  p.act_sparsity = 0.7;
  EXPECT_EQ(expected_activation(p), (TensorSource{SparseRandom{SparsityPattern::blob, 0.7}}));
  EXPECT_EQ(expected_activation(p, SparsityPattern::channel), (TensorSource{SparseRandom{SparsityPattern::channel, 0.7}}));
}

}  // namespace
}  // namespace convgen
