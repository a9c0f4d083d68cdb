// act_sparse_emulation_test: runs templates/act_sparse.cu on the host, a std::thread per CUDA thread, against the
// float64 reference: the family's plan (the pack_filter setup into the persistent buffer, split-C's zeroed output,
// the main launch) on activations with uniform, channel and blob zeros from dense to all zero. Every sparse loop
// (shared halo, grouped shuffles, one shuffle per nonzero, ffs + switch), the dense loop forced and never taken, the
// channel loop unrolled by 2, channels loaded in batches, the block-staged loop (in one chunk and in several), ReLU
// on load, 1 to 4 output channels per lane, warps and blocks splitting the input channels, 1x1 and 3x3, stride 2,
// dilation 2, both layouts, K and tiles that fill no warp, and an epilogue. The warp
// instructions the template uses (__ballot_sync, __shfl_sync, __syncwarp) exchange through the warp's slots at a
// barrier of its 32 threads (support/host_warp.hpp), so every warp-uniform test and broadcast is checked without a GPU.
#include <math.h>

#include <atomic>
#include <barrier>
#include <bit>
#include <cstdint>
#include <iostream>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "act_sparse_params.hpp"
#include "generator/family.hpp"
#include "reference/inputs.hpp"
#include "reference/reference.hpp"
#include "support/corpus.hpp"
#include "support/emulation_checks.hpp"
#include "support/host_cuda.hpp"
#include "support/host_warp.hpp"
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
#include "templates/cluster.cuh"
#include "templates/common.cuh"
#include "templates/interface.cuh"

namespace act_sparse_emulation {
using namespace convgen::host_cuda;  // NOLINT(google-build-using-namespace): the template's CUDA words

}  // namespace act_sparse_emulation

// Declares namespace NAME with kProblem, kSpec and the cfg constants the generator's prelude would render for them,
// and includes the template there.
#define ACT_SPARSE_EMULATED(NAME, PROBLEM, SPEC)                                                                   \
  namespace act_sparse_emulation::NAME {                                                                       \
  constexpr convgen::testing_support::LiteralShape kProblem = PROBLEM;                                         \
  constexpr convgen::ActSparseParams kSpec = SPEC;                                                             \
  namespace cfg {                                                                                              \
  CONVGEN_HOST_PROBLEM_CONSTANTS(kProblem)                                                                     \
  constexpr int TILE_H = kSpec.tile_h, TILE_W = kSpec.tile_w, K_PER_LANE = kSpec.k_per_lane;                   \
  constexpr int WARPS = kSpec.warps, SPLIT_C = kSpec.split_c, DENSE_AT = kSpec.dense_at;                       \
  constexpr int SPARSE_MODE = kSpec.sparse_mode;                                                               \
  constexpr bool UNROLL2 = kSpec.unroll2, RELU_ON_LOAD = kSpec.relu_on_load;                                   \
  constexpr int LOAD_BATCH = kSpec.load_batch;                                                                 \
  constexpr bool BLOCK_STAGED = kSpec.block_staged;                                                            \
  constexpr bool CLUSTER_REDUCE = kSpec.cluster_reduce;                                                        \
  }                                                                                                            \
  }                                                                                                            \
  namespace act_sparse_emulation::NAME {                                                                       \
  using namespace convgen::host_cuda; /* NOLINT(google-build-using-namespace): the template's CUDA words */
#define ACT_SPARSE_END(NAME) }

// th, tw, tk, wp, sc, dm, sm, ur, relu (lb 1, or ACT_SPARSE_BATCHED_SPEC): the template's parameters in order.
#define ACT_SPARSE_SPEC(TH, TW, TK, WP, SC, DM, SM, UR, RELU) \
  ACT_SPARSE_BATCHED_SPEC(TH, TW, TK, WP, SC, DM, SM, UR, RELU, 1)
#define ACT_SPARSE_BATCHED_SPEC(TH, TW, TK, WP, SC, DM, SM, UR, RELU, LB) \
  ACT_SPARSE_FULL_SPEC(TH, TW, TK, WP, SC, DM, SM, UR, RELU, LB, false)
// The same with a block that stages its channels' halos and lists the live ones (bs 1, sm 3, ur 0, lb 1).
#define ACT_SPARSE_STAGED_SPEC(TH, TW, TK, WP, SC, DM, RELU) \
  ACT_SPARSE_FULL_SPEC(TH, TW, TK, WP, SC, DM, 3, false, RELU, 1, true)
#define ACT_SPARSE_FULL_SPEC(TH, TW, TK, WP, SC, DM, SM, UR, RELU, LB, BS)                                    \
  (convgen::ActSparseParams{.tile_h = TH,                                                                   \
                            .tile_w = TW,                                                                   \
                            .k_per_lane = TK,                                                               \
                            .warps = WP,                                                                    \
                            .split_c = SC,                                                                  \
                            .dense_at = DM,                                                                 \
                            .sparse_mode = SM,                                                              \
                            .unroll2 = UR,                                                                  \
                            .relu_on_load = RELU,                                                           \
                            .load_batch = LB,                                                               \
                            .block_staged = BS})

using convgen::Layout;
using Shape = convgen::testing_support::LiteralShape;

// 3x3 padding 1 on an odd 9x11 input: partial tiles at the right and bottom, K = 40 fills no second warp's channels.
#define ODD_3X3(LAYOUT)                                                                                        \
  (Shape{.n = 1, .c = 7, .k = 40, .input = {1, 9, 11}, .filter = {1, 3, 3}, .padding = {0, 1, 1}, .layout = LAYOUT})
// Batch 2, stride 2, 3x3 padding 1: 10x9 -> 5x5.
#define STRIDE2 \
  (Shape{.n = 2, .c = 6, .k = 20, .input = {1, 10, 9}, .filter = {1, 3, 3}, .stride = {1, 2, 2}, .padding = {0, 1, 1}})
#define STRIDE2_NHWC                                                                                         \
  (Shape{.n = 2,                                                                                          \
         .c = 6,                                                                                          \
         .k = 40,                                                                                         \
         .input = {1, 10, 9},                                                                             \
         .filter = {1, 3, 3},                                                                             \
         .stride = {1, 2, 2},                                                                             \
         .padding = {0, 1, 1},                                                                            \
         .layout = Layout::nhwc})
// Dilation 2, padding 2: 8x8 -> 8x8, taps two apart.
#define DILATED                                                                                           \
  (Shape{.n = 1,                                                                                          \
         .c = 5,                                                                                          \
         .k = 9,                                                                                          \
         .input = {1, 8, 8},                                                                              \
         .filter = {1, 3, 3},                                                                             \
         .padding = {0, 2, 2},                                                                            \
         .dilation = {1, 2, 2}})
// 1x1 (taps read [c][r][s][k], not as float4), channels-last, and 1x1 stride 2, channels-first.
#define POINTWISE \
  (Shape{.n = 1, .c = 9, .k = 100, .input = {1, 7, 6}, .filter = {1, 1, 1}, .layout = Layout::nhwc})
#define POINTWISE_S2 (Shape{.n = 1, .c = 8, .k = 16, .input = {1, 9, 9}, .filter = {1, 1, 1}, .stride = {1, 2, 2}})
// 3x3 with bias + ReLU applied at the store.
#define WITH_EPILOGUE                                                                                       \
  (Shape{.n = 1,                                                                                            \
         .c = 6,                                                                                            \
         .k = 12,                                                                                           \
         .input = {1, 7, 7},                                                                                \
         .filter = {1, 3, 3},                                                                               \
         .padding = {0, 1, 1},                                                                              \
         .epilogue = {.bias = true, .act = convgen::Activation::relu}})

// The shared-halo loop (sm3, the family's default), 2 warps splitting C, one block per tile.
ACT_SPARSE_EMULATED(odd_sm3, ODD_3X3(Layout::nchw), ACT_SPARSE_SPEC(4, 7, 1, 2, 1, 0, 3, false, false))
#define CONVGEN_ENTRY kernel_odd_sm3
#include "templates/act_sparse.cu"
#undef CONVGEN_ENTRY
ACT_SPARSE_END(odd_sm3)

// Grouped shuffles (sm2), channels-last, the channel loop unrolled by 2 over an odd count of channels per warp.
ACT_SPARSE_EMULATED(odd_nhwc_sm2_ur, ODD_3X3(Layout::nhwc), ACT_SPARSE_SPEC(3, 4, 1, 1, 1, 0, 2, true, false))
#define CONVGEN_ENTRY kernel_odd_nhwc_sm2_ur
#include "templates/act_sparse.cu"
#undef CONVGEN_ENTRY
ACT_SPARSE_END(odd_nhwc_sm2_ur)

// ffs + switch (sm1), 2 channels per lane, 2 blocks splitting C (atomic adds into the zeroed output).
ACT_SPARSE_EMULATED(odd_sm1_tk2_split, ODD_3X3(Layout::nchw), ACT_SPARSE_SPEC(2, 8, 2, 2, 2, 0, 1, false, false))
#define CONVGEN_ENTRY kernel_odd_sm1_tk2_split
#include "templates/act_sparse.cu"
#undef CONVGEN_ENTRY
ACT_SPARSE_END(odd_sm1_tk2_split)

// One shuffle per nonzero (sm0), stride 2, batch 2, ReLU on load.
ACT_SPARSE_EMULATED(stride2_sm0_relu, STRIDE2, ACT_SPARSE_SPEC(2, 3, 1, 2, 1, 0, 0, false, true))
#define CONVGEN_ENTRY kernel_stride2_sm0_relu
#include "templates/act_sparse.cu"
#undef CONVGEN_ENTRY
ACT_SPARSE_END(stride2_sm0_relu)

// The dense loop for every channel with a nonzero (dm 1), dilation 2, unrolled by 2.
ACT_SPARSE_EMULATED(dilated_dense, DILATED, ACT_SPARSE_SPEC(4, 4, 1, 1, 1, 1, 3, true, false))
#define CONVGEN_ENTRY kernel_dilated_dense
#include "templates/act_sparse.cu"
#undef CONVGEN_ENTRY
ACT_SPARSE_END(dilated_dense)

// Never the dense loop (dm 128, above any halo), 4 channels per lane (K = 100 in 128), 1x1 channels-last.
ACT_SPARSE_EMULATED(pointwise_tk4, POINTWISE, ACT_SPARSE_SPEC(2, 6, 4, 1, 1, 128, 3, false, false))
#define CONVGEN_ENTRY kernel_pointwise_tk4
#include "templates/act_sparse.cu"
#undef CONVGEN_ENTRY
ACT_SPARSE_END(pointwise_tk4)

// 1x1 stride 2, 4 warps over 8 channels, 3 blocks splitting them (the last block's warps partly idle).
ACT_SPARSE_EMULATED(pointwise_s2_split3, POINTWISE_S2, ACT_SPARSE_SPEC(5, 5, 1, 2, 3, 0, 2, false, false))
#define CONVGEN_ENTRY kernel_pointwise_s2_split3
#include "templates/act_sparse.cu"
#undef CONVGEN_ENTRY
ACT_SPARSE_END(pointwise_s2_split3)

// Channels loaded in batches: 4 at once over the 7 channels of one warp (a full batch, then 3 of 4), and 8 at once
// over one warp's 6 (one partial batch), channels-last, stride 2, batch 2, 2 channels per lane and ReLU on load.
ACT_SPARSE_EMULATED(odd_batch4, ODD_3X3(Layout::nchw), ACT_SPARSE_BATCHED_SPEC(2, 4, 1, 1, 1, 0, 3, false, false, 4))
#define CONVGEN_ENTRY kernel_odd_batch4
#include "templates/act_sparse.cu"
#undef CONVGEN_ENTRY
ACT_SPARSE_END(odd_batch4)
ACT_SPARSE_EMULATED(stride2_nhwc_batch8, STRIDE2_NHWC, ACT_SPARSE_BATCHED_SPEC(2, 2, 2, 1, 1, 0, 2, false, true, 8))
#define CONVGEN_ENTRY kernel_stride2_nhwc_batch8
#include "templates/act_sparse.cu"
#undef CONVGEN_ENTRY
ACT_SPARSE_END(stride2_nhwc_batch8)

// Bias + ReLU at the store, after the shared reduction of 2 warps.
ACT_SPARSE_EMULATED(epilogue_sm3, WITH_EPILOGUE, ACT_SPARSE_SPEC(7, 7, 1, 2, 1, 0, 3, false, false))
#define CONVGEN_ENTRY kernel_epilogue_sm3
#include "templates/act_sparse.cu"
#undef CONVGEN_ENTRY
ACT_SPARSE_END(epilogue_sm3)

// The block-staged channel loop (bs 1): 2 warps taking the listed channels of one chunk.
ACT_SPARSE_EMULATED(odd_staged, ODD_3X3(Layout::nchw), ACT_SPARSE_STAGED_SPEC(4, 7, 1, 2, 1, 0, false))
#define CONVGEN_ENTRY kernel_odd_staged
#include "templates/act_sparse.cu"
#undef CONVGEN_ENTRY
ACT_SPARSE_END(odd_staged)

// ... channels-last, stride 2, batch 2, 2 channels per lane (K = 40 in 64), 2 blocks splitting C, ReLU on load.
ACT_SPARSE_EMULATED(stride2_nhwc_staged_split, STRIDE2_NHWC, ACT_SPARSE_STAGED_SPEC(2, 2, 2, 2, 2, 0, true))
#define CONVGEN_ENTRY kernel_stride2_nhwc_staged_split
#include "templates/act_sparse.cu"
#undef CONVGEN_ENTRY
ACT_SPARSE_END(stride2_nhwc_staged_split)

// ... with room to stage 2 of the 5 channels at a time (3 chunks, the last of 1), one warp, the dense loop taken from
// 4 nonzeros on, dilation 2.
#undef CONVGEN_ACT_SPARSE_STAGE_BYTES
#define CONVGEN_ACT_SPARSE_STAGE_BYTES 800
ACT_SPARSE_EMULATED(dilated_staged_chunks, DILATED, ACT_SPARSE_STAGED_SPEC(4, 4, 1, 1, 1, 4, false))
#define CONVGEN_ENTRY kernel_dilated_staged_chunks
#include "templates/act_sparse.cu"
#undef CONVGEN_ENTRY
ACT_SPARSE_END(dilated_staged_chunks)
#undef CONVGEN_ACT_SPARSE_STAGE_BYTES

namespace convgen {
namespace {

using Pack = void (*)(const float*, float*);
using Main = void (*)(const float*, const float*, float*, const float*, const float*);  // ..., bias, residual

struct EmulationCase {
  const char* name;
  Problem problem;
  ActSparseParams spec;
  Pack pack;
  Main main;
};

void PrintTo(const EmulationCase& c, std::ostream* os) { *os << c.name; }

#define ACT_SPARSE_EMULATION_CASE(NAME)                                                                        \
  EmulationCase {                                                                                              \
#NAME, act_sparse_emulation::NAME::kProblem, act_sparse_emulation::NAME::kSpec,                            \
        &act_sparse_emulation::NAME::kernel_##NAME##_pack_filter, &act_sparse_emulation::NAME::kernel_##NAME \
  }

// Runs the family's plan on the host: pack_filter into the persistent buffer (poisoned first, so an element the
// setup leaves unwritten shows), then the run steps (a zero step where the plan has one) into an output that starts
// as NaN.
std::vector<float> run_plan(const EmulationCase& c, std::span<const float> activation, std::span<const float> filter,
                            std::span<const float> bias) {
  const LaunchPlan plan = family("act_sparse").plan(c.problem, to_spec(c.spec));
  const PlanBuffer* packed = plan.find("packed_filter");
  EXPECT_TRUE(packed != nullptr && packed->persistent);
  std::vector<float> buffer(static_cast<std::size_t>(packed ? packed->bytes / 4 : 0),
                            std::numeric_limits<float>::quiet_NaN());
  std::vector<float> output(static_cast<std::size_t>(output_elements(c.problem)),
                            std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(plan.setup.size(), 1u);
  for (const LaunchStep& step : plan.setup) {
    EXPECT_EQ(step.entry_suffix, "pack_filter");
    host_cuda::launch(step.geometry, [&] { c.pack(filter.data(), buffer.data()); });
  }
  for (const LaunchStep& step : plan.run) {
    if (step.kind == LaunchStep::Kind::zero) {
      EXPECT_EQ(step.buffer, "output");
      std::fill(output.begin(), output.end(), 0.0f);
      continue;
    }
    EXPECT_EQ(step.entry_suffix, "");
    const unsigned threads = step.geometry.block[0] * step.geometry.block[1] * step.geometry.block[2];
    host_cuda::launch(
        step.geometry,
        [&] { c.main(activation.data(), buffer.data(), output.data(), bias.empty() ? nullptr : bias.data(), nullptr); },
        host_cuda::MakeWarps{threads});
  }
  return output;
}

using testing_support::floats_of;

// The inputs each case runs on: every pattern at 50 and 90% zeros, and the edge cases dense, 99% and all zero.
struct Zeros {
  SparsityPattern pattern;
  double fraction;
};
const std::vector<Zeros> kZeros = {{SparsityPattern::uniform, 0.0},  {SparsityPattern::uniform, 0.5},
                                   {SparsityPattern::uniform, 0.9},  {SparsityPattern::channel, 0.5},
                                   {SparsityPattern::blob, 0.5},     {SparsityPattern::blob, 0.9},
                                   {SparsityPattern::uniform, 0.99}, {SparsityPattern::uniform, 1.0}};

class ActSparseEmulation : public testing::TestWithParam<EmulationCase> {};

TEST_P(ActSparseEmulation, MatchesTheReferenceOnEveryPatternAndZeroFraction) {
  // A relu1 kernel serves the problem that asks for max(0, x) on load, whose activation is the producer's output
  // before its ReLU (negative where the ReLU leaves a zero) and whose reference convolves max(0, x).
  EmulationCase c = GetParam();
  c.problem.relu_on_load = c.spec.relu_on_load;
  ASSERT_EQ(validate(c.problem), "");
  ASSERT_EQ(family("act_sparse").check_support(c.problem, testing_support::h100(), to_spec(c.spec)), std::nullopt);
  const std::vector<float> filter = floats_of(make_tensor(c.problem, TensorRole::filter, DenseRandom{}, 2));
  HostTensor bias_tensor;
  std::vector<float> bias;
  if (c.problem.epilogue.bias) {
    bias_tensor = make_tensor(c.problem, TensorRole::bias, DenseRandom{}, 3);
    bias = floats_of(bias_tensor);
  }
  for (const Zeros& z : kZeros) {
    SCOPED_TRACE(fmt::format("{} zeros {}", z.pattern, z.fraction));
    std::vector<float> activation =
        floats_of(make_tensor(c.problem, TensorRole::activation, SparseRandom{z.pattern, z.fraction}, 1));
    if (c.spec.relu_on_load) {
      ASSERT_EQ(*std::min_element(activation.begin(), activation.end()) < 0, z.fraction > 0) << "no negatives";
    }
    const std::vector<float> output = run_plan(c, activation, filter, bias);
    std::vector<double> expected = reference_conv(c.problem, activation, filter);
    const double scale = apply_epilogue(c.problem, expected, {}, bias_tensor, HostTensor{});
    const ErrorStats stats = compare(output, expected, scale);
    std::cout << fmt::format("act_sparse {} ({}), {} {:.0f}% zeros: relative L2 error {:.2e}, max error {:.2e}\n",
                             c.name, kernel_name(to_spec(c.spec)), z.pattern, 100 * z.fraction, stats.rel_l2,
                             stats.max_abs);
    EXPECT_EQ(stats.nan_count, 0) << "outputs left unwritten";
    EXPECT_EQ(stats.compared, output_elements(c.problem));
    // An all-zero input gives an all-zero convolution: compare then measures the absolute L2 error.
    EXPECT_LE(stats.rel_l2, 1e-5) << "max_abs " << stats.max_abs;
    EXPECT_LE(stats.max_abs, 1e-4);
  }
}

INSTANTIATE_TEST_SUITE_P(
    EdgeCases, ActSparseEmulation,
    testing::Values(ACT_SPARSE_EMULATION_CASE(odd_sm3), ACT_SPARSE_EMULATION_CASE(odd_nhwc_sm2_ur),
                    ACT_SPARSE_EMULATION_CASE(odd_sm1_tk2_split), ACT_SPARSE_EMULATION_CASE(stride2_sm0_relu),
                    ACT_SPARSE_EMULATION_CASE(dilated_dense), ACT_SPARSE_EMULATION_CASE(pointwise_tk4),
                    ACT_SPARSE_EMULATION_CASE(pointwise_s2_split3), ACT_SPARSE_EMULATION_CASE(epilogue_sm3),
                    ACT_SPARSE_EMULATION_CASE(odd_batch4), ACT_SPARSE_EMULATION_CASE(stride2_nhwc_batch8),
                    ACT_SPARSE_EMULATION_CASE(odd_staged), ACT_SPARSE_EMULATION_CASE(stride2_nhwc_staged_split),
                    ACT_SPARSE_EMULATION_CASE(dilated_staged_chunks)),
    [](const testing::TestParamInfo<EmulationCase>& param) { return std::string(param.param.name); });

}  // namespace
}  // namespace convgen
