// timing_test (host): the buffer-set count that defeats L2, the calls per sample, and the option errors.
#include "measure/timing.hpp"

#include <gtest/gtest.h>

#include "convgen/error.hpp"

namespace convgen {
namespace {

constexpr std::int64_t kMiB = std::int64_t{1} << 20;

template <class F>
std::string input_error_of(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "no InputError";
}

TEST(BufferSets, EnoughSetsToExceedTwiceTheL2) {
  EXPECT_EQ(buffer_sets_to_defeat_l2(10 * kMiB, 50 * kMiB), 11);
  EXPECT_EQ(buffer_sets_to_defeat_l2(25 * kMiB, 50 * kMiB), 5);  // 4 sets are exactly 2 x L2: not beyond it
  EXPECT_EQ(buffer_sets_to_defeat_l2(33 * kMiB, 50 * kMiB), 4);
}

TEST(BufferSets, TheRotationAlwaysExceedsTwiceTheL2BelowTheCap) {
  const std::int64_t l2 = 60 * kMiB;
  for (std::int64_t bytes = 512 * 1024; bytes <= 300 * kMiB; bytes = bytes * 3 / 2) {
    const int sets = buffer_sets_to_defeat_l2(bytes, l2);
    ASSERT_GE(sets, 1);
    ASSERT_LE(sets, kMaxBufferSets);
    if (sets < kMaxBufferSets) {
      EXPECT_GT(sets * bytes, 2 * l2) << bytes;
      EXPECT_LE((sets - 1) * bytes, 2 * l2) << bytes << ": one set fewer would do";
    }
  }
}

TEST(BufferSets, OneSetLargerThanTwiceTheL2IsEnough) { EXPECT_EQ(buffer_sets_to_defeat_l2(200 * kMiB, 50 * kMiB), 1); }

TEST(BufferSets, TinySetsAreCapped) { EXPECT_EQ(buffer_sets_to_defeat_l2(1024, 50 * kMiB), kMaxBufferSets); }

TEST(BufferSets, WarmUsesOneSet) { EXPECT_EQ(buffer_sets_to_defeat_l2(1024, 50 * kMiB, true), 1); }

TEST(BufferSets, SizesMustBePositive) {
  EXPECT_EQ(input_error_of([] { buffer_sets_to_defeat_l2(0, 50 * kMiB); }),
            "bytes per buffer set must be positive, got 0");
  EXPECT_EQ(input_error_of([] { buffer_sets_to_defeat_l2(1024, -1); }), "L2 size must be positive, got -1 bytes");
}

TEST(TimingOptions, TheDefaultsAreTheProtocolsMinimum) {
  const TimingOptions options;
  EXPECT_EQ(options.samples, kProtocolSamples);
  EXPECT_EQ(options.calls_per_sample, kProtocolCallsPerSample);
  EXPECT_TRUE(options.graph);
}

TEST(TimingOptions, CallsPerSampleRoundUpToAMultipleOfTheSets) {
  EXPECT_EQ(calls_per_sample({.calls_per_sample = 10, .buffer_sets = 1}), 10);
  EXPECT_EQ(calls_per_sample({.calls_per_sample = 10, .buffer_sets = 4}), 12);
  EXPECT_EQ(calls_per_sample({.calls_per_sample = 9, .buffer_sets = 3}), 9);
  EXPECT_EQ(calls_per_sample({.calls_per_sample = 10, .buffer_sets = 11}), 11);
}

TEST(TimingOptions, OptionsThatAreNotPositiveAreNamed) {
  EXPECT_EQ(input_error_of([] { check_timing_options({.samples = 0}); }),
            "timing option samples must be a positive integer, got 0");
  EXPECT_EQ(input_error_of([] { check_timing_options({.calls_per_sample = -2}); }),
            "timing option calls_per_sample must be a positive integer, got -2");
  EXPECT_EQ(input_error_of([] { check_timing_options({.buffer_sets = 0}); }),
            "timing option buffer_sets must be a positive integer, got 0");
  EXPECT_EQ(input_error_of([] { check_timing_options({.warmup_calls = -1}); }),
            "timing option warmup_calls must be 0 or more, got -1");
  EXPECT_NO_THROW(check_timing_options({.warmup_calls = 0}));
}

}  // namespace
}  // namespace convgen
