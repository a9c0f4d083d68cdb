// winograd: FP32 Winograd convolution F(m x m, 3 x 3), m = TILE (2 or 4), for 3x3 filters at stride 1, dilation 1,
// ungrouped or grouped (each block works inside one group: its CG input and KG output channels).
//
// Y = A^T [ (G g G^T) . (B^T d B) ] A per output tile (Lavin & Gray 2016), cross-correlation as the reference.
// The filter transform U = G g G^T is a setup step (entry transform_filter), run once per filter into the persistent
// buffer transformed_filter laid out [position][group][c][k] (ALPHA x ALPHA positions, ALPHA = TILE + 2; c < CG and
// k < KG within the group), computed in double.
// The main kernel does the rest in one launch. A block owns BLOCK_K output channels x BLOCK_T output tiles (tiles
// numbered over n, tile row, tile column); per chunk of BLOCK_C input channels it
//   1. stages U[pos][c][k] of the chunk in shared memory, s_u[pos][c][k];
//   2. loads each (channel, tile) input patch of ALPHA x ALPHA (zero outside the input: padding and the last partial
//      tiles), transforms it, V = B^T d B, and stores it to s_v[pos][c][t];
//   3. accumulates M[pos][k][t] += U[pos][c][k] * V[pos][c][t]: POSITIONS small GEMMs; each thread owns a
//      THREAD_K x THREAD_T register tile for POS_PER_THREAD positions (pos = tid_p + q * P_THREADS).
// With PREFETCH, the global loads of steps 1 and 2 for the next chunk are issued into registers right after the
// barrier that publishes the current chunk, so their latency hides behind its GEMMs (a register-staged pipeline: one
// shared-memory buffer, more registers); without it a chunk's loads wait for the previous chunk's GEMMs.
// Then M goes through shared memory, KSLICE output channels at a time (reusing s_u and s_v), and each (k, tile) is
// transformed back, Y = A^T M A, and stored where the output exists (P, Q, K, tiles need not be multiples of
// anything). Grid: x = ceil(TILES / BLOCK_T), y = GROUPS * ceil(KG / BLOCK_K) (the group, then the channel block).
#include "interface.cuh"
#include "epilogue.cuh"

#ifndef CONVGEN_PRELUDE
#define CONVGEN_ENTRY convgen_winograd_default
namespace cfg {
constexpr int N = 1, C = 64, K = 64, GROUPS = 1;
constexpr int D = 1, H = 56, W = 56;
constexpr int T = 1, R = 3, S = 3;
constexpr int O = 1, P = 56, Q = 56;
constexpr int STRIDE_D = 1, STRIDE_H = 1, STRIDE_W = 1;
constexpr int PAD_D = 0, PAD_H = 1, PAD_W = 1;
constexpr int DIL_D = 1, DIL_H = 1, DIL_W = 1;
constexpr bool CHANNELS_LAST = false;
// The tunable parameters, in kernel-name order (winograd_m2_k32_n32_c8_tk4_tt4_pp4).
CONVGEN_PARAM("m", "2,4", "output tile of F(m x m, 3 x 3)") constexpr int TILE = 2;
CONVGEN_PARAM("k", "8,16,32,64", "output channels per block") constexpr int BLOCK_K = 32;
CONVGEN_PARAM("n", "8,16,32,64", "output tiles per block") constexpr int BLOCK_T = 32;
CONVGEN_PARAM("c", "4,8,16", "input channels per shared-memory step") constexpr int BLOCK_C = 8;
CONVGEN_PARAM("tk", "1,2,4", "output channels per thread (register tile)") constexpr int THREAD_K = 4;
CONVGEN_PARAM("tt", "1,2,4", "output tiles per thread (register tile)") constexpr int THREAD_T = 4;
CONVGEN_PARAM("pp", "1,2,3,4,6,8,9,12,16,18,36", "transform positions per thread") constexpr int POS_PER_THREAD = 4;
CONVGEN_PARAM("pf", "bool", "load the next channel chunk into registers while the GEMMs run") constexpr bool PREFETCH = false;
using Epilogue = convgen::IdentityEpilogue;  // the prelude renders the problem's (templates/epilogue.cuh)
}  // namespace cfg
#endif

#include "common.cuh"

namespace winograd {

using namespace cfg;
using convgen::ceil_div;
using convgen::cmin;
using convgen::is_pow2;

// ---- The shape ----------------------------------------------------------------------------------------------
constexpr int ALPHA = TILE + 2;           // input patch and transform extent
constexpr int POSITIONS = ALPHA * ALPHA;  // 16 or 36 GEMMs
constexpr int TILES_H = (int)ceil_div(P, TILE);
constexpr int TILES_W = (int)ceil_div(Q, TILE);
constexpr int TILES_PER_IMAGE = TILES_H * TILES_W;
constexpr long long TILES_LL = (long long)N * TILES_PER_IMAGE;
constexpr int TILES = (int)TILES_LL;
constexpr int CG = C / GROUPS;  // input channels of a group
constexpr int KG = K / GROUPS;  // output channels of a group
constexpr int K_BLOCKS = (int)ceil_div(KG, BLOCK_K);  // channel blocks of a group
constexpr long long ACTIVATION_ELEMENTS = (long long)N * C * H * W;
constexpr long long OUTPUT_ELEMENTS = (long long)N * K * P * Q;
constexpr long long TRANSFORMED_ELEMENTS = (long long)POSITIONS * CG * K;
constexpr long long MAX_ELEMENTS = ACTIVATION_ELEMENTS > OUTPUT_ELEMENTS
                                       ? (ACTIVATION_ELEMENTS > TRANSFORMED_ELEMENTS ? ACTIVATION_ELEMENTS
                                                                                     : TRANSFORMED_ELEMENTS)
                                       : (OUTPUT_ELEMENTS > TRANSFORMED_ELEMENTS ? OUTPUT_ELEMENTS
                                                                                 : TRANSFORMED_ELEMENTS);
using idx_t = convgen::index_for<MAX_ELEMENTS>;

static_assert(GROUPS >= 1 && C % GROUPS == 0 && K % GROUPS == 0, "the groups must divide C and K");
static_assert(D == 1 && T == 1 && O == 1 && PAD_D == 0, "winograd handles 2-D convolutions only");
static_assert(R == 3 && S == 3, "winograd handles 3x3 filters only");
static_assert(STRIDE_H == 1 && STRIDE_W == 1, "winograd needs stride 1");
static_assert(DIL_H == 1 && DIL_W == 1, "winograd needs dilation 1");
static_assert(P == convgen::conv_out_extent(H, R, STRIDE_H, PAD_H, DIL_H), "P does not match H, R, stride, padding");
static_assert(Q == convgen::conv_out_extent(W, S, STRIDE_W, PAD_W, DIL_W), "Q does not match W, S, stride, padding");
static_assert(P > 0 && Q > 0, "the output must not be empty");
static_assert(TILES_LL <= convgen::kIntMax, "output tiles must fit in int");
static_assert((long long)CG * K <= convgen::kIntMax, "C / GROUPS * K must fit in int");

// ---- The configuration --------------------------------------------------------------------------------------
static_assert(TILE == 2 || TILE == 4, "TILE must be 2 or 4");
static_assert(is_pow2(BLOCK_K) && is_pow2(BLOCK_T), "BLOCK_K and BLOCK_T must be powers of two");
static_assert(BLOCK_C >= 1, "BLOCK_C must be positive");
static_assert(THREAD_K == 1 || THREAD_K == 2 || THREAD_K == 4, "THREAD_K must be 1, 2 or 4");
static_assert(THREAD_T == 1 || THREAD_T == 2 || THREAD_T == 4, "THREAD_T must be 1, 2 or 4");
static_assert(BLOCK_K % THREAD_K == 0, "BLOCK_K must be a multiple of THREAD_K");
static_assert(BLOCK_T % THREAD_T == 0, "BLOCK_T must be a multiple of THREAD_T");
static_assert(POS_PER_THREAD >= 1 && POSITIONS % POS_PER_THREAD == 0,
              "POS_PER_THREAD must divide the (TILE + 2)^2 transform positions");

constexpr int P_THREADS = POSITIONS / POS_PER_THREAD;  // threads along positions (slowest)
constexpr int K_THREADS = BLOCK_K / THREAD_K;          // threads along output channels
constexpr int T_THREADS = BLOCK_T / THREAD_T;          // threads along tiles (fastest)
constexpr int THREADS = P_THREADS * K_THREADS * T_THREADS;
static_assert(THREADS >= 1 && THREADS <= 1024, "a block must have 1 to 1024 threads");

// Shared memory: s_u [POSITIONS][BLOCK_C][BLOCK_K] and s_v [POSITIONS][BLOCK_C][BLOCK_T] in the main loop; then the
// same floats hold s_m [POSITIONS][KSLICE][BLOCK_T], the accumulators of KSLICE output channels at a time.
constexpr int U_FLOATS = POSITIONS * BLOCK_C * BLOCK_K;
constexpr int V_FLOATS = POSITIONS * BLOCK_C * BLOCK_T;
constexpr int SMEM_FLOATS = U_FLOATS + V_FLOATS;
constexpr int floor_pow2(int v) { return v >= 2 ? 2 * floor_pow2(v / 2) : 1; }
// Output channels per pass of the output transform: a power of two (so it divides BLOCK_K) whose s_m fits.
constexpr int KSLICE = floor_pow2(cmin(BLOCK_K, SMEM_FLOATS / (POSITIONS * BLOCK_T)));
constexpr int PASSES = BLOCK_K / KSLICE;
static_assert(POSITIONS * KSLICE * BLOCK_T <= SMEM_FLOATS, "the output stage must fit the main loop's shared memory");

// The block's shared memory: dynamic, SMEM_FLOATS floats (the launch plan gives the size; above 48 KiB the loader opts
// in). The host emulation supplies its own buffer.
#ifndef CONVGEN_WINOGRAD_SHARED
__device__ __forceinline__ float* shared_floats() {
  extern __shared__ __align__(16) float s_dynamic_floats[];
  return s_dynamic_floats;
}
#endif

// Register tile: thread (tid_k, tid_t) owns output channels tid_k * THREAD_K + i (i < THREAD_K) and tiles
// tid_t * THREAD_T + j of the block, each run read from shared memory as one vector (VK, VT floats).
constexpr int VK = THREAD_K;
constexpr int VT = THREAD_T;
__device__ __forceinline__ int micro_k(int tid_k, int i) { return tid_k * THREAD_K + i; }
__device__ __forceinline__ int micro_t(int tid_t, int j) { return tid_t * THREAD_T + j; }

#include "winograd_transforms.cuh"

// The input patch of one (channel, tile): ALPHA x ALPHA values from (th * TILE - PAD_H, tw * TILE - PAD_W), zero
// outside the input and for tiles past the end.
__device__ __forceinline__ void load_patch(float (&r_d)[ALPHA][ALPHA], const float* __restrict__ g_activation, int c,
                                           int tile, bool ok) {
  const int n = tile / TILES_PER_IMAGE;
  const int rest = tile % TILES_PER_IMAGE;
  const int h0 = (rest / TILES_W) * TILE - PAD_H;
  const int w0 = (rest % TILES_W) * TILE - PAD_W;
  // channels-last: ((n * H + h) * W + w) * C + c; channels-first: ((n * C + c) * H + h) * W + w
  const idx_t base = CHANNELS_LAST ? (idx_t)n * H * W * C + c : ((idx_t)n * C + c) * H * W;
#pragma unroll
  for (int a = 0; a < ALPHA; ++a) {
#pragma unroll
    for (int b = 0; b < ALPHA; ++b) {
      const int h = h0 + a;
      const int w = w0 + b;
      const bool inside = ok && (unsigned)h < (unsigned)H && (unsigned)w < (unsigned)W;
      const idx_t spatial = (idx_t)h * W + w;
      r_d[a][b] = inside ? g_activation[CHANNELS_LAST ? base + spatial * C : base + spatial] : 0.0f;
    }
  }
}

// One thread's share of a chunk of BLOCK_C input channels: U_LOADS elements of the transformed filter (element e =
// tid + i * THREADS of s_u) and PATCHES input patches (patch e = tid + i * THREADS of the BLOCK_C x BLOCK_T), held in
// registers between the global loads (load_chunk) and the shared-memory stores (store_chunk).
constexpr int U_LOADS = (int)ceil_div(U_FLOATS, THREADS);
constexpr int PATCHES = (int)ceil_div(BLOCK_C * BLOCK_T, THREADS);
// Whether a thread's i-th element or patch exists (the last round of a block may be partial).
__device__ __forceinline__ bool is_u_element(int e) { return U_FLOATS % THREADS == 0 || e < U_FLOATS; }
__device__ __forceinline__ bool is_patch(int e) { return (BLOCK_C * BLOCK_T) % THREADS == 0 || e < BLOCK_C * BLOCK_T; }
struct ChunkRegisters {
  float u[U_LOADS];
  float d[PATCHES][ALPHA][ALPHA];
};

// 1. The chunk's transformed filter, channels past the group's CG or KG as zero; 2. its input patches, zero outside
// the input. c0 and k_block count within group g.
__device__ __forceinline__ void load_chunk(ChunkRegisters& r, const float* __restrict__ g_activation,
                                           const float* __restrict__ g_transformed_filter, int tid, int g, int c0,
                                           int t_block, int k_block) {
#pragma unroll
  for (int i = 0; i < U_LOADS; ++i) {
    const int e = tid + i * THREADS;
    const int kk = e % BLOCK_K;
    const int cc = (e / BLOCK_K) % BLOCK_C;
    const int pos = e / (BLOCK_K * BLOCK_C);
    const int c = c0 + cc;
    const int k = k_block + kk;
    const bool ok = is_u_element(e) && c < CG && k < KG;
    r.u[i] = ok ? g_transformed_filter[(((idx_t)pos * GROUPS + g) * CG + c) * KG + k] : 0.0f;
  }
#pragma unroll
  for (int i = 0; i < PATCHES; ++i) {
    const int e = tid + i * THREADS;
    const int tile = t_block + e % BLOCK_T;
    const int c = c0 + e / BLOCK_T;
    const bool ok = is_patch(e) && c < CG && tile < TILES;
    load_patch(r.d[i], g_activation, ok ? g * CG + c : 0, ok ? tile : 0, ok);
  }
}

// The chunk into shared memory: s_u as loaded, each patch transformed, V = B^T d B, into s_v[pos][c][t].
__device__ __forceinline__ void store_chunk(const ChunkRegisters& r, float* s_u, float* s_v, int tid) {
#pragma unroll
  for (int i = 0; i < U_LOADS; ++i) {
    const int e = tid + i * THREADS;
    if (is_u_element(e)) s_u[e] = r.u[i];
  }
#pragma unroll
  for (int i = 0; i < PATCHES; ++i) {
    const int e = tid + i * THREADS;
    if (!is_patch(e)) continue;
    const int tt = e % BLOCK_T;
    const int cc = e / BLOCK_T;
    float r_v[ALPHA][ALPHA];
    transform_2d<InputMatrix, float>(r_v, r.d[i]);
#pragma unroll
    for (int a = 0; a < ALPHA; ++a)
#pragma unroll
      for (int b = 0; b < ALPHA; ++b) s_v[((a * ALPHA + b) * BLOCK_C + cc) * BLOCK_T + tt] = r_v[a][b];
  }
}

}  // namespace winograd

// Setup, once per filter: U[pos][group][c][k] = (G g G^T) of filter (k, c) of the group, in double, rounded to float
// once. One thread per (group, c, k), k fastest (coalesced stores); 256 threads per block.
extern "C" __global__ void __launch_bounds__(256)
    CONVGEN_ENTRY_NAMED(transform_filter)(const float* __restrict__ g_filter,
                                          float* __restrict__ g_transformed_filter) {
  using namespace winograd;
  const int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= CG * K) return;
  const int kk = i % KG;  // within the group
  const int c = GROUPS == 1 ? i / KG : (i / KG) % CG;
  const int g = GROUPS == 1 ? 0 : i / (KG * CG);
  const int k = g * KG + kk;
  double r_g[3][3];
#pragma unroll
  for (int r = 0; r < 3; ++r)
#pragma unroll
    for (int s = 0; s < 3; ++s)
      // channels-last filter: ((k * R + r) * S + s) * CG + c; channels-first: ((k * CG + c) * R + r) * S + s
      r_g[r][s] = CHANNELS_LAST ? g_filter[((idx_t)k * 9 + r * 3 + s) * CG + c]
                                : g_filter[((idx_t)k * CG + c) * 9 + r * 3 + s];
  double r_u[ALPHA][ALPHA];
  transform_2d<FilterMatrix, double>(r_u, r_g);
#pragma unroll
  for (int a = 0; a < ALPHA; ++a)
#pragma unroll
    for (int b = 0; b < ALPHA; ++b)
      g_transformed_filter[(((idx_t)(a * ALPHA + b) * GROUPS + g) * CG + c) * KG + kk] = (float)r_u[a][b];
}

extern "C" __global__ void __launch_bounds__(winograd::THREADS)
    CONVGEN_ENTRY(const float* __restrict__ g_activation, const float* __restrict__ g_transformed_filter,
                  float* __restrict__ g_output, const float* __restrict__ g_bias,
                  const float* __restrict__ g_residual) {
  convgen::wait_for_previous_grid();  // launched early (grid_dependency.cuh): the stream's previous kernel first
  convgen::allow_next_grid_at_start();
  using namespace winograd;
  float* const s_mem = shared_floats();
  float* const s_u = s_mem;             // [POSITIONS][BLOCK_C][BLOCK_K]
  float* const s_v = s_mem + U_FLOATS;  // [POSITIONS][BLOCK_C][BLOCK_T]

  const int tid = (int)threadIdx.x;
  const int t_block = (int)blockIdx.x * BLOCK_T;  // first tile of the block
  // The block's group, and its first output channel within the group (ungrouped: the grid's y is the channel block).
  const int g = GROUPS == 1 ? 0 : (int)blockIdx.y / K_BLOCKS;
  const int k_block = (GROUPS == 1 ? (int)blockIdx.y : (int)blockIdx.y % K_BLOCKS) * BLOCK_K;
  const int tid_t = tid % T_THREADS;
  const int tid_k = (tid / T_THREADS) % K_THREADS;
  const int tid_p = tid / (T_THREADS * K_THREADS);

  float r_acc[POS_PER_THREAD][THREAD_K][THREAD_T];
#pragma unroll
  for (int q = 0; q < POS_PER_THREAD; ++q)
#pragma unroll
    for (int i = 0; i < THREAD_K; ++i)
#pragma unroll
      for (int j = 0; j < THREAD_T; ++j) r_acc[q][i][j] = 0.0f;

  ChunkRegisters r_chunk;
  if constexpr (PREFETCH) load_chunk(r_chunk, g_activation, g_transformed_filter, tid, g, 0, t_block, k_block);
  for (int c0 = 0; c0 < CG; c0 += BLOCK_C) {
    if constexpr (!PREFETCH) load_chunk(r_chunk, g_activation, g_transformed_filter, tid, g, c0, t_block, k_block);
    store_chunk(r_chunk, s_u, s_v, tid);
    __syncthreads();
    if constexpr (PREFETCH) {
      const int next = c0 + BLOCK_C;
      if (next < CG) load_chunk(r_chunk, g_activation, g_transformed_filter, tid, g, next, t_block, k_block);
    }
    // 3. The GEMMs of the chunk.
#pragma unroll
    for (int cc = 0; cc < BLOCK_C; ++cc) {
#pragma unroll
      for (int q = 0; q < POS_PER_THREAD; ++q) {
        const int pos = tid_p + q * P_THREADS;
        float r_u[THREAD_K];
        float r_x[THREAD_T];
        convgen::load_floats<VK>(r_u, &s_u[(pos * BLOCK_C + cc) * BLOCK_K + micro_k(tid_k, 0)]);
        convgen::load_floats<VT>(r_x, &s_v[(pos * BLOCK_C + cc) * BLOCK_T + micro_t(tid_t, 0)]);
#pragma unroll
        for (int i = 0; i < THREAD_K; ++i)
#pragma unroll
          for (int j = 0; j < THREAD_T; ++j) r_acc[q][i][j] = fmaf(r_u[i], r_x[j], r_acc[q][i][j]);
      }
    }
    __syncthreads();
  }
  convgen::allow_next_grid_after_main_loop();

  // 4. The output transform, KSLICE output channels per pass: M through shared memory, Y = A^T M A.
  float* const s_m = s_mem;  // [POSITIONS][KSLICE][BLOCK_T]
  for (int pass = 0; pass < PASSES; ++pass) {
    const int k0 = pass * KSLICE;
#pragma unroll
    for (int q = 0; q < POS_PER_THREAD; ++q)
#pragma unroll
      for (int i = 0; i < THREAD_K; ++i) {
        const int kk = micro_k(tid_k, i) - k0;
        if (kk < 0 || kk >= KSLICE) continue;
#pragma unroll
        for (int j = 0; j < THREAD_T; ++j)
          s_m[((tid_p + q * P_THREADS) * KSLICE + kk) * BLOCK_T + micro_t(tid_t, j)] = r_acc[q][i][j];
      }
    __syncthreads();
    for (int e = tid; e < KSLICE * BLOCK_T; e += THREADS) {
      const int tt = e % BLOCK_T;
      const int kk = e / BLOCK_T;
      const int tile = t_block + tt;
      const int k_in_group = k_block + k0 + kk;
      if (tile >= TILES || k_in_group >= KG) continue;
      const int k = g * KG + k_in_group;
      float r_m[ALPHA][ALPHA];
#pragma unroll
      for (int a = 0; a < ALPHA; ++a)
#pragma unroll
        for (int b = 0; b < ALPHA; ++b) r_m[a][b] = s_m[((a * ALPHA + b) * KSLICE + kk) * BLOCK_T + tt];
      float r_y[TILE][TILE];
      transform_2d<OutputMatrix, float>(r_y, r_m);
      const int n = tile / TILES_PER_IMAGE;
      const int rest = tile % TILES_PER_IMAGE;
      const int p0 = (rest / TILES_W) * TILE;
      const int q0 = (rest % TILES_W) * TILE;
#pragma unroll
      for (int a = 0; a < TILE; ++a)
#pragma unroll
        for (int b = 0; b < TILE; ++b) {
          const int p = p0 + a;
          const int q = q0 + b;
          if (p >= P || q >= Q) continue;
          // channels-last: ((n * P + p) * Q + q) * K + k; channels-first: ((n * K + k) * P + p) * Q + q
          const idx_t offset =
              CHANNELS_LAST ? (((idx_t)n * P + p) * Q + q) * K + k : (((idx_t)n * K + k) * P + p) * Q + q;
          g_output[offset] = convgen::apply_epilogue_fp32<cfg::Epilogue>(r_y[a][b], g_bias, g_residual, k, offset);
        }
    }
    __syncthreads();
  }
}
