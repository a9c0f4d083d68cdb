// igemm_tc: tensor-core implicit-GEMM forward convolution: mma.sync (m16n8k8 TF32, m16n8k16 FP16 / BF16, fp32
// accumulation), ldmatrix fragments, a cp.async multistage shared-memory pipeline, split-K through a workspace.
//
// GEMM mapping, per group g (grid.z = GROUPS * SPLIT_K), as in CUTLASS's fprop:
//   M  = NPIX = N * O * P * Q output pixels     (npix = ((n * O + o) * P + p) * Q + q)
//   N  = KG = K / GROUPS output channels        (col -> k = g * KG + col)
//   KR = CG * T * R * S reduction elements      (channels-last:  kr = ((t * R + r) * S + s) * CG + c,
//                                                channels-first: kr = ((c * T + t) * R + r) * S + s)
//   A[npix][kr] = activation at channel g * CG + c, input coordinate o * STRIDE - PAD + t * DIL (zero outside)
//   B[kr][col]  = filter[k * KR + kr]           (both layouts: the filter row of one k is contiguous in kr)
//   C[npix][col] = output
// Both operands are kept in shared memory with kr contiguous (A as [pixel][kr], B as [channel][kr]), which is the
// layout ldmatrix (no transpose) turns into mma's row-major A and column-major B fragments.
//
// Data: fp16 / bf16 tensors hold 16-bit elements (their bits, as unsigned short: no CUDA header is included) and the
// output is written in the same type, rounded from the fp32 accumulators, as cuDNN writes y in the data type; tf32
// problems hold fp32 tensors, the operands are rounded to tf32 as they enter the tensor cores, and the output is fp32.
// With SPLIT_K > 1, each split writes its fp32 partial sums to the workspace and the `reduce` entry adds the splits
// in order and writes the output (deterministic, and no atomics on 16-bit outputs).
#include "interface.cuh"
#include "epilogue.cuh"

#ifndef CONVGEN_PRELUDE
#define CONVGEN_ENTRY convgen_igemm_tc_default
namespace cfg {
constexpr int N = 1, C = 64, K = 64, GROUPS = 1;
constexpr int D = 1, H = 56, W = 56;
constexpr int T = 1, R = 3, S = 3;
constexpr int O = 1, P = 56, Q = 56;
constexpr int STRIDE_D = 1, STRIDE_H = 1, STRIDE_W = 1;
constexpr int PAD_D = 0, PAD_H = 1, PAD_W = 1;
constexpr int DIL_D = 1, DIL_H = 1, DIL_W = 1;
constexpr bool CHANNELS_LAST = true;
constexpr int PRECISION = 2;  // convgen::Precision: 0 fp32, 1 tf32, 2 fp16, 3 bf16
// The tunable parameters, in kernel-name order (igemm_tc_m128_n64_k32_wm64_wn32_st3_sk1_v1).
CONVGEN_PARAM("m", "16,32,64,128,256", "output pixels per block (GEMM M tile)") constexpr int BLOCK_M = 128;
CONVGEN_PARAM("n", "16,32,64,128,256", "output channels per block (GEMM N tile)") constexpr int BLOCK_N = 64;
CONVGEN_PARAM("k", "8,16,32,64", "reduction elements per pipeline stage (32, 64 or 128 bytes of a row)") constexpr int BLOCK_K = 32;
CONVGEN_PARAM("wm", "16,32,64", "output pixels per warp (a multiple of the 16-row mma tile)") constexpr int WARP_M = 64;
CONVGEN_PARAM("wn", "16,32,64", "output channels per warp (a multiple of two 8-column mma tiles)") constexpr int WARP_N = 32;
CONVGEN_PARAM("st", "2,3,4,5", "shared-memory pipeline stages (cp.async groups in flight: stages - 1)") constexpr int STAGES = 3;
CONVGEN_PARAM("sk", "1..32", "splits of the reduction, fp32 partial sums added by the reduce entry") constexpr int SPLIT_K = 1;
CONVGEN_PARAM("v", "bool", "16-byte cp.async loads of the filter, and of channels-last activations") constexpr bool VECTOR = true;
using Epilogue = convgen::IdentityEpilogue;  // the prelude renders the problem's (templates/epilogue.cuh)
}  // namespace cfg
#endif

#include "common.cuh"
#include "tensor_core.cuh"

namespace igemm_tc {

using namespace cfg;
using convgen::ceil_div;
using convgen::cmin;
using convgen::is_pow2;

// ---- The data type --------------------------------------------------------------------------------------------
constexpr bool IS_TF32 = PRECISION == 1;
constexpr bool IS_FP16 = PRECISION == 2;
constexpr bool IS_BF16 = PRECISION == 3;
static_assert(IS_TF32 || IS_FP16 || IS_BF16,
              "igemm_tc serves tf32, fp16 and bf16 problems (fp32 problems need strict fp32 math)");
constexpr int ELEMENT_BYTES = IS_TF32 ? 4 : 2;
using element_t = convgen::select_t<IS_TF32, float, unsigned short>;  // fp16 / bf16 as their bits
constexpr int CHUNK = 16 / ELEMENT_BYTES;                            // elements per 16 bytes (cp.async, ldmatrix row)
constexpr int MMA_K = IS_TF32 ? 8 : 16;                              // reduction of one mma: 32 bytes of a row

// ---- The shape, in GEMM terms -----------------------------------------------------------------------------------
constexpr int CG = C / GROUPS;
constexpr int KG = K / GROUPS;
constexpr int RS = R * S;
constexpr int TRS = T * RS;
constexpr int KR = CG * TRS;
constexpr long long OPQ_LL = (long long)O * P * Q;
constexpr long long NPIX_LL = (long long)N * OPQ_LL;
constexpr long long ACTIVATION_ELEMENTS = (long long)N * C * D * H * W;
constexpr long long FILTER_ELEMENTS = (long long)K * KR;
constexpr long long OUTPUT_ELEMENTS = (long long)K * NPIX_LL;
constexpr long long WORKSPACE_ELEMENTS = OUTPUT_ELEMENTS * SPLIT_K;
constexpr long long max_of(long long a, long long b) { return a > b ? a : b; }
constexpr long long MAX_ELEMENTS = max_of(max_of(ACTIVATION_ELEMENTS, FILTER_ELEMENTS), WORKSPACE_ELEMENTS);
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
static_assert(WARP_N % 16 == 0, "WARP_N must be a multiple of 16 (one ldmatrix.x4 loads two 8-column mma tiles)");
static_assert(BLOCK_M % WARP_M == 0 && BLOCK_N % WARP_N == 0, "the block tile must be a whole number of warp tiles");
static_assert(BLOCK_K * ELEMENT_BYTES == 32 || BLOCK_K * ELEMENT_BYTES == 64 || BLOCK_K * ELEMENT_BYTES == 128,
              "BLOCK_K must cover 32, 64 or 128 bytes of a row (16 to 64 fp16 / bf16 elements, 8 to 32 tf32)");
static_assert(STAGES >= 2, "the pipeline needs at least two stages");
static_assert(SPLIT_K >= 1, "SPLIT_K must be positive");
// 16-byte loads need 16-byte aligned runs of CHUNK reduction elements that never straddle a row or a split: kr
// starts are multiples of CHUNK (BLOCK_K and the split chunk are), a filter row k * KR is when KR % CHUNK == 0, and
// channels-last activations hold CHUNK channels of one (t, r, s) at an aligned offset when CG % CHUNK == 0.
// Channels-first activations are never vector-loaded (consecutive kr are not consecutive in memory).
static_assert(!VECTOR || KR % CHUNK == 0,
              "VECTOR needs the reduction length CG*T*R*S to be a multiple of 16 bytes of elements (filter rows)");
static_assert(!VECTOR || !CHANNELS_LAST || CG % CHUNK == 0,
              "VECTOR needs CG to be a multiple of 16 bytes of elements (8 fp16 / bf16, 4 tf32) channels-last");

constexpr int WARPS_M = BLOCK_M / WARP_M;
constexpr int WARPS_N = BLOCK_N / WARP_N;
constexpr int THREADS = 32 * WARPS_M * WARPS_N;
static_assert(THREADS <= 1024, "a block must have at most 1024 threads");
constexpr int MI = WARP_M / 16;  // mma tiles per warp along pixels
constexpr int NI = WARP_N / 8;   // mma tiles per warp along channels

// Each split covers KR_CHUNK reduction elements (a whole number of BLOCK_K steps); the last one may be shorter.
constexpr int KR_CHUNK = (int)(ceil_div(ceil_div(KR, SPLIT_K), BLOCK_K) * BLOCK_K);

// Shared memory, per stage: A as [BLOCK_M][LDS], then B as [BLOCK_N][LDS] elements. Rows are padded by 16 bytes:
// a row is then an odd number of 16-byte units (BLOCK_K covers an even number), so the 8 rows one ldmatrix matrix
// reads, and the 16-byte cp.async stores of neighbouring rows, fall in 8 different groups of 4 banks.
constexpr int ROW_CHUNKS = BLOCK_K / CHUNK;  // 16-byte units of data per row
constexpr int LDS = BLOCK_K + CHUNK;
constexpr int A_STAGE_BYTES = BLOCK_M * LDS * ELEMENT_BYTES;
constexpr int B_STAGE_BYTES = BLOCK_N * LDS * ELEMENT_BYTES;
constexpr int STAGE_BYTES = A_STAGE_BYTES + B_STAGE_BYTES;
constexpr int SMEM_BYTES = STAGES * STAGE_BYTES;  // dynamic shared memory (the family's plan says the same)

// ---- Global -> shared loads ---------------------------------------------------------------------------------------
// Vector: thread tid copies the 16-byte unit tid % ROW_CHUNKS of rows tid / ROW_CHUNKS + i * VEC_ROW_STEP; the
// unit, and so the reduction offset, is the same for all of a thread's rows.
template <int ROWS_TILE>
struct VectorLoader {
  static constexpr int ROW_STEP = THREADS / ROW_CHUNKS;
  static constexpr int PASSES = (int)ceil_div(ROWS_TILE, ROW_STEP);
  static_assert(THREADS % ROW_CHUNKS == 0, "the threads must divide among the 16-byte units of a row");
  __device__ static int unit(int tid) { return tid % ROW_CHUNKS; }
  __device__ static int row(int tid, int i) { return tid / ROW_CHUNKS + i * ROW_STEP; }
  // Rows past the tile (when a pass has more threads than rows are left) load nothing.
  __device__ static bool active(int tid, int i) { return ROWS_TILE % ROW_STEP == 0 || row(tid, i) < ROWS_TILE; }
};
// Element by element: neighbouring threads take neighbouring rows (pixels are neighbours in memory channels-first,
// and channels-last activations of few channels are a few elements apart); thread tid takes rows tid % ROW_THREADS
// + j * ROW_THREADS and reduction offsets tid / ROW_THREADS + u * K_THREADS.
template <int ROWS_TILE>
struct ElementLoader {
  static constexpr int ROW_THREADS = cmin(THREADS, ROWS_TILE);
  static constexpr int K_THREADS = THREADS / ROW_THREADS;
  static constexpr int ROWS = ROWS_TILE / ROW_THREADS;
  static constexpr int KS = BLOCK_K / K_THREADS;  // used only where K_THREADS <= BLOCK_K (asserted below)
  __device__ static int row(int tid, int j) { return tid % ROW_THREADS + j * ROW_THREADS; }
  __device__ static int kk(int tid, int u) { return tid / ROW_THREADS + u * K_THREADS; }
};

constexpr bool A_VECTOR = VECTOR && CHANNELS_LAST;
constexpr bool B_VECTOR = VECTOR;
using AVector = VectorLoader<BLOCK_M>;
using BVector = VectorLoader<BLOCK_N>;
using AElement = ElementLoader<BLOCK_M>;
using BElement = ElementLoader<BLOCK_N>;
// Powers of two divide evenly; an element-wise load needs no more threads along kr than BLOCK_K has elements.
static_assert(A_VECTOR || AElement::K_THREADS <= BLOCK_K,
              "element-wise activation loads need THREADS / min(THREADS, BLOCK_M) <= BLOCK_K");
static_assert(B_VECTOR || BElement::K_THREADS <= BLOCK_K,
              "element-wise filter loads need THREADS / min(THREADS, BLOCK_N) <= BLOCK_K");
constexpr int A_ROWS = A_VECTOR ? AVector::PASSES : AElement::ROWS;  // pixels a thread loads for
constexpr int B_ROWS = B_VECTOR ? BVector::PASSES : BElement::ROWS;  // output channels a thread loads for

// The gather: PixelOrigin, pixel_origin, Tap, tap_of, activation_offset and output_offset, in this namespace.
#include "conv_gather.cuh"

// Issues the loads of the reduction slice [kr0, kr0 + BLOCK_K) into stage buffers s_a / s_b (shared addresses
// for cp.async, generic pointers for element stores). Elements at or past kr_end, outside the input or outside the
// tile are zero.
__device__ __forceinline__ void load_stage(unsigned s_a_address, unsigned s_b_address, element_t* s_a, element_t* s_b,
                                           const element_t* __restrict__ g_activation,
                                           const element_t* __restrict__ g_filter,
                                           const PixelOrigin (&r_pixel)[A_ROWS], const idx_t (&r_filter_row)[B_ROWS],
                                           const bool (&r_filter_ok)[B_ROWS], int tid, int kr0, int kr_end) {
  if constexpr (A_VECTOR) {
    const int kr = kr0 + AVector::unit(tid) * CHUNK;
    const Tap tap = tap_of(kr);
#pragma unroll
    for (int i = 0; i < AVector::PASSES; ++i) {
      if (!AVector::active(tid, i)) continue;
      idx_t offset;
      const bool full = activation_offset(r_pixel[i], tap, offset) && kr < kr_end;
      const unsigned s_address =
          s_a_address + (unsigned)((AVector::row(tid, i) * LDS + AVector::unit(tid) * CHUNK) * ELEMENT_BYTES);
      convgen::tc::cp_async_16(s_address, full ? g_activation + offset : g_activation, full);
    }
  } else {
#pragma unroll
    for (int u = 0; u < AElement::KS; ++u) {
      const int kk = AElement::kk(tid, u);
      const int kr = kr0 + kk;
      const Tap tap = tap_of(kr);
#pragma unroll
      for (int j = 0; j < AElement::ROWS; ++j) {
        idx_t offset;
        const bool full = activation_offset(r_pixel[j], tap, offset) && kr < kr_end;
        s_a[AElement::row(tid, j) * LDS + kk] = full ? g_activation[offset] : element_t(0);
      }
    }
  }
  if constexpr (B_VECTOR) {
    const int kr = kr0 + BVector::unit(tid) * CHUNK;
#pragma unroll
    for (int i = 0; i < BVector::PASSES; ++i) {
      if (!BVector::active(tid, i)) continue;
      const bool full = r_filter_ok[i] && kr < kr_end;
      const unsigned s_address =
          s_b_address + (unsigned)((BVector::row(tid, i) * LDS + BVector::unit(tid) * CHUNK) * ELEMENT_BYTES);
      convgen::tc::cp_async_16(s_address, full ? g_filter + r_filter_row[i] + kr : g_filter, full);
    }
  } else {
#pragma unroll
    for (int u = 0; u < BElement::KS; ++u) {
      const int kk = BElement::kk(tid, u);
      const int kr = kr0 + kk;
#pragma unroll
      for (int j = 0; j < BElement::ROWS; ++j) {
        const bool full = r_filter_ok[j] && kr < kr_end;
        s_b[BElement::row(tid, j) * LDS + kk] = full ? g_filter[r_filter_row[j] + kr] : element_t(0);
      }
    }
  }
}

// ---- Tensor-core math ---------------------------------------------------------------------------------------------
__device__ __forceinline__ void mma(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
  if constexpr (IS_TF32)
    convgen::tc::mma_tf32(d, a, b);
  else if constexpr (IS_FP16)
    convgen::tc::mma_fp16(d, a, b);
  else
    convgen::tc::mma_bf16(d, a, b);
}

// The warp's MI x NI mma tiles over one stage: per MMA_K slice, MI ldmatrix.x4 of A (rows m .. m + 15: matrices
// rows 0-7 / 8-15 x units 0 / 1 are a[0..3]) and NI / 2 of B (channels 0-7 x units 0 / 1, then 8-15: b[0..1] of two
// tiles), then MI * NI mma. `a_offset` / `b_offset`: this lane's row addresses within the stage at s_stage, in bytes.
__device__ __forceinline__ void multiply_stage(float (&r_acc)[MI][NI][4], unsigned s_stage,
                                               const unsigned (&a_offset)[MI], const unsigned (&b_offset)[NI / 2]) {
#pragma unroll
  for (int ks = 0; ks < BLOCK_K / MMA_K; ++ks) {
    constexpr unsigned SLICE_BYTES = MMA_K * ELEMENT_BYTES;  // 32: two 16-byte units
    unsigned r_a[MI][4];
    unsigned r_b[NI][2];
#pragma unroll
    for (int mi = 0; mi < MI; ++mi) convgen::tc::ldmatrix_x4(r_a[mi], s_stage + a_offset[mi] + ks * SLICE_BYTES);
#pragma unroll
    for (int nj = 0; nj < NI / 2; ++nj) {
      unsigned r[4];
      convgen::tc::ldmatrix_x4(r, s_stage + b_offset[nj] + ks * SLICE_BYTES);
      r_b[2 * nj][0] = r[0];
      r_b[2 * nj][1] = r[1];
      r_b[2 * nj + 1][0] = r[2];
      r_b[2 * nj + 1][1] = r[3];
    }
    if constexpr (IS_TF32) {
#pragma unroll
      for (int mi = 0; mi < MI; ++mi)
#pragma unroll
        for (int v = 0; v < 4; ++v) r_a[mi][v] = convgen::tc::round_to_tf32(r_a[mi][v]);
#pragma unroll
      for (int ni = 0; ni < NI; ++ni)
#pragma unroll
        for (int v = 0; v < 2; ++v) r_b[ni][v] = convgen::tc::round_to_tf32(r_b[ni][v]);
    }
#pragma unroll
    for (int mi = 0; mi < MI; ++mi)
#pragma unroll
      for (int ni = 0; ni < NI; ++ni) mma(r_acc[mi][ni], r_a[mi], r_b[ni]);
  }
}

// ---- Output: to_element, to_float, epilogue_at, store_output and store_partials, in this namespace -------------
#include "tc_output.cuh"

}  // namespace igemm_tc

extern "C" __global__ void __launch_bounds__(igemm_tc::THREADS)
    CONVGEN_ENTRY(const igemm_tc::element_t* __restrict__ g_activation,
                  const igemm_tc::element_t* __restrict__ g_filter, igemm_tc::element_t* __restrict__ g_output,
                  float* __restrict__ g_workspace, const igemm_tc::element_t* __restrict__ g_bias,
                  const igemm_tc::element_t* __restrict__ g_residual) {
  convgen::wait_for_previous_grid();  // launched early (grid_dependency.cuh): the stream's previous kernel first
  convgen::allow_next_grid_at_start();
  using namespace igemm_tc;
  unsigned char* s_bytes = convgen::tc::dynamic_shared();
  const unsigned s_address = convgen::tc::shared_address(s_bytes);

  const int tid = (int)threadIdx.x;
  const int lane = tid % 32;
  const int warp = tid / 32;
  const int warp_m = warp % WARPS_M;
  const int warp_n = warp / WARPS_M;
  const int m_tile = (int)blockIdx.x * BLOCK_M;  // first output pixel of the tile
  const int n_tile = (int)blockIdx.y * BLOCK_N;  // first output channel of the tile, within the group
  const int group = (int)blockIdx.z / SPLIT_K;
  const int split = (int)blockIdx.z % SPLIT_K;
  const int kr_begin = split * KR_CHUNK;
  const int kr_end = cmin(KR, kr_begin + KR_CHUNK);
  const int steps = kr_end > kr_begin ? (int)ceil_div(kr_end - kr_begin, BLOCK_K) : 0;

  // Per-thread constants of the loads, fixed over the reduction.
  PixelOrigin r_pixel[A_ROWS];
#pragma unroll
  for (int i = 0; i < A_ROWS; ++i) {
    const int row = A_VECTOR ? AVector::row(tid, i) : AElement::row(tid, i);
    const bool active = A_VECTOR ? AVector::active(tid, i) : true;
    const int npix = m_tile + row;
    r_pixel[i] = pixel_origin(npix, group, active);
  }
  idx_t r_filter_row[B_ROWS];
  bool r_filter_ok[B_ROWS];
#pragma unroll
  for (int i = 0; i < B_ROWS; ++i) {
    const int row = B_VECTOR ? BVector::row(tid, i) : BElement::row(tid, i);
    const bool active = B_VECTOR ? BVector::active(tid, i) : true;
    const int col = n_tile + row;
    r_filter_ok[i] = active && col < KG;
    r_filter_row[i] = r_filter_ok[i] ? (idx_t)(group * KG + col) * KR : 0;
  }

  // This lane's ldmatrix row addresses within a stage (see multiply_stage).
  unsigned a_offset[MI];
#pragma unroll
  for (int mi = 0; mi < MI; ++mi)
    a_offset[mi] = (unsigned)(((warp_m * WARP_M + mi * 16 + lane % 16) * LDS + (lane / 16) * CHUNK) * ELEMENT_BYTES);
  unsigned b_offset[NI / 2];
#pragma unroll
  for (int nj = 0; nj < NI / 2; ++nj)
    b_offset[nj] = (unsigned)(A_STAGE_BYTES + ((warp_n * WARP_N + nj * 16 + lane % 8 + (lane / 16) * 8) * LDS +
                                               ((lane / 8) % 2) * CHUNK) * ELEMENT_BYTES);

  float r_acc[MI][NI][4];
#pragma unroll
  for (int mi = 0; mi < MI; ++mi)
#pragma unroll
    for (int ni = 0; ni < NI; ++ni)
#pragma unroll
      for (int v = 0; v < 4; ++v) r_acc[mi][ni][v] = 0.0f;

  // The pipeline: STAGES - 1 slices in flight ahead of the one being multiplied. Each step waits for its own slice
  // (at most STAGES - 2 newer groups pending), and one barrier both publishes it and tells every warp has finished
  // the previous step, whose buffer the step's new loads then overwrite. A group is committed every step, empty or
  // not, so the count of pending groups stays exact.
  const auto stage_address = [&](int stage) { return s_address + (unsigned)(stage * STAGE_BYTES); };
  const auto stage_a = [&](int stage) { return reinterpret_cast<element_t*>(s_bytes + stage * STAGE_BYTES); };
  const auto stage_b = [&](int stage) {
    return reinterpret_cast<element_t*>(s_bytes + stage * STAGE_BYTES + A_STAGE_BYTES);
  };
#pragma unroll
  for (int stage = 0; stage < STAGES - 1; ++stage) {
    if (stage < steps)
      load_stage(stage_address(stage), stage_address(stage) + A_STAGE_BYTES, stage_a(stage), stage_b(stage),
                 g_activation, g_filter, r_pixel, r_filter_row, r_filter_ok, tid, kr_begin + stage * BLOCK_K, kr_end);
    convgen::tc::cp_async_commit();
  }
  int read_stage = 0;
  int write_stage = STAGES - 1;
  for (int step = 0; step < steps; ++step) {
    convgen::tc::cp_async_wait<STAGES - 2>();
    __syncthreads();
    const int next = step + STAGES - 1;
    if (next < steps)
      load_stage(stage_address(write_stage), stage_address(write_stage) + A_STAGE_BYTES, stage_a(write_stage),
                 stage_b(write_stage), g_activation, g_filter, r_pixel, r_filter_row, r_filter_ok, tid,
                 kr_begin + next * BLOCK_K, kr_end);
    convgen::tc::cp_async_commit();
    multiply_stage(r_acc, stage_address(read_stage), a_offset, b_offset);
    read_stage = read_stage + 1 == STAGES ? 0 : read_stage + 1;
    write_stage = write_stage + 1 == STAGES ? 0 : write_stage + 1;
  }
  convgen::tc::cp_async_wait<0>();
  convgen::allow_next_grid_after_main_loop();

  // Epilogue: accumulator v of tile (mi, ni) is C[row][col] with row = mi * 16 + lane / 4 + 8 * (v / 2) and
  // col = ni * 8 + 2 * (lane % 4) + v % 2 within the warp tile.
#pragma unroll
  for (int mi = 0; mi < MI; ++mi) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int npix = m_tile + warp_m * WARP_M + mi * 16 + lane / 4 + 8 * half;
      if (npix >= NPIX) continue;
#pragma unroll
      for (int ni = 0; ni < NI; ++ni) {
        const int col = n_tile + warp_n * WARP_N + ni * 8 + 2 * (lane % 4);
        if (col >= KG) continue;
        const int k = group * KG + col;
        const float v0 = r_acc[mi][ni][2 * half];
        const float v1 = r_acc[mi][ni][2 * half + 1];
        if constexpr (SPLIT_K == 1)
          store_output(g_output, npix, k, v0, v1, col + 1 < KG, g_bias, g_residual);
        else
          store_partials(g_workspace, split, npix, k, v0, v1, col + 1 < KG);
      }
    }
  }
}

// Split-K's second pass: output = the sum of the splits' partial sums, in split order, through the epilogue, rounded
// to the data type (the epilogue applies here, to the whole sum: the first pass only writes partial sums).
// One thread per output element, REDUCE_THREADS per block, over the partial sums' [npix][K] order.
namespace igemm_tc {
constexpr int REDUCE_THREADS = 256;
}

extern "C" __global__ void __launch_bounds__(igemm_tc::REDUCE_THREADS)
    CONVGEN_ENTRY_NAMED(reduce)(const float* __restrict__ g_workspace, igemm_tc::element_t* __restrict__ g_output,
                                const igemm_tc::element_t* __restrict__ g_bias,
                                const igemm_tc::element_t* __restrict__ g_residual) {
  convgen::wait_for_previous_grid();  // launched early (grid_dependency.cuh): the stream's previous kernel first
  convgen::allow_next_grid();
  using namespace igemm_tc;
  if constexpr (SPLIT_K > 1) {  // the plan launches it with split-K only; else compiled empty
    const idx_t index = (idx_t)blockIdx.x * REDUCE_THREADS + (idx_t)threadIdx.x;
    if (index >= (idx_t)OUTPUT_ELEMENTS) return;
    float sum = 0.0f;
#pragma unroll 4
    for (int split = 0; split < SPLIT_K; ++split) sum += g_workspace[(idx_t)split * (idx_t)OUTPUT_ELEMENTS + index];
    const int npix = (int)(index / K);
    const int k = (int)(index % K);
    g_output[output_offset(npix, k)] = to_element(epilogue_at(sum, npix, k, g_bias, g_residual));
  }
}
