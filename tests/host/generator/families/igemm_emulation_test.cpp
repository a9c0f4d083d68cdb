// igemm_emulation_test: runs templates/igemm.cu on the host, a std::thread per CUDA thread, against the float64
// reference, in every data type it takes: fp32 and tf32 (computed in fp32), and fp16 and bf16 widened to fp32 as
// they are loaded and rounded back at the store (templates/element.cuh, replaced here by host definitions of the same
// rounding). The family's plan (split-K's zeroed output included) on both layouts, vector and scalar loads, 1x1 with
// stride 2, 3x3, 3-D, groups, one and two stages, split-K and the fused epilogue. The 16-bit outputs must match the
// reference rounded to their type, so a misplaced element cannot hide in fp16's or bf16's tolerance.
#include <math.h>

#include <atomic>
#include <cstdint>
#include <iostream>
#include <limits>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "generator/family.hpp"
#include "igemm_params.hpp"
#include "reference/host_tensor.hpp"
#include "reference/reference.hpp"
#include "support/corpus.hpp"
#include "support/emulation_checks.hpp"
#include "support/host_cuda.hpp"
#include "support/literal_shape.hpp"

// ---- The CUDA vocabulary of the template, for a host compiler (support/host_cuda.hpp) ----------------------------
#define __shared__ static  // a block's threads run at once and meet at a barrier
#define __align__(n) __attribute__((aligned(n)))
struct float2 {
  float x, y;
};
struct float4 {
  float x, y, z, w;
};
struct uint2 {
  unsigned x, y;
};
#include "templates/common.cuh"
#include "templates/interface.cuh"

#include "support/host_element.hpp"  // templates/element.cuh on the host

namespace igemm_emulation {
using namespace convgen::host_cuda;  // NOLINT(google-build-using-namespace): the template's CUDA words
inline float atomicAdd(float* address, float value) { return std::atomic_ref<float>(*address).fetch_add(value); }
}  // namespace igemm_emulation

// Declares namespace NAME with kProblem, kSpec and the cfg constants the generator's prelude would render for them
// (PRECISION among them), and includes the template there.
#define IGEMM_CASE(NAME, PROBLEM, SPEC)                                                                          \
  namespace igemm_emulation::NAME {                                                                              \
  constexpr convgen::testing_support::LiteralShape kProblem = PROBLEM;                                           \
  constexpr convgen::IgemmParams kSpec = SPEC;                                                                   \
  namespace cfg {                                                                                                \
  CONVGEN_HOST_PROBLEM_CONSTANTS(kProblem)                                                                       \
  constexpr int PRECISION = static_cast<int>(kProblem.precision);                                                \
  constexpr int BLOCK_M = kSpec.block_m, BLOCK_N = kSpec.block_n, BLOCK_K = kSpec.block_k;                       \
  constexpr int THREAD_M = kSpec.thread_m, THREAD_N = kSpec.thread_n, STAGES = kSpec.stages;                     \
  constexpr int SPLIT_K = kSpec.split_k, VECTOR = kSpec.vector;                                                  \
  }                                                                                                              \
  }                                                                                                              \
  namespace igemm_emulation::NAME {
#define IGEMM_ENTRY(NAME)                                                                                         \
  inline void run_main(const void* activation, const void* filter, void* output, const void* bias,               \
                       const void* residual) {                                                                   \
    kernel_##NAME(static_cast<const igemm::element_t*>(activation), static_cast<const igemm::element_t*>(filter), \
                  static_cast<igemm::element_t*>(output), nullptr, static_cast<const igemm::element_t*>(bias),    \
                  static_cast<const igemm::element_t*>(residual));                                               \
  }                                                                                                              \
  }

#define SPEC(BM, BN, BK, TM, TN, ST, SK, V)                                                                      \
  (convgen::IgemmParams{.block_m = BM, .block_n = BN, .block_k = BK, .thread_m = TM, .thread_n = TN, .stages = ST, \
                        .split_k = SK, .vector = V})

using convgen::Layout;
using convgen::Precision;
using Shape = convgen::testing_support::LiteralShape;

// fp32 NCHW 3x3 on an odd 9x11 input, split-K 3 (atomic adds into the zeroed output), K = 10 filling no tile.
IGEMM_CASE(fp32_nchw_split3,
           (Shape{.n = 1, .c = 6, .k = 10, .input = {1, 9, 11}, .filter = {1, 3, 3}, .padding = {0, 1, 1}}),
           SPEC(16, 32, 8, 2, 4, 2, 3, 1))
#define CONVGEN_ENTRY kernel_fp32_nchw_split3
#include "templates/igemm.cu"
#undef CONVGEN_ENTRY
IGEMM_ENTRY(fp32_nchw_split3)

// tf32 NHWC (computed in fp32), float4 loads, one stage.
IGEMM_CASE(tf32_nhwc_vector,
           (Shape{.n = 2, .c = 8, .k = 12, .input = {1, 7, 6}, .filter = {1, 3, 3}, .padding = {0, 1, 1},
                  .layout = Layout::nhwc, .precision = Precision::tf32}),
           SPEC(16, 32, 8, 2, 4, 1, 1, 4))
#define CONVGEN_ENTRY kernel_tf32_nhwc_vector
#include "templates/igemm.cu"
#undef CONVGEN_ENTRY
IGEMM_ENTRY(tf32_nhwc_vector)

// fp16 NHWC 3x3, four 16-bit channels per 8-byte load, K = 20 (odd tiles), batch 2.
IGEMM_CASE(fp16_nhwc_vector,
           (Shape{.n = 2, .c = 12, .k = 20, .input = {1, 8, 7}, .filter = {1, 3, 3}, .padding = {0, 1, 1},
                  .layout = Layout::nhwc, .precision = Precision::fp16}),
           SPEC(32, 32, 16, 4, 4, 2, 1, 4))
#define CONVGEN_ENTRY kernel_fp16_nhwc_vector
#include "templates/igemm.cu"
#undef CONVGEN_ENTRY
IGEMM_ENTRY(fp16_nhwc_vector)

// fp16 NCHW 1x1 stride 2: vector filter loads (the reduction 16 is a multiple of 4), scalar activation loads.
IGEMM_CASE(fp16_nchw_pointwise_s2,
           (Shape{.n = 1, .c = 16, .k = 24, .input = {1, 9, 10}, .filter = {1, 1, 1}, .stride = {1, 2, 2},
                  .precision = Precision::fp16}),
           SPEC(32, 16, 8, 4, 2, 2, 1, 4))
#define CONVGEN_ENTRY kernel_fp16_nchw_pointwise_s2
#include "templates/igemm.cu"
#undef CONVGEN_ENTRY
IGEMM_ENTRY(fp16_nchw_pointwise_s2)

// bf16 NHWC, 2 groups of 6 -> 5 channels, scalar loads, dilation 2.
IGEMM_CASE(bf16_nhwc_groups2_dilated,
           (Shape{.n = 1, .c = 12, .k = 10, .input = {1, 9, 9}, .filter = {1, 3, 3}, .padding = {0, 2, 2},
                  .dilation = {1, 2, 2}, .groups = 2, .layout = Layout::nhwc, .precision = Precision::bf16}),
           SPEC(16, 16, 8, 2, 2, 2, 1, 1))
#define CONVGEN_ENTRY kernel_bf16_nhwc_groups2_dilated
#include "templates/igemm.cu"
#undef CONVGEN_ENTRY
IGEMM_ENTRY(bf16_nhwc_groups2_dilated)

// bf16 NCDHW 3x3x3, padding 1, one stage.
IGEMM_CASE(bf16_ncdhw_3d,
           (Shape{.n = 1, .c = 3, .k = 8, .input = {5, 6, 5}, .filter = {3, 3, 3}, .padding = {1, 1, 1},
                  .layout = Layout::ncdhw, .precision = Precision::bf16}),
           SPEC(16, 32, 16, 2, 4, 1, 1, 1))
#define CONVGEN_ENTRY kernel_bf16_ncdhw_3d
#include "templates/igemm.cu"
#undef CONVGEN_ENTRY
IGEMM_ENTRY(bf16_ncdhw_3d)

// fp16 NHWC with 1.5 * conv - 0.5 * residual + bias through ReLU6, the bias and residual read as fp16.
IGEMM_CASE(fp16_nhwc_bias_residual_relu6,
           (Shape{.n = 1, .c = 8, .k = 16, .input = {1, 7, 7}, .filter = {1, 3, 3}, .padding = {0, 1, 1},
                  .layout = Layout::nhwc, .precision = Precision::fp16,
                  .epilogue = {.alpha = 1.5, .beta = -0.5, .bias = true, .act = convgen::Activation::relu6}}),
           SPEC(16, 32, 8, 2, 4, 2, 1, 4))
#define CONVGEN_ENTRY kernel_fp16_nhwc_bias_residual_relu6
#include "templates/igemm.cu"
#undef CONVGEN_ENTRY
IGEMM_ENTRY(fp16_nhwc_bias_residual_relu6)

namespace convgen {
namespace {

struct EmulationCase {
  const char* name;
  Problem problem;
  IgemmParams spec;
  void (*run_main)(const void*, const void*, void*, const void*, const void*);
};

void PrintTo(const EmulationCase& c, std::ostream* os) { *os << c.name; }

#define IGEMM_EMULATION_CASE(NAME) \
  EmulationCase { #NAME, igemm_emulation::NAME::kProblem, igemm_emulation::NAME::kSpec, &igemm_emulation::NAME::run_main }

// Runs the family's plan on the host: the zero step where there is one, then the main launch, into an output that
// starts as NaN (all ones: NaN in fp32, fp16 and bf16).
HostTensor run_plan(const EmulationCase& c, const HostTensor& activation, const HostTensor& filter,
                    const HostTensor& bias, const HostTensor& residual) {
  const LaunchPlan plan = family("igemm").plan(c.problem, to_spec(c.spec));
  HostTensor output = HostTensor::for_problem(c.problem, TensorRole::output);
  std::fill(output.bytes().begin(), output.bytes().end(), std::byte{0xff});
  for (const LaunchStep& step : plan.run) {
    if (step.kind == LaunchStep::Kind::zero) {
      EXPECT_EQ(step.buffer, "output");
      std::fill(output.bytes().begin(), output.bytes().end(), std::byte{0});
      continue;
    }
    host_cuda::launch(step.geometry, [&] {
      c.run_main(activation.bytes().data(), filter.bytes().data(), output.bytes().data(),
                 bias.size() > 0 ? bias.bytes().data() : nullptr,
                 residual.size() > 0 ? residual.bytes().data() : nullptr);
    });
  }
  return output;
}

class IgemmEmulation : public testing::TestWithParam<EmulationCase> {};

TEST_P(IgemmEmulation, MatchesTheReferenceInItsDataType) {
  const EmulationCase& c = GetParam();
  ASSERT_EQ(validate(c.problem), "");
  ASSERT_EQ(family("igemm").check_support(c.problem, testing_support::h100(), to_spec(c.spec)), std::nullopt);
  HostTensor activation = HostTensor::for_problem(c.problem, TensorRole::activation);
  HostTensor filter = HostTensor::for_problem(c.problem, TensorRole::filter);
  fill_random(activation, 1);
  fill_random(filter, 2);
  const testing_support::EpilogueOperands operands = testing_support::random_epilogue_operands(c.problem);
  const HostTensor& bias = operands.bias;
  const HostTensor& residual = operands.residual;
  const HostTensor output = run_plan(c, activation, filter, bias, residual);
  std::vector<double> expected = reference_conv(c.problem, activation, filter);
  const double scale = apply_epilogue(c.problem, expected, {}, bias, residual);
  const ErrorStats stats = compare(output, expected, scale);
  std::cout << fmt::format("igemm {} ({}, {}): relative L2 error {:.2e}, max error {:.2e}\n", c.name,
                           kernel_name(to_spec(c.spec)), c.problem.precision, stats.rel_l2, stats.max_abs);
  EXPECT_EQ(stats.nan_count, 0) << "outputs left unwritten";
  EXPECT_EQ(stats.compared, output_elements(c.problem));
  if (element_bytes(c.problem.precision) == 4) {
    // fp32 and tf32 problems are computed in fp32: held to fp32's limit whatever the problem's precision.
    EXPECT_LE(stats.rel_l2, error_limit(Precision::fp32)) << "max_abs " << stats.max_abs;
    return;
  }
  EXPECT_TRUE(passes(stats, c.problem.precision)) << "rel_l2 " << stats.rel_l2;
  // Against the reference rounded to the output's type only fp32 accumulation's differences are left: one unit in
  // the last place on a few outputs.
  const ErrorStats exact = compare(output, testing_support::rounded_to(output.type(), expected), scale);
  std::cout << fmt::format("  against the reference in {}: relative L2 error {:.2e}\n", c.problem.precision,
                           exact.rel_l2);
  EXPECT_LT(exact.rel_l2, 1e-5) << "max_abs " << exact.max_abs << " at output " << exact.max_abs_index;
}

INSTANTIATE_TEST_SUITE_P(
    EdgeCases, IgemmEmulation,
    testing::Values(IGEMM_EMULATION_CASE(fp32_nchw_split3), IGEMM_EMULATION_CASE(tf32_nhwc_vector),
                    IGEMM_EMULATION_CASE(fp16_nhwc_vector), IGEMM_EMULATION_CASE(fp16_nchw_pointwise_s2),
                    IGEMM_EMULATION_CASE(bf16_nhwc_groups2_dilated), IGEMM_EMULATION_CASE(bf16_ncdhw_3d),
                    IGEMM_EMULATION_CASE(fp16_nhwc_bias_residual_relu6)),
    [](const testing::TestParamInfo<EmulationCase>& param) { return std::string(param.param.name); });

}  // namespace
}  // namespace convgen
