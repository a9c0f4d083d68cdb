// kernel_spec_test: canonical kernel names round-trip and bad names are rejected with their reason.
#include "generator/kernel_spec.hpp"

#include <gtest/gtest.h>

#include "convgen/error.hpp"

namespace convgen {
namespace {

TEST(KernelSpec, NameEncodesEveryFieldAndParsesBack) {
  const KernelSpec spec{.family = FamilyKind::direct, .block_m = 16, .block_n = 128, .block_k = 4,
                        .thread_m = 2, .thread_n = 8, .stages = 1, .split_k = 3, .vector = 4};
  EXPECT_EQ(kernel_name(spec), "direct_m16_n128_k4_tm2_tn8_st1_sk3_v4");
  EXPECT_EQ(parse_kernel_name(kernel_name(spec)), spec);
}

TEST(KernelSpec, DefaultSpecRoundTrips) {
  EXPECT_EQ(parse_kernel_name(kernel_name(KernelSpec{})), KernelSpec{});
}

TEST(KernelSpec, UnknownFamilyIsRejected) {
  try {
    parse_kernel_name("winograd_m1");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "kernel name 'winograd_m1': unknown family, expected one of direct, igemm");
  }
}

TEST(KernelSpec, MissingFieldIsRejected) {
  try {
    parse_kernel_name("igemm_m64_n64");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "kernel name 'igemm_m64_n64': expected field '_k<number>' at ''");
  }
}

TEST(KernelSpec, ZeroFieldIsRejected) {
  EXPECT_THROW(parse_kernel_name("igemm_m0_n64_k8_tm4_tn4_st2_sk1_v1"), InputError);
}

TEST(KernelSpec, TrailingTextIsRejected) {
  EXPECT_THROW(parse_kernel_name("igemm_m64_n64_k8_tm4_tn4_st2_sk1_v1_x"), InputError);
}

}  // namespace
}  // namespace convgen
