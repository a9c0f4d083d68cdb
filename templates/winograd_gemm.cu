// winograd_gemm: FP32 Winograd convolution F(m x m, 3 x 3), m = TILE (2 or 4), in three launches around one batched
// GEMM (the "non-fused" Winograd of cuDNN's WINOGRAD_NONFUSED), for 3x3 filters at stride 1, dilation 1, ungrouped
// or grouped; and its 3-D form F(2 x m x m, 3 x 3 x 3) for 3x3x3 filters (VOLUME: the depth axis is always F(2, 3),
// whose error stays that of the 2-D F(m x m)), which cuDNN has no Winograd route for.
//
// Y = A^T [ (G g G^T) . (B^T d B) ] A per output tile (Lavin & Gray 2016), as templates/winograd.cu; what differs is
// where the element-wise products are summed over the channels. In 3-D each transform is also applied along the
// depth (F(2, 3)'s matrices): the ALPHA_D = 4 depth slices of a patch are combined first, then each combination is
// transformed as a 2-D patch (a thread holds one ALPHA x ALPHA slice at a time, not the whole 4 x ALPHA x ALPHA).
// winograd.cu keeps every transform position of a block's tiles in one block's registers, which caps its register
// tiles at 4 x 4; here the sums are POSITIONS x GROUPS independent GEMMs
//     M[pos][g] (KG x TILES) = U[pos][g] (KG x CG) * V[pos][g] (CG x TILES)
// (POSITIONS = ALPHA_D x ALPHA x ALPHA) run by one SGEMM kernel with register tiles of up to 8 x 8 (the main entry),
// between two transforms through global memory (the launch plan's per-call buffers):
//   setup  transform_filter  U[pos][g][c][k] = G g G^T, in double, rounded once (persistent buffer);
//   run 1  transform_input   V[pos][g][c][t] = B^T d B of every (channel, tile) input patch (zero outside the input);
//   run 2  main entry        M[pos][g][k][t] = sum_c U[pos][g][c][k] V[pos][g][c][t];
//   run 3  transform_output  Y = A^T M A of every (k, tile), through the epilogue, where the output exists.
// The three buffers are padded with zeros (c to a multiple of BLOCK_K x SPLIT_K, k of BLOCK_M, t of BLOCK_N), so the
// GEMM has no bounds test and every one of its global accesses is a float4. With SPLIT_K > 1 the channels are split
// into SPLIT_K runs of whole steps, each summed by blocks of its own into a slab of the products, and the output
// transform adds the slabs as it reads them: more blocks where one block a (pos, g, tile) leaves the GPU half empty,
// for SPLIT_K - 1 more slabs written and read.
//
// The GEMM: a block owns BLOCK_M output channels x BLOCK_N tiles of one (pos, g); per step of BLOCK_K channels its
// threads stage the two operand slabs, s_a[c][m] and s_b[c][n] (both rows of the buffers, copied as float4), in
// shared memory, one barrier per step, through one of two pipelines: CP_STAGES 0, a double buffer, the next step's
// global loads issued into registers before this step's FMAs and stored to the other buffer after them (any GPU);
// CP_STAGES 2-4, a ring of that many buffers filled by cp.async, the copies of CP_STAGES - 1 steps in flight (sm_80
// and later; simt_gemm.cuh's gemm_ring). The FMAs are simt_gemm.cuh's register tiles (THREAD_M x THREAD_N
// accumulators a thread, runs of 4 read as float4).
// Grid: x = T_PAD / BLOCK_N, y = KG_PAD / BLOCK_M, z = SPLIT_K * POSITIONS * GROUPS.
#include "async_copy.cuh"
#include "epilogue.cuh"
#include "interface.cuh"

#ifndef CONVGEN_PRELUDE
#define CONVGEN_ENTRY convgen_winograd_gemm_default
namespace cfg {
constexpr int N = 8, C = 64, K = 64, GROUPS = 1;
constexpr int D = 1, H = 56, W = 56;
constexpr int T = 1, R = 3, S = 3;
constexpr int O = 1, P = 56, Q = 56;
constexpr int STRIDE_D = 1, STRIDE_H = 1, STRIDE_W = 1;
constexpr int PAD_D = 0, PAD_H = 1, PAD_W = 1;
constexpr int DIL_D = 1, DIL_H = 1, DIL_W = 1;
constexpr bool CHANNELS_LAST = false;
// The tunable parameters, in kernel-name order (winograd_gemm_m4_bm64_bn64_bk8_tm8_tn8_cp0).
CONVGEN_PARAM("m", "2,4", "output tile of F(m x m, 3 x 3)") constexpr int TILE = 4;
CONVGEN_PARAM("bm", "32,64,128", "output channels per GEMM block") constexpr int BLOCK_M = 64;
CONVGEN_PARAM("bn", "32,64,128", "output tiles per GEMM block") constexpr int BLOCK_N = 64;
CONVGEN_PARAM("bk", "8,16", "input channels per GEMM step") constexpr int BLOCK_K = 8;
CONVGEN_PARAM("tm", "4,8", "output channels per thread (register tile)") constexpr int THREAD_M = 8;
CONVGEN_PARAM("tn", "4,8", "output tiles per thread (register tile)") constexpr int THREAD_N = 8;
CONVGEN_PARAM("cp", "0,2,3,4", "GEMM shared-memory pipeline: 0 loads through registers, 2-4 cp.async stages (sm_80+)")
constexpr int CP_STAGES = 0;
CONVGEN_PARAM("sk", "1,2,4", "splits of the input channels: the GEMM's blocks of each split write a slab of products, "
              "which the output transform adds")
constexpr int SPLIT_K = 1;
using Epilogue = convgen::IdentityEpilogue;  // the prelude renders the problem's (templates/epilogue.cuh)
}  // namespace cfg
#endif

#include "common.cuh"

namespace winograd_gemm {

using namespace cfg;
using convgen::ceil_div;

// ---- The shape ----------------------------------------------------------------------------------------------
constexpr bool VOLUME = T != 1;                     // a 3-D convolution (3x3x3 filter)
constexpr int ALPHA = TILE + 2;                     // input patch and transform extent along H and W
constexpr int TILE_D = VOLUME ? 2 : 1;              // output depth of a tile (F(2, 3) along the depth)
constexpr int ALPHA_D = VOLUME ? 4 : 1;             // and its input patch depth
constexpr int POSITIONS = ALPHA_D * ALPHA * ALPHA;  // GEMMs per group: 16 or 36 (2-D), 64 or 144 (3-D)
constexpr int TILES_D = (int)ceil_div(O, TILE_D);
constexpr int TILES_H = (int)ceil_div(P, TILE);
constexpr int TILES_W = (int)ceil_div(Q, TILE);
constexpr int TILES_PER_PLANE = TILES_H * TILES_W;
constexpr int TILES_PER_IMAGE = TILES_D * TILES_PER_PLANE;
constexpr long long TILES_LL = (long long)N * TILES_PER_IMAGE;
constexpr int TILES = (int)TILES_LL;
constexpr int CG = C / GROUPS;  // input channels of a group
constexpr int KG = K / GROUPS;  // output channels of a group
// The buffers' padded extents: whole GEMM blocks and steps.
constexpr int CG_PAD = (int)ceil_div(CG, BLOCK_K * SPLIT_K) * BLOCK_K * SPLIT_K;  // whole steps in each split
constexpr int KG_PAD = (int)ceil_div(KG, BLOCK_M) * BLOCK_M;
constexpr long long T_PAD_LL = ceil_div(TILES_LL, BLOCK_N) * BLOCK_N;
constexpr int T_PAD = (int)T_PAD_LL;
constexpr int BATCHES = POSITIONS * GROUPS;                                // GEMMs
constexpr long long FILTER_FLOATS = (long long)BATCHES * CG_PAD * KG_PAD;  // transformed_filter
constexpr long long INPUT_FLOATS = (long long)BATCHES * CG_PAD * T_PAD;    // transformed_input
constexpr long long PRODUCT_SLAB = (long long)BATCHES * KG_PAD * T_PAD;  // products of one split
constexpr long long PRODUCT_FLOATS = SPLIT_K * PRODUCT_SLAB;               // products

static_assert(GROUPS >= 1 && C % GROUPS == 0 && K % GROUPS == 0, "the groups must divide C and K");
static_assert(VOLUME || (D == 1 && O == 1 && PAD_D == 0), "a 2-D convolution has depth 1 and no depth padding");
static_assert(!VOLUME || (T == 3 && STRIDE_D == 1 && DIL_D == 1), "winograd_gemm's 3-D filters are 3x3x3, stride 1");
static_assert(O == convgen::conv_out_extent(D, T, STRIDE_D, PAD_D, DIL_D), "O does not match D, T, stride, padding");
static_assert(R == 3 && S == 3, "winograd_gemm handles 3x3 (and 3x3x3) filters only");
static_assert(STRIDE_H == 1 && STRIDE_W == 1, "winograd_gemm needs stride 1");
static_assert(DIL_H == 1 && DIL_W == 1, "winograd_gemm needs dilation 1");
static_assert(P == convgen::conv_out_extent(H, R, STRIDE_H, PAD_H, DIL_H), "P does not match H, R, stride, padding");
static_assert(Q == convgen::conv_out_extent(W, S, STRIDE_W, PAD_W, DIL_W), "Q does not match W, S, stride, padding");
static_assert(P > 0 && Q > 0, "the output must not be empty");
static_assert(T_PAD_LL <= convgen::kIntMax, "the padded output tiles must fit in int");
static_assert((long long)N * C * D * H * W <= convgen::kIntMax && (long long)N * K * O * P * Q <= convgen::kIntMax,
              "winograd_gemm indexes the activation and the output with int: each must have fewer than 2^31 elements");
static_assert(FILTER_FLOATS <= convgen::kIntMax && INPUT_FLOATS <= convgen::kIntMax &&
                  PRODUCT_FLOATS <= convgen::kIntMax,
              "winograd_gemm indexes its buffers with int: each must have fewer than 2^31 floats");

// ---- The GEMM's configuration -------------------------------------------------------------------------------
static_assert(TILE == 2 || TILE == 4, "TILE must be 2 or 4");
static_assert(BLOCK_M == 32 || BLOCK_M == 64 || BLOCK_M == 128, "BLOCK_M must be 32, 64 or 128");
static_assert(BLOCK_N == 32 || BLOCK_N == 64 || BLOCK_N == 128, "BLOCK_N must be 32, 64 or 128");
static_assert(BLOCK_K == 8 || BLOCK_K == 16, "BLOCK_K must be 8 or 16");
static_assert(THREAD_M == 4 || THREAD_M == 8, "THREAD_M must be 4 or 8");
static_assert(THREAD_N == 4 || THREAD_N == 8, "THREAD_N must be 4 or 8");
static_assert(CP_STAGES == 0 || CP_STAGES == 2 || CP_STAGES == 3 || CP_STAGES == 4, "CP_STAGES must be 0, 2, 3 or 4");
static_assert(SPLIT_K == 1 || SPLIT_K == 2 || SPLIT_K == 4, "SPLIT_K must be 1, 2 or 4");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
static_assert(CP_STAGES == 0, "the cp.async pipeline (CP_STAGES 2-4) needs sm_80 or later");
#endif
#include "simt_gemm.cuh"  // THREADS_M, THREADS_N, THREADS, FM, FN, gemm_m, gemm_step, gemm_ring
static_assert(THREADS >= 32 && THREADS <= 512, "a GEMM block must have 32 to 512 threads");
constexpr int A_VECS = BLOCK_K * BLOCK_M / 4;  // float4s of one step's filter slab
constexpr int B_VECS = BLOCK_K * BLOCK_N / 4;  // and of its input slab
static_assert(A_VECS % THREADS == 0 && B_VECS % THREADS == 0,
              "every thread must copy the same number of float4s of each slab");
constexpr int A_PER_THREAD = A_VECS / THREADS;
constexpr int B_PER_THREAD = B_VECS / THREADS;
constexpr int STEPS = CG_PAD / BLOCK_K / SPLIT_K;  // of one split
constexpr int BUFFERS = CP_STAGES == 0 ? 2 : CP_STAGES;  // shared stages of the two slabs

// Threads of the transform entries. 64, not 256: their grids are one thread per (channel, tile) and often less than a
// wave, so small blocks spread them over every SM instead of two blocks on some SMs and one on the rest (Nsight
// Compute on cuSNN's 128-channel 28x28 layer at batch 8 on the H200: SMs active 53-57% of the transforms' time).
constexpr int TRANSFORM_THREADS = 64;

// Channels-first rows move as vectors of VECTOR floats where a row's length and the tile allow it (a tile's TILE
// columns then start VECTOR-aligned): the input transform loads the TILE middle columns of each patch row that way
// (the PAD_W columns before them and the rest after them one by one), the output transform stores each row of its
// tile that way. Uncoalesced scalar accesses, each lane a tile apart, made both transforms bound by their L1
// wavefronts (the same profile: L1 busy about 95% of the SMs' active time). Checked at run time too: a tensor whose
// address is not a multiple of the vector takes the scalar path.
constexpr int VECTOR = CHANNELS_LAST || PAD_W > 2 ? 1 : TILE % 4 == 0 && W % 4 == 0 && Q % 4 == 0 ? 4
                       : W % 2 == 0 && Q % 2 == 0                                         ? 2
                                                                                          : 1;
static_assert(TILE % VECTOR == 0, "a vector must not cross a tile's columns");

#include "winograd_transforms.cuh"

// The depth axis's F(2, 3) filter coefficients (3-D); a 2-D convolution's depth "transform" is the identity of
// extent 1. The filter transform unrolls its depth rows (constant indices); the input and output transforms loop over
// theirs (`#pragma unroll 1`: unrolling the four rows of the 3-D transforms made NVRTC's optimizer take 1.9 s on the
// input transform alone), so their depth coefficients are computed from a run-time row below.
__device__ __forceinline__ double depth_filter(int i, int j) { return VOLUME ? FilterMatrixOf<2>::at(i, j) : 1.0; }

// Row ad of the depth axis's B^T, (1, 0, -1, 0), (0, 1, 1, 0), (0, -1, 1, 0), (0, 1, 0, -1), as its two taps: slice
// `first` (negated in row 2) plus slice `second` (negated in rows 0 and 3). InputMatrixOf<2> holds the same matrix;
// the host emulation's 3-D cases check the two agree.
struct DepthTaps {
  int first, second;
  bool negate_first, negate_second;
};
__device__ __forceinline__ DepthTaps depth_input_taps(int ad) {
  return {ad == 0 ? 0 : 1, ad == 3 ? 3 : 2, ad == 2, ad == 0 || ad == 3};
}

// A^T of the depth axis, (1, 1, 1, 0) and (0, 1, -1, -1) (OutputMatrixOf<2>), at output depth od and run-time row ad;
// 1 in 2-D.
__device__ __forceinline__ float depth_output(int od, int ad) {
  if (!VOLUME) return 1.0f;
  if (od == 0) return ad < 3 ? 1.0f : 0.0f;
  return ad == 0 ? 0.0f : ad == 1 ? 1.0f : -1.0f;
}

// The first output depth of tile `rest` of an image (0 in 2-D) and its tile within the depth plane.
__device__ __forceinline__ int tile_depth(int rest) { return VOLUME ? (rest / TILES_PER_PLANE) * TILE_D : 0; }
__device__ __forceinline__ int tile_in_plane(int rest) { return VOLUME ? rest % TILES_PER_PLANE : rest; }

// Whether `p` is aligned to a VECTOR-float vector (a tensor inside a larger allocation may not be).
__device__ __forceinline__ bool vector_aligned(const void* p) {
  return reinterpret_cast<unsigned long long>(p) % (sizeof(float) * VECTOR) == 0;
}

// v = the VECTOR floats at `src` (aligned), or zeros where !inside.
__device__ __forceinline__ void load_vector(float (&v)[VECTOR], const float* src, bool inside) {
  if constexpr (VECTOR == 4) {
    const float4 x = inside ? *reinterpret_cast<const float4*>(src) : float4{0.0f, 0.0f, 0.0f, 0.0f};
    v[0] = x.x, v[1] = x.y, v[2] = x.z, v[3] = x.w;
  } else if constexpr (VECTOR == 2) {
    const float2 x = inside ? *reinterpret_cast<const float2*>(src) : float2{0.0f, 0.0f};
    v[0] = x.x, v[1] = x.y;
  } else {
    v[0] = inside ? *src : 0.0f;
  }
}

// The VECTOR floats of v to `dst` (aligned).
__device__ __forceinline__ void store_vector(float* dst, const float (&v)[VECTOR]) {
  if constexpr (VECTOR == 4) {
    *reinterpret_cast<float4*>(dst) = float4{v[0], v[1], v[2], v[3]};
  } else if constexpr (VECTOR == 2) {
    *reinterpret_cast<float2*>(dst) = float2{v[0], v[1]};
  } else {
    *dst = v[0];
  }
}

// r_d[i][j] = depth slice `slice` (0 in 2-D) of the input patch of channel c (of the whole tensor) and tile `tile`,
// zero outside the input.
__device__ __forceinline__ void load_patch(float (&r_d)[ALPHA][ALPHA], const float* __restrict__ g_activation, int c,
                                           int tile, int slice) {
  const int n = tile / TILES_PER_IMAGE;
  const int rest = tile % TILES_PER_IMAGE;
  const int d = tile_depth(rest) - PAD_D + slice;
  const int plane = tile_in_plane(rest);
  const int h0 = (plane / TILES_W) * TILE - PAD_H;
  const int w0 = (plane % TILES_W) * TILE - PAD_W;
  const bool depth_inside = (unsigned)d < (unsigned)D;
  // channels-last: (((n * D + d) * H + h) * W + w) * C + c; channels-first: (((n * C + c) * D + d) * H + h) * W + w
  const int base = CHANNELS_LAST ? (n * D + d) * H * W * C + c : ((n * C + c) * D + d) * H * W;
  if constexpr (VECTOR > 1) {
    // The patch's columns PAD_W .. PAD_W + TILE - 1 are the tile's own, w0 + PAD_W a multiple of TILE; W a multiple of
    // VECTOR, so each of their vectors lies wholly inside the row or wholly past its end (a partial last tile's): no
    // lane of a warp takes another path than its neighbours.
    const bool vectors = vector_aligned(g_activation);
#pragma unroll
    for (int a = 0; a < ALPHA; ++a) {
      const int h = h0 + a;
      const bool row_inside = depth_inside && (unsigned)h < (unsigned)H;
      const float* row = g_activation + base + h * W;
#pragma unroll
      for (int b = 0; b < ALPHA; ++b) {
        if (vectors && b >= PAD_W && b < PAD_W + TILE) {
          if ((b - PAD_W) % VECTOR != 0) continue;  // loaded with the vector starting at its run
          float v[VECTOR];
          load_vector(v, row + w0 + b, row_inside && w0 + b < W);
#pragma unroll
          for (int j = 0; j < VECTOR; ++j) r_d[a][b + j] = v[j];
        } else {
          const int w = w0 + b;
          r_d[a][b] = row_inside && (unsigned)w < (unsigned)W ? row[w] : 0.0f;
        }
      }
    }
  } else {
#pragma unroll
    for (int a = 0; a < ALPHA; ++a) {
#pragma unroll
      for (int b = 0; b < ALPHA; ++b) {
        const int h = h0 + a;
        const int w = w0 + b;
        const bool inside = depth_inside && (unsigned)h < (unsigned)H && (unsigned)w < (unsigned)W;
        const int spatial = h * W + w;
        r_d[a][b] = inside ? g_activation[CHANNELS_LAST ? base + spatial * C : base + spatial] : 0.0f;
      }
    }
  }
}

// r_d = row ad (a run-time value in 3-D) of the depth transform applied to the patch's slices; the patch itself in 2-D.
__device__ __forceinline__ void combine_depth_slices(float (&r_d)[ALPHA][ALPHA], const float* __restrict__ g_activation,
                                                     int c, int tile, int ad) {
  if constexpr (!VOLUME) {
    load_patch(r_d, g_activation, c, tile, 0);
  } else {
    const DepthTaps taps = depth_input_taps(ad);
    float r_s[ALPHA][ALPHA];
    load_patch(r_d, g_activation, c, tile, taps.first);
    load_patch(r_s, g_activation, c, tile, taps.second);
#pragma unroll
    for (int a = 0; a < ALPHA; ++a)
#pragma unroll
      for (int b = 0; b < ALPHA; ++b) {
        const float x = taps.negate_first ? -r_d[a][b] : r_d[a][b];
        r_d[a][b] = taps.negate_second ? x - r_s[a][b] : x + r_s[a][b];
      }
  }
}

}  // namespace winograd_gemm

// Setup, once per filter: U[pos][g][c][k] = (G g G^T) of filter (k, c) of group g (in 3-D also along the depth), in
// double, rounded to float once; zero for the padding channels (c >= CG or k >= KG). One thread per (g, c, k) of the
// padded buffer, k fastest.
extern "C" __global__ void __launch_bounds__(winograd_gemm::TRANSFORM_THREADS)
    CONVGEN_ENTRY_NAMED(transform_filter)(const float* __restrict__ g_filter,
                                          float* __restrict__ g_transformed_filter) {
  using namespace winograd_gemm;
  const int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= GROUPS * CG_PAD * KG_PAD) return;
  const int kk = i % KG_PAD;  // within the group
  const int c = (i / KG_PAD) % CG_PAD;
  const int g = i / (KG_PAD * CG_PAD);
  const bool real = c < CG && kk < KG;
  const int k = g * KG + kk;
  double r_g[T][3][3];
#pragma unroll
  for (int tt = 0; tt < T; ++tt)
#pragma unroll
    for (int r = 0; r < 3; ++r)
#pragma unroll
      for (int s = 0; s < 3; ++s)
        // channels-last filter: (((k * T + t) * R + r) * S + s) * CG + c; channels-first: ((k * CG + c) * T + t) * ...
        r_g[tt][r][s] = !real           ? 0.0
                        : CHANNELS_LAST ? g_filter[(k * (T * 9) + tt * 9 + r * 3 + s) * CG + c]
                                        : g_filter[(k * CG + c) * (T * 9) + tt * 9 + r * 3 + s];
#pragma unroll
  for (int ad = 0; ad < ALPHA_D; ++ad) {
    // The depth transform's row ad (the filter itself in 2-D), then the 2-D transform of it.
    double r_s[3][3];
    bool first = true;
#pragma unroll
    for (int tt = 0; tt < T; ++tt) {
      const double m = depth_filter(ad, tt);
      if (m == 0.0) continue;
#pragma unroll
      for (int r = 0; r < 3; ++r)
#pragma unroll
        for (int s = 0; s < 3; ++s) r_s[r][s] = first ? m * r_g[tt][r][s] : r_s[r][s] + m * r_g[tt][r][s];
      first = false;
    }
    double r_u[ALPHA][ALPHA];
    transform_2d<FilterMatrix, double>(r_u, r_s);
#pragma unroll
    for (int a = 0; a < ALPHA; ++a)
#pragma unroll
      for (int b = 0; b < ALPHA; ++b)
        g_transformed_filter[((((ad * ALPHA + a) * ALPHA + b) * GROUPS + g) * CG_PAD + c) * KG_PAD + kk] =
            (float)r_u[a][b];
  }
}

// Run 1: V[pos][g][c][t] = B^T d B of the input patch of (channel g * CG + c, tile t) (in 3-D also along the depth,
// one depth row at a time); zero for the padding (c >= CG or t >= TILES). One thread per (g, c, t) of the padded
// buffer, t fastest (coalesced stores).
extern "C" __global__ void __launch_bounds__(winograd_gemm::TRANSFORM_THREADS)
    CONVGEN_ENTRY_NAMED(transform_input)(const float* __restrict__ g_activation,
                                         float* __restrict__ g_transformed_input) {
  convgen::wait_for_previous_grid();  // launched early (grid_dependency.cuh): the stream's previous kernel first
  convgen::allow_next_grid();
  using namespace winograd_gemm;
  const int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= GROUPS * CG_PAD * T_PAD) return;
  const int t = i % T_PAD;
  const int c = (i / T_PAD) % CG_PAD;
  const int g = i / (T_PAD * CG_PAD);
  const bool real = c < CG && t < TILES;
#pragma unroll 1
  for (int ad = 0; ad < ALPHA_D; ++ad) {
    float r_d[ALPHA][ALPHA];
    if (real) {
      combine_depth_slices(r_d, g_activation, g * CG + c, t, ad);
    } else {
#pragma unroll
      for (int a = 0; a < ALPHA; ++a)
#pragma unroll
        for (int b = 0; b < ALPHA; ++b) r_d[a][b] = 0.0f;
    }
    float r_v[ALPHA][ALPHA];
    transform_2d<InputMatrix, float>(r_v, r_d);
#pragma unroll
    for (int a = 0; a < ALPHA; ++a)
#pragma unroll
      for (int b = 0; b < ALPHA; ++b)
        g_transformed_input[((((ad * ALPHA + a) * ALPHA + b) * GROUPS + g) * CG_PAD + c) * T_PAD + t] = r_v[a][b];
  }
}

// Run 2: the batched GEMM M[pos][g] = U[pos][g]^T V[pos][g] (both operands stored channel-major), into products; with
// SPLIT_K > 1 the blocks of split z / BATCHES multiply its share of the channels into a slab of their own.
extern "C" __global__ void __launch_bounds__(winograd_gemm::THREADS)
    CONVGEN_ENTRY(const float* __restrict__ g_transformed_filter, const float* __restrict__ g_transformed_input,
                  float* __restrict__ g_products) {
  convgen::wait_for_previous_grid();  // launched early (grid_dependency.cuh): the stream's previous kernel first
  convgen::allow_next_grid_at_start();
  using namespace winograd_gemm;
  __shared__ __align__(16) float s_a[BUFFERS][BLOCK_K][BLOCK_M];
  __shared__ __align__(16) float s_b[BUFFERS][BLOCK_K][BLOCK_N];
  const int tid = (int)threadIdx.x;
  const int tx = tid % THREADS_N;
  const int ty = tid / THREADS_N;
  const int batch = (int)blockIdx.z % BATCHES;  // pos * GROUPS + g
  const int split = (int)blockIdx.z / BATCHES;
  const int c_first = split * STEPS * BLOCK_K;
  const int m0 = (int)blockIdx.y * BLOCK_M;
  const int n0 = (int)blockIdx.x * BLOCK_N;
  const float* __restrict__ g_a = g_transformed_filter + (batch * CG_PAD + c_first) * KG_PAD + m0;
  const float* __restrict__ g_b = g_transformed_input + (batch * CG_PAD + c_first) * T_PAD + n0;

  float acc[THREAD_M][THREAD_N];
#pragma unroll
  for (int i = 0; i < THREAD_M; ++i)
#pragma unroll
    for (int j = 0; j < THREAD_N; ++j) acc[i][j] = 0.0f;

  // A thread's float4s of a slab: vector e = tid + i * THREADS is row e / (BLOCK / 4), column 4 * (e % (BLOCK / 4)).
  if constexpr (CP_STAGES == 0) {
    float r_a[A_PER_THREAD][4];
    float r_b[B_PER_THREAD][4];
    auto load_step = [&](int c0) {
#pragma unroll
      for (int i = 0; i < A_PER_THREAD; ++i) {
        const int e = tid + i * THREADS;
        convgen::load_floats<4>(r_a[i], g_a + (c0 + e / (BLOCK_M / 4)) * KG_PAD + 4 * (e % (BLOCK_M / 4)));
      }
#pragma unroll
      for (int i = 0; i < B_PER_THREAD; ++i) {
        const int e = tid + i * THREADS;
        convgen::load_floats<4>(r_b[i], g_b + (c0 + e / (BLOCK_N / 4)) * T_PAD + 4 * (e % (BLOCK_N / 4)));
      }
    };
    auto store_step = [&](int buffer) {
#pragma unroll
      for (int i = 0; i < A_PER_THREAD; ++i) {
        const int e = tid + i * THREADS;
        float* dst = &s_a[buffer][e / (BLOCK_M / 4)][4 * (e % (BLOCK_M / 4))];
#pragma unroll
        for (int j = 0; j < 4; ++j) dst[j] = r_a[i][j];
      }
#pragma unroll
      for (int i = 0; i < B_PER_THREAD; ++i) {
        const int e = tid + i * THREADS;
        float* dst = &s_b[buffer][e / (BLOCK_N / 4)][4 * (e % (BLOCK_N / 4))];
#pragma unroll
        for (int j = 0; j < 4; ++j) dst[j] = r_b[i][j];
      }
    };

    load_step(0);
    store_step(0);
    __syncthreads();
#pragma unroll 1
    for (int step = 0; step < STEPS; ++step) {
      const int buffer = step & 1;
      if (step + 1 < STEPS) load_step((step + 1) * BLOCK_K);  // in flight during this step's FMAs
      gemm_step(acc, s_a[buffer], s_b[buffer], tx, ty);
      // The other buffer was last read in the previous step, before its closing barrier.
      if (step + 1 < STEPS) store_step(buffer ^ 1);
      __syncthreads();
    }
  } else {
    // Step `step`'s float4 copies into ring buffer `buffer` (the buffers are padded: no bounds test).
    auto copy_step = [&](int step, int buffer) {
      const int c0 = step * BLOCK_K;
#pragma unroll
      for (int i = 0; i < A_PER_THREAD; ++i) {
        const int e = tid + i * THREADS;
        convgen::async::copy<16>(&s_a[buffer][e / (BLOCK_M / 4)][4 * (e % (BLOCK_M / 4))],
                                 g_a + (c0 + e / (BLOCK_M / 4)) * KG_PAD + 4 * (e % (BLOCK_M / 4)), true);
      }
#pragma unroll
      for (int i = 0; i < B_PER_THREAD; ++i) {
        const int e = tid + i * THREADS;
        convgen::async::copy<16>(&s_b[buffer][e / (BLOCK_N / 4)][4 * (e % (BLOCK_N / 4))],
                                 g_b + (c0 + e / (BLOCK_N / 4)) * T_PAD + 4 * (e % (BLOCK_N / 4)), true);
      }
    };
    gemm_ring<(CP_STAGES > 0 ? CP_STAGES : 2)>(acc, s_a, s_b, 0, STEPS, copy_step, tx, ty);
  }
  convgen::allow_next_grid_after_main_loop();

  float* __restrict__ g_m = g_products + split * PRODUCT_SLAB + batch * KG_PAD * T_PAD;
#pragma unroll
  for (int i = 0; i < THREAD_M; ++i) {
    const int m = m0 + gemm_m(ty, i);
#pragma unroll
    for (int f = 0; f < FN; ++f) {
      float4 v;
      v.x = acc[i][4 * f];
      v.y = acc[i][4 * f + 1];
      v.z = acc[i][4 * f + 2];
      v.w = acc[i][4 * f + 3];
      *reinterpret_cast<float4*>(g_m + m * T_PAD + n0 + f * (BLOCK_N / FN) + tx * 4) = v;
    }
  }
}

// Run 3: Y = A^T M A of every (output channel g * KG + k, tile t) (in 3-D also along the depth), through the
// epilogue, stored where the output exists (the last tiles of a row or column may be partial). One thread per
// (g, k, t), t fastest (coalesced loads).
extern "C" __global__ void __launch_bounds__(winograd_gemm::TRANSFORM_THREADS)
    CONVGEN_ENTRY_NAMED(transform_output)(const float* __restrict__ g_products, float* __restrict__ g_output,
                                          const float* __restrict__ g_bias, const float* __restrict__ g_residual) {
  convgen::wait_for_previous_grid();  // launched early (grid_dependency.cuh): the stream's previous kernel first
  convgen::allow_next_grid();
  using namespace winograd_gemm;
  const int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= GROUPS * KG * TILES) return;
  const int t = i % TILES;
  const int kk = (i / TILES) % KG;
  const int g = i / (TILES * KG);
  const int k = g * KG + kk;
  // r_y[od] = sum_ad depth_output(od, ad) * (A^T M[ad] A): each depth row of the products transformed as a 2-D
  // tile, then combined along the depth (in 2-D the one row's transform itself).
  float r_y[TILE_D][TILE][TILE];
  bool first[TILE_D];
#pragma unroll
  for (int od = 0; od < TILE_D; ++od) first[od] = true;
#pragma unroll 1
  for (int ad = 0; ad < ALPHA_D; ++ad) {
    float r_m[ALPHA][ALPHA];
#pragma unroll
    for (int a = 0; a < ALPHA; ++a)
#pragma unroll
      for (int b = 0; b < ALPHA; ++b) {
        const int at = ((((ad * ALPHA + a) * ALPHA + b) * GROUPS + g) * KG_PAD + kk) * T_PAD + t;
        r_m[a][b] = g_products[at];
#pragma unroll
        for (int split = 1; split < SPLIT_K; ++split) r_m[a][b] += g_products[split * (int)PRODUCT_SLAB + at];
      }
    float r_o[TILE][TILE];
    transform_2d<OutputMatrix, float>(r_o, r_m);
#pragma unroll
    for (int od = 0; od < TILE_D; ++od) {
      const float m = depth_output(od, ad);
      if (m == 0.0f) continue;
#pragma unroll
      for (int a = 0; a < TILE; ++a)
#pragma unroll
        for (int b = 0; b < TILE; ++b) r_y[od][a][b] = first[od] ? m * r_o[a][b] : r_y[od][a][b] + m * r_o[a][b];
      first[od] = false;
    }
  }
  const int n = t / TILES_PER_IMAGE;
  const int rest = t % TILES_PER_IMAGE;
  const int d0 = tile_depth(rest);
  const int plane = tile_in_plane(rest);
  const int p0 = (plane / TILES_W) * TILE;
  const int q0 = (plane % TILES_W) * TILE;
  // Rows of the tile as vectors (channels-first, VECTOR > 1): Q a multiple of VECTOR, so each vector lies wholly
  // inside the row or wholly past its end (a partial last tile's).
  const bool vectors = VECTOR > 1 && vector_aligned(g_output);
#pragma unroll
  for (int od = 0; od < TILE_D; ++od) {
#pragma unroll
    for (int a = 0; a < TILE; ++a) {
      const int d = d0 + od, p = p0 + a;
      if (d >= O || p >= P) continue;
      if (vectors) {
#pragma unroll
        for (int b = 0; b < TILE; b += VECTOR) {
          if (q0 + b >= Q) continue;
          const int o = (((n * K + k) * O + d) * P + p) * Q + q0 + b;
          float v[VECTOR];
#pragma unroll
          for (int j = 0; j < VECTOR; ++j)
            v[j] = convgen::apply_epilogue_fp32<cfg::Epilogue>(r_y[od][a][b + j], g_bias, g_residual, k, o + j);
          store_vector(g_output + o, v);
        }
        continue;
      }
#pragma unroll
      for (int b = 0; b < TILE; ++b) {
        const int q = q0 + b;
        if (q >= Q) continue;
        const int o = CHANNELS_LAST ? (((n * O + d) * P + p) * Q + q) * K + k : (((n * K + k) * O + d) * P + p) * Q + q;
        g_output[o] = convgen::apply_epilogue_fp32<cfg::Epilogue>(r_y[od][a][b], g_bias, g_residual, k, o);
      }
    }
  }
}
