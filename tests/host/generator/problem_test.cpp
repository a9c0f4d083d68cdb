// problem_test: output sizes, FLOPs, validation reasons and the canonical key of a convolution problem.
#include "convgen/problem.hpp"

#include <limits>

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
            "problem key 'n1_c64_k64': expected 11 to 15 fields separated by '_', got 3");
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

TEST(Problem, TheDefaultEpilogueIsTheIdentityAndLeavesTheKeyAlone) {
  const Problem p{.c = 64, .k = 64, .input = {1, 56, 56}, .filter = {1, 3, 3}, .padding = {0, 1, 1}};
  EXPECT_TRUE(is_identity(p.epilogue));
  EXPECT_FALSE(reads_residual(p.epilogue));
  EXPECT_EQ(to_string(p.epilogue), "none");
  EXPECT_EQ(problem_key(p), "n1_c64_k64_i1x56x56_f1x3x3_s1x1x1_p0x1x1_d1x1x1_g1_nchw_fp32");
}

TEST(Problem, EpilogueTextReadsTheShapesColumnsOldValues) {
  EXPECT_EQ(parse_epilogue("none"), Epilogue{});
  EXPECT_EQ(parse_epilogue("bias"), (Epilogue{.bias = true}));
  EXPECT_EQ(parse_epilogue("bias+relu"), (Epilogue{.bias = true, .act = Activation::relu}));
  EXPECT_EQ(parse_epilogue("bias+add+relu"), (Epilogue{.beta = 1, .bias = true, .act = Activation::relu}));
  EXPECT_EQ(parse_epilogue("add"), (Epilogue{.beta = 1}));
}

TEST(Problem, EpilogueTextCarriesScalesAndEveryActivation) {
  EXPECT_EQ(parse_epilogue("alpha:0.5+add:-2+bias+relu6"),
            (Epilogue{.alpha = 0.5, .beta = -2, .bias = true, .act = Activation::relu6}));
  EXPECT_EQ(parse_epilogue("clip:-1.5:3"), (Epilogue{.act = Activation::clip, .clip_lo = -1.5, .clip_hi = 3}));
  // The canonical text orders the terms alpha, bias, add, activation.
  EXPECT_EQ(to_string(parse_epilogue("add:0.25+bias+alpha:3")), "alpha:3+bias+add:0.25");
  // A positive exponent is written without its '+', which joins terms.
  EXPECT_EQ(to_string(Epilogue{.alpha = 1e20}), "alpha:1e20");
  for (const Epilogue& e :
       {Epilogue{.alpha = 0.1, .beta = 1e-7, .act = Activation::relu},
        Epilogue{.beta = 1, .bias = true, .act = Activation::clip, .clip_lo = -6, .clip_hi = 0.3},
        Epilogue{.bias = true, .act = Activation::relu6}, Epilogue{.alpha = 1e20, .beta = -2.5e-30}})
    EXPECT_EQ(parse_epilogue(to_string(e)), e) << to_string(e);
}

TEST(Problem, BadEpilogueTextNamesTheTermAndTheExpectedOnes) {
  const std::string expected =
      "expected 'none' or terms joined by '+': alpha:A, bias, add, add:B, relu, relu6, clip:LO:HI (the activation "
      "last)";
  EXPECT_EQ(input_error([] { parse_epilogue("bias+gelu"); }), "unknown term 'gelu' in 'bias+gelu', " + expected);
  EXPECT_EQ(input_error([] { parse_epilogue("relu+bias"); }),
            "term 'bias' follows the activation in 'relu+bias', " + expected);
  EXPECT_EQ(input_error([] { parse_epilogue("add:x"); }),
            "term 'add:x' needs a finite number, got 'x' in 'add:x', " + expected);
  EXPECT_EQ(input_error([] { parse_epilogue("clip:1"); }), "term 'clip:1' takes 2 numbers in 'clip:1', " + expected);
  EXPECT_EQ(input_error([] { parse_epilogue("bias+bias"); }), "bias given twice in 'bias+bias', " + expected);
  EXPECT_EQ(input_error([] { parse_epilogue("alpha:inf"); }),
            "term 'alpha:inf' needs a finite number, got 'inf' in 'alpha:inf', " + expected);
  EXPECT_EQ(input_error([] { parse_epilogue("clip:6:0"); }),
            "'clip:6:0': epilogue clip bounds must be in order (LO <= HI), got 6 and 0");
}

TEST(Problem, KeyCarriesANonIdentityEpilogueLastAndReadsItBack) {
  Problem p{.c = 64, .k = 64, .input = {1, 56, 56}, .filter = {1, 3, 3}, .padding = {0, 1, 1}, .act_sparsity = 0.5};
  p.weights.pattern = "0123456789abcdef";
  p.epilogue = {.alpha = 0.5, .beta = 1, .bias = true, .act = Activation::clip, .clip_lo = -1, .clip_hi = 6};
  EXPECT_EQ(problem_key(p),
            "n1_c64_k64_i1x56x56_f1x3x3_s1x1x1_p0x1x1_d1x1x1_g1_nchw_fp32_z50_w0123456789abcdef_ealpha:0.5+bias+add+"
            "clip:-1:6");
  EXPECT_EQ(parse_problem_key(problem_key(p)), p);
  p.weights = {};
  p.act_sparsity = 0;
  p.epilogue = {.bias = true, .act = Activation::relu};
  EXPECT_EQ(problem_key(p), "n1_c64_k64_i1x56x56_f1x3x3_s1x1x1_p0x1x1_d1x1x1_g1_nchw_fp32_ebias+relu");
  EXPECT_EQ(parse_problem_key(problem_key(p)), p);
  EXPECT_EQ(describe(p), "64->64 3x3 s1 p1 at 56x56 -> 56x56, n1, epilogue bias+relu");
}

TEST(Problem, KeyWithABadOrNonCanonicalEpilogueIsRejected) {
  const std::string base = "n1_c8_k8_i1x5x5_f1x3x3_s1x1x1_p0x1x1_d1x1x1_g1_nchw_fp32";
  EXPECT_EQ(input_error([&] { parse_problem_key(base + "_ebias+gelu"); }),
            "problem key '" + base +
                "_ebias+gelu': epilogue unknown term 'gelu' in 'bias+gelu', expected 'none' or terms joined by '+': "
                "alpha:A, bias, add, add:B, relu, relu6, clip:LO:HI (the activation last)");
  EXPECT_EQ(input_error([&] { parse_problem_key(base + "_erelu6+bias"); }),
            "problem key '" + base +
                "_erelu6+bias': epilogue term 'bias' follows the activation in 'relu6+bias', expected 'none' or terms "
                "joined by '+': alpha:A, bias, add, add:B, relu, relu6, clip:LO:HI (the activation last)");
  EXPECT_EQ(input_error([&] { parse_problem_key(base + "_eadd+bias"); }),
            "problem key '" + base + "_eadd+bias': epilogue 'add+bias' is not in its canonical form 'bias+add'");
  EXPECT_EQ(input_error([&] { parse_problem_key(base + "_enone"); }),
            "problem key '" + base + "_enone': epilogue 'none' is not in its canonical form '(no field)'");
  EXPECT_EQ(input_error([&] { parse_problem_key(base + "_ebias_z50"); }),
            "problem key '" + base +
                "_ebias_z50': unexpected field 'z50' after the precision (expected z<bucket>, relu, w<pattern> "
                "then e<epilogue>)");
}

TEST(Problem, KeyCarriesReluOnLoadAfterTheSparsityAndReadsItBack) {
  Problem p{.c = 64, .k = 64, .input = {1, 56, 56}, .filter = {1, 3, 3}, .padding = {0, 1, 1}};
  p.relu_on_load = true;
  EXPECT_EQ(problem_key(p), "n1_c64_k64_i1x56x56_f1x3x3_s1x1x1_p0x1x1_d1x1x1_g1_nchw_fp32_relu");
  EXPECT_EQ(parse_problem_key(problem_key(p)), p);
  EXPECT_EQ(describe(p), "64->64 3x3 s1 p1 at 56x56 -> 56x56, n1, max(0, x) on load");
  p.act_sparsity = 0.5;
  p.weights.pattern = "0123456789abcdef";
  p.epilogue = {.bias = true, .act = Activation::relu};
  EXPECT_EQ(problem_key(p),
            "n1_c64_k64_i1x56x56_f1x3x3_s1x1x1_p0x1x1_d1x1x1_g1_nchw_fp32_z50_relu_w0123456789abcdef_ebias+relu");
  EXPECT_EQ(parse_problem_key(problem_key(p)), p);
  Problem plain = p;
  plain.relu_on_load = false;
  EXPECT_NE(problem_key(plain), problem_key(p));
  EXPECT_FALSE(plain == p);
  // Out of its place, it is an unexpected field.
  EXPECT_EQ(
      input_error([] { parse_problem_key("n1_c8_k8_i1x5x5_f1x3x3_s1x1x1_p0x1x1_d1x1x1_g1_nchw_fp32_ebias_relu"); }),
      "problem key 'n1_c8_k8_i1x5x5_f1x3x3_s1x1x1_p0x1x1_d1x1x1_g1_nchw_fp32_ebias_relu': unexpected field 'relu' "
      "after the precision (expected z<bucket>, relu, w<pattern> then e<epilogue>)");
}

TEST(Problem, ValidateRefusesAMalformedEpilogue) {
  Problem p{.c = 8, .k = 8, .input = {1, 5, 5}, .filter = {1, 3, 3}};
  p.epilogue = {.act = Activation::relu, .clip_lo = 0, .clip_hi = 6};
  EXPECT_EQ(validate(p), "epilogue clip bounds are for the clip activation, got 0 and 6 with relu");
  p.epilogue = {.alpha = std::numeric_limits<double>::quiet_NaN()};
  EXPECT_EQ(validate(p), "epilogue alpha must be finite, got nan");
  p.epilogue = {.act = Activation::clip, .clip_lo = 1, .clip_hi = -1};
  EXPECT_EQ(validate(p), "epilogue clip bounds must be in order (LO <= HI), got 1 and -1");
}

TEST(Problem, MinBytesCountTheEpiloguesBiasAndResidualWhereItReadsThem) {
  Problem p{
      .c = 8, .k = 4, .input = {1, 6, 6}, .filter = {1, 3, 3}, .padding = {0, 1, 1}, .precision = Precision::fp16};
  const std::int64_t tensors = 8 * 36 + 4 * 8 * 9 + 4 * 36;
  EXPECT_EQ(min_bytes(p), tensors * 2);
  p.epilogue = parse_epilogue("bias+relu");
  EXPECT_EQ(min_bytes(p), (tensors + 4) * 2);
  p.epilogue = parse_epilogue("bias+add+relu");
  EXPECT_EQ(min_bytes(p), (tensors + 4 + 4 * 36) * 2);
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
