// sparse24_tc_emulation_test: runs templates/sparse24_tc.cu on the host, a std::thread per CUDA thread, against the
// float64 reference: the family's plan (the pack setup that compresses the filter into its kept values and mma.sp
// metadata, the main launch, split-K's reduce) with mma.sp, ldmatrix and cp.async replaced by host definitions with
// the PTX ISA's semantics (support/host_tensor_core.hpp). fp16 and bf16, both layouts, 1x1, 3x3 and 5x5, stride 2,
// dilation 2, groups, reductions and channel counts that fill no tile, split-K, the fused epilogue, with 2:4 filters,
// 2:4 filters whose odd output channels are zero, and all-zero filters; every metadata nibble the pack writes must
// name two positions in increasing order (mma.sp::ordered_metadata).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <iostream>
#include <limits>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "convgen/weights.hpp"
#include "generator/family.hpp"
#include "reference/host_tensor.hpp"
#include "reference/pruning.hpp"
#include "reference/reference.hpp"
#include "sparse24_tc_params.hpp"
#include "support/corpus.hpp"
#include "support/emulation_checks.hpp"
#include "support/host_cuda.hpp"
#include "support/literal_shape.hpp"

// ---- The CUDA vocabulary of the template, for a host compiler ----------------------------------------------------
struct float2 {
  float x, y;
};
struct float4 {
  float x, y, z, w;
};
struct uint4 {
  unsigned x, y, z, w;
};
#include "templates/common.cuh"
#include "templates/interface.cuh"
#include "templates/two_four_pack.cuh"

#include "support/host_tensor_core.hpp"

// Declares namespace NAME with kProblem, kSpec and the cfg constants the generator's prelude would render for them,
// includes the template there, and wraps its three entries with untyped pointers.
#define SPARSE24_CASE(NAME, PROBLEM, SPEC)                                                                     \
  namespace tc_emulation::sparse24::NAME {                                                                               \
  constexpr convgen::testing_support::LiteralShape kProblem = PROBLEM;                                         \
  constexpr convgen::Sparse24TcParams kSpec = SPEC;                                                            \
  namespace cfg {                                                                                              \
  CONVGEN_HOST_PROBLEM_CONSTANTS(kProblem)                                                                     \
  constexpr int PRECISION = static_cast<int>(kProblem.precision);                                              \
  constexpr int BLOCK_M = kSpec.block_m, BLOCK_N = kSpec.block_n, BLOCK_K = kSpec.block_k;                     \
  constexpr int WARP_M = kSpec.warp_m, WARP_N = kSpec.warp_n, STAGES = kSpec.stages, SPLIT_K = kSpec.split_k;  \
  constexpr bool VECTOR = kSpec.vector;                                                                        \
  }                                                                                                            \
  }                                                                                                            \
  namespace tc_emulation::sparse24::NAME {
#define SPARSE24_ENTRIES(NAME)                                                                                       \
  using element_t = sparse24_tc::element_t;                                                                          \
  inline void run_pack(const void* filter, void* values, void* meta) {                                               \
    kernel_s24_##NAME##_pack(static_cast<const element_t*>(filter), static_cast<element_t*>(values),                     \
                         static_cast<unsigned short*>(meta));                                                        \
  }                                                                                                                  \
  inline void run_main(const void* activation, const void* values, const void* meta, void* output, float* workspace, \
                       const void* bias, const void* residual) {                                                     \
    kernel_s24_##NAME(static_cast<const element_t*>(activation), static_cast<const element_t*>(values),                  \
                  static_cast<const unsigned short*>(meta), static_cast<element_t*>(output), workspace,              \
                  static_cast<const element_t*>(bias), static_cast<const element_t*>(residual));                     \
  }                                                                                                                  \
  inline void run_reduce(const float* workspace, void* output, const void* bias, const void* residual) {             \
    kernel_s24_##NAME##_reduce(workspace, static_cast<element_t*>(output), static_cast<const element_t*>(bias),          \
                           static_cast<const element_t*>(residual));                                                 \
  }                                                                                                                  \
  }

#define SPEC(BM, BN, BK, WM, WN, ST, SK, V)                                                                        \
  (convgen::Sparse24TcParams{.block_m = BM, .block_n = BN, .block_k = BK, .warp_m = WM, .warp_n = WN, .stages = ST, \
                             .split_k = SK, .vector = V})

using convgen::Layout;
using convgen::Precision;
using Shape = convgen::testing_support::LiteralShape;

// fp16 NHWC 3x3 pad 1, batch 2, odd 9x7: K = 24 fills no 32-row tile, the reduction 144 no 64-element stage.
SPARSE24_CASE(fp16_nhwc_3x3,
              (Shape{.n = 2, .c = 16, .k = 24, .input = {1, 9, 7}, .filter = {1, 3, 3}, .padding = {0, 1, 1},
                     .layout = Layout::nhwc, .precision = Precision::fp16}),
              SPEC(32, 32, 64, 16, 16, 3, 1, true))
#define CONVGEN_ENTRY kernel_s24_fp16_nhwc_3x3
#include "templates/sparse24_tc.cu"
#undef CONVGEN_ENTRY
SPARSE24_ENTRIES(fp16_nhwc_3x3)

// bf16 NCHW 5x5 stride 2: element-wise activation loads, a reduction of 200 (no multiple of 32), 2 stages.
SPARSE24_CASE(bf16_nchw_5x5_stride2,
              (Shape{.n = 1, .c = 8, .k = 16, .input = {1, 11, 11}, .filter = {1, 5, 5}, .stride = {1, 2, 2},
                     .padding = {0, 2, 2}, .layout = Layout::nchw, .precision = Precision::bf16}),
              SPEC(16, 16, 32, 16, 16, 2, 1, false))
#define CONVGEN_ENTRY kernel_s24_bf16_nchw_5x5_stride2
#include "templates/sparse24_tc.cu"
#undef CONVGEN_ENTRY
SPARSE24_ENTRIES(bf16_nchw_5x5_stride2)

// fp16 NHWC, dilation 2, split-K 3: partial sums through the workspace, added by the reduce entry.
SPARSE24_CASE(fp16_nhwc_dilated_split3,
              (Shape{.n = 1, .c = 24, .k = 20, .input = {1, 9, 10}, .filter = {1, 3, 3}, .padding = {0, 2, 2},
                     .dilation = {1, 2, 2}, .layout = Layout::nhwc, .precision = Precision::fp16}),
              SPEC(32, 16, 32, 16, 16, 4, 3, true))
#define CONVGEN_ENTRY kernel_s24_fp16_nhwc_dilated_split3
#include "templates/sparse24_tc.cu"
#undef CONVGEN_ENTRY
SPARSE24_ENTRIES(fp16_nhwc_dilated_split3)

// bf16 NHWC, 2 groups of 16 -> 24 channels: row tiles stop at the group's end.
SPARSE24_CASE(bf16_nhwc_groups2,
              (Shape{.n = 1, .c = 32, .k = 48, .input = {1, 6, 7}, .filter = {1, 3, 3}, .padding = {0, 1, 1},
                     .groups = 2, .layout = Layout::nhwc, .precision = Precision::bf16}),
              SPEC(16, 32, 32, 16, 16, 3, 1, true))
#define CONVGEN_ENTRY kernel_s24_bf16_nhwc_groups2
#include "templates/sparse24_tc.cu"
#undef CONVGEN_ENTRY
SPARSE24_ENTRIES(bf16_nhwc_groups2)

// fp16 NHWC 1x1, batch 2: a 64x64 block of four 32x32 warps, 128-element stages, 5 stages.
SPARSE24_CASE(fp16_nhwc_pointwise_big_tile,
              (Shape{.n = 2, .c = 96, .k = 72, .input = {1, 6, 7}, .filter = {1, 1, 1}, .layout = Layout::nhwc,
                     .precision = Precision::fp16}),
              SPEC(64, 64, 128, 32, 32, 5, 1, true))
#define CONVGEN_ENTRY kernel_s24_fp16_nhwc_pointwise_big_tile
#include "templates/sparse24_tc.cu"
#undef CONVGEN_ENTRY
SPARSE24_ENTRIES(fp16_nhwc_pointwise_big_tile)

// The fused epilogue: bias + residual + ReLU in the main kernel (fp16), and clip through split-K's reduce (bf16 NCHW).
SPARSE24_CASE(fp16_nhwc_bias_residual_relu,
              (Shape{.n = 1, .c = 16, .k = 24, .input = {1, 8, 7}, .filter = {1, 3, 3}, .padding = {0, 1, 1},
                     .layout = Layout::nhwc, .precision = Precision::fp16,
                     .epilogue = {.beta = 1, .bias = true, .act = convgen::Activation::relu}}),
              SPEC(32, 32, 32, 16, 16, 3, 1, true))
#define CONVGEN_ENTRY kernel_s24_fp16_nhwc_bias_residual_relu
#include "templates/sparse24_tc.cu"
#undef CONVGEN_ENTRY
SPARSE24_ENTRIES(fp16_nhwc_bias_residual_relu)

SPARSE24_CASE(bf16_nchw_split2_clip,
              (Shape{.n = 1, .c = 16, .k = 16, .input = {1, 7, 7}, .filter = {1, 3, 3}, .padding = {0, 1, 1},
                     .layout = Layout::nchw, .precision = Precision::bf16,
                     .epilogue = {.bias = true, .act = convgen::Activation::clip, .clip_lo = -1, .clip_hi = 0.5}}),
              SPEC(16, 16, 32, 16, 16, 3, 2, false))
#define CONVGEN_ENTRY kernel_s24_bf16_nchw_split2_clip
#include "templates/sparse24_tc.cu"
#undef CONVGEN_ENTRY
SPARSE24_ENTRIES(bf16_nchw_split2_clip)

namespace convgen {
namespace {

struct EmulationCase {
  const char* name;
  Problem problem;
  Sparse24TcParams spec;
  void (*run_pack)(const void*, void*, void*);
  void (*run_main)(const void*, const void*, const void*, void*, float*, const void*, const void*);
  void (*run_reduce)(const float*, void*, const void*, const void*);
};

void PrintTo(const EmulationCase& c, std::ostream* os) { *os << c.name; }

#define SPARSE24_EMULATION_CASE(NAME)                                                                           \
  EmulationCase {                                                                                               \
#NAME, tc_emulation::sparse24::NAME::kProblem, tc_emulation::sparse24::NAME::kSpec, &tc_emulation::sparse24::NAME::run_pack,              \
        &tc_emulation::sparse24::NAME::run_main, &tc_emulation::sparse24::NAME::run_reduce                                          \
  }

// The filters each case runs with: pruned to 2:4 from seeded random values, the same with every odd output channel
// zero, and all zero.
enum class FilterKind { two_four, odd_channels_zero, all_zero };
std::string_view describe(FilterKind kind) {
  switch (kind) {
    case FilterKind::two_four: return "2:4";
    case FilterKind::odd_channels_zero: return "2:4, odd channels zero";
    case FilterKind::all_zero: return "all zero";
  }
  return "";
}

std::vector<float> filter_of(const Problem& p, FilterKind kind) {
  std::vector<float> values = two_four_pruned_random_filter(p, 2);
  const std::int64_t per_channel = filter_elements(p) / p.k;
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(values.size()); ++i)
    if (kind == FilterKind::all_zero || (kind == FilterKind::odd_channels_zero && (i / per_channel) % 2 == 1))
      values[static_cast<std::size_t>(i)] = 0;
  return values;
}

std::vector<std::byte> poisoned(std::int64_t bytes) {
  return std::vector<std::byte>(static_cast<std::size_t>(bytes), std::byte{0xff});
}

// Runs the family's plan on the host: the pack setup into the persistent buffers (poisoned first), then the main
// entry and (split-K) the reduce entry, with a workspace of the plan's size; output and workspace start as NaN so
// that anything left unwritten fails the comparison.
HostTensor run_on_host(const EmulationCase& c, const Problem& p, const HostTensor& activation,
                       const HostTensor& filter, const HostTensor& bias, const HostTensor& residual) {
  const void* bias_data = bias.size() > 0 ? bias.bytes().data() : nullptr;
  const void* residual_data = residual.size() > 0 ? residual.bytes().data() : nullptr;
  const LaunchPlan plan = family("sparse24_tc").plan(p, to_spec(c.spec));
  const PlanBuffer* values = plan.find("packed_values");
  const PlanBuffer* meta = plan.find("packed_meta");
  EXPECT_TRUE(values != nullptr && values->persistent && meta != nullptr && meta->persistent);
  std::vector<std::byte> packed_values = poisoned(values ? values->bytes : 0);
  std::vector<std::byte> packed_meta = poisoned(meta ? meta->bytes : 0);
  HostTensor output = HostTensor::for_problem(p, TensorRole::output);
  std::fill(output.bytes().begin(), output.bytes().end(), std::byte{0xff});
  std::vector<float> workspace(static_cast<std::size_t>(plan.workspace_bytes() / 4),
                               std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(plan.setup.size(), 1u);
  for (const LaunchStep& step : plan.setup) {
    EXPECT_EQ(step.entry_suffix, "pack");
    host_cuda::launch(step.geometry,
                      [&] { c.run_pack(filter.bytes().data(), packed_values.data(), packed_meta.data()); });
  }
  for (const LaunchStep& step : plan.run) {
    EXPECT_EQ(step.kind, LaunchStep::Kind::kernel);
    if (step.entry_suffix.empty()) {
      tc_emulation::run_blocks(step.geometry, [&] {
        c.run_main(activation.bytes().data(), packed_values.data(), packed_meta.data(), output.bytes().data(),
                   workspace.data(), bias_data, residual_data);
      });
    } else {
      EXPECT_EQ(step.entry_suffix, "reduce");
      tc_emulation::run_blocks(step.geometry,
                               [&] { c.run_reduce(workspace.data(), output.bytes().data(), bias_data, residual_data); });
    }
  }
  return output;
}

// Relative L2 error against the reference rounded to the output type (measured: 0 to 1.5e-6, one unit in the last
// place on a few outputs).
constexpr double kExactLimit = 1e-5;

class Sparse24TcEmulation : public testing::TestWithParam<EmulationCase> {};

TEST_P(Sparse24TcEmulation, MatchesTheReferenceWithEveryFilterKind) {
  const EmulationCase& c = GetParam();
  for (FilterKind kind : {FilterKind::two_four, FilterKind::odd_channels_zero, FilterKind::all_zero}) {
    SCOPED_TRACE(describe(kind));
    const Problem p = with_weights(c.problem, filter_of(c.problem, kind));
    ASSERT_EQ(validate(p), "");
    ASSERT_TRUE(is_two_four_sparse(p));
    ASSERT_EQ(family("sparse24_tc").check_support(p, testing_support::h100(), to_spec(c.spec)), std::nullopt);
    HostTensor activation = HostTensor::for_problem(p, TensorRole::activation);
    fill_random(activation, 1);
    const HostTensor filter =
        HostTensor::from_floats(HostTensor::for_problem(p, TensorRole::filter).type(), *p.weights.values);
    const testing_support::EpilogueOperands operands = testing_support::random_epilogue_operands(p);
    const HostTensor& bias = operands.bias;
    const HostTensor& residual = operands.residual;
    tc_emulation::bad_shared_access = false;
    tc_emulation::bad_sparse_metadata = false;
    const HostTensor output = run_on_host(c, p, activation, filter, bias, residual);
    EXPECT_FALSE(tc_emulation::bad_shared_access) << "a misaligned or out-of-range shared-memory access";
    EXPECT_FALSE(tc_emulation::bad_sparse_metadata) << "a metadata nibble whose positions are not in order";
    std::vector<double> expected = reference_conv(p, activation, filter);
    const double scale = apply_epilogue(p, expected, {}, bias, residual);
    const ErrorStats stats = compare(output, expected, scale);
    std::cout << fmt::format("sparse24_tc {} ({}), {} filter: relative L2 error {:.2e}, max error {:.2e}\n", c.name,
                             kernel_name(to_spec(c.spec)), describe(kind), stats.rel_l2, stats.max_abs);
    EXPECT_EQ(stats.nan_count, 0) << "outputs left unwritten";
    EXPECT_EQ(stats.compared, output_elements(p));
    EXPECT_TRUE(passes(stats, p.precision)) << "rel_l2 " << stats.rel_l2 << ", max_abs " << stats.max_abs;
    // The emulated tensor core computes exactly on what it is given, so against the reference rounded to the output's
    // type the only differences left are fp32 accumulation's, which move an output by at most one unit in the last
    // place: a misplaced value or metadata nibble cannot hide in fp16's or bf16's tolerance.
    const ErrorStats exact = compare(output, testing_support::rounded_to(output.type(), expected), scale);
    std::cout << fmt::format("  against the reference in {}: relative L2 error {:.2e}\n", p.precision, exact.rel_l2);
    EXPECT_LT(exact.rel_l2, kExactLimit) << "max_abs " << exact.max_abs << " at output " << exact.max_abs_index;
  }
}

INSTANTIATE_TEST_SUITE_P(
    EdgeCases, Sparse24TcEmulation,
    testing::Values(SPARSE24_EMULATION_CASE(fp16_nhwc_3x3), SPARSE24_EMULATION_CASE(bf16_nchw_5x5_stride2),
                    SPARSE24_EMULATION_CASE(fp16_nhwc_dilated_split3), SPARSE24_EMULATION_CASE(bf16_nhwc_groups2),
                    SPARSE24_EMULATION_CASE(fp16_nhwc_pointwise_big_tile),
                    SPARSE24_EMULATION_CASE(fp16_nhwc_bias_residual_relu),
                    SPARSE24_EMULATION_CASE(bf16_nchw_split2_clip)),
    [](const testing::TestParamInfo<EmulationCase>& param) { return std::string(param.param.name); });

}  // namespace
}  // namespace convgen
