// weight_sparse_emulation_test: runs templates/weight_sparse.cu's table variants (tb1, and tb2 with its activations
// staged in shared memory) on the host, a std::thread per CUDA thread: the family's plan, its pack_pattern setup
// (whose table is checked entry by entry against the filter) and its main launch, against the float64 reference.
// Both layouts, 1x1 and 3x3, stride 1 and 2, dilation, padding past the input, 1-D, channels and pixels that fill no
// block, staged chunks with a partial last, filters with all-zero channels and none nonzero; the staged table with
// live channels (lc) also on activations with dead channels and all zero (support/host_warp.hpp: its ballots).
#include <math.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <iostream>
#include <limits>
#include <span>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "convgen/weights.hpp"
#include "generator/family.hpp"
#include "reference/pruning.hpp"
#include "reference/reference.hpp"
#include "support/corpus.hpp"
#include "support/emulation_checks.hpp"
#include "support/host_cuda.hpp"
#include "support/host_warp.hpp"
#include "support/literal_shape.hpp"
#include "weight_sparse_params.hpp"

#include "templates/interface.cuh"

#define __shared__ static  // a block's threads run at once and meet at a barrier (support/host_cuda.hpp)
#define __align__(n) __attribute__((aligned(n)))
struct float2 {
  float x, y;
};
struct float4 {
  float x, y, z, w;
};
inline float2 __ldg(const float2* address) { return *address; }
inline float __int_as_float(int bits) { return std::bit_cast<float>(bits); }
inline int __float_as_int(float value) { return std::bit_cast<int>(value); }
#include "templates/common.cuh"

namespace weight_sparse_emulation {
using namespace convgen::host_cuda;  // NOLINT(google-build-using-namespace): the template's CUDA words
}  // namespace weight_sparse_emulation

// Declares namespace NAME with kProblem, kSpec, the cfg constants the generator's prelude would render for them and
// the table variant's ws_code (SLOTS = C * R * S: room for any filter of the shape; the family renders the fullest
// channel's count, tested in weight_sparse_test), and includes the template there. TB is the variant (1 the table,
// 2 the staged table), SC the staged table's channels per chunk (the family's choice is tested in
// weight_sparse_test; small ones here, for several chunks and a partial last) and TH x TW its output tile for
// filters other than 1x1 (the family's choice, which its launch grid assumes: the test checks it renders the same).
// LC: live channels (lc, the staged table only; CHUNK_SLOTS = SLOTS, room for any row).
#define WEIGHT_SPARSE_VARIANT_CASE(NAME, PROBLEM, BP, KG, PT, SK, TB, SC, TH, TW) \
  WEIGHT_SPARSE_CASE_OF(NAME, PROBLEM, BP, KG, PT, SK, TB, SC, TH, TW, false)
#define WEIGHT_SPARSE_LIVE_CASE(NAME, PROBLEM, BP, KG, PT, SK, SC, TH, TW) \
  WEIGHT_SPARSE_CASE_OF(NAME, PROBLEM, BP, KG, PT, SK, 2, SC, TH, TW, true)
#define WEIGHT_SPARSE_CASE_OF(NAME, PROBLEM, BP, KG, PT, SK, TB, SC, TH, TW, LC)            \
  namespace weight_sparse_emulation::NAME {                                                 \
  constexpr convgen::testing_support::LiteralShape kProblem = PROBLEM;                      \
  constexpr convgen::WeightSparseParams kSpec{.block_pixels = BP,                           \
                                              .k_group = KG,                                \
                                              .immediates = false,                          \
                                              .table = TB,                                  \
                                              .pixels_per_thread = PT,                      \
                                              .split = SK,                                  \
                                              .live_channels = LC};                         \
  namespace cfg {                                                                           \
  CONVGEN_HOST_PROBLEM_CONSTANTS(kProblem)                                                  \
  constexpr int BLOCK_PIXELS = kSpec.block_pixels, K_GROUP = kSpec.k_group;                 \
  constexpr bool IMMEDIATES = kSpec.immediates;                                             \
  constexpr int TABLE = kSpec.table;                                                        \
  constexpr int PIXELS_PER_THREAD = kSpec.pixels_per_thread, SPLIT = kSpec.split;           \
  constexpr bool LIVE_CHANNELS = kSpec.live_channels;                                       \
  }                                                                                         \
  namespace ws_code {                                                                       \
  constexpr int NNZ = 0;                                                                    \
  constexpr int SLOTS = cfg::C * cfg::R * cfg::S;                                           \
  constexpr int STAGE_CHANNELS = SC;                                                        \
  constexpr int CHUNK_SLOTS = SLOTS;                                                        \
  constexpr int TILE_H = TH, TILE_W = TW;                                                   \
  const int kGather[1] = {0};                                                               \
  inline void group(int, const float*, const long long*, unsigned, const float*, float*) {} \
  }                                                                                         \
  }                                                                                         \
  namespace weight_sparse_emulation::NAME {
#define WEIGHT_SPARSE_END(NAME) }
#define WEIGHT_SPARSE_CASE(NAME, PROBLEM, BP, KG, PT, SK) \
  WEIGHT_SPARSE_VARIANT_CASE(NAME, PROBLEM, BP, KG, PT, SK, 1, 1, 1, 1)

using Shape = convgen::testing_support::LiteralShape;
using convgen::Layout;

// 3x3 stride 1 pad 1, batch 2, odd sizes; 7 channels in groups of 3, two pixels a thread, rows in 2 slices.
WEIGHT_SPARSE_CASE(nchw_3x3_s1,
                   (Shape{.n = 2, .c = 5, .k = 7, .input = {1, 9, 11}, .filter = {1, 3, 3}, .padding = {0, 1, 1}}), 32,
                   3, 2, 2)
#define CONVGEN_ENTRY kernel_nchw_3x3_s1
#include "templates/weight_sparse.cu"
#undef CONVGEN_ENTRY
WEIGHT_SPARSE_END(nchw_3x3_s1)

// 3x3 stride 2 in NHWC, four pixels a thread (one block covers the image).
WEIGHT_SPARSE_CASE(nhwc_3x3_s2,
                   (Shape{.n = 1,
                          .c = 6,
                          .k = 5,
                          .input = {1, 13, 10},
                          .filter = {1, 3, 3},
                          .stride = {1, 2, 2},
                          .padding = {0, 1, 1},
                          .layout = Layout::nhwc}),
                   32, 2, 4, 1)
#define CONVGEN_ENTRY kernel_nhwc_3x3_s2
#include "templates/weight_sparse.cu"
#undef CONVGEN_ENTRY
WEIGHT_SPARSE_END(nhwc_3x3_s2)

// 1x1 stride 2 (a projection shortcut), 9 channels in groups of 4, rows in 4 slices.
WEIGHT_SPARSE_CASE(nchw_1x1_s2,
                   (Shape{.n = 1, .c = 16, .k = 9, .input = {1, 15, 15}, .filter = {1, 1, 1}, .stride = {1, 2, 2}}), 64,
                   4, 1, 4)
#define CONVGEN_ENTRY kernel_nchw_1x1_s2
#include "templates/weight_sparse.cu"
#undef CONVGEN_ENTRY
WEIGHT_SPARSE_END(nchw_1x1_s2)

// 1x1 stride 1 in NHWC, batch 2, a channel a block, rows of at most 12 in 8 slices.
WEIGHT_SPARSE_CASE(nhwc_1x1_s1,
                   (Shape{.n = 2, .c = 12, .k = 6, .input = {1, 7, 7}, .filter = {1, 1, 1}, .layout = Layout::nhwc}),
                   32, 1, 2, 8)
#define CONVGEN_ENTRY kernel_nhwc_1x1_s1
#include "templates/weight_sparse.cu"
#undef CONVGEN_ENTRY
WEIGHT_SPARSE_END(nhwc_1x1_s1)

// Dilation 2 and padding 3 around a 3x4 input: most taps outside; K = 3 below the group of 4; 2 slices.
WEIGHT_SPARSE_CASE(
    dilated_padding_beyond_input,
    (Shape{
        .n = 1, .c = 4, .k = 3, .input = {1, 3, 4}, .filter = {1, 3, 3}, .padding = {0, 3, 3}, .dilation = {1, 2, 2}}),
    32, 4, 4, 2)
#define CONVGEN_ENTRY kernel_dilated_padding_beyond_input
#include "templates/weight_sparse.cu"
#undef CONVGEN_ENTRY
WEIGHT_SPARSE_END(dilated_padding_beyond_input)

// 1-D NWC, 5 taps, stride 2, padding 2.
WEIGHT_SPARSE_CASE(conv1d_nwc,
                   (Shape{.n = 1,
                          .c = 3,
                          .k = 4,
                          .input = {1, 1, 40},
                          .filter = {1, 1, 5},
                          .stride = {1, 1, 2},
                          .padding = {0, 0, 2},
                          .layout = Layout::nwc}),
                   32, 2, 2, 1)
#define CONVGEN_ENTRY kernel_conv1d_nwc
#include "templates/weight_sparse.cu"
#undef CONVGEN_ENTRY
WEIGHT_SPARSE_END(conv1d_nwc)

// Shapes the staged table serves both without and with live channels (lc): 3x3 padding 1, batch 2, on a 9x13 image;
// NHWC 3x3 stride 2, dilation 2, padding 2; 1x1 NHWC, batch 2.
constexpr Shape kPatchNchw =
    Shape{.n = 2, .c = 6, .k = 11, .input = {1, 9, 13}, .filter = {1, 3, 3}, .padding = {0, 1, 1}};
constexpr Shape kDilatedPatchNhwc = Shape{.n = 1,
                                          .c = 5,
                                          .k = 7,
                                          .input = {1, 15, 12},
                                          .filter = {1, 3, 3},
                                          .stride = {1, 2, 2},
                                          .padding = {0, 2, 2},
                                          .dilation = {1, 2, 2},
                                          .layout = Layout::nhwc};
constexpr Shape kVector1x1Nhwc =
    Shape{.n = 2, .c = 10, .k = 13, .input = {1, 5, 9}, .filter = {1, 1, 1}, .layout = Layout::nhwc};

// The staged table (tb2, 1x1 filters): 12 channels staged 5 at a time (the last chunk partial), 19 output channels
// in groups of 8 (the last partial) shared by 2 slices, batch 2, two pixels a thread and a tile past the last pixel.
WEIGHT_SPARSE_VARIANT_CASE(nchw_1x1_staged,
                           (Shape{.n = 2, .c = 12, .k = 19, .input = {1, 7, 9}, .filter = {1, 1, 1}}), 32, 8, 2, 2,
                           2, 5, 1, 1)
#define CONVGEN_ENTRY kernel_nchw_1x1_staged
#include "templates/weight_sparse.cu"
#undef CONVGEN_ENTRY
WEIGHT_SPARSE_END(nchw_1x1_staged)

// The staged table in NHWC, stride 2 with padding 1 (pixels that read outside the input stage zeros), the group of
// 16 larger than K (4 slices of 4: the last slices past K), every channel in one chunk.
WEIGHT_SPARSE_VARIANT_CASE(nhwc_1x1_s2_padded_staged,
                           (Shape{.n = 1,
                                  .c = 7,
                                  .k = 10,
                                  .input = {1, 9, 8},
                                  .filter = {1, 1, 1},
                                  .stride = {1, 2, 2},
                                  .padding = {0, 1, 1},
                                  .layout = Layout::nhwc}),
                           32, 16, 1, 4, 2, 7, 1, 1)
#define CONVGEN_ENTRY kernel_nhwc_1x1_s2_padded_staged
#include "templates/weight_sparse.cu"
#undef CONVGEN_ENTRY
WEIGHT_SPARSE_END(nhwc_1x1_s2_padded_staged)

// The staged table on a 1-D NWC layer, stride 3, batch 3: 9 channels 4 at a time.
WEIGHT_SPARSE_VARIANT_CASE(conv1d_nwc_staged,
                           (Shape{.n = 3,
                                  .c = 9,
                                  .k = 5,
                                  .input = {1, 1, 30},
                                  .filter = {1, 1, 1},
                                  .stride = {1, 1, 3},
                                  .layout = Layout::nwc}),
                           32, 8, 1, 1, 2, 4, 1, 1)
#define CONVGEN_ENTRY kernel_conv1d_nwc_staged
#include "templates/weight_sparse.cu"
#undef CONVGEN_ENTRY
WEIGHT_SPARSE_END(conv1d_nwc_staged)

// The staged table over an input patch: 3x3 padding 1, batch 2, an 8x8 output tile (two pixels a thread) on a
// 9x13 image (partial tiles both ways), 6 channels 4 at a time, 11 output channels in groups of 8, a channel for
// each of 8 slices.
WEIGHT_SPARSE_VARIANT_CASE(nchw_3x3_patch_staged, kPatchNchw, 32, 8, 2, 8, 2, 4, 8, 8)
#define CONVGEN_ENTRY kernel_nchw_3x3_patch_staged
#include "templates/weight_sparse.cu"
#undef CONVGEN_ENTRY
WEIGHT_SPARSE_END(nchw_3x3_patch_staged)

// NHWC, 3x3 stride 2, dilation 2, padding 2: a 5x6 tile of the 8x6 output (two threads a slice idle), 5
// channels 2 at a time, 2 slices.
WEIGHT_SPARSE_VARIANT_CASE(nhwc_3x3_s2_dilated_patch_staged, kDilatedPatchNhwc, 32, 8, 1, 2, 2, 2, 5, 6)
#define CONVGEN_ENTRY kernel_nhwc_3x3_s2_dilated_patch_staged
#include "templates/weight_sparse.cu"
#undef CONVGEN_ENTRY
WEIGHT_SPARSE_END(nhwc_3x3_s2_dilated_patch_staged)

// 1-D NWC, 5 taps, stride 2, padding 2, batch 2: a tile of the whole 20-pixel row.
WEIGHT_SPARSE_VARIANT_CASE(conv1d_nwc_patch_staged,
                           (Shape{.n = 2,
                                  .c = 3,
                                  .k = 4,
                                  .input = {1, 1, 40},
                                  .filter = {1, 1, 5},
                                  .stride = {1, 1, 2},
                                  .padding = {0, 0, 2},
                                  .layout = Layout::nwc}),
                           32, 8, 1, 1, 2, 3, 1, 20)
#define CONVGEN_ENTRY kernel_conv1d_nwc_patch_staged
#include "templates/weight_sparse.cu"
#undef CONVGEN_ENTRY
WEIGHT_SPARSE_END(conv1d_nwc_patch_staged)

// Dilation 2 and padding 3 around a 3x4 input (most of the patch is padding), 4 channels 3 at a time.
WEIGHT_SPARSE_VARIANT_CASE(padding_beyond_input_patch_staged,
                           (Shape{.n = 1, .c = 4, .k = 3, .input = {1, 3, 4}, .filter = {1, 3, 3},
                                  .padding = {0, 3, 3}, .dilation = {1, 2, 2}}),
                           32, 8, 2, 1, 2, 3, 5, 6)
#define CONVGEN_ENTRY kernel_padding_beyond_input_patch_staged
#include "templates/weight_sparse.cu"
#undef CONVGEN_ENTRY
WEIGHT_SPARSE_END(padding_beyond_input_patch_staged)

// The staged 1x1 table reading four pixels a thread as one float4, NHWC (its staged rows padded by 4), batch 2:
// 10 channels 3 at a time, 13 output channels in groups of 8 shared by 2 slices, a tile past the last pixel.
WEIGHT_SPARSE_VARIANT_CASE(nhwc_1x1_staged_vector4, kVector1x1Nhwc, 32, 8, 4, 2, 2, 3, 1, 1)
#define CONVGEN_ENTRY kernel_nhwc_1x1_staged_vector4
#include "templates/weight_sparse.cu"
#undef CONVGEN_ENTRY
WEIGHT_SPARSE_END(nhwc_1x1_staged_vector4)

// The widest staged block: 128 output channels in 16 one-warp slices, eight pixels a thread (two float4s), 130
// channels (a second group of 2), stride 2, 7 input channels 4 at a time.
WEIGHT_SPARSE_VARIANT_CASE(
    nchw_1x1_staged_wide,
    (Shape{.n = 1, .c = 7, .k = 130, .input = {1, 11, 13}, .filter = {1, 1, 1}, .stride = {1, 2, 2}}), 32, 128, 8, 16,
    2, 4, 1, 1)
#define CONVGEN_ENTRY kernel_nchw_1x1_staged_wide
#include "templates/weight_sparse.cu"
#undef CONVGEN_ENTRY
WEIGHT_SPARSE_END(nchw_1x1_staged_wide)

// The staged 1x1 table channels-first with more pixels a block than threads (pixels staged by the general loop),
// float4 reads, stride 2 and padding 1 (outside pixels stage zeros), 9 channels 4 at a time.
WEIGHT_SPARSE_VARIANT_CASE(
    nchw_1x1_staged_vector4_padded,
    (Shape{
        .n = 1, .c = 9, .k = 6, .input = {1, 10, 9}, .filter = {1, 1, 1}, .stride = {1, 2, 2}, .padding = {0, 1, 1}}),
    32, 8, 4, 2, 2, 4, 1, 1)
#define CONVGEN_ENTRY kernel_nchw_1x1_staged_vector4_padded
#include "templates/weight_sparse.cu"
#undef CONVGEN_ENTRY
WEIGHT_SPARSE_END(nchw_1x1_staged_vector4_padded)

// The fused epilogue through the staged table's stores: 2 * conv - residual + bias through ReLU, channels-first 1x1
// read as float4s (staged at a fixed pixel a thread), batch 2, a tile past the last pixel.
WEIGHT_SPARSE_VARIANT_CASE(nchw_1x1_staged_epilogue,
                           (Shape{
                               .n = 2,
                               .c = 6,
                               .k = 10,
                               .input = {1, 5, 7},
                               .filter = {1, 1, 1},
                               .epilogue = {.alpha = 2, .beta = -1, .bias = true, .act = convgen::Activation::relu}}),
                           32, 8, 4, 8, 2, 6, 1, 1)
#define CONVGEN_ENTRY kernel_nchw_1x1_staged_epilogue
#include "templates/weight_sparse.cu"
#undef CONVGEN_ENTRY
WEIGHT_SPARSE_END(nchw_1x1_staged_epilogue)

// And over a patch, NHWC, bias through ReLU6: 3x3 padding 1, an 8x8 tile of a 9x10 image, 4 slices.
WEIGHT_SPARSE_VARIANT_CASE(nhwc_3x3_patch_staged_epilogue,
                           (Shape{.n = 1,
                                  .c = 5,
                                  .k = 9,
                                  .input = {1, 9, 10},
                                  .filter = {1, 3, 3},
                                  .padding = {0, 1, 1},
                                  .layout = Layout::nhwc,
                                  .epilogue = {.bias = true, .act = convgen::Activation::relu6}}),
                           32, 8, 2, 4, 2, 5, 8, 8)
#define CONVGEN_ENTRY kernel_nhwc_3x3_patch_staged_epilogue
#include "templates/weight_sparse.cu"
#undef CONVGEN_ENTRY
WEIGHT_SPARSE_END(nhwc_3x3_patch_staged_epilogue)

// Live channels (lc): the staged patch table compacting each chunk's rows to the channels with a nonzero, NCHW, 3x3
// padding 1, batch 2, an 8x8 tile (two pixels a thread) on a 9x13 image, 6 channels 4 at a time, 8 slices.
WEIGHT_SPARSE_LIVE_CASE(nchw_3x3_patch_live, kPatchNchw, 32, 8, 2, 8, 4, 8, 8)
#define CONVGEN_ENTRY kernel_nchw_3x3_patch_live
#include "templates/weight_sparse.cu"
#undef CONVGEN_ENTRY
WEIGHT_SPARSE_END(nchw_3x3_patch_live)

// ... NHWC, 3x3 stride 2, dilation 2, padding 2, a 5x6 tile, 5 channels 2 at a time (a partial last chunk).
WEIGHT_SPARSE_LIVE_CASE(nhwc_3x3_s2_dilated_live, kDilatedPatchNhwc, 32, 8, 1, 2, 2, 5, 6)
#define CONVGEN_ENTRY kernel_nhwc_3x3_s2_dilated_live
#include "templates/weight_sparse.cu"
#undef CONVGEN_ENTRY
WEIGHT_SPARSE_END(nhwc_3x3_s2_dilated_live)

// ... a 1x1 tile of four pixels a thread read as float4, NHWC, batch 2, 10 channels 3 at a time, 13 output channels
// (a partial second group) in 2 slices, two warps compacting 8 rows.
WEIGHT_SPARSE_LIVE_CASE(nhwc_1x1_live_vector4, kVector1x1Nhwc, 32, 8, 4, 2, 3, 1, 1)
#define CONVGEN_ENTRY kernel_nhwc_1x1_live_vector4
#include "templates/weight_sparse.cu"
#undef CONVGEN_ENTRY
WEIGHT_SPARSE_END(nhwc_1x1_live_vector4)

namespace convgen {
namespace {

// The activation with zeros where lc must drop entries: every third channel zero everywhere, and the next one zero
// on the first half of each image's rows (whole rows: a tile's patch may lie there or straddle it).
std::vector<float> with_dead_channels(const Problem& p, std::vector<float> activation) {
  const int h_count = p.input.h, w_count = p.input.w;
  for (int n = 0; n < p.n; ++n)
    for (int c = 0; c < p.c; ++c)
      for (int h = 0; h < h_count; ++h)
        for (int w = 0; w < w_count; ++w) {
          const bool zero = c % 3 == 1 || (c % 3 == 2 && h < (h_count + 1) / 2);
          if (!zero) continue;
          const std::int64_t index = channels_last(p.layout)
                                         ? ((std::int64_t{n} * h_count + h) * w_count + w) * p.c + c
                                         : ((std::int64_t{n} * p.c + c) * h_count + h) * w_count + w;
          activation[static_cast<std::size_t>(index)] = 0.0f;
        }
  return activation;
}

using Setup = void (*)(const float*, int*, float*);
using Main = void (*)(const float*, const float*, const int*, float*, const float*, const float*);

struct EmulationCase {
  const char* name;
  Problem problem;
  WeightSparseParams spec;
  int slots;
  int stage_channels;
  int tile_h, tile_w;    // the staged table's output tile (patch variant)
  int stage_row;         // floats of a staged channel
  int patch_w;           // the staged patch's width (patch variant)
  bool patch;
  Setup setup;
  Main main;
};

void PrintTo(const EmulationCase& c, std::ostream* os) { *os << c.name; }

#define WEIGHT_SPARSE_EMULATION_CASE(NAME)                                                                           \
  EmulationCase {                                                                                                    \
#NAME, weight_sparse_emulation::NAME::kProblem, weight_sparse_emulation::NAME::kSpec,                            \
        weight_sparse_emulation::NAME::ws_code::SLOTS, weight_sparse_emulation::NAME::ws_code::STAGE_CHANNELS,       \
        weight_sparse_emulation::NAME::ws_code::TILE_H, weight_sparse_emulation::NAME::ws_code::TILE_W,              \
        weight_sparse_emulation::NAME::weight_sparse::STAGE_ROW, weight_sparse_emulation::NAME::weight_sparse::PATCH_W, \
        weight_sparse_emulation::NAME::weight_sparse::PATCH,                                                         \
        &weight_sparse_emulation::NAME::kernel_##NAME##_pack_pattern,                                                \
        &weight_sparse_emulation::NAME::kernel_##NAME                                                                \
  }

// The staged table's chunks of input channels.
int stage_chunks(const EmulationCase& c) { return (c.problem.c + c.stage_channels - 1) / c.stage_channels; }

// The table pack_pattern writes: per channel its count, then its (code, value) entries (and for the staged table
// where each chunk of input channels starts in each row).
struct Table {
  std::vector<int> codes;
  std::vector<float> values;
};

// Runs the family's plan on the host: the setup into the persistent buffers (sized as the plan says for a case's
// SLOTS, poisoned first), then the main launch into an output that starts as NaN.
std::vector<float> run_plan(const EmulationCase& c, std::span<const float> activation, std::span<const float> filter,
                            Table& table, const testing_support::EpilogueOperands& operands) {
  const Problem p = with_weights(c.problem, std::vector<float>(filter.begin(), filter.end()));
  const LaunchPlan plan = family("weight_sparse").plan(p, to_spec(c.spec));
  const PlanBuffer* codes = plan.find("pattern_codes");
  const PlanBuffer* values = plan.find("packed_values");
  EXPECT_TRUE(codes && codes->persistent && values && values->persistent);
  // The plan sizes the buffers for the fullest channel; the case's SLOTS may be larger (any filter of the shape).
  const int chunk_starts = c.spec.table == 2 ? p.k * (stage_chunks(c) + 1) : 0;
  table.codes.assign(static_cast<std::size_t>(p.k + p.k * c.slots + chunk_starts), -7);
  // The staged table's values are (code bits, value) pairs.
  table.values.assign(static_cast<std::size_t>(p.k * c.slots * (c.spec.table == 2 ? 2 : 1)),
                      std::numeric_limits<float>::quiet_NaN());
  std::vector<float> output(static_cast<std::size_t>(output_elements(p)), std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(plan.setup.size(), 1u);
  EXPECT_EQ(plan.run.size(), 1u);
  for (const LaunchStep& step : plan.setup) {
    EXPECT_EQ(step.entry_suffix, "pack_pattern");
    host_cuda::launch(step.geometry, [&] { c.setup(filter.data(), table.codes.data(), table.values.data()); });
  }
  for (const LaunchStep& step : plan.run) {
    EXPECT_EQ(step.entry_suffix, "");
    host_cuda::launch(
        step.geometry,
        [&] {
          c.main(activation.data(), table.values.data(), table.codes.data(), output.data(),
                 operands.bias.size() > 0 ? reinterpret_cast<const float*>(operands.bias.bytes().data()) : nullptr,
                 operands.residual.size() > 0 ? reinterpret_cast<const float*>(operands.residual.bytes().data())
                                              : nullptr);
        },
        host_cuda::MakeWarps{step.geometry.block[0] * step.geometry.block[1] * step.geometry.block[2]});
  }
  return output;
}

// Decodes the table against the filter: channel k's entries are its nonzeros in filter order, each code the
// activation offset of its (c, r, s) (shifted 5) and its tap, each value the filter's. The staged table's codes
// are the activation's place in its staged chunk (no tap), its values (code, value) pairs, and its chunk starts the
// first entry of each chunk's channels.
void expect_table_matches_filter(const EmulationCase& c, std::span<const float> filter, const Table& table) {
  const Problem& p = c.problem;
  const int taps = p.filter.h * p.filter.w;
  const bool staged = c.spec.table == 2;
  struct Entry {
    int chunk, code;
    float value;
  };
  for (int k = 0; k < p.k; ++k) {
    std::vector<Entry> expected;  // in filter order: K C R S, or K R S C channels-last
    for (int i = 0; i < p.c * taps; ++i) {
      const int c_in = channels_last(p.layout) ? i % p.c : i / taps;
      const int t = channels_last(p.layout) ? i / p.c : i % taps;
      const float v = filter[static_cast<std::size_t>(std::int64_t{k} * p.c * taps + i)];
      if (v == 0.0f) continue;
      const int r = t / p.filter.w, s = t % p.filter.w;
      std::int64_t offset = 0;
      if (staged) {  // the activation's place in its staged chunk
        offset = std::int64_t{c_in % c.stage_channels} * c.stage_row +
                 (c.patch ? std::int64_t{r} * p.dilation.h * c.patch_w + std::int64_t{s} * p.dilation.w : 0);
      } else {  // its offset from the pixel's base
        const std::int64_t spatial = std::int64_t{r} * p.dilation.h * p.input.w + std::int64_t{s} * p.dilation.w;
        offset = channels_last(p.layout) ? spatial * p.c + c_in : std::int64_t{c_in} * p.input.h * p.input.w + spatial;
      }
      expected.push_back(
          {staged ? c_in / c.stage_channels : 0, static_cast<int>(staged ? offset : offset * 32 + t), v});
    }
    // The staged table's row goes chunk by chunk, in filter order within one.
    std::stable_sort(expected.begin(), expected.end(), [](const Entry& a, const Entry& b) { return a.chunk < b.chunk; });
    ASSERT_EQ(table.codes[static_cast<std::size_t>(k)], static_cast<int>(expected.size())) << "channel " << k;
    for (std::size_t i = 0; i < expected.size(); ++i) {
      const std::size_t slot = static_cast<std::size_t>(k) * static_cast<std::size_t>(c.slots) + i;
      EXPECT_EQ(table.codes[static_cast<std::size_t>(p.k) + slot], expected[i].code)
          << "channel " << k << " entry " << i;
      if (staged) {  // the pair the main loop reads: the code's bits, then the value
        EXPECT_EQ(std::bit_cast<int>(table.values[2 * slot]), 4 * expected[i].code)  // in bytes
            << "channel " << k << " entry " << i;
        EXPECT_EQ(table.values[2 * slot + 1], expected[i].value) << "channel " << k << " entry " << i;
      } else {
        EXPECT_EQ(table.values[slot], expected[i].value) << "channel " << k << " entry " << i;
      }
    }
    if (!staged) continue;
    const int chunks = stage_chunks(c);
    const std::size_t starts = static_cast<std::size_t>(p.k) * static_cast<std::size_t>(1 + c.slots) +
                               static_cast<std::size_t>(k) * static_cast<std::size_t>(chunks + 1);
    for (int chunk = 0; chunk <= chunks; ++chunk) {
      const auto first =
          std::find_if(expected.begin(), expected.end(), [&](const Entry& e) { return e.chunk >= chunk; });
      EXPECT_EQ(table.codes[starts + static_cast<std::size_t>(chunk)], first - expected.begin())
          << "channel " << k << " chunk " << chunk;
    }
  }
}

class WeightSparseTableEmulation : public testing::TestWithParam<EmulationCase> {};

TEST_P(WeightSparseTableEmulation, PacksTheFilterAndMatchesTheReference) {
  const EmulationCase& c = GetParam();
  ASSERT_EQ(validate(c.problem), "");
  std::vector<float> dense(static_cast<std::size_t>(activation_elements(c.problem)));
  fill_random(dense, 1);
  // Live channels also on activations with dead channels, and all zero.
  std::vector<std::vector<float>> activations{dense};
  if (c.spec.live_channels) {
    activations.push_back(with_dead_channels(c.problem, dense));
    activations.emplace_back(dense.size(), 0.0f);
  }
  // Filters of 0, 50, 80 and 100% zeros, and one whose odd channels are all zero.
  std::vector<std::vector<float>> filters;
  for (double zeros : {0.0, 0.5, 0.8, 1.0}) filters.push_back(pruned_random_filter(c.problem, zeros, 3));
  filters.push_back(pruned_random_filter(c.problem, 0.5, 4));
  const std::size_t per_k = filters.back().size() / static_cast<std::size_t>(c.problem.k);
  for (std::size_t i = 0; i < filters.back().size(); ++i)
    if ((i / per_k) % 2 == 1) filters.back()[i] = 0.0f;
  for (const std::vector<float>& activation : activations)
    for (const std::vector<float>& filter : filters) {
      const Problem p = with_weights(c.problem, filter);
      ASSERT_EQ(family("weight_sparse").check_support(p, testing_support::h100(), to_spec(c.spec)), std::nullopt);
      if (c.spec.table == 2) {  // the launch grid is the family's: its tile must be the case's
        ASSERT_NE(family("weight_sparse")
                      .render(p, to_spec(c.spec))
                      .text.find(fmt::format("constexpr int TILE_H = {}, TILE_W = {};", c.patch ? c.tile_h : 1,
                                             c.patch ? c.tile_w : 1)),
                  std::string::npos);
      }
      Table table;
      const testing_support::EpilogueOperands operands = testing_support::random_epilogue_operands(c.problem);
      const std::vector<float> output = run_plan(c, activation, filter, table, operands);
      expect_table_matches_filter(c, filter, table);
      std::vector<double> expected = reference_conv(c.problem, activation, filter);
      const double scale = apply_epilogue(c.problem, expected, {}, operands.bias, operands.residual);
      const ErrorStats stats = compare(output, expected, scale);
      const auto zero_activations = std::count(activation.begin(), activation.end(), 0.0f);
      std::cout << fmt::format(
          "weight_sparse {} ({}, {:.0f}% zero weights, {:.0f}% zero activations): relative L2 error {:.2e}, max error "
          "{:.2e}\n",
          c.name, kernel_name(to_spec(c.spec)), 100 * weight_zero_fraction(p),
          100.0 * static_cast<double>(zero_activations) / static_cast<double>(activation.size()), stats.rel_l2,
          stats.max_abs);
      EXPECT_EQ(stats.nan_count, 0) << "outputs left unwritten";
      EXPECT_EQ(stats.compared, output_elements(c.problem));
      EXPECT_LE(stats.rel_l2, 1e-6) << "max_abs " << stats.max_abs;
      EXPECT_LE(stats.max_abs, 1e-5);
    }
}

INSTANTIATE_TEST_SUITE_P(
    EdgeCases, WeightSparseTableEmulation,
    testing::Values(
        WEIGHT_SPARSE_EMULATION_CASE(nchw_3x3_s1), WEIGHT_SPARSE_EMULATION_CASE(nhwc_3x3_s2),
        WEIGHT_SPARSE_EMULATION_CASE(nchw_1x1_s2), WEIGHT_SPARSE_EMULATION_CASE(nhwc_1x1_s1),
        WEIGHT_SPARSE_EMULATION_CASE(dilated_padding_beyond_input), WEIGHT_SPARSE_EMULATION_CASE(conv1d_nwc),
        WEIGHT_SPARSE_EMULATION_CASE(nchw_1x1_staged), WEIGHT_SPARSE_EMULATION_CASE(nhwc_1x1_s2_padded_staged),
        WEIGHT_SPARSE_EMULATION_CASE(conv1d_nwc_staged), WEIGHT_SPARSE_EMULATION_CASE(nchw_3x3_patch_staged),
        WEIGHT_SPARSE_EMULATION_CASE(nhwc_3x3_s2_dilated_patch_staged),
        WEIGHT_SPARSE_EMULATION_CASE(conv1d_nwc_patch_staged),
        WEIGHT_SPARSE_EMULATION_CASE(padding_beyond_input_patch_staged),
        WEIGHT_SPARSE_EMULATION_CASE(nhwc_1x1_staged_vector4), WEIGHT_SPARSE_EMULATION_CASE(nchw_1x1_staged_wide),
        WEIGHT_SPARSE_EMULATION_CASE(nchw_1x1_staged_vector4_padded),
        WEIGHT_SPARSE_EMULATION_CASE(nchw_1x1_staged_epilogue),
        WEIGHT_SPARSE_EMULATION_CASE(nhwc_3x3_patch_staged_epilogue), WEIGHT_SPARSE_EMULATION_CASE(nchw_3x3_patch_live),
        WEIGHT_SPARSE_EMULATION_CASE(nhwc_3x3_s2_dilated_live), WEIGHT_SPARSE_EMULATION_CASE(nhwc_1x1_live_vector4)),
    [](const testing::TestParamInfo<EmulationCase>& param) { return std::string(param.param.name); });

}  // namespace
}  // namespace convgen
