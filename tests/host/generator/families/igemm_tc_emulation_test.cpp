// igemm_tc_emulation_test: runs templates/igemm_tc.cu on the host, a std::thread per CUDA thread, against the
// reference. No GPU is needed: the template's tensor-core instructions all live in templates/tensor_core.cuh, and
// support/host_tensor_core.hpp puts in its place host definitions with the PTX ISA's semantics (cp.async copies at
// once, ldmatrix and mma.sync exchange their fragments between the 32 threads of a warp at a barrier), so the
// template's index arithmetic, predication, pipeline, fragment bookkeeping, epilogue and split-K pass are checked on
// every CI run.
#include <algorithm>
#include <atomic>
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "support/corpus.hpp"
#include "support/emulation_checks.hpp"
#include "support/host_cuda.hpp"
#include "support/literal_shape.hpp"

#include "generator/family.hpp"
#include "igemm_tc_params.hpp"
#include "reference/host_tensor.hpp"
#include "reference/reference.hpp"

// ---- The CUDA vocabulary of the template, for a host compiler ----------------------------------------------------
struct float2 {
  float x, y;
};
struct float4 {
  float x, y, z, w;
};
#include "templates/common.cuh"
#include "templates/interface.cuh"

#include "support/host_tensor_core.hpp"

// Declares namespace NAME with kProblem, kSpec and the cfg constants the generator's prelude would render for them,
// includes the template there, and wraps its two entries with untyped pointers.
#define IGEMM_TC_CASE(NAME, PROBLEM, SPEC)                                                                         \
  namespace tc_emulation::NAME {                                                                              \
  constexpr convgen::testing_support::LiteralShape kProblem = PROBLEM;                                            \
  constexpr convgen::IgemmTcParams kSpec = SPEC;                                                                   \
  namespace cfg {                                                                                                  \
  CONVGEN_HOST_PROBLEM_CONSTANTS(kProblem)                                                                         \
  constexpr int PRECISION = static_cast<int>(kProblem.precision);                                                  \
  constexpr int BLOCK_M = kSpec.block_m, BLOCK_N = kSpec.block_n, BLOCK_K = kSpec.block_k;                         \
  constexpr int WARP_M = kSpec.warp_m, WARP_N = kSpec.warp_n, STAGES = kSpec.stages, SPLIT_K = kSpec.split_k;      \
  constexpr bool VECTOR = kSpec.vector;                                                                            \
  }                                                                                                                \
  }                                                                                                                \
  namespace tc_emulation::NAME {
#define IGEMM_TC_ENTRIES(NAME)                                                                                       \
  inline void run_main(const void* activation, const void* filter, void* output, float* workspace, const void* bias, \
                       const void* residual) {                                                                       \
    kernel_##NAME(static_cast<const igemm_tc::element_t*>(activation),                                               \
                  static_cast<const igemm_tc::element_t*>(filter), static_cast<igemm_tc::element_t*>(output),        \
                  workspace, static_cast<const igemm_tc::element_t*>(bias),                                          \
                  static_cast<const igemm_tc::element_t*>(residual));                                                \
  }                                                                                                                  \
  inline void run_reduce(const float* workspace, void* output, const void* bias, const void* residual) {             \
    kernel_##NAME##_reduce(workspace, static_cast<igemm_tc::element_t*>(output),                                     \
                           static_cast<const igemm_tc::element_t*>(bias),                                            \
                           static_cast<const igemm_tc::element_t*>(residual));                                       \
  }                                                                                                                  \
  }

#define SPEC(BM, BN, BK, WM, WN, ST, SK, V)                                                                         \
  (convgen::IgemmTcParams{.block_m = BM, .block_n = BN, .block_k = BK, .warp_m = WM, .warp_n = WN, .stages = ST,   \
                          .split_k = SK, .vector = V})

using convgen::Layout;
using convgen::Precision;
using convgen::Problem;
using Shape = convgen::testing_support::LiteralShape;

// 3x3 pad 1, batch 2, odd 9x7, fp16 NHWC: 16-byte loads, a partial channel tile (24 of 32), 32-byte rows, 3 stages.
IGEMM_TC_CASE(fp16_nhwc_3x3,
              (Shape{.n = 2, .c = 16, .k = 24, .input = {1, 9, 7}, .filter = {1, 3, 3}, .padding = {0, 1, 1},
                       .layout = Layout::nhwc, .precision = Precision::fp16}),
              SPEC(32, 32, 16, 16, 16, 3, 1, true))
#define CONVGEN_ENTRY kernel_fp16_nhwc_3x3
#include "templates/igemm_tc.cu"
#undef CONVGEN_ENTRY
IGEMM_TC_ENTRIES(fp16_nhwc_3x3)

// bf16 NHWC, stride 2 and dilation 2, a 64x16 block of four warps, 64-byte rows, 2 stages.
IGEMM_TC_CASE(bf16_nhwc_stride2_dilation2,
              (Shape{.n = 1, .c = 8, .k = 16, .input = {1, 17, 15}, .filter = {1, 3, 3}, .stride = {1, 2, 2},
                       .padding = {0, 2, 2}, .dilation = {1, 2, 2}, .layout = Layout::nhwc,
                       .precision = Precision::bf16}),
              SPEC(64, 16, 32, 16, 16, 2, 1, true))
#define CONVGEN_ENTRY kernel_bf16_nhwc_stride2_dilation2
#include "templates/igemm_tc.cu"
#undef CONVGEN_ENTRY
IGEMM_TC_ENTRIES(bf16_nhwc_stride2_dilation2)

// tf32 NHWC, K = 10 (odd pairs at the tile's edge), split-K 3 through the workspace and the reduce pass, 4 stages.
IGEMM_TC_CASE(tf32_nhwc_split3,
              (Shape{.n = 1, .c = 12, .k = 10, .input = {1, 8, 9}, .filter = {1, 3, 3}, .padding = {0, 1, 1},
                       .layout = Layout::nhwc, .precision = Precision::tf32}),
              SPEC(32, 16, 8, 16, 16, 4, 3, true))
#define CONVGEN_ENTRY kernel_tf32_nhwc_split3
#include "templates/igemm_tc.cu"
#undef CONVGEN_ENTRY
IGEMM_TC_ENTRIES(tf32_nhwc_split3)

// fp16 NCHW, C = 5: element-wise loads of both operands (the reduction 45 is no multiple of 8), odd K = 7.
IGEMM_TC_CASE(fp16_nchw_elementwise,
              (Shape{.n = 2, .c = 5, .k = 7, .input = {1, 7, 6}, .filter = {1, 3, 3}, .padding = {0, 1, 1},
                       .layout = Layout::nchw, .precision = Precision::fp16}),
              SPEC(32, 16, 16, 16, 16, 3, 1, false))
#define CONVGEN_ENTRY kernel_fp16_nchw_elementwise
#include "templates/igemm_tc.cu"
#undef CONVGEN_ENTRY
IGEMM_TC_ENTRIES(fp16_nchw_elementwise)

// bf16 NCHW, C = 8: 16-byte filter loads, element-wise activation loads, stride 2, a 5x5 filter.
IGEMM_TC_CASE(bf16_nchw_vector_filter,
              (Shape{.n = 1, .c = 8, .k = 16, .input = {1, 11, 11}, .filter = {1, 5, 5}, .stride = {1, 2, 2},
                       .padding = {0, 2, 2}, .layout = Layout::nchw, .precision = Precision::bf16}),
              SPEC(16, 16, 32, 16, 16, 3, 1, true))
#define CONVGEN_ENTRY kernel_bf16_nchw_vector_filter
#include "templates/igemm_tc.cu"
#undef CONVGEN_ENTRY
IGEMM_TC_ENTRIES(bf16_nchw_vector_filter)

// fp16 NHWC stem: C = 3 (element-wise loads), 7x7 stride 2 pad 3, K = 20.
IGEMM_TC_CASE(fp16_nhwc_stem,
              (Shape{.n = 1, .c = 3, .k = 20, .input = {1, 13, 12}, .filter = {1, 7, 7}, .stride = {1, 2, 2},
                       .padding = {0, 3, 3}, .layout = Layout::nhwc, .precision = Precision::fp16}),
              SPEC(32, 32, 32, 32, 16, 2, 1, false))
#define CONVGEN_ENTRY kernel_fp16_nhwc_stem
#include "templates/igemm_tc.cu"
#undef CONVGEN_ENTRY
IGEMM_TC_ENTRIES(fp16_nhwc_stem)

// tf32 3-D NCDHW, 3x3x3 pad 1: 16-byte filter loads (the reduction 108 is a multiple of 4), element activations.
IGEMM_TC_CASE(tf32_ncdhw_3d,
              (Shape{.n = 1, .c = 4, .k = 8, .input = {5, 6, 5}, .filter = {3, 3, 3}, .padding = {1, 1, 1},
                       .layout = Layout::ncdhw, .precision = Precision::tf32}),
              SPEC(16, 16, 16, 16, 16, 3, 1, true))
#define CONVGEN_ENTRY kernel_tf32_ncdhw_3d
#include "templates/igemm_tc.cu"
#undef CONVGEN_ENTRY
IGEMM_TC_ENTRIES(tf32_ncdhw_3d)

// fp16 NDHWC 3-D, batch 2, stride 2 per dim.
IGEMM_TC_CASE(fp16_ndhwc_3d,
              (Shape{.n = 2, .c = 8, .k = 16, .input = {5, 5, 6}, .filter = {3, 3, 3}, .stride = {2, 1, 2},
                       .padding = {1, 1, 1}, .layout = Layout::ndhwc, .precision = Precision::fp16}),
              SPEC(16, 16, 16, 16, 16, 2, 1, true))
#define CONVGEN_ENTRY kernel_fp16_ndhwc_3d
#include "templates/igemm_tc.cu"
#undef CONVGEN_ENTRY
IGEMM_TC_ENTRIES(fp16_ndhwc_3d)

// fp16 NHWC, 2 groups of 16 -> 24 channels, split-K 2: channel tiles stop at the group's end.
IGEMM_TC_CASE(fp16_nhwc_groups2_split2,
              (Shape{.n = 1, .c = 32, .k = 48, .input = {1, 6, 7}, .filter = {1, 3, 3}, .padding = {0, 1, 1},
                       .groups = 2, .layout = Layout::nhwc, .precision = Precision::fp16}),
              SPEC(32, 16, 16, 16, 16, 3, 2, true))
#define CONVGEN_ENTRY kernel_fp16_nhwc_groups2_split2
#include "templates/igemm_tc.cu"
#undef CONVGEN_ENTRY
IGEMM_TC_ENTRIES(fp16_nhwc_groups2_split2)

// bf16 1-D NWC, stride 2.
IGEMM_TC_CASE(bf16_nwc_1d,
              (Shape{.n = 1, .c = 16, .k = 16, .input = {1, 1, 33}, .filter = {1, 1, 3}, .stride = {1, 1, 2},
                       .padding = {0, 0, 1}, .layout = Layout::nwc, .precision = Precision::bf16}),
              SPEC(16, 16, 16, 16, 16, 2, 1, true))
#define CONVGEN_ENTRY kernel_bf16_nwc_1d
#include "templates/igemm_tc.cu"
#undef CONVGEN_ENTRY
IGEMM_TC_ENTRIES(bf16_nwc_1d)

// fp16 NHWC, four warps of 64x64 (4 x 8 mma tiles each) in a 128x128 block, 128-byte rows, 5 stages.
IGEMM_TC_CASE(fp16_nhwc_big_warp_tile,
              (Shape{.n = 1, .c = 64, .k = 72, .input = {1, 9, 10}, .filter = {1, 3, 3}, .padding = {0, 1, 1},
                       .layout = Layout::nhwc, .precision = Precision::fp16}),
              SPEC(128, 128, 64, 64, 64, 5, 1, true))
#define CONVGEN_ENTRY kernel_fp16_nhwc_big_warp_tile
#include "templates/igemm_tc.cu"
#undef CONVGEN_ENTRY
IGEMM_TC_ENTRIES(fp16_nhwc_big_warp_tile)

// tf32 NHWC, 128-byte rows (32 elements), 8 warps of 16x32 in a 64x64 block, a 1x1 filter, C = 40.
IGEMM_TC_CASE(tf32_nhwc_pointwise_8warps,
              (Shape{.n = 2, .c = 40, .k = 36, .input = {1, 5, 7}, .filter = {1, 1, 1}, .layout = Layout::nhwc,
                       .precision = Precision::tf32}),
              SPEC(64, 64, 32, 16, 32, 3, 1, true))
#define CONVGEN_ENTRY kernel_tf32_nhwc_pointwise_8warps
#include "templates/igemm_tc.cu"
#undef CONVGEN_ENTRY
IGEMM_TC_ENTRIES(tf32_nhwc_pointwise_8warps)

// The fused epilogue (issue 12): the same problems with bias + residual + relu6 (alpha and beta not 1), through the
// paired fp16 stores, the split-K reduce (tf32) and the element-wise NCHW stores (bf16, clip).
constexpr convgen::Epilogue kRelu6Epilogue{.alpha = 1.5, .beta = 0.5, .bias = true, .act = convgen::Activation::relu6};

IGEMM_TC_CASE(fp16_nhwc_3x3_bias_residual_relu6,
              (Shape{.n = 2,
                     .c = 16,
                     .k = 24,
                     .input = {1, 9, 7},
                     .filter = {1, 3, 3},
                     .padding = {0, 1, 1},
                     .layout = Layout::nhwc,
                     .precision = Precision::fp16,
                     .epilogue = kRelu6Epilogue}),
              SPEC(32, 32, 16, 16, 16, 3, 1, true))
#define CONVGEN_ENTRY kernel_fp16_nhwc_3x3_bias_residual_relu6
#include "templates/igemm_tc.cu"
#undef CONVGEN_ENTRY
IGEMM_TC_ENTRIES(fp16_nhwc_3x3_bias_residual_relu6)

IGEMM_TC_CASE(tf32_nhwc_split3_bias_residual_relu6,
              (Shape{.n = 1,
                     .c = 12,
                     .k = 10,
                     .input = {1, 8, 9},
                     .filter = {1, 3, 3},
                     .padding = {0, 1, 1},
                     .layout = Layout::nhwc,
                     .precision = Precision::tf32,
                     .epilogue = kRelu6Epilogue}),
              SPEC(32, 16, 8, 16, 16, 4, 3, true))
#define CONVGEN_ENTRY kernel_tf32_nhwc_split3_bias_residual_relu6
#include "templates/igemm_tc.cu"
#undef CONVGEN_ENTRY
IGEMM_TC_ENTRIES(tf32_nhwc_split3_bias_residual_relu6)

IGEMM_TC_CASE(
    bf16_nchw_bias_residual_clip,
    (Shape{.n = 1,
           .c = 8,
           .k = 16,
           .input = {1, 11, 11},
           .filter = {1, 5, 5},
           .stride = {1, 2, 2},
           .padding = {0, 2, 2},
           .layout = Layout::nchw,
           .precision = Precision::bf16,
           .epilogue = {.beta = -1, .bias = true, .act = convgen::Activation::clip, .clip_lo = -1, .clip_hi = 0.5}}),
    SPEC(16, 16, 32, 16, 16, 3, 1, true))
#define CONVGEN_ENTRY kernel_bf16_nchw_bias_residual_clip
#include "templates/igemm_tc.cu"
#undef CONVGEN_ENTRY
IGEMM_TC_ENTRIES(bf16_nchw_bias_residual_clip)

namespace convgen {
namespace {

struct EmulationCase {
  const char* name;
  Problem problem;
  IgemmTcParams spec;
  void (*run_main)(const void*, const void*, void*, float*, const void*, const void*);
  void (*run_reduce)(const float*, void*, const void*, const void*);
};

void PrintTo(const EmulationCase& c, std::ostream* os) { *os << c.name; }

#define IGEMM_TC_EMULATION_CASE(NAME)                                                                              \
  EmulationCase {                                                                                                  \
    #NAME, tc_emulation::NAME::kProblem, tc_emulation::NAME::kSpec, &tc_emulation::NAME::run_main,  \
        &tc_emulation::NAME::run_reduce                                                                       \
  }

// Runs the family's launch plan on the host: the main entry, then (split-K) the reduce entry, with a workspace of
// the plan's size; output and workspace start as NaN so that anything left unwritten fails the comparison.
HostTensor run_on_host(const EmulationCase& c, const HostTensor& activation, const HostTensor& filter,
                       const HostTensor& bias, const HostTensor& residual) {
  // An operand the epilogue does not read is passed as null, as the launcher does.
  const void* bias_data = bias.size() > 0 ? bias.bytes().data() : nullptr;
  const void* residual_data = residual.size() > 0 ? residual.bytes().data() : nullptr;
  const LaunchPlan plan = family("igemm_tc").plan(c.problem, to_spec(c.spec));
  HostTensor output = HostTensor::for_problem(c.problem, TensorRole::output);
  std::fill(output.bytes().begin(), output.bytes().end(), std::byte{0xff});
  std::vector<float> workspace(static_cast<std::size_t>(plan.workspace_bytes() / 4),
                               std::numeric_limits<float>::quiet_NaN());
  for (const LaunchStep& step : plan.run) {
    EXPECT_EQ(step.kind, LaunchStep::Kind::kernel);
    if (step.entry_suffix.empty()) {
      tc_emulation::run_blocks(step.geometry, [&] {
        c.run_main(activation.bytes().data(), filter.bytes().data(), output.bytes().data(), workspace.data(), bias_data,
                   residual_data);
      });
    } else {
      EXPECT_EQ(step.entry_suffix, "reduce");
      tc_emulation::run_blocks(step.geometry,
                 [&] { c.run_reduce(workspace.data(), output.bytes().data(), bias_data, residual_data); });
    }
  }
  return output;
}

class IgemmTcEmulation : public testing::TestWithParam<EmulationCase> {};

TEST_P(IgemmTcEmulation, MatchesTheReferenceOnEveryOutput) {
  const EmulationCase& c = GetParam();
  ASSERT_EQ(validate(c.problem), "");
  ASSERT_EQ(family("igemm_tc").check_support(c.problem, convgen::testing_support::h100(), to_spec(c.spec)), std::nullopt);
  HostTensor activation = HostTensor::for_problem(c.problem, TensorRole::activation);
  HostTensor filter = HostTensor::for_problem(c.problem, TensorRole::filter);
  fill_random(activation, 1);
  fill_random(filter, 2);
  // The epilogue's operands, in the data type, where it reads them.
  const testing_support::EpilogueOperands operands = testing_support::random_epilogue_operands(c.problem);
  const HostTensor& bias = operands.bias;
  const HostTensor& residual = operands.residual;
  const auto reference = [&](const HostTensor& a, const HostTensor& f) {
    std::vector<double> values = reference_conv(c.problem, a, f);
    apply_epilogue(c.problem, values, {}, bias, residual);
    return values;
  };
  tc_emulation::unrounded_tf32_operand = false;
  tc_emulation::bad_shared_access = false;
  const HostTensor output = run_on_host(c, activation, filter, bias, residual);
  EXPECT_FALSE(tc_emulation::bad_shared_access) << "a misaligned or out-of-range shared-memory access";
  const std::vector<double> expected = reference(activation, filter);
  if (c.problem.epilogue.act != Activation::none) {
    // The activation must have acted: some outputs sit at its bounds.
    const Epilogue& e = c.problem.epilogue;
    const double lo = e.act == Activation::clip ? e.clip_lo : 0, hi = e.act == Activation::clip ? e.clip_hi : 6;
    EXPECT_GT(std::count_if(expected.begin(), expected.end(), [&](double v) { return v == lo || v == hi; }), 0);
  }
  const ErrorStats stats = compare(output, expected);
  EXPECT_EQ(stats.nan_count, 0) << "outputs left unwritten";
  EXPECT_TRUE(passes(stats, c.problem.precision)) << "rel_l2 " << stats.rel_l2 << ", max_abs " << stats.max_abs;
  if (c.problem.precision == Precision::tf32) {
    // The emulated tensor core computes exactly on what it is given: against the reference of the tf32-rounded
    // inputs the only error left is fp32 accumulation, so a misplaced element cannot hide in tf32's tolerance.
    EXPECT_FALSE(tc_emulation::unrounded_tf32_operand) << "an operand reached mma.sync without tf32 rounding";
    HostTensor a_tf32 = activation, f_tf32 = filter;
    for (HostTensor* t : {&a_tf32, &f_tf32})
      for (std::int64_t i = 0; i < t->size(); ++i) {
        std::uint32_t bits;
        const float v = t->get(i);
        std::memcpy(&bits, &v, 4);
        bits = convgen::tc::round_to_tf32(bits);
        float r;
        std::memcpy(&r, &bits, 4);
        t->set(i, r);
      }
    const ErrorStats exact = compare(output, reference(a_tf32, f_tf32));
    EXPECT_LT(exact.rel_l2, 1e-6) << "max_abs " << exact.max_abs << " at output " << exact.max_abs_index;
  }
}

INSTANTIATE_TEST_SUITE_P(
    EdgeCases, IgemmTcEmulation,
    testing::Values(IGEMM_TC_EMULATION_CASE(fp16_nhwc_3x3), IGEMM_TC_EMULATION_CASE(bf16_nhwc_stride2_dilation2),
                    IGEMM_TC_EMULATION_CASE(tf32_nhwc_split3), IGEMM_TC_EMULATION_CASE(fp16_nchw_elementwise),
                    IGEMM_TC_EMULATION_CASE(bf16_nchw_vector_filter), IGEMM_TC_EMULATION_CASE(fp16_nhwc_stem),
                    IGEMM_TC_EMULATION_CASE(tf32_ncdhw_3d), IGEMM_TC_EMULATION_CASE(fp16_ndhwc_3d),
                    IGEMM_TC_EMULATION_CASE(fp16_nhwc_groups2_split2), IGEMM_TC_EMULATION_CASE(bf16_nwc_1d),
                    IGEMM_TC_EMULATION_CASE(fp16_nhwc_big_warp_tile),
                    IGEMM_TC_EMULATION_CASE(tf32_nhwc_pointwise_8warps),
                    IGEMM_TC_EMULATION_CASE(fp16_nhwc_3x3_bias_residual_relu6),
                    IGEMM_TC_EMULATION_CASE(tf32_nhwc_split3_bias_residual_relu6),
                    IGEMM_TC_EMULATION_CASE(bf16_nchw_bias_residual_clip)),
    [](const testing::TestParamInfo<EmulationCase>& param) { return std::string(param.param.name); });

}  // namespace
}  // namespace convgen
