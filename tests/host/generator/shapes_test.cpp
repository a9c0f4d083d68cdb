// shapes_test: the shapes CSV format: defaults, per-dim fields, round trips and every kind of bad input.
#include "generator/shapes.hpp"

#include <gtest/gtest.h>

#include "support/errors.hpp"

#include "convgen/error.hpp"

namespace convgen {
namespace {

using testing_support::input_error;

// Returns the message parse_suite gives for `text` read as shapes/x.csv.
std::string parse_error(std::string_view text) {
  return input_error([&] { parse_suite(text, "shapes/x.csv"); });
}

constexpr std::string_view kHeader = "name,n,c,k,h,w,r,s\n";

TEST(Shapes, MinimalRowTakesTheDefaults) {
  const Suite suite = parse_suite("name,n,c,k,h,w,r,s\nconv,2,64,32,56,28,3,1\n", "shapes/net.csv");
  ASSERT_EQ(suite.layers.size(), 1u);
  EXPECT_EQ(suite.name, "net");
  const Problem expected{.n = 2, .c = 64, .k = 32, .input = {1, 56, 28}, .filter = {1, 3, 1}};
  EXPECT_EQ(suite.layers[0], (Layer{.name = "conv", .problem = expected, .count = 1}));
  EXPECT_EQ(suite.layers[0].problem.layout, Layout::nchw);
  EXPECT_EQ(suite.layers[0].problem.precision, Precision::fp32);
}

TEST(Shapes, ColumnsAreMatchedByNameInAnyOrder) {
  const Suite suite =
      parse_suite("count,s,r,w,h,k,c,n,name,precision,layout,groups\n4,3,3,14,14,32,16,1,a,fp16,nhwc,2\n", "a.csv");
  const Layer& layer = suite.layers.at(0);
  EXPECT_EQ(layer.count, 4);
  EXPECT_EQ(layer.problem, (Problem{.c = 16,
                                    .k = 32,
                                    .input = {1, 14, 14},
                                    .filter = {1, 3, 3},
                                    .groups = 2,
                                    .layout = Layout::nhwc,
                                    .precision = Precision::fp16}));
}

TEST(Shapes, CommentsBlankLinesAndCrlfAreSkippedButCountedForLineNumbers) {
  const std::string text =
      "# a comment\r\n\r\nname,n,c,k,h,w,r,s\r\n  # another\r\na,1,1,1,4,4,3,3\r\n\nb,1,1,1,2,2,3,3\n";
  const Suite first = parse_suite(text.substr(0, text.find("\nb,") + 1), "x.csv");
  EXPECT_EQ(first.layers.size(), 1u);
  EXPECT_EQ(parse_error(text), "shapes/x.csv:7: padding leaves no output: output is 1x0x0");
}

TEST(Shapes, ByteOrderMarkIsNotPartOfTheFirstColumn) {
  EXPECT_EQ(parse_suite("\xEF\xBB\xBFname,n,c,k,h,w,r,s\na,1,1,1,4,4,3,3\n", "x.csv").layers.at(0).name, "a");
}

TEST(Shapes, OneStrideValueAppliesToEverySpatialDimOfTheLayout) {
  const Suite suite = parse_suite(
      "name,n,c,k,d,h,w,t,r,s,stride,pad,dilation,layout\n"
      "flat,1,1,1,1,9,9,1,3,3,2,1,2,nchw\n"
      "deep,1,1,1,9,9,9,3,3,3,2,1,2,ncdhw\n"
      "line,1,1,1,1,1,9,1,1,3,2,1,2,ncw\n",
      "x.csv");
  EXPECT_EQ(suite.layers[0].problem.stride, (Dims3{1, 2, 2}));
  EXPECT_EQ(suite.layers[0].problem.padding, (Dims3{0, 1, 1}));
  EXPECT_EQ(suite.layers[0].problem.dilation, (Dims3{1, 2, 2}));
  EXPECT_EQ(suite.layers[1].problem.stride, (Dims3{2, 2, 2}));
  EXPECT_EQ(suite.layers[1].problem.padding, (Dims3{1, 1, 1}));
  EXPECT_EQ(suite.layers[2].problem.stride, (Dims3{1, 1, 2}));
  EXPECT_EQ(suite.layers[2].problem.padding, (Dims3{0, 0, 1}));
}

TEST(Shapes, PerDimFieldsGiveEachDimItsOwnValue) {
  const Suite suite = parse_suite(
      "name,n,c,k,d,h,w,t,r,s,stride,pad\n"
      "flat,1,1,1,1,12,16,1,1,3,1x2,0x1\n"
      "deep,1,1,1,5,7,6,1,3,3,1x2x1,0x1x1\n",
      "x.csv");
  EXPECT_EQ(suite.layers[0].problem.stride, (Dims3{1, 1, 2}));
  EXPECT_EQ(suite.layers[0].problem.padding, (Dims3{0, 0, 1}));
  EXPECT_EQ(suite.layers[1].problem.stride, (Dims3{1, 2, 1}));
  EXPECT_EQ(suite.layers[1].problem.padding, (Dims3{0, 1, 1}));
}

TEST(Shapes, DepthMakesTheDefaultLayoutNcdhw) {
  const Suite suite =
      parse_suite("name,n,c,k,d,h,w,t,r,s,pad\na,1,1,1,4,4,4,1,3,3,0\nb,1,1,1,1,4,4,3,3,3,1\n", "x.csv");
  EXPECT_EQ(suite.layers[0].problem.layout, Layout::ncdhw);
  EXPECT_EQ(suite.layers[1].problem.layout, Layout::ncdhw);
}

TEST(Shapes, WrittenCsvParsesBackEqual) {
  const Suite suite = parse_suite(
      "name,n,c,k,d,h,w,t,r,s,stride,pad,dilation,groups,layout,precision,count,act_sparsity\n"
      "a,2,16,32,1,12,16,1,3,3,1x2,1,2,4,nhwc,bf16,3,0.55\n"
      "b,1,4,8,9,9,9,3,3,3,2,1x0x1,1,1,ndhwc,tf32,1,0\n"
      "c,3,8,16,1,1,50,1,1,5,2,2,1,8,ncw,fp16,7,1\n",
      "shapes/mixed.csv");
  EXPECT_EQ(suite.layers[0].problem.act_sparsity, 0.55);
  const std::string csv = write_suite_csv(suite);
  EXPECT_EQ(csv,
            "name,n,c,k,d,h,w,t,r,s,stride,pad,dilation,groups,layout,precision,count,act_sparsity,input_relu,"
            "epilogue,relu_on_load\n"
            "a,2,16,32,1,12,16,1,3,3,1x2,1,2,4,nhwc,bf16,3,0.55,0,none,0\n"
            "b,1,4,8,9,9,9,3,3,3,2,1x0x1,1,1,ndhwc,tf32,1,0,0,none,0\n"
            "c,3,8,16,1,1,50,1,1,5,2,2,1,8,ncw,fp16,7,1,0,none,0\n");
  EXPECT_EQ(parse_suite(csv, "elsewhere/mixed.csv"), suite);
}

TEST(Shapes, NamesThatCannotBeReadBackAreNotWritten) {
  Suite suite{.name = "x", .layers = {Layer{.name = "a,b"}}};
  EXPECT_EQ(input_error([&] { write_suite_csv(suite); }),
            "layer name 'a,b' cannot be written to CSV: it must be non-empty, without commas, line breaks, a leading "
            "'#' or surrounding blanks");
  suite.layers[0].name = "#a";
  EXPECT_THROW(write_suite_csv(suite), InputError);
}

TEST(Shapes, WithBatchOverridesEveryLayer) {
  const Suite suite = parse_suite("name,n,c,k,h,w,r,s\na,1,1,1,4,4,3,3\nb,2,1,1,4,4,3,3\n", "x.csv");
  const Suite batched = with_batch(suite, 8);
  for (const Layer& layer : batched.layers) EXPECT_EQ(layer.problem.n, 8);
  EXPECT_EQ(batched.layers[1].name, "b");
  EXPECT_EQ(input_error([&] { with_batch(suite, 0); }), "batch override must be a positive integer, got 0");
}

TEST(Shapes, SuiteTotalsWeighEachLayerByItsCount) {
  const Suite suite = parse_suite("name,n,c,k,h,w,r,s,pad,count\na,1,2,3,4,4,3,3,1,5\nb,1,1,1,1,1,1,1,0,2\n", "x.csv");
  EXPECT_EQ(suite_conv_count(suite), 7);
  EXPECT_EQ(suite_flops(suite), 5 * (2 * 3 * 16 * 2 * 9) + 2 * 2);
}

TEST(Shapes, MissingFileIsReported) {
  EXPECT_EQ(input_error([] { load_suite("shapes/does_not_exist.csv"); }),
            "shapes/does_not_exist.csv: cannot open shapes file");
}

TEST(Shapes, EmptyFileIsRejected) {
  EXPECT_EQ(parse_error("# only a comment\n\n"), "shapes/x.csv: empty file, expected a header line naming the columns");
}

TEST(Shapes, HeaderWithoutRowsIsRejected) {
  EXPECT_EQ(parse_error("# net\nname,n,c,k,h,w,r,s\n"),
            "shapes/x.csv: no layers, expected rows after the header on line 2");
}

TEST(Shapes, MissingRequiredColumnIsRejected) {
  EXPECT_EQ(parse_error("name,n,c,k,h,w,s\na,1,1,1,4,4,3\n"), "shapes/x.csv:1: missing required column 'r'");
}

TEST(Shapes, ActSparsityMustBeAZeroFraction) {
  EXPECT_EQ(parse_error("name,n,c,k,h,w,r,s,act_sparsity\na,1,1,1,4,4,3,3,1.5\n"),
            "shapes/x.csv:2: column 'act_sparsity' must be a zero fraction in [0, 1], got '1.5'");
  EXPECT_EQ(parse_error("name,n,c,k,h,w,r,s,act_sparsity\na,1,1,1,4,4,3,3,half\n"),
            "shapes/x.csv:2: column 'act_sparsity' must be a zero fraction in [0, 1], got 'half'");
  EXPECT_EQ(parse_suite("name,n,c,k,h,w,r,s\na,1,1,1,4,4,3,3\n", "x.csv").layers[0].problem.act_sparsity, 0);
}

TEST(Shapes, UnknownColumnListsTheKnownOnes) {
  EXPECT_EQ(parse_error("name,n,c,k,h,w,r,s,strides\na,1,1,1,4,4,3,3,1\n"),
            "shapes/x.csv:1: unknown column 'strides', expected one of name, n, c, k, d, h, w, t, r, s, stride, pad, "
            "dilation, groups, layout, precision, count, act_sparsity, input_relu, epilogue, relu_on_load");
}

TEST(Shapes, InputReluAndEpilogueSayWhatSurroundsTheLayerAndRoundTrip) {
  const Suite suite = parse_suite(
      "name,n,c,k,h,w,r,s,input_relu,epilogue\n"
      "a,1,8,8,4,4,3,3,1,bias+add+relu\n"
      "b,1,8,8,4,4,3,3,0,none\n"
      "c,1,8,8,4,4,3,3,1,relu\n"
      "d,1,8,8,4,4,3,3,0,alpha:0.5+add:2+clip:-1:6\n",
      "shapes/x.csv");
  EXPECT_TRUE(suite.layers[0].input_relu);
  EXPECT_EQ(suite.layers[0].problem.epilogue, (Epilogue{.beta = 1, .bias = true, .act = Activation::relu}));
  EXPECT_FALSE(suite.layers[1].input_relu);
  EXPECT_TRUE(is_identity(suite.layers[1].problem.epilogue));
  EXPECT_EQ(suite.layers[2].problem.epilogue, Epilogue{.act = Activation::relu});
  EXPECT_EQ(suite.layers[3].problem.epilogue,
            (Epilogue{.alpha = 0.5, .beta = 2, .act = Activation::clip, .clip_lo = -1, .clip_hi = 6}));
  const Suite plain = parse_suite("name,n,c,k,h,w,r,s\na,1,8,8,4,4,3,3\n", "x.csv");
  EXPECT_FALSE(plain.layers[0].input_relu);
  EXPECT_TRUE(is_identity(plain.layers[0].problem.epilogue));
  const std::string csv = write_suite_csv(suite);
  EXPECT_NE(csv.find(",1,bias+add+relu,0\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",0,alpha:0.5+add:2+clip:-1:6,0\n"), std::string::npos) << csv;
  EXPECT_EQ(parse_suite(csv, "shapes/x.csv"), suite);
}

TEST(Shapes, ReluOnLoadAsksTheKernelToRectifyTheActivationAndRoundTrips) {
  const Suite suite = parse_suite(
      "name,n,c,k,h,w,r,s,act_sparsity,relu_on_load\n"
      "a,1,8,8,4,4,3,3,0.7,1\n"
      "b,1,8,8,4,4,3,3,0.7,0\n",
      "shapes/x.csv");
  EXPECT_TRUE(suite.layers[0].problem.relu_on_load);
  EXPECT_FALSE(suite.layers[1].problem.relu_on_load);
  EXPECT_EQ(merge_identical_layers(suite.layers).size(), 2u);  // a different problem, not a duplicate
  EXPECT_EQ(parse_suite(write_suite_csv(suite), "shapes/x.csv"), suite);
  EXPECT_EQ(parse_error("name,n,c,k,h,w,r,s,relu_on_load\na,1,1,1,4,4,3,3,true\n"),
            "shapes/x.csv:2: column 'relu_on_load' must be 0 or 1, got 'true'");
}

TEST(Shapes, BadInputReluOrEpilogueIsRejected) {
  EXPECT_EQ(parse_error("name,n,c,k,h,w,r,s,input_relu\na,1,1,1,4,4,3,3,yes\n"),
            "shapes/x.csv:2: column 'input_relu' must be 0 or 1, got 'yes'");
  EXPECT_EQ(parse_error("name,n,c,k,h,w,r,s,epilogue\na,1,1,1,4,4,3,3,bias+gelu\n"),
            "shapes/x.csv:2: column 'epilogue': unknown term 'gelu' in 'bias+gelu', expected 'none' or terms joined by "
            "'+': alpha:A, bias, add, add:B, relu, relu6, clip:LO:HI (the activation last)");
  EXPECT_EQ(parse_error("name,n,c,k,h,w,r,s,epilogue\na,1,1,1,4,4,3,3,clip:6:0\n"),
            "shapes/x.csv:2: column 'epilogue': 'clip:6:0': epilogue clip bounds must be in order (LO <= HI), got 6 "
            "and 0");
}

TEST(Shapes, IdenticalLayersMergeIntoTheFirstsRowWithTheirCountsAdded) {
  const Problem p{.c = 8, .k = 8, .input = {1, 4, 4}, .filter = {1, 3, 3}, .padding = {0, 1, 1}};
  Problem other = p;
  other.stride = {1, 2, 2};
  Problem relu = p;
  relu.epilogue.act = Activation::relu;
  const std::vector<Layer> merged = merge_identical_layers({
      {.name = "a", .problem = p},
      {.name = "b", .problem = other},
      {.name = "c", .problem = p, .count = 2},
      {.name = "d", .problem = p, .input_relu = true},
      {.name = "e", .problem = relu},
      {.name = "f", .problem = p, .input_relu = true},
  });
  EXPECT_EQ(merged, (std::vector<Layer>{{.name = "a", .problem = p, .count = 3},
                                        {.name = "b", .problem = other},
                                        {.name = "d", .problem = p, .count = 2, .input_relu = true},
                                        {.name = "e", .problem = relu}}));
}

TEST(Shapes, DuplicateLayerNamesAreRejectedNamingBothLines) {
  // Names are unique (shapes/README.md): they name generated folders, weight files and report rows.
  EXPECT_EQ(parse_error(std::string(kHeader) + "a,1,1,1,4,4,3,3\nb,1,1,1,4,4,3,3\n# c\na,1,2,2,4,4,3,3\n"),
            "shapes/x.csv:5: duplicate layer name 'a' (first on line 2)");
}

TEST(Shapes, SizesWhoseBytesOverflow64BitsAreRejected) {
  EXPECT_EQ(parse_error(std::string(kHeader) + "a,2000000000,2000000000,64,2000000000,2000000000,1,1\n"),
            "shapes/x.csv:2: problem is too large: its tensors' byte count does not fit 64 bits "
            "(2000000000x2000000000x1x2000000000x2000000000 input, 64 output channels)");
}

TEST(Shapes, DuplicateColumnIsRejected) {
  EXPECT_EQ(parse_error("name,n,c,k,h,w,r,s,c\na,1,1,1,4,4,3,3,1\n"), "shapes/x.csv:1: duplicate column 'c'");
}

TEST(Shapes, WrongFieldCountIsRejected) {
  EXPECT_EQ(parse_error(std::string(kHeader) + "a,1,1,1,4,4,3,3\nb,1,1,1,4,4,3\n"),
            "shapes/x.csv:3: expected 8 fields as in the header, got 7");
}

TEST(Shapes, NonNumberIsRejected) {
  EXPECT_EQ(parse_error(std::string(kHeader) + "a,1,64x,1,4,4,3,3\n"),
            "shapes/x.csv:2: column 'c' must be a positive integer, got '64x'");
}

TEST(Shapes, ZeroSizeIsRejected) {
  EXPECT_EQ(parse_error(std::string(kHeader) + "a,1,1,1,4,0,3,3\n"),
            "shapes/x.csv:2: column 'w' must be a positive integer, got '0'");
}

TEST(Shapes, ZeroStrideIsRejected) {
  EXPECT_EQ(parse_error("name,n,c,k,h,w,r,s,stride\na,1,1,1,4,4,3,3,0\n"),
            "shapes/x.csv:2: column 'stride' must be a positive integer or HxW (layout nchw is 2-D), got '0'");
}

TEST(Shapes, NegativeSizeAndPaddingAreRejected) {
  EXPECT_EQ(parse_error(std::string(kHeader) + "a,-1,1,1,4,4,3,3\n"),
            "shapes/x.csv:2: column 'n' must be a positive integer, got '-1'");
  EXPECT_EQ(parse_error("name,n,c,k,h,w,r,s,pad\na,1,1,1,4,4,3,3,-1\n"),
            "shapes/x.csv:2: column 'pad' must be a non-negative integer or HxW (layout nchw is 2-D), got '-1'");
}

TEST(Shapes, PaddingThatLeavesNoOutputIsRejected) {
  EXPECT_EQ(parse_error("name,n,c,k,h,w,r,s,pad\na,1,1,1,4,4,3,3,1\nb,1,1,1,2,3,5,5,1\n"),
            "shapes/x.csv:3: padding leaves no output: output is 1x0x1");
}

TEST(Shapes, ChannelsNotDivisibleByGroupsAreRejected) {
  EXPECT_EQ(parse_error("name,n,c,k,h,w,r,s,groups\na,1,6,8,4,4,3,3,4\n"),
            "shapes/x.csv:2: input channels 6 are not divisible by groups 4");
}

TEST(Shapes, UnknownLayoutListsTheChoices) {
  EXPECT_EQ(parse_error("name,n,c,k,h,w,r,s,layout\na,1,1,1,4,4,3,3,NCHW\n"),
            "shapes/x.csv:2: column 'layout' must be one of ncw, nwc, nchw, nhwc, ncdhw, ndhwc, got 'NCHW'");
}

TEST(Shapes, UnknownPrecisionListsTheChoices) {
  EXPECT_EQ(parse_error("name,n,c,k,h,w,r,s,precision\na,1,1,1,4,4,3,3,fp64\n"),
            "shapes/x.csv:2: column 'precision' must be one of fp32, tf32, fp16, bf16, got 'fp64'");
}

TEST(Shapes, StrideWithTheWrongNumberOfDimsIsRejected) {
  EXPECT_EQ(parse_error("name,n,c,k,h,w,r,s,stride\na,1,1,1,4,4,3,3,1x2x2\n"),
            "shapes/x.csv:2: column 'stride' must be a positive integer or HxW (layout nchw is 2-D), got '1x2x2'");
  EXPECT_EQ(parse_error("name,n,c,k,h,w,r,s,stride,layout\na,1,1,1,1,4,1,3,2x2,ncw\n"),
            "shapes/x.csv:2: column 'stride' must be a positive integer (layout ncw is 1-D), got '2x2'");
  EXPECT_EQ(parse_error("name,n,c,k,d,h,w,t,r,s,dilation\na,1,1,1,4,4,4,3,3,3,2x\n"),
            "shapes/x.csv:2: column 'dilation' must be a positive integer or DxHxW (layout ncdhw is 3-D), got '2x'");
}

TEST(Shapes, DepthInA2dLayoutIsRejected) {
  EXPECT_EQ(parse_error("name,n,c,k,d,h,w,r,s,layout\na,1,1,1,2,4,4,3,3,nhwc\n"),
            "shapes/x.csv:2: layout nhwc is 2-D: depth must have extent 1, stride 1, dilation 1 and padding 0");
}

TEST(Shapes, EmptyNameIsRejected) {
  EXPECT_EQ(parse_error(std::string(kHeader) + ",1,1,1,4,4,3,3\n"), "shapes/x.csv:2: column 'name' must not be empty");
}

}  // namespace
}  // namespace convgen
