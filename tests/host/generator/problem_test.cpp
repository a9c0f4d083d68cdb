// problem_test: output sizes, FLOPs, validation reasons and the canonical key of a convolution problem.
#include "convgen/problem.hpp"

#include <gtest/gtest.h>

#include "support/errors.hpp"

#include "convgen/error.hpp"

namespace convgen {
namespace {

using testing_support::input_error;

Problem conv2d(int c, int k, int hw, int f, int stride, int pad) {
  return {.c = c,
          .k = k,
          .input = {1, hw, hw},
          .filter = {1, f, f},
          .stride = {1, stride, stride},
          .padding = {0, pad, pad}};
}

TEST(Problem, SamePaddingKeepsTheSpatialSize) {
  EXPECT_EQ(output_dims(conv2d(64, 64, 56, 3, 1, 1)), (Dims3{1, 56, 56}));
}

TEST(Problem, StrideTwoStemHalvesTheInput) {
  EXPECT_EQ(output_dims(conv2d(3, 64, 224, 7, 2, 3)), (Dims3{1, 112, 112}));
}

TEST(Problem, StrideRoundsDownOnOddInputs) {
  EXPECT_EQ(output_dims(conv2d(16, 32, 15, 3, 2, 1)), (Dims3{1, 8, 8}));
  EXPECT_EQ(output_dims(conv2d(16, 32, 15, 1, 2, 0)), (Dims3{1, 8, 8}));
}

TEST(Problem, DilationWidensTheFilterSpan) {
  Problem p = conv2d(16, 16, 10, 3, 1, 0);
  p.dilation = {1, 2, 2};
  EXPECT_EQ(output_dims(p), (Dims3{1, 6, 6}));  // span 5
  p.padding = {0, 2, 2};
  EXPECT_EQ(output_dims(p), (Dims3{1, 10, 10}));
}

TEST(Problem, PaddingLargerThanTheFilterGrowsTheOutput) {
  EXPECT_EQ(output_dims(conv2d(8, 8, 10, 3, 1, 3)), (Dims3{1, 14, 14}));
}

TEST(Problem, EachSpatialDimUsesItsOwnParameters) {
  const Problem p{.c = 4,
                  .k = 8,
                  .input = {9, 12, 16},
                  .filter = {3, 3, 1},
                  .stride = {2, 1, 2},
                  .padding = {1, 1, 0},
                  .dilation = {1, 2, 1},
                  .layout = Layout::ncdhw};
  EXPECT_EQ(output_dims(p), (Dims3{5, 10, 8}));
}

TEST(Problem, FilterLargerThanThePaddedInputLeavesNoOutput) {
  EXPECT_EQ(output_dims(conv2d(1, 1, 2, 5, 1, 1)), (Dims3{1, 0, 0}));
}

TEST(Problem, FlopsCountTwoPerMultiplyAdd) {
  EXPECT_EQ(flops(conv2d(64, 64, 56, 3, 1, 1)), std::int64_t{2} * 56 * 56 * 64 * 64 * 9);
  EXPECT_EQ(flops(conv2d(512, 512, 7, 3, 1, 1)), 231211008);
}

TEST(Problem, GroupsDivideTheFilterAndTheFlops) {
  Problem p = conv2d(32, 64, 14, 3, 1, 1);
  p.groups = 32;  // channel multiplier 2
  p.n = 2;
  EXPECT_EQ(filter_elements(p), 64 * 1 * 9);
  EXPECT_EQ(activation_elements(p), 2 * 32 * 14 * 14);
  EXPECT_EQ(output_elements(p), 2 * 64 * 14 * 14);
  EXPECT_EQ(flops(p), std::int64_t{2} * 2 * 64 * 14 * 14 * 9);
}

TEST(Problem, MinBytesCountEachTensorOnceAtItsElementSize) {
  Problem p = conv2d(64, 64, 56, 1, 1, 0);
  const std::int64_t elements = 64 * 56 * 56 + 64 * 64 + 64 * 56 * 56;
  EXPECT_EQ(min_bytes(p), elements * 4);
  p.precision = Precision::fp16;
  EXPECT_EQ(min_bytes(p), elements * 2);
}

TEST(Problem, KeyOfA2dProblemIsExact) {
  EXPECT_EQ(problem_key(conv2d(64, 64, 56, 3, 1, 1)), "n1_c64_k64_i1x56x56_f1x3x3_s1x1x1_p0x1x1_d1x1x1_g1_nchw_fp32");
}

TEST(Problem, KeysRoundTripIn1d2dAnd3d) {
  const Problem one_d{.n = 3,
                      .c = 8,
                      .k = 16,
                      .input = {1, 1, 50},
                      .filter = {1, 1, 5},
                      .stride = {1, 1, 2},
                      .padding = {0, 0, 2},
                      .dilation = {1, 1, 2},
                      .layout = Layout::nwc,
                      .precision = Precision::bf16};
  Problem two_d = conv2d(32, 64, 15, 3, 2, 1);
  two_d.groups = 4;
  two_d.layout = Layout::nhwc;
  two_d.precision = Precision::tf32;
  const Problem three_d{.n = 2,
                        .c = 4,
                        .k = 8,
                        .input = {9, 10, 11},
                        .filter = {3, 3, 3},
                        .stride = {2, 2, 2},
                        .padding = {1, 1, 1},
                        .layout = Layout::ndhwc,
                        .precision = Precision::fp16};
  for (const Problem& p : {one_d, two_d, three_d}) EXPECT_EQ(parse_problem_key(problem_key(p)), p) << problem_key(p);
}

TEST(Problem, KeyWithTooFewFieldsIsRejected) {
  EXPECT_EQ(input_error([] { parse_problem_key("n1_c64_k64"); }),
            "problem key 'n1_c64_k64': expected 11 to 13 fields separated by '_', got 3");
}

TEST(Problem, KeyCarriesTheSparsityBucketOnlyWhenNotZero) {
  Problem p{.n = 1, .c = 64, .k = 64, .input = {1, 56, 56}, .filter = {1, 3, 3}, .padding = {0, 1, 1}};
  EXPECT_EQ(problem_key(p), "n1_c64_k64_i1x56x56_f1x3x3_s1x1x1_p0x1x1_d1x1x1_g1_nchw_fp32");
  p.act_sparsity = 0.02;  // rounds to bucket 0: the dense key
  EXPECT_EQ(act_sparsity_bucket(p), 0);
  EXPECT_EQ(problem_key(p), "n1_c64_k64_i1x56x56_f1x3x3_s1x1x1_p0x1x1_d1x1x1_g1_nchw_fp32");
  p.act_sparsity = 0.52;
  EXPECT_EQ(act_sparsity_bucket(p), 50);
  EXPECT_EQ(problem_key(p), "n1_c64_k64_i1x56x56_f1x3x3_s1x1x1_p0x1x1_d1x1x1_g1_nchw_fp32_z50");
  p.act_sparsity = 0.97;
  EXPECT_EQ(problem_key(p), "n1_c64_k64_i1x56x56_f1x3x3_s1x1x1_p0x1x1_d1x1x1_g1_nchw_fp32_z95");
  const Problem back = parse_problem_key(problem_key(p));
  EXPECT_EQ(back.act_sparsity, 0.95);
  EXPECT_EQ(problem_key(back), problem_key(p));
  EXPECT_EQ(
      input_error([] { parse_problem_key("n1_c6_k64_i1x5x5_f1x3x3_s1x1x1_p0x1x1_d1x1x1_g1_nchw_fp32_z52"); }),
      "problem key 'n1_c6_k64_i1x5x5_f1x3x3_s1x1x1_p0x1x1_d1x1x1_g1_nchw_fp32_z52': sparsity bucket 'z52' must be "
      "a multiple of 5 in 5..100");
  p.act_sparsity = 1.5;
  EXPECT_EQ(validate(p), "act_sparsity must be a zero fraction in [0, 1], got 1.5");
}

TEST(Problem, KeyWithAWrongPrefixIsRejected) {
  EXPECT_EQ(input_error([] { parse_problem_key("n1_x64_k64_i1x5x5_f1x3x3_s1x1x1_p0x1x1_d1x1x1_g1_nchw_fp32"); }),
            "problem key 'n1_x64_k64_i1x5x5_f1x3x3_s1x1x1_p0x1x1_d1x1x1_g1_nchw_fp32': field 2 must start with 'c', "
            "got 'x64'");
}

TEST(Problem, KeyWithANonNumberIsRejected) {
  EXPECT_EQ(input_error([] { parse_problem_key("n1_c6a_k64_i1x5x5_f1x3x3_s1x1x1_p0x1x1_d1x1x1_g1_nchw_fp32"); }),
            "problem key 'n1_c6a_k64_i1x5x5_f1x3x3_s1x1x1_p0x1x1_d1x1x1_g1_nchw_fp32': expected an integer, got '6a'");
}

TEST(Problem, KeyWithTwoExtentsIsRejected) {
  EXPECT_EQ(input_error([] { parse_problem_key("n1_c6_k64_i5x5_f1x3x3_s1x1x1_p0x1x1_d1x1x1_g1_nchw_fp32"); }),
            "problem key 'n1_c6_k64_i5x5_f1x3x3_s1x1x1_p0x1x1_d1x1x1_g1_nchw_fp32': expected three extents DxHxW, "
            "got '5x5'");
}

TEST(Problem, KeyWithAnUnknownLayoutListsTheChoices) {
  EXPECT_EQ(input_error([] { parse_problem_key("n1_c6_k64_i1x5x5_f1x3x3_s1x1x1_p0x1x1_d1x1x1_g1_nhcw_fp32"); }),
            "problem key 'n1_c6_k64_i1x5x5_f1x3x3_s1x1x1_p0x1x1_d1x1x1_g1_nhcw_fp32': unknown layout 'nhcw', expected "
            "one of ncw, nwc, nchw, nhwc, ncdhw, ndhwc");
}

TEST(Problem, KeyWithAnUnknownPrecisionListsTheChoices) {
  EXPECT_EQ(input_error([] { parse_problem_key("n1_c6_k64_i1x5x5_f1x3x3_s1x1x1_p0x1x1_d1x1x1_g1_nchw_fp64"); }),
            "problem key 'n1_c6_k64_i1x5x5_f1x3x3_s1x1x1_p0x1x1_d1x1x1_g1_nchw_fp64': unknown precision 'fp64', "
            "expected one of fp32, tf32, fp16, bf16");
}

TEST(Problem, WellFormedProblemsValidate) {
  EXPECT_EQ(validate(conv2d(64, 64, 56, 3, 1, 1)), "");
  EXPECT_EQ(validate(Problem{.input = {1, 1, 7}, .filter = {1, 1, 3}, .layout = Layout::ncw}), "");
  EXPECT_EQ(validate(Problem{.input = {4, 4, 4}, .filter = {3, 3, 3}, .layout = Layout::ncdhw}), "");
}

TEST(Problem, ValidateNamesTheFirstBadField) {
  Problem p = conv2d(64, 64, 56, 3, 1, 1);
  p.n = 0;
  EXPECT_EQ(validate(p), "batch must be positive, got 0");
  p = conv2d(6, 8, 8, 3, 1, 1);
  p.groups = 4;
  EXPECT_EQ(validate(p), "input channels 6 are not divisible by groups 4");
  p = conv2d(8, 6, 8, 3, 1, 1);
  p.groups = 4;
  EXPECT_EQ(validate(p), "output channels 6 are not divisible by groups 4");
  p = conv2d(8, 8, 8, 3, 1, 1);
  p.padding.w = -1;
  EXPECT_EQ(validate(p), "padding width must not be negative, got -1");
  p = conv2d(8, 8, 8, 3, 0, 1);
  EXPECT_EQ(validate(p), "stride height must be positive, got 0");
}

TEST(Problem, ValidateRejectsDepthInA2dLayout) {
  Problem p = conv2d(8, 8, 8, 3, 1, 1);
  p.input.d = 2;
  EXPECT_EQ(validate(p), "layout nchw is 2-D: depth must have extent 1, stride 1, dilation 1 and padding 0");
}

TEST(Problem, ValidateRejectsHeightInA1dLayout) {
  const Problem p{.input = {1, 3, 7}, .filter = {1, 1, 3}, .layout = Layout::nwc};
  EXPECT_EQ(validate(p), "layout nwc is 1-D: height must have extent 1, stride 1, dilation 1 and padding 0");
}

TEST(Problem, ValidateRejectsAProblemWithNoOutput) {
  EXPECT_EQ(validate(conv2d(1, 1, 2, 5, 1, 1)), "padding leaves no output: output is 1x0x0");
}

TEST(Problem, ValidateRefusesAnOutputExtentPastAnInt) {
  // 2^31 - 1 + 2 * 2^30 would wrap in int arithmetic; counted in 64 bits it is refused by name.
  const Problem p{
      .input = {1, 1, 2147483647}, .filter = {1, 1, 1}, .padding = {0, 0, 1073741824}, .layout = Layout::ncw};
  EXPECT_EQ(validate(p), "output width is 4294967295, more than the largest extent, 2147483647");
}

TEST(Problem, ValidateRefusesAProblemWhoseByteCountOverflows64Bits) {
  // 2e9 x 2e9 x 2e9 x 2e9 elements: the product wraps in 64 bits; before, flops() and min_bytes() returned garbage.
  const Problem p{.n = 2000000000, .c = 2000000000, .k = 64, .input = {1, 2000000000, 2000000000}};
  EXPECT_EQ(validate(p),
            "problem is too large: its tensors' byte count does not fit 64 bits (2000000000x2000000000x1x2000000000x"
            "2000000000 input, 64 output channels)");
}

TEST(Problem, ValidateRefusesAProblemWhoseFlopCountOverflows64Bits) {
  // 2^30 pixels x 2^16 channels in and out: every tensor's bytes fit (2^48 each), 2 x 2^30 x 2^16 x 2^16 FLOPs do not.
  const Problem p{.c = 65536, .k = 65536, .input = {1, 32768, 32768}, .filter = {1, 1, 1}};
  EXPECT_EQ(validate(p),
            "problem is too large: its FLOP count does not fit 64 bits (1x65536x1x32768x32768 input, 65536 output "
            "channels, 1x1x1 filter)");
}

TEST(Problem, ALayerPast2To31ElementsIsValidAndCountedIn64Bits) {
  const Problem p{.n = 32, .c = 64, .k = 64, .input = {1, 1040, 1040}, .filter = {1, 3, 3}, .padding = {0, 1, 1}};
  EXPECT_EQ(validate(p), "");
  EXPECT_EQ(activation_elements(p), 2215116800);
  EXPECT_EQ(min_bytes(p), 2 * 2215116800LL * 4 + 64 * 64 * 9 * 4);
}

TEST(Problem, AKeyOfAnInvalidProblemIsRejected) {
  // Keys are read back from databases and manifests: a key whose problem divides by zero groups is refused.
  EXPECT_EQ(input_error([] { parse_problem_key("n1_c64_k64_i1x56x56_f1x3x3_s1x1x1_p0x1x1_d1x1x1_g0_nchw_fp32"); }),
            "problem key 'n1_c64_k64_i1x56x56_f1x3x3_s1x1x1_p0x1x1_d1x1x1_g0_nchw_fp32': groups must be "
            "positive, got 0");
}

TEST(Problem, DescribeShowsChannelsFilterAndSizes) {
  EXPECT_EQ(describe(conv2d(64, 64, 56, 3, 1, 1)), "64->64 3x3 s1 p1 at 56x56 -> 56x56, n1");
}

}  // namespace
}  // namespace convgen
