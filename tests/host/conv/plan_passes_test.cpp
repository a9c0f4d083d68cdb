// plan_passes_test: the plan passes' launch shapes, the relu pass's entry per precision, and the zero step's switch
// (CONVGEN_ZERO_STEP), on the host.
#include <gtest/gtest.h>

#include "conv/plan_passes.hpp"
#include "convgen/error.hpp"

namespace convgen {
namespace {

TEST(ZeroPass, OneBlockForAFewBytesAndOneThreadPerSixteenBytesAfter) {
  EXPECT_EQ(zero_pass_config(1, false).grid[0], 1u);
  EXPECT_EQ(zero_pass_config(16 * 256, false).grid[0], 1u);
  EXPECT_EQ(zero_pass_config(16 * 256 + 16, false).grid[0], 2u);
  EXPECT_EQ(zero_pass_config(16 * 256 * 3, true).grid[0], 3u);
  EXPECT_EQ(zero_pass_config(std::int64_t{1} << 34, false).grid[0], 1024u);  // then a grid-stride loop
  EXPECT_EQ(zero_pass_config(100, false).block[0], 256u);
  EXPECT_TRUE(zero_pass_config(100, true).early);
  EXPECT_FALSE(zero_pass_config(100, false).early);
}

TEST(ReluPass, SixteenBytesAThreadAndAnEntryByElementWidth) {
  EXPECT_EQ(relu_pass_config(16 * 256 + 4, false).grid[0], 1u);  // the loose tail elements by the same threads
  EXPECT_EQ(relu_pass_config(16 * 256 * 2 + 4, false).grid[0], 2u);
  EXPECT_EQ(relu_pass_config(std::int64_t{1} << 34, true).grid[0], 1024u);
  EXPECT_TRUE(relu_pass_config(100, true).early);
  EXPECT_STREQ(relu_pass_entry(Precision::fp32), kReluPass32Entry);
  EXPECT_STREQ(relu_pass_entry(Precision::tf32), kReluPass32Entry);
  EXPECT_STREQ(relu_pass_entry(Precision::fp16), kReluPass16Entry);
  EXPECT_STREQ(relu_pass_entry(Precision::bf16), kReluPass16Entry);
}

TEST(ZeroPass, TheSwitchTakesKernelOrMemsetAndNamesItselfOtherwise) {
  EXPECT_TRUE(parse_zero_step(nullptr));
  EXPECT_TRUE(parse_zero_step(""));
  EXPECT_TRUE(parse_zero_step("kernel"));
  EXPECT_FALSE(parse_zero_step("memset"));
  try {
    parse_zero_step("memcpy");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "CONVGEN_ZERO_STEP: expected 'kernel' or 'memset', got 'memcpy'");
  }
}

}  // namespace
}  // namespace convgen
