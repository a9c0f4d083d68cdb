// host_tensor_test: the typed host tensor, the half / bfloat16 conversions (round to nearest even, edge values), and
// the float64 reference and comparison reading every type.
#include "reference/host_tensor.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>

#include "reference/reference.hpp"

namespace convgen {
namespace {

TEST(HalfConversion, ExactValuesConvertBothWays) {
  EXPECT_EQ(float_to_half(1.0f), 0x3c00);
  EXPECT_EQ(float_to_half(-2.0f), 0xc000);
  EXPECT_EQ(float_to_half(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_half(0x1p-14f), 0x0400);  // smallest normal
  EXPECT_EQ(float_to_half(0x1p-24f), 0x0001);  // smallest subnormal
  EXPECT_EQ(float_to_half(-0.0f), 0x8000);
  for (std::uint32_t bits = 0; bits < 0x10000; ++bits) {
    const auto h = static_cast<std::uint16_t>(bits);
    const float f = half_to_float(h);
    if (std::isnan(f)) continue;
    EXPECT_EQ(float_to_half(f), h) << "half 0x" << std::hex << bits;
  }
}

TEST(HalfConversion, RoundsToNearestEven) {
  // 1 + 2^-11 lies halfway between 1 and 1 + 2^-10: ties go to the even mantissa (1).
  EXPECT_EQ(float_to_half(1.0f + 0x1p-11f), 0x3c00);
  // 1 + 3 x 2^-11 lies halfway between 1 + 2^-10 (odd) and 1 + 2^-9 (even).
  EXPECT_EQ(float_to_half(1.0f + 3 * 0x1p-11f), 0x3c02);
  EXPECT_EQ(float_to_half(1.0f + 0x1p-11f + 0x1p-20f), 0x3c01);  // above the tie
  EXPECT_EQ(float_to_half(0x1p-25f), 0x0000);                      // halfway to the smallest subnormal: even (0)
  EXPECT_EQ(float_to_half(0x1.8p-24f), 0x0002);                    // 1.5 subnormal steps: even (2)
  EXPECT_EQ(float_to_half(65519.0f), 0x7bff);
  EXPECT_EQ(float_to_half(65520.0f), 0x7c00);  // the tie above the largest half overflows
  EXPECT_EQ(float_to_half(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(float_to_half(-1e10f), 0xfc00);
  EXPECT_TRUE(std::isnan(half_to_float(float_to_half(std::numeric_limits<float>::quiet_NaN()))));
}

TEST(Bfloat16Conversion, RoundsToNearestEvenAndKeepsSpecials) {
  EXPECT_EQ(float_to_bfloat16(1.0f), 0x3f80);
  EXPECT_EQ(bfloat16_to_float(0x3f80), 1.0f);
  EXPECT_EQ(float_to_bfloat16(1.0f + 0x1p-8f), 0x3f80);              // tie: even
  EXPECT_EQ(float_to_bfloat16(1.0f + 3 * 0x1p-8f), 0x3f82);          // tie: even (up)
  EXPECT_EQ(float_to_bfloat16(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81);   // above the tie
  EXPECT_EQ(float_to_bfloat16(std::numeric_limits<float>::max()), 0x7f80);  // overflows to infinity
  EXPECT_EQ(float_to_bfloat16(-std::numeric_limits<float>::infinity()), 0xff80);
  EXPECT_TRUE(std::isnan(bfloat16_to_float(float_to_bfloat16(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_EQ(float_to_bfloat16(0x1p-130f), 0x0008);  // fp32 subnormals survive (same exponent range)
}

TEST(HostTensor, SizesComeFromTheElementType) {
  const Problem p{.n = 2, .c = 3, .k = 4, .input = {1, 5, 5}, .filter = {1, 3, 3}, .precision = Precision::fp16};
  const HostTensor a = HostTensor::for_problem(p, TensorRole::activation);
  EXPECT_EQ(a.type(), DataType::fp16);
  EXPECT_EQ(a.size(), 150);
  EXPECT_EQ(a.size_bytes(), 300u);
  EXPECT_EQ(tensor_bytes(p, TensorRole::output), 2 * 4 * 3 * 3 * 2);
  Problem tf32 = p;
  tf32.precision = Precision::tf32;
  EXPECT_EQ(HostTensor::for_problem(tf32, TensorRole::filter).type(), DataType::fp32);
  EXPECT_EQ(tensor_bytes(tf32, TensorRole::filter), 4 * 3 * 9 * 4);
}

TEST(HostTensor, SetRoundsToTheTypeAndConvertedRoundsAgain) {
  HostTensor t(DataType::bf16, 2);
  t.set(0, 1.0f + 0x1p-10f);
  EXPECT_EQ(t.get(0), 1.0f);
  t.set(1, -3.5f);
  const HostTensor f = t.converted(DataType::fp32);
  EXPECT_EQ(f.type(), DataType::fp32);
  EXPECT_EQ(f.get(1), -3.5f);
  EXPECT_EQ(f.converted(DataType::bf16), t);
}

TEST(HostTensor, RandomFillIsNeverZeroInAnyType) {
  for (DataType type : {DataType::fp32, DataType::fp16, DataType::bf16}) {
    HostTensor t(type, 100000);
    fill_random(t, 3);
    for (std::int64_t i = 0; i < t.size(); ++i) ASSERT_NE(t.get(i), 0.0f) << to_string(type) << " at " << i;
  }
}

TEST(ReferenceConv, ReadsEveryElementTypeAsItsValues) {
  const Problem fp32{.n = 1, .c = 4, .k = 3, .input = {1, 6, 6}, .filter = {1, 3, 3}, .padding = {0, 1, 1}};
  for (Precision precision : {Precision::fp16, Precision::bf16}) {
    Problem p = fp32;
    p.precision = precision;
    HostTensor a = HostTensor::for_problem(p, TensorRole::activation), w = HostTensor::for_problem(p, TensorRole::filter);
    fill_random(a, 1);
    fill_random(w, 2);
    // The same values as fp32 data give the same sums.
    const HostTensor a32 = a.converted(DataType::fp32), w32 = w.converted(DataType::fp32);
    EXPECT_EQ(reference_conv(p, a, w), reference_conv(fp32, a32, w32)) << to_string(precision);
    const std::vector<std::int64_t> at{0, 7, 100};
    EXPECT_EQ(reference_conv_at(p, a, w, at), reference_conv_at(fp32, a32, w32, at));
  }
}

TEST(Compare, ReadsATypedOutputAndNamesWhereTheErrorIs) {
  HostTensor out(DataType::fp16, 4);
  out.set(0, 1.0f);
  out.set(1, 2.0f);
  out.set(2, 3.5f);
  out.set(3, 4.0f);
  const ErrorStats s = compare(out, std::vector<double>{1, 2, 3, 4});
  EXPECT_EQ(s.max_abs, 0.5);
  EXPECT_EQ(s.max_abs_index, 2);
  EXPECT_EQ(s.first_nan_index, -1);
  out.set(1, std::numeric_limits<float>::quiet_NaN());
  const ErrorStats n = compare(out, std::vector<double>{1, 2, 3, 4});
  EXPECT_EQ(n.nan_count, 1);
  EXPECT_EQ(n.first_nan_index, 1);
  EXPECT_EQ(count_not_finite(out), 1);
}

TEST(Verification, LimitsFollowThePrecision) {
  EXPECT_EQ(error_limit(Precision::fp32), 1e-5);
  EXPECT_EQ(error_limit(Precision::tf32), 2e-3);
  EXPECT_EQ(error_limit(Precision::fp16), 1e-2);
  EXPECT_EQ(error_limit(Precision::bf16), 1e-2);
  EXPECT_TRUE(passes({.rel_l2 = 5e-3, .compared = 1}, Precision::fp16));
  EXPECT_FALSE(passes({.rel_l2 = 5e-3, .compared = 1}, Precision::tf32));
  EXPECT_FALSE(passes({.rel_l2 = 0, .nan_count = 1, .compared = 1}, Precision::bf16));
}

}  // namespace
}  // namespace convgen
