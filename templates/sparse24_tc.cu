// sparse24_tc: forward convolution with a 2:4 structured-sparse filter on tensor cores: implicit GEMM through
// mma.sp (m16n8k32, fp16 / bf16, fp32 accumulation), the filter compressed once by the `pack` entry, a cp.async
// multistage shared-memory pipeline, ldmatrix fragments and split-K through a workspace.
//
// mma.sp takes its sparse operand as A, so the GEMM is igemm_tc's transposed, per group g (grid.z = GROUPS * SPLIT_K):
//   M  = KG = K / GROUPS output channels  (row -> k = g * KG + row)
//   N  = NPIX = N * O * P * Q output pixels (npix = ((n * O + o) * P + p) * Q + q)
//   KR = CG * T * R * S reduction elements, in the filter row's memory order (channels-last
//        kr = ((t * R + r) * S + s) * CG + c, channels-first kr = ((c * T + t) * R + r) * S + s)
//   A[row][kr]  = filter[k * KR + kr]: each chunk of 4 consecutive kr of a row (from kr = 0) holds at most 2 nonzeros
//   B[kr][npix] = activation at channel g * CG + c, input coordinate o * STRIDE - PAD + t * DIL (zero outside)
//   C[row][npix] = output
//
// The pack entry (the plan's setup, once per filter) compresses A over KG_PAD rows and KR_PAD reduction elements (KG
// and KR rounded up to the block tile, zeros past them, so that the main loop reads A without a predicate): of each
// chunk of 4 it keeps the 2 values of largest magnitude (a 2:4 filter's nonzeros; the family serves only 2:4 filters)
// in kr order, and their positions as mma.sp metadata:
//   packed_values [GROUPS][KG_PAD][KR_PAD / 2]   the kept values, row by row
//   packed_meta   [GROUPS][KG_PAD / 16][KR_PAD / 32][16] words, one 16x32 mma fragment after another; word 2 g8 + h
//                 is what thread 4 g8 + h of a warp passes (templates/tensor_core.cuh, mma_sp_fp16): chunks of kr
//                 16h .. 16h + 15 of rows g8 (bits 0-15) and g8 + 8 (bits 16-31), 4 bits a chunk.
// Both are loaded into shared memory by cp.async with the activation tile, which is held as [pixel][kr] (igemm_tc's A
// tile): ldmatrix (no transpose) turns it into mma.sp's column-major B fragments, and the compressed filter tile
// [channel][kr / 2] into row-major A fragments.
//
// Data: fp16 / bf16 tensors as their 16-bit patterns; the output is written in the same type, rounded from the fp32
// accumulators through the epilogue. With SPLIT_K > 1 each split writes fp32 partial sums to the workspace (in the
// output's layout) and the `reduce` entry adds the splits in order and writes the output.
#include "interface.cuh"
#include "epilogue.cuh"

#ifndef CONVGEN_PRELUDE
#define CONVGEN_ENTRY convgen_sparse24_tc_default
namespace cfg {
constexpr int N = 8, C = 64, K = 64, GROUPS = 1;
constexpr int D = 1, H = 56, W = 56;
constexpr int T = 1, R = 3, S = 3;
constexpr int O = 1, P = 56, Q = 56;
constexpr int STRIDE_D = 1, STRIDE_H = 1, STRIDE_W = 1;
constexpr int PAD_D = 0, PAD_H = 1, PAD_W = 1;
constexpr int DIL_D = 1, DIL_H = 1, DIL_W = 1;
constexpr bool CHANNELS_LAST = true;
constexpr int PRECISION = 2;  // convgen::Precision: 2 fp16, 3 bf16
// The tunable parameters, in kernel-name order (sparse24_tc_m64_n128_k64_wm32_wn64_st3_sk1_v1).
CONVGEN_PARAM("m", "16,32,64,128,256", "output channels per block (GEMM M tile, the sparse operand's rows)") constexpr int BLOCK_M = 64;
CONVGEN_PARAM("n", "16,32,64,128,256", "output pixels per block (GEMM N tile)") constexpr int BLOCK_N = 128;
CONVGEN_PARAM("k", "32,64,128", "reduction elements per pipeline stage (before compression; a multiple of mma.sp's 32)") constexpr int BLOCK_K = 64;
CONVGEN_PARAM("wm", "16,32,64", "output channels per warp (a multiple of the 16-row mma tile)") constexpr int WARP_M = 32;
CONVGEN_PARAM("wn", "16,32,64", "output pixels per warp (a multiple of the 8-column mma tile)") constexpr int WARP_N = 64;
CONVGEN_PARAM("st", "2,3,4,5", "shared-memory pipeline stages (cp.async groups in flight: stages - 1)") constexpr int STAGES = 3;
CONVGEN_PARAM("sk", "1..32", "splits of the reduction, fp32 partial sums added by the reduce entry") constexpr int SPLIT_K = 1;
CONVGEN_PARAM("v", "bool", "16-byte cp.async loads of channels-last activations") constexpr bool VECTOR = true;
using Epilogue = convgen::IdentityEpilogue;  // the prelude renders the problem's (templates/epilogue.cuh)
}  // namespace cfg
#endif

#include "common.cuh"
#include "tensor_core.cuh"
#include "two_four_pack.cuh"

namespace sparse24_tc {

using namespace cfg;
using convgen::ceil_div;
using convgen::cmin;
using convgen::is_pow2;

// ---- The data type --------------------------------------------------------------------------------------------
constexpr bool IS_BF16 = PRECISION == 3;
static_assert(PRECISION == 2 || PRECISION == 3, "sparse24_tc serves fp16 and bf16 problems (mma.sp's 2:4 types)");
using element_t = unsigned short;  // fp16 / bf16 as their bits
constexpr int ELEMENT_BYTES = 2;
constexpr int CHUNK = 8;   // elements per 16 bytes (cp.async, ldmatrix row)
constexpr int MMA_K = 32;  // reduction of one mma.sp, before compression

// ---- The shape, in GEMM terms -----------------------------------------------------------------------------------
constexpr int CG = C / GROUPS;
constexpr int KG = K / GROUPS;
constexpr int RS = R * S;
constexpr int TRS = T * RS;
constexpr int KR = CG * TRS;
constexpr long long OPQ_LL = (long long)O * P * Q;
constexpr long long NPIX_LL = (long long)N * OPQ_LL;
// The compressed filter's extents: KG and KR rounded up to the block tile.
constexpr int KG_PAD = (int)(ceil_div(KG, BLOCK_M) * BLOCK_M);
constexpr int KR_PAD = (int)(ceil_div(KR, BLOCK_K) * BLOCK_K);
constexpr int KR_KEPT = KR_PAD / 2;      // compressed values per row
constexpr int KR_STEPS = KR_PAD / MMA_K;  // mma fragments per row of 16-row tiles
constexpr long long ACTIVATION_ELEMENTS = (long long)N * C * D * H * W;
constexpr long long FILTER_ELEMENTS = (long long)K * KR;
constexpr long long PACKED_ELEMENTS = (long long)GROUPS * KG_PAD * KR_KEPT;
constexpr long long OUTPUT_ELEMENTS = (long long)K * NPIX_LL;
constexpr long long WORKSPACE_ELEMENTS = OUTPUT_ELEMENTS * SPLIT_K;
constexpr long long max_of(long long a, long long b) { return a > b ? a : b; }
constexpr long long MAX_ELEMENTS =
    max_of(max_of(ACTIVATION_ELEMENTS, max_of(FILTER_ELEMENTS, PACKED_ELEMENTS)), WORKSPACE_ELEMENTS);
// Element offsets into any tensor: int unless some tensor has more than 2^31 - 1 elements.
using idx_t = convgen::index_for<MAX_ELEMENTS>;
constexpr int NPIX = (int)NPIX_LL;
constexpr int OPQ = (int)OPQ_LL;
constexpr int PQ = P * Q;
constexpr idx_t HW = (idx_t)H * W;
constexpr idx_t DHW = (idx_t)D * HW;

static_assert(C % GROUPS == 0, "C must be a multiple of GROUPS");
static_assert(K % GROUPS == 0, "K must be a multiple of GROUPS");
static_assert(O == convgen::conv_out_extent(D, T, STRIDE_D, PAD_D, DIL_D), "O does not match D, T, stride, padding");
static_assert(P == convgen::conv_out_extent(H, R, STRIDE_H, PAD_H, DIL_H), "P does not match H, R, stride, padding");
static_assert(Q == convgen::conv_out_extent(W, S, STRIDE_W, PAD_W, DIL_W), "Q does not match W, S, stride, padding");
static_assert(O > 0 && P > 0 && Q > 0, "the output must not be empty");
static_assert(NPIX_LL <= convgen::kIntMax, "output pixels N*O*P*Q must fit in int");
static_assert(FILTER_ELEMENTS <= convgen::kIntMax, "the filter must have fewer than 2^31 elements");

// ---- The configuration ------------------------------------------------------------------------------------------
static_assert(is_pow2(BLOCK_M) && is_pow2(BLOCK_N) && is_pow2(BLOCK_K) && is_pow2(WARP_M) && is_pow2(WARP_N),
              "tile sizes must be powers of two (the load arrangements divide them evenly)");
static_assert(WARP_M % 16 == 0, "WARP_M must be a multiple of the mma's 16 rows");
static_assert(WARP_N % 8 == 0, "WARP_N must be a multiple of the mma's 8 columns");
static_assert(BLOCK_M % WARP_M == 0 && BLOCK_N % WARP_N == 0, "the block tile must be a whole number of warp tiles");
static_assert(BLOCK_K == 32 || BLOCK_K == 64 || BLOCK_K == 128, "BLOCK_K must be 32, 64 or 128 reduction elements");
static_assert(STAGES >= 2, "the pipeline needs at least two stages");
static_assert(SPLIT_K >= 1, "SPLIT_K must be positive");
// Channels-last activations hold CHUNK channels of one (t, r, s) at an aligned offset when CG % CHUNK == 0 (and then
// KR % CHUNK == 0, so a 16-byte unit never straddles the end of the reduction either).
static_assert(!VECTOR || (CHANNELS_LAST && CG % CHUNK == 0),
              "VECTOR needs channels-last activations with CG a multiple of 8 channels (16 bytes)");

constexpr int WARPS_M = BLOCK_M / WARP_M;
constexpr int WARPS_N = BLOCK_N / WARP_N;
constexpr int THREADS = 32 * WARPS_M * WARPS_N;
static_assert(THREADS <= 1024, "a block must have at most 1024 threads");
constexpr int MI = WARP_M / 16;  // mma tiles per warp along output channels
constexpr int NI = WARP_N / 8;   // mma tiles per warp along pixels

// Each split covers KR_CHUNK reduction elements (a whole number of BLOCK_K steps); the last one may be shorter.
constexpr int KR_CHUNK = (int)(ceil_div(ceil_div(KR, SPLIT_K), BLOCK_K) * BLOCK_K);

// Shared memory, per stage: the compressed filter as [BLOCK_M][A_LDS], its metadata as [BLOCK_M / 16][BLOCK_K / 32]
// fragments of 16 words, the activation as [BLOCK_N][B_LDS]. Rows are padded by 16 bytes: a row is then an odd
// number of 16-byte units, so the 8 rows one ldmatrix matrix reads fall in 8 different groups of 4 banks.
constexpr int A_UNITS = BLOCK_K / 2 / CHUNK;  // 16-byte units of a compressed row
constexpr int B_UNITS = BLOCK_K / CHUNK;      // 16-byte units of an activation row
constexpr int META_UNITS = BLOCK_K / MMA_K * 4;  // 16-byte units of one 16-row tile's metadata per stage
constexpr int A_LDS = BLOCK_K / 2 + CHUNK;
constexpr int B_LDS = BLOCK_K + CHUNK;
constexpr int A_STAGE_BYTES = BLOCK_M * A_LDS * ELEMENT_BYTES;
constexpr int META_STAGE_BYTES = BLOCK_M / 16 * META_UNITS * 16;
constexpr int B_STAGE_BYTES = BLOCK_N * B_LDS * ELEMENT_BYTES;
constexpr int META_OFFSET = A_STAGE_BYTES;
constexpr int B_OFFSET = A_STAGE_BYTES + META_STAGE_BYTES;
constexpr int STAGE_BYTES = B_OFFSET + B_STAGE_BYTES;
constexpr int SMEM_BYTES = STAGES * STAGE_BYTES;  // dynamic shared memory (the family's plan says the same)
// Channels-last, an accumulator's neighbours in memory are the next channels, which another lane holds: the block
// stages its fp32 tile in the (then idle) pipeline buffers as [BLOCK_N pixels][OUT_LDS], and writes each pixel's
// channels 8 at a time (16-byte stores of fp16 / bf16, two of fp32 partial sums) where KG % 8 == 0. The 4 floats of
// padding put the 8 channels x 4 pixel pairs an mma tile's accumulators fill in 32 different banks. A tile larger
// than the pipeline's buffers is written element by element instead.
constexpr int OUT_LDS = BLOCK_M + 4;
constexpr int OUT_TILE_BYTES = BLOCK_N * OUT_LDS * 4;
constexpr bool STAGED_OUTPUT = CHANNELS_LAST && OUT_TILE_BYTES <= SMEM_BYTES;
constexpr bool VECTOR_OUTPUT = KG % 8 == 0;

// ---- Global -> shared loads ---------------------------------------------------------------------------------------
// A tile of ROWS rows of UNITS 16-byte units: thread tid copies unit tid % UNITS of rows tid / UNITS + i * ROW_STEP.
template <int ROWS, int UNITS>
struct UnitLoader {
  static_assert(THREADS % UNITS == 0, "the threads must divide among the 16-byte units of a row");
  static constexpr int ROW_STEP = THREADS / UNITS;
  static constexpr int PASSES = (int)ceil_div(ROWS, ROW_STEP);
  __device__ static int unit(int tid) { return tid % UNITS; }
  __device__ static int row(int tid, int i) { return tid / UNITS + i * ROW_STEP; }
  // Rows past the tile (when a pass has more threads than rows are left) load nothing.
  __device__ static bool active(int tid, int i) { return ROWS % ROW_STEP == 0 || row(tid, i) < ROWS; }
  // Copies the tile from `g_bytes` (rows g_row_bytes apart) to shared `s_address` (rows s_row_bytes apart); every
  // source unit exists.
  __device__ static void copy(unsigned s_address, int s_row_bytes, const unsigned char* g_bytes, idx_t g_row_bytes,
                              int tid) {
#pragma unroll
    for (int i = 0; i < PASSES; ++i) {
      if (!active(tid, i)) continue;
      const int r = row(tid, i);
      convgen::tc::cp_async_16(s_address + (unsigned)(r * s_row_bytes + unit(tid) * 16),
                               g_bytes + (idx_t)r * g_row_bytes + unit(tid) * 16, true);
    }
  }
};
using FilterLoader = UnitLoader<BLOCK_M, A_UNITS>;
using MetaLoader = UnitLoader<BLOCK_M / 16, META_UNITS>;
using PixelVector = UnitLoader<BLOCK_N, B_UNITS>;
// Activations element by element: neighbouring threads take neighbouring pixels; thread tid takes pixels
// tid % ROW_THREADS + j * ROW_THREADS and reduction offsets tid / ROW_THREADS + u * K_THREADS.
struct PixelElement {
  static constexpr int ROW_THREADS = cmin(THREADS, BLOCK_N);
  static constexpr int K_THREADS = THREADS / ROW_THREADS;
  static constexpr int ROWS = BLOCK_N / ROW_THREADS;
  static constexpr int KS = BLOCK_K / K_THREADS;
  static_assert(K_THREADS <= BLOCK_K, "element-wise activation loads need THREADS / min(THREADS, BLOCK_N) <= BLOCK_K");
  __device__ static int row(int tid, int j) { return tid % ROW_THREADS + j * ROW_THREADS; }
  __device__ static int kk(int tid, int u) { return tid / ROW_THREADS + u * K_THREADS; }
};
constexpr int B_ROWS = VECTOR ? PixelVector::PASSES : PixelElement::ROWS;  // pixels a thread loads for

// The gather: PixelOrigin, pixel_origin, Tap, tap_of, activation_offset and output_offset, in this namespace.
#include "conv_gather.cuh"

// Issues the loads of reduction slice [kr0, kr0 + BLOCK_K) into one stage: the compressed filter rows and their
// metadata of this block's channel tile (always inside the packed arrays: they are padded to whole tiles), and the
// activation tile (zero at or past kr_end and outside the input).
__device__ __forceinline__ void load_stage(unsigned s_stage, element_t* s_pixels,
                                           const element_t* __restrict__ g_activation,
                                           const unsigned char* g_values_tile, const unsigned char* g_meta_tile,
                                           const PixelOrigin (&r_pixel)[B_ROWS], int tid, int kr0, int kr_end) {
  FilterLoader::copy(s_stage, A_LDS * ELEMENT_BYTES, g_values_tile + kr0 / 2 * ELEMENT_BYTES,
                     (idx_t)KR_KEPT * ELEMENT_BYTES, tid);
  MetaLoader::copy(s_stage + META_OFFSET, META_UNITS * 16, g_meta_tile + kr0 / MMA_K * 64, (idx_t)KR_STEPS * 64, tid);
  if constexpr (VECTOR) {
    const int kr = kr0 + PixelVector::unit(tid) * CHUNK;
    const Tap tap = tap_of(kr);
#pragma unroll
    for (int i = 0; i < PixelVector::PASSES; ++i) {
      if (!PixelVector::active(tid, i)) continue;
      idx_t offset;
      const bool full = activation_offset(r_pixel[i], tap, offset) && kr < kr_end;
      const unsigned s_address = s_stage + B_OFFSET +
                                 (unsigned)((PixelVector::row(tid, i) * B_LDS + PixelVector::unit(tid) * CHUNK) * 2);
      convgen::tc::cp_async_16(s_address, full ? g_activation + offset : g_activation, full);
    }
  } else {
#pragma unroll
    for (int u = 0; u < PixelElement::KS; ++u) {
      const int kk = PixelElement::kk(tid, u);
      const int kr = kr0 + kk;
      const Tap tap = tap_of(kr);
#pragma unroll
      for (int j = 0; j < PixelElement::ROWS; ++j) {
        idx_t offset;
        const bool full = activation_offset(r_pixel[j], tap, offset) && kr < kr_end;
        s_pixels[PixelElement::row(tid, j) * B_LDS + kk] = full ? g_activation[offset] : element_t(0);
      }
    }
  }
}

// ---- Tensor-core math ---------------------------------------------------------------------------------------------
// The warp's MI x NI mma tiles over one stage: per 32-element slice, MI ldmatrix.x4 of the compressed filter (rows
// m .. m + 15, units 0 / 1 of the slice's 16 kept values: a[0..3]) with one metadata word each, NI ldmatrix.x4 of
// the activation (pixels p .. p + 7, the slice's 4 units: b[0..3]), then MI * NI mma.sp. The offsets are this lane's
// addresses within the stage at s_stage, in bytes.
__device__ __forceinline__ void multiply_stage(float (&r_acc)[MI][NI][4], unsigned s_stage, const unsigned char* s_meta,
                                               const unsigned (&a_offset)[MI], const unsigned (&b_offset)[NI],
                                               int meta_word) {
#pragma unroll
  for (int ks = 0; ks < BLOCK_K / MMA_K; ++ks) {
    unsigned r_a[MI][4];
    unsigned r_e[MI];
    unsigned r_b[NI][4];
#pragma unroll
    for (int mi = 0; mi < MI; ++mi) {
      convgen::tc::ldmatrix_x4(r_a[mi], s_stage + a_offset[mi] + ks * (MMA_K / 2) * ELEMENT_BYTES);
      r_e[mi] = reinterpret_cast<const unsigned*>(s_meta)[(mi * (BLOCK_K / MMA_K) + ks) * 16 + meta_word];
    }
#pragma unroll
    for (int ni = 0; ni < NI; ++ni)
      convgen::tc::ldmatrix_x4(r_b[ni], s_stage + b_offset[ni] + ks * MMA_K * ELEMENT_BYTES);
#pragma unroll
    for (int mi = 0; mi < MI; ++mi)
#pragma unroll
      for (int ni = 0; ni < NI; ++ni) {
        if constexpr (IS_BF16)
          convgen::tc::mma_sp_bf16(r_acc[mi][ni], r_a[mi], r_b[ni], r_e[mi]);
        else
          convgen::tc::mma_sp_fp16(r_acc[mi][ni], r_a[mi], r_b[ni], r_e[mi]);
      }
  }
}

// ---- Output -------------------------------------------------------------------------------------------------------
__device__ __forceinline__ element_t to_element(float value) {
  return IS_BF16 ? convgen::tc::float_to_bf16_bits(value) : convgen::tc::float_to_fp16_bits(value);
}

__device__ __forceinline__ float to_float(element_t value) {
  return IS_BF16 ? convgen::tc::bf16_bits_to_float(value) : convgen::tc::fp16_bits_to_float(value);
}

// Two neighbouring pixels (2t, 2t + 1 of an mma tile; npix is even) are neighbours in memory channels-first when
// they are in one image, which an even OPQ guarantees; the pair is then 4-byte (8-byte for partial sums) aligned.
constexpr bool PAIRED = !CHANNELS_LAST && OPQ % 2 == 0;

// Output (npix, k) through the problem's epilogue, in fp32 before the rounding to the data type.
__device__ __forceinline__ float epilogue_at(float value, idx_t offset, int k, const element_t* __restrict__ g_bias,
                                             const element_t* __restrict__ g_residual) {
  using E = cfg::Epilogue;
  return convgen::apply_epilogue<E>(value, E::BIAS ? to_float(g_bias[k]) : 0.0f,
                                    E::RESIDUAL ? to_float(g_residual[offset]) : 0.0f);
}

// Stores output channel k of pixels npix (v0) and npix + 1 (v1; `second` says whether that pixel exists).
__device__ __forceinline__ void store_output(element_t* __restrict__ g_output, int npix, int k, float v0, float v1,
                                             bool second, const element_t* __restrict__ g_bias,
                                             const element_t* __restrict__ g_residual) {
  const idx_t offset0 = output_offset(npix, k);
  if constexpr (PAIRED) {
    const unsigned e0 = to_element(epilogue_at(v0, offset0, k, g_bias, g_residual));
    const unsigned e1 = to_element(epilogue_at(v1, offset0 + 1, k, g_bias, g_residual));
    *reinterpret_cast<unsigned*>(g_output + offset0) = e0 | (e1 << 16);
  } else {
    g_output[offset0] = to_element(epilogue_at(v0, offset0, k, g_bias, g_residual));
    if (second) {
      const idx_t offset1 = output_offset(npix + 1, k);
      g_output[offset1] = to_element(epilogue_at(v1, offset1, k, g_bias, g_residual));
    }
  }
}

// Split-K's first pass: the partial sums of split `split`, in the output's layout.
__device__ __forceinline__ void store_partials(float* __restrict__ g_workspace, int split, int npix, int k, float v0,
                                               float v1, bool second) {
  float* partials = g_workspace + (idx_t)split * (idx_t)OUTPUT_ELEMENTS;
  const idx_t offset0 = output_offset(npix, k);
  if constexpr (PAIRED) {
    float2 pair;
    pair.x = v0;
    pair.y = v1;
    *reinterpret_cast<float2*>(partials + offset0) = pair;
  } else {
    partials[offset0] = v0;
    if (second) partials[output_offset(npix + 1, k)] = v1;
  }
}

// Writes the block's output tile staged in s_out (see STAGED_OUTPUT): thread tid takes units of 8 channels of one
// pixel, tid, tid + THREADS, ...; each through the epilogue (SPLIT_K == 1) or as partial sums.
__device__ __forceinline__ void store_staged(const float* s_out, element_t* __restrict__ g_output,
                                             float* __restrict__ g_workspace, int split, int n_tile, int m_tile,
                                             int group, int tid, const element_t* __restrict__ g_bias,
                                             const element_t* __restrict__ g_residual) {
  constexpr int UNITS = BLOCK_M / 8;
  for (int u = tid; u < BLOCK_N * UNITS; u += THREADS) {
    const int pixel = u / UNITS;
    const int row0 = m_tile + (u % UNITS) * 8;
    const int npix = n_tile + pixel;
    if (npix >= NPIX || row0 >= KG) continue;
    const float* v = s_out + pixel * OUT_LDS + (u % UNITS) * 8;
    const int k0 = group * KG + row0;
    const idx_t offset = (idx_t)npix * K + k0;
    if constexpr (SPLIT_K == 1) {
      if constexpr (VECTOR_OUTPUT) {
        unsigned w[4];
#pragma unroll
        for (int j = 0; j < 4; ++j)
          w[j] = (unsigned)to_element(epilogue_at(v[2 * j], offset + 2 * j, k0 + 2 * j, g_bias, g_residual)) |
                 ((unsigned)to_element(epilogue_at(v[2 * j + 1], offset + 2 * j + 1, k0 + 2 * j + 1, g_bias,
                                                   g_residual))
                  << 16);
        uint4 packed;
        packed.x = w[0];
        packed.y = w[1];
        packed.z = w[2];
        packed.w = w[3];
        *reinterpret_cast<uint4*>(g_output + offset) = packed;
      } else {
#pragma unroll
        for (int j = 0; j < 8; ++j)
          if (row0 + j < KG)
            g_output[offset + j] = to_element(epilogue_at(v[j], offset + j, k0 + j, g_bias, g_residual));
      }
    } else {
      float* partials = g_workspace + (idx_t)split * (idx_t)OUTPUT_ELEMENTS + offset;
      if constexpr (VECTOR_OUTPUT) {
        float4 a, b;
        a.x = v[0];
        a.y = v[1];
        a.z = v[2];
        a.w = v[3];
        b.x = v[4];
        b.y = v[5];
        b.z = v[6];
        b.w = v[7];
        reinterpret_cast<float4*>(partials)[0] = a;
        reinterpret_cast<float4*>(partials)[1] = b;
      } else {
#pragma unroll
        for (int j = 0; j < 8; ++j)
          if (row0 + j < KG) partials[j] = v[j];
      }
    }
  }
}

// ---- Packing ------------------------------------------------------------------------------------------------------
constexpr int PACK_THREADS = 256;
constexpr int SEGMENTS = KR_PAD / 16;  // 16 reduction elements (4 chunks, one metadata half-word) per pack thread
constexpr long long PACK_ITEMS = (long long)GROUPS * KG_PAD * SEGMENTS;

}  // namespace sparse24_tc

// Compresses the filter (see the top of the file and templates/two_four_pack.cuh): thread (row, segment) reads 16
// reduction elements of one row and writes their 8 kept values and one metadata half-word.
extern "C" __global__ void __launch_bounds__(sparse24_tc::PACK_THREADS)
    CONVGEN_ENTRY_NAMED(pack)(const sparse24_tc::element_t* __restrict__ g_filter,
                              sparse24_tc::element_t* __restrict__ g_packed_values,
                              unsigned short* __restrict__ g_packed_meta) {
  using namespace sparse24_tc;
  const long long index = (long long)blockIdx.x * PACK_THREADS + threadIdx.x;
  if (index >= PACK_ITEMS) return;
  convgen::two_four::pack_segment<KG, KR, KG_PAD, KR_PAD, idx_t>(g_filter, g_packed_values, g_packed_meta, index);
}

extern "C" __global__ void __launch_bounds__(sparse24_tc::THREADS)
    CONVGEN_ENTRY(const sparse24_tc::element_t* __restrict__ g_activation,
                  const sparse24_tc::element_t* __restrict__ g_packed_values,
                  const unsigned short* __restrict__ g_packed_meta, sparse24_tc::element_t* __restrict__ g_output,
                  float* __restrict__ g_workspace, const sparse24_tc::element_t* __restrict__ g_bias,
                  const sparse24_tc::element_t* __restrict__ g_residual) {
  convgen::wait_for_previous_grid();  // launched early (grid_dependency.cuh): the stream's previous kernel first
  convgen::allow_next_grid_at_start();
  using namespace sparse24_tc;
  unsigned char* s_bytes = convgen::tc::dynamic_shared();
  const unsigned s_address = convgen::tc::shared_address(s_bytes);

  const int tid = (int)threadIdx.x;
  const int lane = tid % 32;
  const int warp = tid / 32;
  const int warp_m = warp % WARPS_M;
  const int warp_n = warp / WARPS_M;
  const int n_tile = (int)blockIdx.x * BLOCK_N;  // first output pixel of the tile
  const int m_tile = (int)blockIdx.y * BLOCK_M;  // first output channel of the tile, within the group
  const int group = (int)blockIdx.z / SPLIT_K;
  const int split = (int)blockIdx.z % SPLIT_K;
  const int kr_begin = split * KR_CHUNK;
  const int kr_end = cmin(KR, kr_begin + KR_CHUNK);
  const int steps = kr_end > kr_begin ? (int)ceil_div(kr_end - kr_begin, BLOCK_K) : 0;

  // This block's rows of the packed filter and of its metadata.
  const unsigned char* g_values_tile = reinterpret_cast<const unsigned char*>(
      g_packed_values + (idx_t)(group * KG_PAD + m_tile) * KR_KEPT);
  const unsigned char* g_meta_tile = reinterpret_cast<const unsigned char*>(
      g_packed_meta + (idx_t)((group * KG_PAD + m_tile) / 16) * KR_STEPS * 32);

  // Per-thread constants of the activation loads, fixed over the reduction.
  PixelOrigin r_pixel[B_ROWS];
#pragma unroll
  for (int i = 0; i < B_ROWS; ++i) {
    const int row = VECTOR ? PixelVector::row(tid, i) : PixelElement::row(tid, i);
    const bool active = VECTOR ? PixelVector::active(tid, i) : true;
    const int npix = n_tile + row;
    r_pixel[i] = pixel_origin(npix, group, active);
  }

  // This lane's ldmatrix row addresses and metadata word within a stage (see multiply_stage): threads 4 g8 and
  // 4 g8 + 1 give words 2 g8 and 2 g8 + 1; threads 4 g8 + 2 and + 3 read the same (mma.sp ignores theirs).
  unsigned a_offset[MI];
#pragma unroll
  for (int mi = 0; mi < MI; ++mi)
    a_offset[mi] = (unsigned)(((warp_m * WARP_M + mi * 16 + lane % 16) * A_LDS + (lane / 16) * CHUNK) * ELEMENT_BYTES);
  unsigned b_offset[NI];
#pragma unroll
  for (int ni = 0; ni < NI; ++ni)
    b_offset[ni] =
        (unsigned)(B_OFFSET + ((warp_n * WARP_N + ni * 8 + lane % 8) * B_LDS + (lane / 8) * CHUNK) * ELEMENT_BYTES);
  const int meta_word = (lane / 4) * 2 + lane % 2;
  const int meta_tile_bytes = META_OFFSET + warp_m * (WARP_M / 16) * META_UNITS * 16;

  float r_acc[MI][NI][4];
#pragma unroll
  for (int mi = 0; mi < MI; ++mi)
#pragma unroll
    for (int ni = 0; ni < NI; ++ni)
#pragma unroll
      for (int v = 0; v < 4; ++v) r_acc[mi][ni][v] = 0.0f;

  // The pipeline, as igemm_tc's: STAGES - 1 slices in flight ahead of the one being multiplied; each step waits for
  // its own slice, and one barrier both publishes it and tells every warp has finished the previous step, whose
  // buffer the step's new loads then overwrite. A group is committed every step, empty or not.
  const auto stage_address = [&](int stage) { return s_address + (unsigned)(stage * STAGE_BYTES); };
  const auto stage_pixels = [&](int stage) {
    return reinterpret_cast<element_t*>(s_bytes + stage * STAGE_BYTES + B_OFFSET);
  };
#pragma unroll
  for (int stage = 0; stage < STAGES - 1; ++stage) {
    if (stage < steps)
      load_stage(stage_address(stage), stage_pixels(stage), g_activation, g_values_tile, g_meta_tile, r_pixel, tid,
                 kr_begin + stage * BLOCK_K, kr_end);
    convgen::tc::cp_async_commit();
  }
  int read_stage = 0;
  int write_stage = STAGES - 1;
  for (int step = 0; step < steps; ++step) {
    convgen::tc::cp_async_wait<STAGES - 2>();
    __syncthreads();
    const int next = step + STAGES - 1;
    if (next < steps)
      load_stage(stage_address(write_stage), stage_pixels(write_stage), g_activation, g_values_tile, g_meta_tile,
                 r_pixel, tid, kr_begin + next * BLOCK_K, kr_end);
    convgen::tc::cp_async_commit();
    multiply_stage(r_acc, stage_address(read_stage), s_bytes + read_stage * STAGE_BYTES + meta_tile_bytes, a_offset,
                   b_offset, meta_word);
    read_stage = read_stage + 1 == STAGES ? 0 : read_stage + 1;
    write_stage = write_stage + 1 == STAGES ? 0 : write_stage + 1;
  }
  convgen::tc::cp_async_wait<0>();
  convgen::allow_next_grid_after_main_loop();

  if constexpr (STAGED_OUTPUT) {
    // Every warp has finished with the pipeline's buffers before they hold the output tile.
    __syncthreads();
    float* s_out = reinterpret_cast<float*>(s_bytes);
#pragma unroll
    for (int mi = 0; mi < MI; ++mi)
#pragma unroll
      for (int half = 0; half < 2; ++half)
#pragma unroll
        for (int ni = 0; ni < NI; ++ni) {
          const int row = warp_m * WARP_M + mi * 16 + lane / 4 + 8 * half;
          const int col = warp_n * WARP_N + ni * 8 + 2 * (lane % 4);
          s_out[col * OUT_LDS + row] = r_acc[mi][ni][2 * half];
          s_out[(col + 1) * OUT_LDS + row] = r_acc[mi][ni][2 * half + 1];
        }
    __syncthreads();
    store_staged(s_out, g_output, g_workspace, split, n_tile, m_tile, group, tid, g_bias, g_residual);
    return;
  }

  // Epilogue: accumulator v of tile (mi, ni) is C[row][col] with row = mi * 16 + lane / 4 + 8 * (v / 2) (an output
  // channel) and col = ni * 8 + 2 * (lane % 4) + v % 2 (an output pixel) within the warp tile.
#pragma unroll
  for (int mi = 0; mi < MI; ++mi) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int row = m_tile + warp_m * WARP_M + mi * 16 + lane / 4 + 8 * half;
      if (row >= KG) continue;
      const int k = group * KG + row;
#pragma unroll
      for (int ni = 0; ni < NI; ++ni) {
        const int npix = n_tile + warp_n * WARP_N + ni * 8 + 2 * (lane % 4);
        if (npix >= NPIX) continue;
        const float v0 = r_acc[mi][ni][2 * half];
        const float v1 = r_acc[mi][ni][2 * half + 1];
        if constexpr (SPLIT_K == 1)
          store_output(g_output, npix, k, v0, v1, npix + 1 < NPIX, g_bias, g_residual);
        else
          store_partials(g_workspace, split, npix, k, v0, v1, npix + 1 < NPIX);
      }
    }
  }
}

// Split-K's second pass: output = the sum of the splits' partial sums, in split order, through the epilogue, rounded
// to the data type. One thread per output element, in the output's order.
namespace sparse24_tc {
constexpr int REDUCE_THREADS = 256;
}

extern "C" __global__ void __launch_bounds__(sparse24_tc::REDUCE_THREADS)
    CONVGEN_ENTRY_NAMED(reduce)(const float* __restrict__ g_workspace, sparse24_tc::element_t* __restrict__ g_output,
                                const sparse24_tc::element_t* __restrict__ g_bias,
                                const sparse24_tc::element_t* __restrict__ g_residual) {
  convgen::wait_for_previous_grid();  // launched early (grid_dependency.cuh): the stream's previous kernel first
  convgen::allow_next_grid();
  using namespace sparse24_tc;
  if constexpr (SPLIT_K > 1) {  // the plan launches it with split-K only; else compiled empty
    const idx_t index = (idx_t)blockIdx.x * REDUCE_THREADS + (idx_t)threadIdx.x;
    if (index >= (idx_t)OUTPUT_ELEMENTS) return;
    float sum = 0.0f;
#pragma unroll 4
    for (int split = 0; split < SPLIT_K; ++split) sum += g_workspace[(idx_t)split * (idx_t)OUTPUT_ELEMENTS + index];
    const int k = CHANNELS_LAST ? (int)(index % K) : (int)((index / OPQ) % K);
    g_output[index] = to_element(epilogue_at(sum, index, k, g_bias, g_residual));
  }
}
