// winograd_gemm_emulation_test: runs templates/winograd_gemm.cu on the host, a std::thread per CUDA thread, against the
// float64 reference: the family's whole plan (transform_filter into the persistent buffer; then transform_input, the
// GEMM and transform_output through the per-call buffers) with its geometry, on odd sizes, paddings 0 to 2, channels,
// output channels and tiles that fill no block, batch 3, a 1x1 input, both layouts, both tile sizes, grouped, both GEMM
// pipelines (registers, cp.async rings of 2 to 4 stages), a fused epilogue (bias, residual, ReLU), and 3-D layers
// (F(2 x m x m, 3 x 3 x 3): odd sizes, depth padding 0 to 2, NDHWC, batch 2, a ring). F(2x2, 3x3) and its 3-D form
// are held to DESIGN.md's fp32 limit (1e-5), F(4x4, 3x3) and its 3-D form to 1e-4.
#include <math.h>

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <limits>
#include <span>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "generator/family.hpp"
#include "reference/inputs.hpp"
#include "reference/reference.hpp"
#include "support/corpus.hpp"
#include "support/emulation_checks.hpp"
#include "support/host_async_copy.hpp"
#include "support/host_cuda.hpp"
#include "support/literal_shape.hpp"
#include "winograd_gemm_params.hpp"

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

namespace winograd_gemm_emulation {
using namespace convgen::host_cuda;  // NOLINT(google-build-using-namespace): the template's CUDA words
}  // namespace winograd_gemm_emulation

// Declares namespace NAME with kProblem, kSpec and the cfg constants the generator's prelude would render for them
// (the epilogue among them), and includes the template there.
#define WINOGRAD_GEMM_CASE(NAME, PROBLEM, SPEC)                                                               \
  namespace winograd_gemm_emulation::NAME {                                                                   \
  constexpr convgen::testing_support::LiteralShape kProblem = PROBLEM;                                        \
  constexpr convgen::WinogradGemmParams kSpec = SPEC;                                                         \
  namespace cfg {                                                                                             \
  CONVGEN_HOST_PROBLEM_CONSTANTS(kProblem)                                                                    \
  constexpr int TILE = kSpec.tile, BLOCK_M = kSpec.block_m, BLOCK_N = kSpec.block_n, BLOCK_K = kSpec.block_k; \
  constexpr int THREAD_M = kSpec.thread_m, THREAD_N = kSpec.thread_n, CP_STAGES = kSpec.cp_stages;            \
  constexpr int SPLIT_K = kSpec.split_k;                                                                      \
  }                                                                                                           \
  }                                                                                                           \
  namespace winograd_gemm_emulation::NAME {
#define WINOGRAD_GEMM_END(NAME) }

#define WINOGRAD_GEMM_SPEC(M, BM, BN, BK, TM, TN) WINOGRAD_GEMM_SPEC_CP(M, BM, BN, BK, TM, TN, 0)
#define WINOGRAD_GEMM_SPEC_CP(M, BM, BN, BK, TM, TN, CP) WINOGRAD_GEMM_SPEC_SK(M, BM, BN, BK, TM, TN, CP, 1)
#define WINOGRAD_GEMM_SPEC_SK(M, BM, BN, BK, TM, TN, CP, SK) \
  (convgen::WinogradGemmParams{.tile = M,                    \
                               .block_m = BM,                \
                               .block_n = BN,                \
                               .block_k = BK,                \
                               .thread_m = TM,               \
                               .thread_n = TN,               \
                               .cp_stages = CP,              \
                               .split_k = SK})

using convgen::Layout;
using Shape = convgen::testing_support::LiteralShape;

// Odd 13x11, padding 1: partial tiles at the right and bottom edges; C = 5 and K = 7 fill no step or block.
#define ODD_PAD1               \
  (Shape{.n = 1,               \
         .c = 5,               \
         .k = 7,               \
         .input = {1, 13, 11}, \
         .filter = {1, 3, 3},  \
         .padding = {0, 1, 1}, \
         .layout = Layout::nchw})
// No padding, batch 3, 9x7 -> 7x5: tiles span images; C = 17 leaves a step of 1 channel (BLOCK_K 8 or 16).
#define PAD0_BATCH3            \
  (Shape{.n = 3,               \
         .c = 17,              \
         .k = 10,              \
         .input = {1, 9, 7},   \
         .filter = {1, 3, 3},  \
         .padding = {0, 0, 0}, \
         .layout = Layout::nchw})
// Padding 2 in NHWC: patches reaching two rows and columns into the padding.
#define PAD2_NHWC              \
  (Shape{.n = 1,               \
         .c = 6,               \
         .k = 11,              \
         .input = {1, 10, 9},  \
         .filter = {1, 3, 3},  \
         .padding = {0, 2, 2}, \
         .layout = Layout::nhwc})
// A 1x1 input with padding 1: one output per channel, every tap but the centre in the padding.
#define TINY_1X1 \
  (Shape{.n = 1, .c = 3, .k = 5, .input = {1, 1, 1}, .filter = {1, 3, 3}, .padding = {0, 1, 1}, .layout = Layout::nchw})
// 17x19 with 20 -> 70 channels: several GEMM blocks of channels and of tiles, the last of each partial.
#define LARGE_17X19            \
  (Shape{.n = 1,               \
         .c = 20,              \
         .k = 70,              \
         .input = {1, 17, 19}, \
         .filter = {1, 3, 3},  \
         .padding = {0, 1, 1}, \
         .layout = Layout::nchw})
// Batch 3 in NHWC, 12x15, C = 13, K = 19.
#define NHWC_BATCH3            \
  (Shape{.n = 3,               \
         .c = 13,              \
         .k = 19,              \
         .input = {1, 12, 15}, \
         .filter = {1, 3, 3},  \
         .padding = {0, 1, 1}, \
         .layout = Layout::nhwc})
// Grouped: 2 groups of 5 -> 7 channels, 11x10; 3 groups of 4 -> 3 in NHWC, batch 2.
#define GROUPS2_ODD            \
  (Shape{.n = 1,               \
         .c = 10,              \
         .k = 14,              \
         .input = {1, 11, 10}, \
         .filter = {1, 3, 3},  \
         .padding = {0, 1, 1}, \
         .groups = 2,          \
         .layout = Layout::nchw})
#define GROUPS3_NHWC_BATCH2    \
  (Shape{.n = 2,               \
         .c = 12,              \
         .k = 9,               \
         .input = {1, 9, 8},   \
         .filter = {1, 3, 3},  \
         .padding = {0, 1, 1}, \
         .groups = 3,          \
         .layout = Layout::nhwc})

// NHWC_BATCH3 with bias, a residual and ReLU fused into the output transform's stores.
#define NHWC_BATCH3_EPILOGUE     \
  (Shape{.n = 3,                 \
         .c = 13,                \
         .k = 19,                \
         .input = {1, 12, 15},   \
         .filter = {1, 3, 3},    \
         .padding = {0, 1, 1},   \
         .layout = Layout::nhwc, \
         .epilogue = {.beta = 1.0, .bias = true, .act = convgen::Activation::relu}})

// Specs vary every tunable: 32 threads (32/8 x 64/8) to 256 (128/8 x 128/4 ... 64/4 x 64/4).
WINOGRAD_GEMM_CASE(f2_odd_pad1, ODD_PAD1, WINOGRAD_GEMM_SPEC(2, 32, 32, 8, 4, 4))
#define CONVGEN_ENTRY wgemm_f2_odd_pad1
#include "templates/winograd_gemm.cu"
#undef CONVGEN_ENTRY
WINOGRAD_GEMM_END(f2_odd_pad1)

WINOGRAD_GEMM_CASE(f2_pad0_batch3, PAD0_BATCH3, WINOGRAD_GEMM_SPEC(2, 64, 32, 16, 8, 4))
#define CONVGEN_ENTRY wgemm_f2_pad0_batch3
#include "templates/winograd_gemm.cu"
#undef CONVGEN_ENTRY
WINOGRAD_GEMM_END(f2_pad0_batch3)

WINOGRAD_GEMM_CASE(f2_pad2_nhwc, PAD2_NHWC, WINOGRAD_GEMM_SPEC(2, 32, 64, 8, 8, 8))
#define CONVGEN_ENTRY wgemm_f2_pad2_nhwc
#include "templates/winograd_gemm.cu"
#undef CONVGEN_ENTRY
WINOGRAD_GEMM_END(f2_pad2_nhwc)

WINOGRAD_GEMM_CASE(f2_large_17x19, LARGE_17X19, WINOGRAD_GEMM_SPEC(2, 64, 128, 8, 8, 8))
#define CONVGEN_ENTRY wgemm_f2_large_17x19
#include "templates/winograd_gemm.cu"
#undef CONVGEN_ENTRY
WINOGRAD_GEMM_END(f2_large_17x19)

WINOGRAD_GEMM_CASE(f2_groups2_odd, GROUPS2_ODD, WINOGRAD_GEMM_SPEC(2, 32, 32, 16, 4, 8))
#define CONVGEN_ENTRY wgemm_f2_groups2_odd
#include "templates/winograd_gemm.cu"
#undef CONVGEN_ENTRY
WINOGRAD_GEMM_END(f2_groups2_odd)

WINOGRAD_GEMM_CASE(f4_odd_pad1, ODD_PAD1, WINOGRAD_GEMM_SPEC(4, 32, 32, 8, 4, 4))
#define CONVGEN_ENTRY wgemm_f4_odd_pad1
#include "templates/winograd_gemm.cu"
#undef CONVGEN_ENTRY
WINOGRAD_GEMM_END(f4_odd_pad1)

WINOGRAD_GEMM_CASE(f4_pad0_batch3, PAD0_BATCH3, WINOGRAD_GEMM_SPEC(4, 32, 64, 16, 4, 8))
#define CONVGEN_ENTRY wgemm_f4_pad0_batch3
#include "templates/winograd_gemm.cu"
#undef CONVGEN_ENTRY
WINOGRAD_GEMM_END(f4_pad0_batch3)

WINOGRAD_GEMM_CASE(f4_tiny_1x1, TINY_1X1, WINOGRAD_GEMM_SPEC(4, 32, 32, 8, 8, 4))
#define CONVGEN_ENTRY wgemm_f4_tiny_1x1
#include "templates/winograd_gemm.cu"
#undef CONVGEN_ENTRY
WINOGRAD_GEMM_END(f4_tiny_1x1)

WINOGRAD_GEMM_CASE(f4_nhwc_batch3, NHWC_BATCH3, WINOGRAD_GEMM_SPEC(4, 128, 64, 16, 8, 4))
#define CONVGEN_ENTRY wgemm_f4_nhwc_batch3
#include "templates/winograd_gemm.cu"
#undef CONVGEN_ENTRY
WINOGRAD_GEMM_END(f4_nhwc_batch3)

WINOGRAD_GEMM_CASE(f4_groups3_nhwc_batch2, GROUPS3_NHWC_BATCH2, WINOGRAD_GEMM_SPEC(4, 32, 32, 8, 4, 4))
#define CONVGEN_ENTRY wgemm_f4_groups3_nhwc_batch2
#include "templates/winograd_gemm.cu"
#undef CONVGEN_ENTRY
WINOGRAD_GEMM_END(f4_groups3_nhwc_batch2)

WINOGRAD_GEMM_CASE(f4_epilogue_nhwc, NHWC_BATCH3_EPILOGUE, WINOGRAD_GEMM_SPEC(4, 32, 32, 8, 4, 4))
#define CONVGEN_ENTRY wgemm_f4_epilogue_nhwc
#include "templates/winograd_gemm.cu"
#undef CONVGEN_ENTRY
WINOGRAD_GEMM_END(f4_epilogue_nhwc)

// The cp.async ring (tests/support/host_async_copy.hpp): 2 stages over one step (5 channels in a step of 8); 3 and 4
// stages over 3 steps of 8 channels (20 at 7x6, small so that the sanitizer run stays short; the groups past the last
// step empty); 3 stages on 3 groups; 3 stages with the fused epilogue.
#define C20_SMALL \
  (Shape{         \
      .n = 1, .c = 20, .k = 9, .input = {1, 7, 6}, .filter = {1, 3, 3}, .padding = {0, 1, 1}, .layout = Layout::nchw})
WINOGRAD_GEMM_CASE(f2_odd_pad1_cp2, ODD_PAD1, WINOGRAD_GEMM_SPEC_CP(2, 32, 32, 8, 4, 4, 2))
#define CONVGEN_ENTRY wgemm_f2_odd_pad1_cp2
#include "templates/winograd_gemm.cu"
#undef CONVGEN_ENTRY
WINOGRAD_GEMM_END(f2_odd_pad1_cp2)

WINOGRAD_GEMM_CASE(f2_c20_small_cp3, C20_SMALL, WINOGRAD_GEMM_SPEC_CP(2, 32, 32, 8, 4, 4, 3))
#define CONVGEN_ENTRY wgemm_f2_c20_small_cp3
#include "templates/winograd_gemm.cu"
#undef CONVGEN_ENTRY
WINOGRAD_GEMM_END(f2_c20_small_cp3)

WINOGRAD_GEMM_CASE(f4_c20_small_cp4, C20_SMALL, WINOGRAD_GEMM_SPEC_CP(4, 32, 32, 8, 4, 4, 4))
#define CONVGEN_ENTRY wgemm_f4_c20_small_cp4
#include "templates/winograd_gemm.cu"
#undef CONVGEN_ENTRY
WINOGRAD_GEMM_END(f4_c20_small_cp4)

WINOGRAD_GEMM_CASE(f4_groups3_nhwc_batch2_cp3, GROUPS3_NHWC_BATCH2, WINOGRAD_GEMM_SPEC_CP(4, 32, 32, 8, 4, 4, 3))
#define CONVGEN_ENTRY wgemm_f4_groups3_nhwc_batch2_cp3
#include "templates/winograd_gemm.cu"
#undef CONVGEN_ENTRY
WINOGRAD_GEMM_END(f4_groups3_nhwc_batch2_cp3)

WINOGRAD_GEMM_CASE(f4_epilogue_nhwc_cp3, NHWC_BATCH3_EPILOGUE, WINOGRAD_GEMM_SPEC_CP(4, 32, 32, 8, 4, 4, 3))
#define CONVGEN_ENTRY wgemm_f4_epilogue_nhwc_cp3
#include "templates/winograd_gemm.cu"
#undef CONVGEN_ENTRY
WINOGRAD_GEMM_END(f4_epilogue_nhwc_cp3)

// 3-D: 5x7x6 with padding 1 (partial tiles along every axis, the depth's too), C = 5 and K = 7 fill no step or block.
#define VOLUME_ODD_PAD1          \
  (Shape{.n = 1,                 \
         .c = 5,                 \
         .k = 7,                 \
         .input = {5, 7, 6},     \
         .filter = {3, 3, 3},    \
         .padding = {1, 1, 1},   \
         .layout = Layout::ncdhw})
// 3-D NDHWC, batch 2, paddings 2 / 0 / 1 along D / H / W: 4x9x5 -> 6x7x5, patches two slices into the depth padding.
#define VOLUME_NDHWC_BATCH2      \
  (Shape{.n = 2,                 \
         .c = 9,                 \
         .k = 6,                 \
         .input = {4, 9, 5},     \
         .filter = {3, 3, 3},    \
         .padding = {2, 0, 1},   \
         .layout = Layout::ndhwc})

WINOGRAD_GEMM_CASE(f2_volume_odd_pad1, VOLUME_ODD_PAD1, WINOGRAD_GEMM_SPEC(2, 32, 32, 8, 4, 4))
#define CONVGEN_ENTRY wgemm_f2_volume_odd_pad1
#include "templates/winograd_gemm.cu"
#undef CONVGEN_ENTRY
WINOGRAD_GEMM_END(f2_volume_odd_pad1)

WINOGRAD_GEMM_CASE(f4_volume_odd_pad1, VOLUME_ODD_PAD1, WINOGRAD_GEMM_SPEC(4, 32, 32, 16, 4, 8))
#define CONVGEN_ENTRY wgemm_f4_volume_odd_pad1
#include "templates/winograd_gemm.cu"
#undef CONVGEN_ENTRY
WINOGRAD_GEMM_END(f4_volume_odd_pad1)

WINOGRAD_GEMM_CASE(f2_volume_ndhwc_batch2, VOLUME_NDHWC_BATCH2, WINOGRAD_GEMM_SPEC(2, 32, 64, 8, 8, 8))
#define CONVGEN_ENTRY wgemm_f2_volume_ndhwc_batch2
#include "templates/winograd_gemm.cu"
#undef CONVGEN_ENTRY
WINOGRAD_GEMM_END(f2_volume_ndhwc_batch2)

WINOGRAD_GEMM_CASE(f4_volume_ndhwc_batch2_cp3, VOLUME_NDHWC_BATCH2, WINOGRAD_GEMM_SPEC_CP(4, 32, 32, 8, 4, 4, 3))
#define CONVGEN_ENTRY wgemm_f4_volume_ndhwc_batch2_cp3
#include "templates/winograd_gemm.cu"
#undef CONVGEN_ENTRY
WINOGRAD_GEMM_END(f4_volume_ndhwc_batch2_cp3)

// Channels-first rows as vectors (the template's VECTOR): float4 rows with a fused bias, residual and ReLU, batch 2;
// float2 where the width is not a multiple of 4 (and a last tile partial: 14 = 3 x 4 + 2, its row one by one), with
// F(2x2), without padding and with padding 2 (the patch's two first columns one by one); float4 in 3-D. The float4
// case runs again on tensors one float past an aligned address, which the run-time check sends down the scalar path.
#define NCHW_VEC4_EPILOGUE       \
  (Shape{.n = 2,                 \
         .c = 6,                 \
         .k = 9,                 \
         .input = {1, 8, 12},    \
         .filter = {1, 3, 3},    \
         .padding = {0, 1, 1},   \
         .layout = Layout::nchw, \
         .epilogue = {.beta = 1.0, .bias = true, .act = convgen::Activation::relu}})
#define NCHW_W14 \
  (Shape{        \
      .n = 1, .c = 5, .k = 7, .input = {1, 6, 14}, .filter = {1, 3, 3}, .padding = {0, 1, 1}, .layout = Layout::nchw})
#define NCHW_ODD_H_BATCH2 \
  (Shape{                 \
      .n = 2, .c = 9, .k = 5, .input = {1, 7, 10}, .filter = {1, 3, 3}, .padding = {0, 1, 1}, .layout = Layout::nchw})
#define NCHW_PAD0_W12 \
  (Shape{             \
      .n = 1, .c = 4, .k = 6, .input = {1, 9, 12}, .filter = {1, 3, 3}, .padding = {0, 0, 0}, .layout = Layout::nchw})
#define NCHW_PAD2_W8 \
  (Shape{.n = 1, .c = 3, .k = 5, .input = {1, 6, 8}, .filter = {1, 3, 3}, .padding = {0, 2, 2}, .layout = Layout::nchw})
#define NCDHW_W8 \
  (Shape{        \
      .n = 1, .c = 4, .k = 5, .input = {3, 5, 8}, .filter = {3, 3, 3}, .padding = {1, 1, 1}, .layout = Layout::ncdhw})

WINOGRAD_GEMM_CASE(f4_vec4_nchw_epilogue, NCHW_VEC4_EPILOGUE, WINOGRAD_GEMM_SPEC_CP(4, 32, 32, 8, 4, 4, 3))
#define CONVGEN_ENTRY wgemm_f4_vec4_nchw_epilogue
#include "templates/winograd_gemm.cu"
#undef CONVGEN_ENTRY
WINOGRAD_GEMM_END(f4_vec4_nchw_epilogue)

WINOGRAD_GEMM_CASE(f4_vec2_w14, NCHW_W14, WINOGRAD_GEMM_SPEC(4, 32, 32, 8, 4, 4))
#define CONVGEN_ENTRY wgemm_f4_vec2_w14
#include "templates/winograd_gemm.cu"
#undef CONVGEN_ENTRY
WINOGRAD_GEMM_END(f4_vec2_w14)

WINOGRAD_GEMM_CASE(f2_vec2_odd_h_batch2, NCHW_ODD_H_BATCH2, WINOGRAD_GEMM_SPEC(2, 32, 32, 8, 4, 4))
#define CONVGEN_ENTRY wgemm_f2_vec2_odd_h_batch2
#include "templates/winograd_gemm.cu"
#undef CONVGEN_ENTRY
WINOGRAD_GEMM_END(f2_vec2_odd_h_batch2)

WINOGRAD_GEMM_CASE(f4_vec2_pad0_w12, NCHW_PAD0_W12, WINOGRAD_GEMM_SPEC(4, 32, 32, 8, 4, 4))
#define CONVGEN_ENTRY wgemm_f4_vec2_pad0_w12
#include "templates/winograd_gemm.cu"
#undef CONVGEN_ENTRY
WINOGRAD_GEMM_END(f4_vec2_pad0_w12)

WINOGRAD_GEMM_CASE(f4_vec2_pad2_w8, NCHW_PAD2_W8, WINOGRAD_GEMM_SPEC(4, 32, 32, 8, 4, 4))
#define CONVGEN_ENTRY wgemm_f4_vec2_pad2_w8
#include "templates/winograd_gemm.cu"
#undef CONVGEN_ENTRY
WINOGRAD_GEMM_END(f4_vec2_pad2_w8)

WINOGRAD_GEMM_CASE(f2_vec2_pad2_w8, NCHW_PAD2_W8, WINOGRAD_GEMM_SPEC(2, 32, 32, 8, 4, 4))
#define CONVGEN_ENTRY wgemm_f2_vec2_pad2_w8
#include "templates/winograd_gemm.cu"
#undef CONVGEN_ENTRY
WINOGRAD_GEMM_END(f2_vec2_pad2_w8)

WINOGRAD_GEMM_CASE(f4_vec4_volume, NCDHW_W8, WINOGRAD_GEMM_SPEC(4, 32, 32, 8, 4, 4))
#define CONVGEN_ENTRY wgemm_f4_vec4_volume
#include "templates/winograd_gemm.cu"
#undef CONVGEN_ENTRY
WINOGRAD_GEMM_END(f4_vec4_volume)

// Split-K: 20 channels in two splits of 16 (the second 4 real and 12 zero); 50 in four of 16 (the last 2 real), in a
// cp.async ring; the epilogue applied once, after the slabs are added; a 3-D layer's 9 channels in two splits of 8.
#define C50_SMALL \
  (Shape{         \
      .n = 1, .c = 50, .k = 9, .input = {1, 7, 6}, .filter = {1, 3, 3}, .padding = {0, 1, 1}, .layout = Layout::nchw})
WINOGRAD_GEMM_CASE(f2_large_17x19_sk2, LARGE_17X19, WINOGRAD_GEMM_SPEC_SK(2, 64, 128, 8, 8, 8, 0, 2))
#define CONVGEN_ENTRY wgemm_f2_large_17x19_sk2
#include "templates/winograd_gemm.cu"
#undef CONVGEN_ENTRY
WINOGRAD_GEMM_END(f2_large_17x19_sk2)

WINOGRAD_GEMM_CASE(f4_c50_small_cp4_sk4, C50_SMALL, WINOGRAD_GEMM_SPEC_SK(4, 32, 32, 8, 4, 4, 4, 4))
#define CONVGEN_ENTRY wgemm_f4_c50_small_cp4_sk4
#include "templates/winograd_gemm.cu"
#undef CONVGEN_ENTRY
WINOGRAD_GEMM_END(f4_c50_small_cp4_sk4)

WINOGRAD_GEMM_CASE(f4_epilogue_nhwc_cp3_sk2, NHWC_BATCH3_EPILOGUE, WINOGRAD_GEMM_SPEC_SK(4, 32, 32, 8, 4, 4, 3, 2))
#define CONVGEN_ENTRY wgemm_f4_epilogue_nhwc_cp3_sk2
#include "templates/winograd_gemm.cu"
#undef CONVGEN_ENTRY
WINOGRAD_GEMM_END(f4_epilogue_nhwc_cp3_sk2)

WINOGRAD_GEMM_CASE(f2_volume_ndhwc_batch2_sk2, VOLUME_NDHWC_BATCH2, WINOGRAD_GEMM_SPEC_SK(2, 32, 32, 8, 4, 4, 2, 2))
#define CONVGEN_ENTRY wgemm_f2_volume_ndhwc_batch2_sk2
#include "templates/winograd_gemm.cu"
#undef CONVGEN_ENTRY
WINOGRAD_GEMM_END(f2_volume_ndhwc_batch2_sk2)

static_assert(winograd_gemm_emulation::f2_large_17x19_sk2::winograd_gemm::STEPS == 2);
static_assert(winograd_gemm_emulation::f4_c50_small_cp4_sk4::winograd_gemm::STEPS == 2);

// The cases above take the vector paths they are named for (a test of the scalar path would pass as well).
static_assert(winograd_gemm_emulation::f4_vec4_nchw_epilogue::winograd_gemm::VECTOR == 4);
static_assert(winograd_gemm_emulation::f4_vec2_w14::winograd_gemm::VECTOR == 2);
static_assert(winograd_gemm_emulation::f2_vec2_odd_h_batch2::winograd_gemm::VECTOR == 2);
static_assert(winograd_gemm_emulation::f4_vec2_pad0_w12::winograd_gemm::VECTOR == 2);
static_assert(winograd_gemm_emulation::f4_vec2_pad2_w8::winograd_gemm::VECTOR == 2);
static_assert(winograd_gemm_emulation::f2_vec2_pad2_w8::winograd_gemm::VECTOR == 2);
static_assert(winograd_gemm_emulation::f4_vec4_volume::winograd_gemm::VECTOR == 4);
static_assert(winograd_gemm_emulation::f4_odd_pad1::winograd_gemm::VECTOR == 1);

namespace convgen {
namespace {

using Setup = void (*)(const float*, float*);
using InputTransform = void (*)(const float*, float*);
using Gemm = void (*)(const float*, const float*, float*);
using OutputTransform = void (*)(const float*, float*, const float*, const float*);  // products, output, bias, residual

struct EmulationCase {
  const char* name;
  Problem problem;
  WinogradGemmParams spec;
  Setup setup;
  InputTransform input;
  Gemm gemm;
  OutputTransform output;
  bool misaligned = false;  // the activation, output and residual one float past a 16-byte boundary
};

void PrintTo(const EmulationCase& c, std::ostream* os) { *os << c.name; }

// A case's EmulationCase; LABEL its name, MISALIGNED whether its tensors are placed one float past a 16-byte
// boundary.
#define WINOGRAD_GEMM_EMULATION_CASE_AS(NAME, LABEL, MISALIGNED)                                                      \
  EmulationCase {                                                                                                     \
    LABEL, winograd_gemm_emulation::NAME::kProblem, winograd_gemm_emulation::NAME::kSpec,                             \
        &winograd_gemm_emulation::NAME::wgemm_##NAME##_transform_filter,                                              \
        &winograd_gemm_emulation::NAME::wgemm_##NAME##_transform_input, &winograd_gemm_emulation::NAME::wgemm_##NAME, \
        &winograd_gemm_emulation::NAME::wgemm_##NAME##_transform_output, MISALIGNED                                   \
  }
#define WINOGRAD_GEMM_EMULATION_CASE(NAME) WINOGRAD_GEMM_EMULATION_CASE_AS(NAME, #NAME, false)
#define WINOGRAD_GEMM_EMULATION_CASE_MISALIGNED(NAME) WINOGRAD_GEMM_EMULATION_CASE_AS(NAME, #NAME "_misaligned", true)

using testing_support::floats_of;

// `values` copied to one float past a 16-byte boundary (the vector paths' run-time check must refuse it), or kept.
struct Placed {
  std::vector<float> storage;
  float* data = nullptr;
};
Placed placed(std::span<const float> values, bool misaligned, float fill = 0.0f) {
  Placed p{.storage = std::vector<float>(values.size() + 4, fill)};
  float* aligned = p.storage.data();
  while (reinterpret_cast<std::uintptr_t>(aligned) % 16 != 0) ++aligned;
  p.data = misaligned ? aligned + 1 : aligned;
  std::copy(values.begin(), values.end(), p.data);
  return p;
}

// Runs the family's plan on the host: the setup step into the persistent buffer and the run steps through the
// workspace, every buffer poisoned with NaN first (an element a step leaves unwritten shows), the output too.
std::vector<float> run_plan(const EmulationCase& c, std::span<const float> activation, std::span<const float> filter,
                            std::span<const float> bias, std::span<const float> residual) {
  const LaunchPlan plan = family("winograd_gemm").plan(c.problem, to_spec(c.spec));
  constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> persistent(static_cast<std::size_t>(plan.persistent_bytes() / 4), kNaN);
  std::vector<float> workspace(static_cast<std::size_t>(plan.workspace_bytes() / 4), kNaN);
  const std::vector<float> poison(static_cast<std::size_t>(output_elements(c.problem)), kNaN);
  Placed output = placed(poison, c.misaligned, kNaN);
  const Placed input = placed(activation, c.misaligned);
  const Placed added = placed(residual, c.misaligned);
  auto buffer = [&](const char* name) {
    const PlanBuffer* b = plan.find(name);
    EXPECT_NE(b, nullptr) << name;
    std::vector<float>& block = b->persistent ? persistent : workspace;
    return block.data() + plan.offset_of(name) / 4;
  };
  EXPECT_EQ(plan.setup.size(), 1u);
  EXPECT_EQ(plan.run.size(), 3u);
  for (const LaunchStep& step : plan.setup) {
    EXPECT_EQ(step.entry_suffix, "transform_filter");
    convgen::host_cuda::launch(step.geometry, [&] { c.setup(filter.data(), buffer("transformed_filter")); });
  }
  for (const LaunchStep& step : plan.run) {
    if (step.entry_suffix == "transform_input")
      convgen::host_cuda::launch(step.geometry, [&] { c.input(input.data, buffer("transformed_input")); });
    else if (step.entry_suffix.empty())
      convgen::host_cuda::launch(step.geometry, [&] {
        c.gemm(buffer("transformed_filter"), buffer("transformed_input"), buffer("products"));
      });
    else if (step.entry_suffix == "transform_output")
      convgen::host_cuda::launch(step.geometry, [&] {
        c.output(buffer("products"), output.data, bias.empty() ? nullptr : bias.data(),
                 residual.empty() ? nullptr : added.data);
      });
    else
      ADD_FAILURE() << "unexpected step " << step.entry_suffix;
  }
  return {output.data, output.data + poison.size()};
}

class WinogradGemmEmulation : public testing::TestWithParam<EmulationCase> {};

TEST_P(WinogradGemmEmulation, MatchesTheReferenceWithinTheTileSizesLimit) {
  const EmulationCase& c = GetParam();
  ASSERT_EQ(validate(c.problem), "");
  ASSERT_EQ(family("winograd_gemm").check_support(c.problem, convgen::testing_support::h100(), to_spec(c.spec)),
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
  const double limit = c.spec.tile == 2 ? 1e-5 : 1e-4;
  const bool volume = rank(c.problem.layout) == 3;
  std::cout << fmt::format(
      "winograd_gemm F({0}{1}x{1}, 3x3{2}) {3} ({4}): relative L2 error {5:.2e}, max error {6:.2e}\n",
      volume ? "2x" : "", c.spec.tile, volume ? "x3" : "", c.name, kernel_name(to_spec(c.spec)), stats.rel_l2,
      stats.max_abs);
  EXPECT_EQ(stats.nan_count, 0) << "outputs left unwritten";
  EXPECT_EQ(stats.compared, output_elements(c.problem));
  EXPECT_LE(stats.rel_l2, limit) << "max_abs " << stats.max_abs;
}

INSTANTIATE_TEST_SUITE_P(
    EdgeCases, WinogradGemmEmulation,
    testing::Values(
        WINOGRAD_GEMM_EMULATION_CASE(f2_odd_pad1), WINOGRAD_GEMM_EMULATION_CASE(f2_pad0_batch3),
        WINOGRAD_GEMM_EMULATION_CASE(f2_pad2_nhwc), WINOGRAD_GEMM_EMULATION_CASE(f2_large_17x19),
        WINOGRAD_GEMM_EMULATION_CASE(f2_groups2_odd), WINOGRAD_GEMM_EMULATION_CASE(f4_odd_pad1),
        WINOGRAD_GEMM_EMULATION_CASE(f4_pad0_batch3), WINOGRAD_GEMM_EMULATION_CASE(f4_tiny_1x1),
        WINOGRAD_GEMM_EMULATION_CASE(f4_nhwc_batch3), WINOGRAD_GEMM_EMULATION_CASE(f4_groups3_nhwc_batch2),
        WINOGRAD_GEMM_EMULATION_CASE(f4_epilogue_nhwc), WINOGRAD_GEMM_EMULATION_CASE(f2_odd_pad1_cp2),
        WINOGRAD_GEMM_EMULATION_CASE(f2_c20_small_cp3), WINOGRAD_GEMM_EMULATION_CASE(f4_c20_small_cp4),
        WINOGRAD_GEMM_EMULATION_CASE(f4_groups3_nhwc_batch2_cp3), WINOGRAD_GEMM_EMULATION_CASE(f4_epilogue_nhwc_cp3),
        WINOGRAD_GEMM_EMULATION_CASE(f2_volume_odd_pad1), WINOGRAD_GEMM_EMULATION_CASE(f4_volume_odd_pad1),
        WINOGRAD_GEMM_EMULATION_CASE(f2_volume_ndhwc_batch2), WINOGRAD_GEMM_EMULATION_CASE(f4_volume_ndhwc_batch2_cp3),
        WINOGRAD_GEMM_EMULATION_CASE(f4_vec4_nchw_epilogue),
        WINOGRAD_GEMM_EMULATION_CASE_MISALIGNED(f4_vec4_nchw_epilogue), WINOGRAD_GEMM_EMULATION_CASE(f4_vec2_w14),
        WINOGRAD_GEMM_EMULATION_CASE(f2_vec2_odd_h_batch2), WINOGRAD_GEMM_EMULATION_CASE(f4_vec2_pad0_w12),
        WINOGRAD_GEMM_EMULATION_CASE(f4_vec2_pad2_w8), WINOGRAD_GEMM_EMULATION_CASE(f2_vec2_pad2_w8),
        WINOGRAD_GEMM_EMULATION_CASE(f4_vec4_volume), WINOGRAD_GEMM_EMULATION_CASE(f2_large_17x19_sk2),
        WINOGRAD_GEMM_EMULATION_CASE(f4_c50_small_cp4_sk4), WINOGRAD_GEMM_EMULATION_CASE(f4_epilogue_nhwc_cp3_sk2),
        WINOGRAD_GEMM_EMULATION_CASE(f2_volume_ndhwc_batch2_sk2)),
    [](const testing::TestParamInfo<EmulationCase>& param) { return std::string(param.param.name); });

}  // namespace
}  // namespace convgen
