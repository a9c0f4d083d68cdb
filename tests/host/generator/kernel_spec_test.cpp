// kernel_spec_test: canonical kernel names round-trip through each family's declared parameters, and bad names are
// rejected with their reason.
#include "generator/kernel_spec.hpp"

#include <gtest/gtest.h>

#include "act_sparse_params.hpp"
#include "convgen/error.hpp"
#include "direct_params.hpp"
#include "generator/family.hpp"
#include "igemm_params.hpp"

namespace convgen {
namespace {

std::string input_error(std::string_view name) {
  try {
    parse_kernel_name(name);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST(KernelSpec, NameEncodesEveryParameterInTheTemplatesOrderAndParsesBack) {
  const KernelSpec spec = to_spec(IgemmParams{.block_m = 16, .block_n = 128, .block_k = 4, .thread_m = 2,
                                              .thread_n = 8, .stages = 1, .split_k = 3, .vector = 4});
  EXPECT_EQ(spec.family, "igemm");
  EXPECT_EQ(spec.values, (std::vector<int>{16, 128, 4, 2, 8, 1, 3, 4}));
  EXPECT_EQ(kernel_name(spec), "igemm_m16_n128_k4_tm2_tn8_st1_sk3_v4");
  EXPECT_EQ(parse_kernel_name(kernel_name(spec)), spec);
  EXPECT_EQ(params_of<IgemmParams>(spec).split_k, 3);
}

TEST(KernelSpec, EveryFamilysDefaultParametersRoundTrip) {
  for (const Family* f : all_families()) {
    KernelSpec spec{.family = std::string(f->name()), .values = {}};
    for (const ParamDecl& p : f->interface().params) spec.values.push_back(p.default_value);
    EXPECT_EQ(parse_kernel_name(kernel_name(spec)), spec) << f->name();
  }
  EXPECT_EQ(kernel_name(IgemmParams{}), "igemm_m64_n64_k8_tm4_tn4_st2_sk1_v1");
}

TEST(KernelSpec, TheTypedParametersOfAnotherFamilyAreRefused) {
  EXPECT_THROW(params_of<DirectParams>(to_spec(IgemmParams{})), InputError);
}

TEST(KernelSpec, FamilyNameOfTakesTheRegisteredFamilyThatPrefixesTheName) {
  EXPECT_EQ(family_name_of("igemm_m64_n64_k8_tm4_tn4_st2_sk1_v1"), "igemm");
  EXPECT_EQ(family_name_of("direct"), "direct");
  EXPECT_EQ(family_name_of("igemmx_m1"), "");
  EXPECT_EQ(family_name_of("fft_m1"), "");
}

TEST(KernelSpec, UnknownFamilyIsRejected) {
  EXPECT_EQ(input_error("fft_m1"), "kernel name 'fft_m1': unknown family, expected one of " + family_names());
}

TEST(KernelSpec, MissingFieldIsRejected) {
  EXPECT_EQ(input_error("igemm_m64_n64"), "kernel name 'igemm_m64_n64': expected field '_k<number>' at ''");
}

TEST(KernelSpec, ANameWrittenBeforeAParameterWasAddedTakesItsDefault) {
  // act_sparse's lb (load_batch), bs (block_staged) and cr (cluster_reduce) came later; their defaults, one channel
  // loaded ahead by each warp on its own and split channels added with atomics, are what those kernels did.
  const KernelSpec old = parse_kernel_name("act_sparse_th1_tw2_tk1_wp16_sc1_dm0_sm3_ur0_relu0");
  EXPECT_EQ(params_of<ActSparseParams>(old).load_batch, 1);
  EXPECT_FALSE(params_of<ActSparseParams>(old).block_staged);
  EXPECT_FALSE(params_of<ActSparseParams>(old).cluster_reduce);
  EXPECT_EQ(params_of<ActSparseParams>(old).warps, 16);
  EXPECT_EQ(kernel_name(old), "act_sparse_th1_tw2_tk1_wp16_sc1_dm0_sm3_ur0_relu0_lb1_bs0_cr0");
  const KernelSpec with_lb = parse_kernel_name("act_sparse_th1_tw2_tk1_wp16_sc1_dm0_sm3_ur0_relu0_lb4");
  EXPECT_EQ(kernel_name(with_lb), "act_sparse_th1_tw2_tk1_wp16_sc1_dm0_sm3_ur0_relu0_lb4_bs0_cr0");
  // Only the parameters added last may be missing.
  EXPECT_EQ(input_error("act_sparse_th1_tw2_tk1_wp16_sc1_dm0_sm3_ur0"),
            "kernel name 'act_sparse_th1_tw2_tk1_wp16_sc1_dm0_sm3_ur0': expected field '_relu<number>' at ''");
}

TEST(KernelSpec, ValueOutsideTheDeclaredOnesIsRejected) {
  EXPECT_EQ(input_error("igemm_m0_n64_k8_tm4_tn4_st2_sk1_v1"),
            "kernel name 'igemm_m0_n64_k8_tm4_tn4_st2_sk1_v1': field 'm' (output channels per block (GEMM M tile)) "
            "must be one of 16, 32, 64, 128, 256, got 0");
  EXPECT_EQ(input_error("igemm_m64_n64_k8_tm4_tn4_st2_sk65_v1"),
            "kernel name 'igemm_m64_n64_k8_tm4_tn4_st2_sk65_v1': field 'sk' (splits of the reduction, summed into the "
            "output with atomics) must be from 1 to 64, got 65");
}

TEST(KernelSpec, NonNumericFieldIsRejected) {
  EXPECT_EQ(input_error("igemm_mx_n64_k8_tm4_tn4_st2_sk1_v1"),
            "kernel name 'igemm_mx_n64_k8_tm4_tn4_st2_sk1_v1': field 'm' must be an integer");
}

TEST(KernelSpec, TrailingTextIsRejected) {
  EXPECT_EQ(input_error("igemm_m64_n64_k8_tm4_tn4_st2_sk1_v1_x"),
            "kernel name 'igemm_m64_n64_k8_tm4_tn4_st2_sk1_v1_x': unexpected trailing '_x'");
}

TEST(KernelSpec, NameOfASpecOfTheWrongArityIsRefused) {
  EXPECT_THROW(kernel_name(KernelSpec{.family = "igemm", .values = {64}}), InputError);
  EXPECT_THROW(kernel_name(KernelSpec{.family = "nope", .values = {}}), InputError);
}

}  // namespace
}  // namespace convgen
