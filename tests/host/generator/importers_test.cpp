// importers_test: SEER config lists and the sparse seed's B,C,H,W,N tables read as suites, and their errors.
#include "generator/importers.hpp"

#include <gtest/gtest.h>

#include "support/errors.hpp"

#include "convgen/error.hpp"

namespace convgen {
namespace {

using testing_support::input_error;

std::string seer_error(std::string_view text) {
  return input_error([&] { import_seer_list(text, "seer/Test-set-II.txt"); });
}

std::string bchwn_error(std::string_view text) {
  return input_error([&] { import_bchwn_list(text, "layers/v100.csv"); });
}

TEST(SeerList, ReadsTheReadmeExample) {
  const Suite suite = import_seer_list(
      "# first line is the number of configs\n3\t\t\n"
      "# batch_size, in_channel, in_wid, out_channel, out_wid, kernel_wid, stride, padding\n"
      "128 16 128 16 128 3 1 1\n128 16 128 16 128 3 1 1 \n32 3 224 64 112 7 2 3\n",
      "seer/Test-set-II.txt");
  EXPECT_EQ(suite.name, "Test-set-II");
  ASSERT_EQ(suite.layers.size(), 3u);
  EXPECT_EQ(
      suite.layers[0],
      (Layer{
          .name = "config_1",
          .problem = {.n = 128, .c = 16, .k = 16, .input = {1, 128, 128}, .filter = {1, 3, 3}, .padding = {0, 1, 1}}}));
  EXPECT_EQ(suite.layers[1].name, "config_2");
  EXPECT_EQ(suite.layers[2].problem, (Problem{.n = 32,
                                              .c = 3,
                                              .k = 64,
                                              .input = {1, 224, 224},
                                              .filter = {1, 7, 7},
                                              .stride = {1, 2, 2},
                                              .padding = {0, 3, 3}}));
}

TEST(SeerList, EmptyFileIsRejected) {
  EXPECT_EQ(seer_error("\n# nothing\n"), "seer/Test-set-II.txt: empty file, expected the number of configs");
}

TEST(SeerList, CountThatIsNotANumberIsRejected) {
  EXPECT_EQ(seer_error("three\n1 1 4 1 4 3 1 1\n"),
            "seer/Test-set-II.txt:1: expected the number of configs, a positive integer, got 'three'");
}

TEST(SeerList, CountThatDisagreesWithTheLinesIsRejected) {
  EXPECT_EQ(seer_error("3\n1 1 4 1 4 3 1 1\n1 1 4 1 4 3 1 1\n"),
            "seer/Test-set-II.txt:1: the file says 3 configs but 2 follow");
}

TEST(SeerList, WrongFieldCountIsRejected) {
  EXPECT_EQ(seer_error("2\n1 1 4 1 4 3 1 1\n1 1 4 1 4 3 1\n"),
            "seer/Test-set-II.txt:3: expected 8 fields 'batch in_c in_w out_c out_w k stride pad', got 7");
}

TEST(SeerList, NonNumberNamesTheField) {
  EXPECT_EQ(seer_error("1\n1 1 4 1 4 3 1 x\n"),
            "seer/Test-set-II.txt:2: field 'pad' must be a non-negative integer, got 'x'");
  EXPECT_EQ(seer_error("1\n1 0 4 1 4 3 1 1\n"),
            "seer/Test-set-II.txt:2: field 'in_c' must be a positive integer, got '0'");
}

TEST(SeerList, OutputWidthMustFollowFromTheOtherFields) {
  EXPECT_EQ(seer_error("1\n1 16 56 16 56 3 2 1\n"),
            "seer/Test-set-II.txt:2: out_w 56 does not follow from in_w 56, k 3, stride 2, pad 1, which give 28");
}

TEST(SeerList, FilterLargerThanThePaddedInputIsRejected) {
  EXPECT_EQ(seer_error("1\n1 16 2 16 1 5 1 0\n"), "seer/Test-set-II.txt:2: padding leaves no output: output is 1x0x0");
}

TEST(BchwnList, ReadsRowsAndIgnoresTimings) {
  const Suite suite = import_bchwn_list(
      "B, C, H, W, N, t1, t2, t3, t4\n1, 128, 56, 56, 32, 40.6, 41.0, 50.2, 12.5\n8,512,7,7,512,68.9,70,71,20\n",
      "layers/v100.csv");
  EXPECT_EQ(suite.name, "v100");
  ASSERT_EQ(suite.layers.size(), 2u);
  EXPECT_EQ(suite.layers[0], (Layer{.name = "layer_1",
                                    .problem = {.c = 128,
                                                .k = 32,
                                                .input = {1, 56, 56},
                                                .filter = {1, 3, 3},
                                                .padding = {0, 1, 1},
                                                .layout = Layout::nhwc}}));
  EXPECT_EQ(suite.layers[1].name, "layer_2");
  EXPECT_EQ(suite.layers[1].problem.n, 8);
  EXPECT_EQ(suite.layers[1].problem.c, 512);
}

TEST(BchwnList, HeaderWithoutTimingsIsAccepted) {
  EXPECT_EQ(import_bchwn_list("B,C,H,W,N\n1,64,28,14,64\n", "a.csv").layers.at(0).problem.input, (Dims3{1, 28, 14}));
}

TEST(BchwnList, EmptyFileIsRejected) {
  EXPECT_EQ(bchwn_error(""), "layers/v100.csv: empty file, expected a header B,C,H,W,N");
}

TEST(BchwnList, OtherHeaderIsRejected) {
  EXPECT_EQ(bchwn_error("B,C,W,H,N\n1,1,1,1,1\n"),
            "layers/v100.csv:1: expected a header B,C,H,W,N followed by timing columns t1..tn, got 'B,C,W,H,N'");
  EXPECT_EQ(bchwn_error("B,C,H,W,N,time\n1,1,1,1,1,2\n"),
            "layers/v100.csv:1: expected a header B,C,H,W,N followed by timing columns t1..tn, got 'B,C,H,W,N,time'");
  EXPECT_EQ(bchwn_error("B,C,H,W\n1,1,1,1\n"),
            "layers/v100.csv:1: expected a header B,C,H,W,N followed by timing columns t1..tn, got 'B,C,H,W'");
}

TEST(BchwnList, HeaderWithoutRowsIsRejected) {
  EXPECT_EQ(bchwn_error("B,C,H,W,N,t1\n"), "layers/v100.csv: no layers, expected rows after the header on line 1");
}

TEST(BchwnList, WrongFieldCountIsRejected) {
  EXPECT_EQ(bchwn_error("B,C,H,W,N,t1\n1,128,56,56,32\n"),
            "layers/v100.csv:2: expected 6 fields as in the header, got 5");
}

TEST(BchwnList, NonNumberAndZeroAreRejected) {
  EXPECT_EQ(bchwn_error("B,C,H,W,N\n1,128,56,5.6,32\n"),
            "layers/v100.csv:2: field 'W' must be a positive integer, got '5.6'");
  EXPECT_EQ(bchwn_error("B,C,H,W,N\n0,128,56,56,32\n"),
            "layers/v100.csv:2: field 'B' must be a positive integer, got '0'");
}

}  // namespace
}  // namespace convgen
