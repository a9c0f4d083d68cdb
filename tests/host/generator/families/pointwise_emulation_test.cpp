// pointwise_emulation_test: runs templates/pointwise.cu on the host, a std::thread per CUDA thread, against the float64
// reference: the family's plan (pack_filter into the persistent buffer, then the main launch, and split-K's reduce
// entry) with its geometry, on output channels, input channels and pixels that fill no block, batch 3, stride 2 in
// 1-D, 2-D and 3-D, both activation load widths, split-K (with a split left without steps), each shared-memory
// pipeline (registers, and cp.async rings of 2 to 4 stages with both copy widths), and fused epilogues
// (alpha, bias, a scaled residual, ReLU6; bias and ReLU after split-K's sum). Held to DESIGN.md's fp32 limit (1e-5).
#include <math.h>

#include <cstdint>
#include <iostream>
#include <limits>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "generator/family.hpp"
#include "pointwise_params.hpp"
#include "reference/inputs.hpp"
#include "reference/reference.hpp"
#include "support/corpus.hpp"
#include "support/emulation_checks.hpp"
#include "support/host_async_copy.hpp"
#include "support/host_cuda.hpp"
#include "support/literal_shape.hpp"

// ---- The CUDA vocabulary of the template, for a host compiler (support/host_cuda.hpp) ----------------------------
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))
struct float2 {
  float x, y;
};
struct float4 {
  float x, y, z, w;
};
#include "templates/common.cuh"
#include "templates/interface.cuh"

namespace pointwise_emulation {
using namespace convgen::host_cuda;  // NOLINT(google-build-using-namespace): the template's CUDA words
}  // namespace pointwise_emulation

// Declares namespace NAME with kProblem, kSpec and the cfg constants the generator's prelude would render for them
// (the epilogue among them), and includes the template there.
#define POINTWISE_CASE(NAME, PROBLEM, SPEC)                                                  \
  namespace pointwise_emulation::NAME {                                                      \
  constexpr convgen::testing_support::LiteralShape kProblem = PROBLEM;                       \
  constexpr convgen::PointwiseParams kSpec = SPEC;                                           \
  namespace cfg {                                                                            \
  CONVGEN_HOST_PROBLEM_CONSTANTS(kProblem)                                                   \
  constexpr int BLOCK_M = kSpec.block_m, BLOCK_N = kSpec.block_n, BLOCK_K = kSpec.block_k;   \
  constexpr int THREAD_M = kSpec.thread_m, THREAD_N = kSpec.thread_n, VECTOR = kSpec.vector; \
  constexpr int SPLIT_K = kSpec.split_k, CP_STAGES = kSpec.cp_stages;                        \
  }                                                                                          \
  }                                                                                          \
  namespace pointwise_emulation::NAME {
#define POINTWISE_END(NAME) }

#define POINTWISE_SPEC(BM, BN, BK, TM, TN, V, SK, CP) \
  (convgen::PointwiseParams{.block_m = BM,            \
                            .block_n = BN,            \
                            .block_k = BK,            \
                            .thread_m = TM,           \
                            .thread_n = TN,           \
                            .vector = V,              \
                            .split_k = SK,            \
                            .cp_stages = CP})

using convgen::Layout;
using Shape = convgen::testing_support::LiteralShape;

// Batch 2, 13 -> 70 channels at 6x10 (60 pixels, float4 loads): no block of channels or pixels fills.
#define UNIT_V4 (Shape{.n = 2, .c = 13, .k = 70, .input = {1, 6, 10}, .filter = {1, 1, 1}, .layout = Layout::nchw})
// 7x9 = 63 pixels: scalar loads, a last block of pixels one short of 64.
#define UNIT_ODD (Shape{.n = 1, .c = 20, .k = 9, .input = {1, 7, 9}, .filter = {1, 1, 1}, .layout = Layout::nchw})
// Stride 2 in 2-D, batch 3: 9x11 -> 5x6.
#define STRIDE2_BATCH3        \
  (Shape{.n = 3,              \
         .c = 17,             \
         .k = 33,             \
         .input = {1, 9, 11}, \
         .filter = {1, 1, 1}, \
         .stride = {1, 2, 2}, \
         .layout = Layout::nchw})
// Stride 2 in 1-D (33 -> 17) and in 3-D (5x6x7 -> 3x3x4).
#define STRIDE2_1D \
  (Shape{.n = 2, .c = 6, .k = 5, .input = {1, 1, 33}, .filter = {1, 1, 1}, .stride = {1, 1, 2}, .layout = Layout::ncw})
#define STRIDE2_3D \
  (Shape{          \
      .n = 1, .c = 8, .k = 12, .input = {5, 6, 7}, .filter = {1, 1, 1}, .stride = {2, 2, 2}, .layout = Layout::ncdhw})
// 40 -> 130 channels at 8x8, batch 2, with the 128 x 64 block of 8 x 8 register tiles.
#define LARGE_K (Shape{.n = 2, .c = 40, .k = 130, .input = {1, 8, 8}, .filter = {1, 1, 1}, .layout = Layout::nchw})
// UNIT_V4 with alpha 1.5, a bias, half the residual and ReLU6 fused into the store.
#define UNIT_V4_EPILOGUE         \
  (Shape{.n = 2,                 \
         .c = 13,                \
         .k = 70,                \
         .input = {1, 6, 10},    \
         .filter = {1, 1, 1},    \
         .layout = Layout::nchw, \
         .epilogue = {.alpha = 1.5, .beta = 0.5, .bias = true, .act = convgen::Activation::relu6}})

POINTWISE_CASE(unit_v4, UNIT_V4, POINTWISE_SPEC(64, 32, 8, 8, 4, 4, 1, 0))
#define CONVGEN_ENTRY pointwise_unit_v4
#include "templates/pointwise.cu"
#undef CONVGEN_ENTRY
POINTWISE_END(unit_v4)

POINTWISE_CASE(unit_odd, UNIT_ODD, POINTWISE_SPEC(32, 64, 16, 4, 8, 1, 1, 0))
#define CONVGEN_ENTRY pointwise_unit_odd
#include "templates/pointwise.cu"
#undef CONVGEN_ENTRY
POINTWISE_END(unit_odd)

POINTWISE_CASE(stride2_batch3, STRIDE2_BATCH3, POINTWISE_SPEC(32, 32, 8, 4, 4, 1, 1, 0))
#define CONVGEN_ENTRY pointwise_stride2_batch3
#include "templates/pointwise.cu"
#undef CONVGEN_ENTRY
POINTWISE_END(stride2_batch3)

POINTWISE_CASE(stride2_1d, STRIDE2_1D, POINTWISE_SPEC(32, 32, 8, 4, 4, 1, 1, 0))
#define CONVGEN_ENTRY pointwise_stride2_1d
#include "templates/pointwise.cu"
#undef CONVGEN_ENTRY
POINTWISE_END(stride2_1d)

POINTWISE_CASE(stride2_3d, STRIDE2_3D, POINTWISE_SPEC(32, 32, 16, 8, 4, 1, 1, 0))
#define CONVGEN_ENTRY pointwise_stride2_3d
#include "templates/pointwise.cu"
#undef CONVGEN_ENTRY
POINTWISE_END(stride2_3d)

POINTWISE_CASE(large_k, LARGE_K, POINTWISE_SPEC(128, 64, 16, 8, 8, 4, 1, 0))
#define CONVGEN_ENTRY pointwise_large_k
#include "templates/pointwise.cu"
#undef CONVGEN_ENTRY
POINTWISE_END(large_k)

POINTWISE_CASE(unit_v4_epilogue, UNIT_V4_EPILOGUE, POINTWISE_SPEC(64, 32, 8, 8, 4, 4, 1, 0))
#define CONVGEN_ENTRY pointwise_unit_v4_epilogue
#include "templates/pointwise.cu"
#undef CONVGEN_ENTRY
POINTWISE_END(unit_v4_epilogue)

// Split-K: 200 -> 40 channels at 3x3 (9 pixels), 25 steps of 8 in 4 splits of 7, 7, 7 and 4; and 40 -> 36 channels
// at 5x4, batch 2, 5 steps in 4 splits of 2, 2, 1 and none, with bias and ReLU applied to the reduced sum.
#define SPLIT4_SMALL (Shape{.n = 1, .c = 200, .k = 40, .input = {1, 3, 3}, .filter = {1, 1, 1}, .layout = Layout::nchw})
#define SPLIT4_EMPTY_EPILOGUE    \
  (Shape{.n = 2,                 \
         .c = 40,                \
         .k = 36,                \
         .input = {1, 5, 4},     \
         .filter = {1, 1, 1},    \
         .layout = Layout::nchw, \
         .epilogue = {.bias = true, .act = convgen::Activation::relu}})

POINTWISE_CASE(split4_small, SPLIT4_SMALL, POINTWISE_SPEC(32, 32, 8, 4, 4, 1, 4, 0))
#define CONVGEN_ENTRY pointwise_split4_small
#include "templates/pointwise.cu"
#undef CONVGEN_ENTRY
POINTWISE_END(split4_small)

POINTWISE_CASE(split4_empty_epilogue, SPLIT4_EMPTY_EPILOGUE, POINTWISE_SPEC(64, 32, 8, 8, 4, 4, 4, 0))
#define CONVGEN_ENTRY pointwise_split4_empty_epilogue
#include "templates/pointwise.cu"
#undef CONVGEN_ENTRY
POINTWISE_END(split4_empty_epilogue)

// The cp.async ring (tests/support/host_async_copy.hpp): 3 stages of float4 copies on blocks that span both images;
// 4 stages of 4-byte copies over 2 steps (the groups past the last step are empty); 2 stages at stride 2; 4 stages of
// the 128 x 64 block (48 KiB of shared memory); 3 stages of split-K with a split left without steps.
POINTWISE_CASE(unit_v4_cp3, UNIT_V4, POINTWISE_SPEC(64, 32, 8, 8, 4, 4, 1, 3))
#define CONVGEN_ENTRY pointwise_unit_v4_cp3
#include "templates/pointwise.cu"
#undef CONVGEN_ENTRY
POINTWISE_END(unit_v4_cp3)

POINTWISE_CASE(unit_odd_cp4, UNIT_ODD, POINTWISE_SPEC(32, 64, 16, 4, 8, 1, 1, 4))
#define CONVGEN_ENTRY pointwise_unit_odd_cp4
#include "templates/pointwise.cu"
#undef CONVGEN_ENTRY
POINTWISE_END(unit_odd_cp4)

POINTWISE_CASE(stride2_batch3_cp2, STRIDE2_BATCH3, POINTWISE_SPEC(32, 32, 8, 4, 4, 1, 1, 2))
#define CONVGEN_ENTRY pointwise_stride2_batch3_cp2
#include "templates/pointwise.cu"
#undef CONVGEN_ENTRY
POINTWISE_END(stride2_batch3_cp2)

POINTWISE_CASE(large_k_cp4, LARGE_K, POINTWISE_SPEC(128, 64, 16, 8, 8, 4, 1, 4))
#define CONVGEN_ENTRY pointwise_large_k_cp4
#include "templates/pointwise.cu"
#undef CONVGEN_ENTRY
POINTWISE_END(large_k_cp4)

POINTWISE_CASE(split4_empty_epilogue_cp3, SPLIT4_EMPTY_EPILOGUE, POINTWISE_SPEC(64, 32, 8, 8, 4, 4, 4, 3))
#define CONVGEN_ENTRY pointwise_split4_empty_epilogue_cp3
#include "templates/pointwise.cu"
#undef CONVGEN_ENTRY
POINTWISE_END(split4_empty_epilogue_cp3)

namespace convgen {
namespace {

using Setup = void (*)(const float*, float*);
// activation, packed filter, output, bias, residual, workspace
using Main = void (*)(const float*, const float*, float*, const float*, const float*, float*);
using Reduce = void (*)(const float*, float*, const float*, const float*);  // workspace, output, bias, residual

struct EmulationCase {
  const char* name;
  Problem problem;
  PointwiseParams spec;
  Setup setup;
  Main main;
  Reduce reduce;
};

void PrintTo(const EmulationCase& c, std::ostream* os) { *os << c.name; }

#define POINTWISE_EMULATION_CASE(NAME)                                                                            \
  EmulationCase {                                                                                                 \
#NAME, pointwise_emulation::NAME::kProblem, pointwise_emulation::NAME::kSpec,                                 \
        &pointwise_emulation::NAME::pointwise_##NAME##_pack_filter, &pointwise_emulation::NAME::pointwise_##NAME, \
        &pointwise_emulation::NAME::pointwise_##NAME##_reduce                                                     \
  }

using testing_support::floats_of;

// Runs the family's plan on the host: the setup step into the persistent buffer, then the run steps through the
// workspace into an output, every one of them NaN first (an element a step leaves unwritten shows).
std::vector<float> run_plan(const EmulationCase& c, std::span<const float> activation, std::span<const float> filter,
                            std::span<const float> bias, std::span<const float> residual) {
  const LaunchPlan plan = family("pointwise").plan(c.problem, to_spec(c.spec));
  constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
  const PlanBuffer* packed = plan.find("packed_filter");
  EXPECT_NE(packed, nullptr);
  EXPECT_TRUE(packed->persistent);
  EXPECT_EQ(plan.workspace_bytes() > 0, c.spec.split_k > 1);
  std::vector<float> buffer(static_cast<std::size_t>(packed->bytes / 4), kNaN);
  std::vector<float> workspace(static_cast<std::size_t>(plan.workspace_bytes() / 4), kNaN);
  std::vector<float> output(static_cast<std::size_t>(output_elements(c.problem)), kNaN);
  EXPECT_EQ(plan.setup.size(), 1u);
  EXPECT_EQ(plan.run.size(), c.spec.split_k > 1 ? 2u : 1u);
  for (const LaunchStep& step : plan.setup) {
    EXPECT_EQ(step.entry_suffix, "pack_filter");
    convgen::host_cuda::launch(step.geometry, [&] { c.setup(filter.data(), buffer.data()); });
  }
  const float* bias_ptr = bias.empty() ? nullptr : bias.data();
  const float* residual_ptr = residual.empty() ? nullptr : residual.data();
  for (const LaunchStep& step : plan.run) {
    if (step.entry_suffix.empty())
      convgen::host_cuda::launch(step.geometry, [&] {
        c.main(activation.data(), buffer.data(), output.data(), bias_ptr, residual_ptr, workspace.data());
      });
    else if (step.entry_suffix == "reduce")
      convgen::host_cuda::launch(step.geometry,
                                 [&] { c.reduce(workspace.data(), output.data(), bias_ptr, residual_ptr); });
    else
      ADD_FAILURE() << "unexpected step " << step.entry_suffix;
  }
  return output;
}

class PointwiseEmulation : public testing::TestWithParam<EmulationCase> {};

TEST_P(PointwiseEmulation, MatchesTheReference) {
  const EmulationCase& c = GetParam();
  ASSERT_EQ(validate(c.problem), "");
  ASSERT_EQ(family("pointwise").check_support(c.problem, convgen::testing_support::h100(), to_spec(c.spec)),
            std::nullopt);
  const std::vector<float> activation = floats_of(make_tensor(c.problem, TensorRole::activation, DenseRandom{}, 1));
  const std::vector<float> filter = floats_of(make_tensor(c.problem, TensorRole::filter, DenseRandom{}, 2));
  HostTensor bias, residual;
  if (c.problem.epilogue.bias) bias = make_tensor(c.problem, TensorRole::bias, DenseRandom{}, 3);
  if (reads_residual(c.problem.epilogue)) residual = make_tensor(c.problem, TensorRole::residual, DenseRandom{}, 4);
  const std::vector<float> output = run_plan(c, activation, filter, floats_of(bias), floats_of(residual));
  std::vector<double> expected = reference_conv(c.problem, activation, filter);
  const double scale = apply_epilogue(c.problem, expected, {}, bias, residual);
  const ErrorStats stats = compare(output, expected, scale);
  std::cout << fmt::format("pointwise {} ({}): relative L2 error {:.2e}, max error {:.2e}\n", c.name,
                           kernel_name(to_spec(c.spec)), stats.rel_l2, stats.max_abs);
  EXPECT_EQ(stats.nan_count, 0) << "outputs left unwritten";
  EXPECT_EQ(stats.compared, output_elements(c.problem));
  EXPECT_LE(stats.rel_l2, 1e-5) << "max_abs " << stats.max_abs;
}

INSTANTIATE_TEST_SUITE_P(
    EdgeCases, PointwiseEmulation,
    testing::Values(POINTWISE_EMULATION_CASE(unit_v4), POINTWISE_EMULATION_CASE(unit_odd),
                    POINTWISE_EMULATION_CASE(stride2_batch3), POINTWISE_EMULATION_CASE(stride2_1d),
                    POINTWISE_EMULATION_CASE(stride2_3d), POINTWISE_EMULATION_CASE(large_k),
                    POINTWISE_EMULATION_CASE(unit_v4_epilogue), POINTWISE_EMULATION_CASE(split4_small),
                    POINTWISE_EMULATION_CASE(split4_empty_epilogue), POINTWISE_EMULATION_CASE(unit_v4_cp3),
                    POINTWISE_EMULATION_CASE(unit_odd_cp4), POINTWISE_EMULATION_CASE(stride2_batch3_cp2),
                    POINTWISE_EMULATION_CASE(large_k_cp4), POINTWISE_EMULATION_CASE(split4_empty_epilogue_cp3)),
    [](const testing::TestParamInfo<EmulationCase>& param) { return std::string(param.param.name); });

}  // namespace
}  // namespace convgen
