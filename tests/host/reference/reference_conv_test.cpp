// reference_conv_test: the CPU reference on hand-computed cases, across layouts, and against an explicit im2col GEMM.
#include "reference/reference.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "convgen/error.hpp"
#include "reference/host_tensor.hpp"

namespace convgen {
namespace {

using Values = std::vector<double>;

Values run(const Problem& p, const std::vector<float>& activation, const std::vector<float>& filter) {
  return reference_conv(p, activation, filter);
}

std::vector<float> random_data(std::int64_t size, std::uint64_t seed) {
  std::vector<float> data(static_cast<std::size_t>(size));
  fill_random(data, seed);
  return data;
}

void expect_near_all(const Values& actual, const Values& expected, double tolerance = 1e-12) {
  ASSERT_EQ(actual.size(), expected.size());
  for (std::size_t i = 0; i < actual.size(); ++i) EXPECT_NEAR(actual[i], expected[i], tolerance) << "at " << i;
}

TEST(ReferenceConv, OneByOneSumsWeightedChannels) {
  const Problem p{.c = 2, .k = 1, .input = {1, 2, 2}};
  EXPECT_EQ(run(p, {1, 2, 3, 4, 5, 6, 7, 8}, {2, -1}), (Values{-3, -2, -1, 0}));
}

TEST(ReferenceConv, ThreeByThreeWithPaddingSumsTheNeighbourhood) {
  const Problem p{.input = {1, 3, 3}, .filter = {1, 3, 3}, .padding = {0, 1, 1}};
  EXPECT_EQ(run(p, {1, 2, 3, 4, 5, 6, 7, 8, 9}, std::vector<float>(9, 1.0f)),
            (Values{12, 21, 16, 27, 45, 33, 24, 39, 28}));
}

TEST(ReferenceConv, ReluOnLoadConvolvesTheRectifiedActivation) {
  Problem p{.c = 2, .k = 1, .input = {1, 2, 2}};
  p.relu_on_load = true;
  EXPECT_EQ(run(p, {1, -2, 3, -4, -5, 6, 0, 8}, {2, -1}), (Values{2, -6, 6, -8}));
  // The same as the plain problem on max(0, x), in every layout and with groups, padding and stride.
  for (Layout layout : {Layout::nchw, Layout::nhwc}) {
    Problem q{.n = 2,
              .c = 8,
              .k = 6,
              .input = {1, 7, 6},
              .filter = {1, 3, 3},
              .stride = {1, 2, 1},
              .padding = {0, 1, 1},
              .groups = 2,
              .layout = layout};
    const std::vector<float> x = random_data(activation_elements(q), 3), w = random_data(filter_elements(q), 4);
    std::vector<float> rectified = x;
    for (float& v : rectified) v = std::max(v, 0.0f);
    const Values plain = run(q, rectified, w);
    q.relu_on_load = true;
    expect_near_all(run(q, x, w), plain, 0);
  }
}

TEST(ReferenceConv, IsCrossCorrelationNotFlippedConvolution) {
  // Only the top-left tap is set: output (p, q) reads input (p - 1, q - 1) under padding 1.
  const Problem p{.input = {1, 3, 3}, .filter = {1, 3, 3}, .padding = {0, 1, 1}};
  EXPECT_EQ(run(p, {1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 0, 0, 0, 0, 0, 0, 0, 0}), (Values{0, 0, 0, 0, 1, 2, 0, 4, 5}));
}

TEST(ReferenceConv, StrideTwoSkipsEveryOtherPosition) {
  // Input value 5h + w; a 3x3 box at (2p, 2q) sums to 90p + 18q + 54.
  const Problem p{.input = {1, 5, 5}, .filter = {1, 3, 3}, .stride = {1, 2, 2}};
  std::vector<float> activation(25);
  for (int i = 0; i < 25; ++i) activation[i] = static_cast<float>(i);
  EXPECT_EQ(run(p, activation, std::vector<float>(9, 1.0f)), (Values{54, 72, 144, 162}));
}

TEST(ReferenceConv, DilationTwoSpreadsTheTaps) {
  const Problem p{.input = {1, 1, 5}, .filter = {1, 1, 2}, .dilation = {1, 1, 2}, .layout = Layout::ncw};
  EXPECT_EQ(run(p, {1, 2, 3, 4, 5}, {1, 10}), (Values{31, 42, 53}));
}

TEST(ReferenceConv, OneDimensionalWithStrideAndPadding) {
  const Problem p{
      .input = {1, 1, 4}, .filter = {1, 1, 3}, .stride = {1, 1, 2}, .padding = {0, 0, 1}, .layout = Layout::ncw};
  EXPECT_EQ(run(p, {1, 2, 3, 4}, {1, 2, 3}), (Values{8, 20}));
}

TEST(ReferenceConv, GroupsReadOnlyTheirOwnChannels) {
  // Groups of 2 input and 2 output channels: k0, k1 read c0, c1; k2, k3 read c2, c3.
  const Problem p{.c = 4, .k = 4, .groups = 2};
  EXPECT_EQ(run(p, {1, 2, 3, 4}, {1, 10, 2, 20, 100, 1000, 3, 30}), (Values{21, 42, 4300, 129}));
}

TEST(ReferenceConv, DepthwiseFiltersEachChannelAlone) {
  const Problem p{.c = 2, .k = 2, .input = {1, 2, 2}, .filter = {1, 2, 2}, .groups = 2};
  EXPECT_EQ(run(p, {1, 1, 1, 1, 5, 6, 7, 8}, {1, 2, 3, 4, -1, 0, 0, 1}), (Values{10, 3}));
}

TEST(ReferenceConv, DepthwiseWithMultiplierGivesEachChannelTwoOutputs) {
  const Problem p{.c = 2, .k = 4, .groups = 2};
  EXPECT_EQ(run(p, {3, 5}, {1, 2, 10, 20}), (Values{3, 6, 50, 100}));
}

TEST(ReferenceConv, ThreeDimensionalWithDepthPadding) {
  // Filter taps 1 and 100 along depth, padding 1: o reads input depth o - 1 (weight 1) and o (weight 100).
  const Problem p{.input = {2, 2, 2}, .filter = {2, 1, 1}, .padding = {1, 0, 0}, .layout = Layout::ncdhw};
  EXPECT_EQ(run(p, {1, 2, 3, 4, 5, 6, 7, 8}, {1, 100}), (Values{100, 200, 300, 400, 501, 602, 703, 804, 5, 6, 7, 8}));
}

TEST(ReferenceConv, ChannelsLastKeepsChannelsInnermost) {
  // Activation (w, c) = (0, 0) 1, (0, 1) 5, (1, 0) 2, (1, 1) 6; output channels innermost too.
  const Problem p{.c = 2, .k = 2, .input = {1, 1, 2}, .layout = Layout::nhwc};
  EXPECT_EQ(run(p, {1, 5, 2, 6}, {2, -1, 0, 1}), (Values{-3, 5, -2, 6}));
}

// Permutes (outer, channels, spatial) data from channels-first to channels-last; the same map serves the
// activation (N, C, DHW), the filter (K, C/g, TRS) and the output (N, K, OPQ).
template <class T>
std::vector<T> to_channels_last(const std::vector<T>& data, std::int64_t outer, std::int64_t channels) {
  const std::int64_t spatial = static_cast<std::int64_t>(data.size()) / (outer * channels);
  std::vector<T> out(data.size());
  for (std::int64_t n = 0; n < outer; ++n)
    for (std::int64_t ch = 0; ch < channels; ++ch)
      for (std::int64_t x = 0; x < spatial; ++x)
        out[(n * spatial + x) * channels + ch] = data[(n * channels + ch) * spatial + x];
  return out;
}

void expect_layouts_agree(Problem first, Layout last) {
  const auto activation = random_data(activation_elements(first), 1);
  const auto filter = random_data(filter_elements(first), 2);
  const Values expected = to_channels_last(reference_conv(first, activation, filter), first.n, first.k);
  Problem p = first;
  p.layout = last;
  expect_near_all(
      reference_conv(p, to_channels_last(activation, p.n, p.c), to_channels_last(filter, p.k, c_per_group(p))),
      expected);
}

TEST(ReferenceConv, NchwAndNhwcGiveTheSameOutputsPermuted) {
  expect_layouts_agree({.n = 2,
                        .c = 6,
                        .k = 4,
                        .input = {1, 7, 6},
                        .filter = {1, 3, 2},
                        .stride = {1, 2, 1},
                        .padding = {0, 1, 2},
                        .dilation = {1, 1, 2},
                        .groups = 2,
                        .layout = Layout::nchw},
                       Layout::nhwc);
}

TEST(ReferenceConv, NcdhwAndNdhwcGiveTheSameOutputsPermuted) {
  expect_layouts_agree({.n = 2,
                        .c = 3,
                        .k = 3,
                        .input = {4, 5, 3},
                        .filter = {2, 3, 2},
                        .stride = {2, 1, 1},
                        .padding = {1, 1, 0},
                        .dilation = {1, 2, 1},
                        .groups = 3,
                        .layout = Layout::ncdhw},
                       Layout::ndhwc);
}

TEST(ReferenceConv, NcwAndNwcGiveTheSameOutputsPermuted) {
  expect_layouts_agree({.n = 3,
                        .c = 4,
                        .k = 2,
                        .input = {1, 1, 9},
                        .filter = {1, 1, 3},
                        .stride = {1, 1, 2},
                        .padding = {0, 0, 1},
                        .layout = Layout::ncw},
                       Layout::nwc);
}

// The convolution as one GEMM per (image, group): filter rows (Kg x Cg*T*R*S) times the im2col matrix
// (Cg*T*R*S x O*P*Q), written independently of the reference's own index arithmetic. Channels-first layouts.
Values im2col_conv(const Problem& p, const std::vector<float>& activation, const std::vector<float>& filter) {
  const Dims3 out = output_dims(p);
  const int cg = c_per_group(p), kg = k_per_group(p);
  const int taps = p.filter.d * p.filter.h * p.filter.w;
  const int rows = cg * taps, columns = out.d * out.h * out.w;
  const int in_spatial = p.input.d * p.input.h * p.input.w;
  Values result(static_cast<std::size_t>(output_elements(p)));
  for (int n = 0; n < p.n; ++n) {
    for (int g = 0; g < p.groups; ++g) {
      std::vector<double> columns_matrix(static_cast<std::size_t>(rows) * columns, 0.0);
      for (int row = 0; row < rows; ++row) {
        const int c = row / taps, tap = row % taps;
        const int t = tap / (p.filter.h * p.filter.w), r = tap / p.filter.w % p.filter.h, s = tap % p.filter.w;
        for (int col = 0; col < columns; ++col) {
          const int o = col / (out.h * out.w), y = col / out.w % out.h, x = col % out.w;
          const int d = o * p.stride.d - p.padding.d + t * p.dilation.d;
          const int h = y * p.stride.h - p.padding.h + r * p.dilation.h;
          const int w = x * p.stride.w - p.padding.w + s * p.dilation.w;
          if (d < 0 || d >= p.input.d || h < 0 || h >= p.input.h || w < 0 || w >= p.input.w) continue;
          const int channel = g * cg + c;
          columns_matrix[static_cast<std::size_t>(row) * columns + col] =
              activation[(static_cast<std::size_t>(n) * p.c + channel) * in_spatial + (d * p.input.h + h) * p.input.w +
                         w];
        }
      }
      for (int kk = 0; kk < kg; ++kk) {
        const int k = g * kg + kk;
        for (int col = 0; col < columns; ++col) {
          double sum = 0;
          for (int row = 0; row < rows; ++row)
            sum += double{filter[static_cast<std::size_t>(k) * rows + row]} *
                   columns_matrix[static_cast<std::size_t>(row) * columns + col];
          result[(static_cast<std::size_t>(n) * p.k + k) * columns + col] = sum;
        }
      }
    }
  }
  return result;
}

void expect_matches_im2col(const Problem& p) {
  const auto activation = random_data(activation_elements(p), 3);
  const auto filter = random_data(filter_elements(p), 4);
  expect_near_all(reference_conv(p, activation, filter), im2col_conv(p, activation, filter));
}

TEST(ReferenceConv, MatchesIm2colGemmOnGroupedStridedDilatedPadded2d) {
  expect_matches_im2col({.n = 2,
                         .c = 4,
                         .k = 6,
                         .input = {1, 7, 6},
                         .filter = {1, 3, 2},
                         .stride = {1, 2, 1},
                         .padding = {0, 1, 2},
                         .dilation = {1, 2, 1},
                         .groups = 2});
}

TEST(ReferenceConv, MatchesIm2colGemmOn3d) {
  expect_matches_im2col({.n = 1,
                         .c = 3,
                         .k = 2,
                         .input = {4, 5, 3},
                         .filter = {2, 3, 2},
                         .stride = {1, 2, 1},
                         .padding = {1, 1, 0},
                         .dilation = {2, 1, 1},
                         .layout = Layout::ncdhw});
}

TEST(ReferenceConv, AtSelectedIndicesAgreesWithTheWholeOutput) {
  for (Layout layout : {Layout::nchw, Layout::nhwc}) {
    const Problem p{.n = 2,
                    .c = 4,
                    .k = 6,
                    .input = {1, 9, 8},
                    .filter = {1, 3, 3},
                    .stride = {1, 2, 2},
                    .padding = {0, 1, 1},
                    .groups = 2,
                    .layout = layout};
    const auto activation = random_data(activation_elements(p), 5);
    const auto filter = random_data(filter_elements(p), 6);
    const Values whole = reference_conv(p, activation, filter);
    const std::vector<std::int64_t> indices = sample_output_indices(p, 50, 7);
    const Values at = reference_conv_at(p, activation, filter, indices);
    ASSERT_EQ(at.size(), indices.size());
    for (std::size_t i = 0; i < indices.size(); ++i) EXPECT_EQ(at[i], whole[indices[i]]) << "index " << indices[i];
  }
}

TEST(ReferenceConv, ActivationOfTheWrongSizeIsRejected) {
  const Problem p{.c = 3, .k = 2, .input = {1, 2, 2}};
  try {
    reference_conv(p, std::vector<float>(10), std::vector<float>(6));
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_STREQ(
        e.what(),
        "activation has 10 elements, expected 12 for n1_c3_k2_i1x2x2_f1x1x1_s1x1x1_p0x0x0_d1x1x1_g1_nchw_fp32");
  }
}

TEST(ReferenceConv, FilterOfTheWrongSizeIsRejected) {
  const Problem p{.c = 3, .k = 2, .input = {1, 2, 2}};
  try {
    reference_conv_at(p, std::vector<float>(12), std::vector<float>(5), std::vector<std::int64_t>{0});
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(),
                 "filter has 5 elements, expected 6 for n1_c3_k2_i1x2x2_f1x1x1_s1x1x1_p0x0x0_d1x1x1_g1_nchw_fp32");
  }
}

TEST(ReferenceConv, InvalidProblemIsRejectedWithItsReason) {
  const Problem p{.c = 3, .k = 2, .groups = 2};
  try {
    reference_conv(p, std::vector<float>(3), std::vector<float>(2));
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(),
                 "invalid problem n1_c3_k2_i1x1x1_f1x1x1_s1x1x1_p0x0x0_d1x1x1_g2_nchw_fp32: "
                 "input channels 3 are not divisible by groups 2");
  }
}

TEST(ReferenceConv, OutputIndexOutOfRangeIsRejected) {
  const Problem p{.k = 2};
  try {
    reference_conv_at(p, std::vector<float>(1), std::vector<float>(2), std::vector<std::int64_t>{2});
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(),
                 "output index 2 is out of range [0, 2) for n1_c1_k2_i1x1x1_f1x1x1_s1x1x1_p0x0x0_d1x1x1_g1_nchw_fp32");
  }
}

// The epilogue on hand-computed values: channel k of each output gets its bias, the residual at the same index, the
// scales and the activation, in both layouts (the channel of an index is the layout's).
TEST(ApplyEpilogue, ScalesAddsTheBiasOfEachChannelAndTheResidualThenActivates) {
  Problem p{.n = 1, .c = 1, .k = 2, .input = {1, 1, 2}, .layout = Layout::nchw};  // outputs k0q0 k0q1 k1q0 k1q1
  const HostTensor bias = HostTensor::from_floats(DataType::fp32, std::vector<float>{1, -5});
  const HostTensor residual = HostTensor::from_floats(DataType::fp32, std::vector<float>{1, 2, 3, 4});
  p.epilogue = parse_epilogue("alpha:2+bias+add:0.5+relu");
  Values values = {1, -3, 4, 2};
  // It returns the norm before the activation: of (3.5, -4, 4.5, 1).
  EXPECT_DOUBLE_EQ(apply_epilogue(p, values, {}, bias, residual), std::sqrt(3.5 * 3.5 + 16 + 4.5 * 4.5 + 1));
  EXPECT_EQ(values, (Values{3.5, 0, 4.5, 1}));  // 2*1 + 0.5*1 + 1, relu(-6 + 1 + 1), 8 + 1.5 - 5, 4 + 2 - 5
  p.layout = Layout::nwc;                       // outputs q0k0 q0k1 q1k0 q1k1
  p.epilogue = parse_epilogue("bias+clip:-1:2");
  values = {1, -3, 4, 2};
  apply_epilogue(p, values, {}, bias, residual);
  EXPECT_EQ(values, (Values{2, -1, 2, -1}));  // clip(1 + 1), clip(-3 - 5), clip(4 + 1), clip(2 - 5)
  // At sampled indices: values[i] belongs to output indices[i].
  p.epilogue = parse_epilogue("add+relu6");
  values = {5, -0.5};
  const std::vector<std::int64_t> indices = {3, 0};
  apply_epilogue(p, values, indices, bias, residual);
  EXPECT_EQ(values, (Values{6, 0.5}));  // min(5 + 4, 6), -0.5 + 1
  EXPECT_EQ(output_channel(p, 3), 1);
}

TEST(ApplyEpilogue, TheIdentityLeavesTheValuesAndNeedsNoTensors) {
  const Problem p{.c = 1, .k = 2, .input = {1, 1, 2}};
  Values values = {1, -3, 4, 2};
  EXPECT_DOUBLE_EQ(apply_epilogue(p, values, {}, HostTensor{}, HostTensor{}), std::sqrt(30.0));
  EXPECT_EQ(values, (Values{1, -3, 4, 2}));
}

TEST(ApplyEpilogue, AMissingBiasOrResidualIsRefusedNamingItsExpectedSize) {
  Problem p{.c = 1, .k = 2, .input = {1, 1, 2}};
  p.epilogue = parse_epilogue("bias+add");
  Values values = {1, -3, 4, 2};
  const HostTensor residual = HostTensor::from_floats(DataType::fp32, std::vector<float>{1, 2, 3, 4});
  try {
    apply_epilogue(p, values, {}, HostTensor{}, residual);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "the epilogue's bias has 0 elements, expected 2 (K) for " + problem_key(p));
  }
  try {
    apply_epilogue(p, values, {}, HostTensor::from_floats(DataType::fp32, std::vector<float>{1, 2}), HostTensor{});
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "the epilogue's residual has 0 elements, expected 4 (the output's) for " + problem_key(p));
  }
}

}  // namespace
}  // namespace convgen
