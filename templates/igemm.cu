// igemm: SIMT implicit-GEMM forward convolution: register-blocked, shared-memory tiled, double-buffered, split-K.
//
// GEMM mapping, per group g (grid.z = GROUPS * SPLIT_K):
//   M  = KG = K / GROUPS output channels       (m -> k = g * KG + m)
//   N  = NPIX = N * O * P * Q output pixels     (npix = ((n * O + o) * P + p) * Q + q)
//   KR = CG * T * R * S reduction elements      (channels-first: kr = ((c * T + t) * R + r) * S + s,
//                                                channels-last:  kr = ((t * R + r) * S + s) * CG + c)
//   A[m][kr]   = filter[k * KR + kr]            (both layouts: the filter row of one k is contiguous in kr)
//   B[kr][npix] = activation at channel g * CG + c, input coordinate o * STRIDE - PAD + t * DIL (zero outside)
//   C[m][npix] = output
// Each block computes a BLOCK_M x BLOCK_N tile of C over its split's kr range, BLOCK_K at a time through shared
// memory; each thread holds a THREAD_M x THREAD_N micro tile in registers.
//
// Data (PRECISION): fp32 tensors, and tf32 ones computed in full fp32 (more exact than tf32's tensor cores); fp16
// and bf16 tensors as their 16-bit patterns, widened to fp32 as they are loaded (shared memory and the accumulators
// are fp32) and rounded back at the store through the epilogue. So every precision runs on every architecture,
// where the tensor-core families need sm_80 (their instructions) or a tile the problem allows.
#include "interface.cuh"
#include "epilogue.cuh"
#include "element.cuh"

#ifndef CONVGEN_PRELUDE
#define CONVGEN_ENTRY convgen_igemm_default
namespace cfg {
constexpr int N = 1, C = 64, K = 64, GROUPS = 1;
constexpr int D = 1, H = 56, W = 56;
constexpr int T = 1, R = 3, S = 3;
constexpr int O = 1, P = 56, Q = 56;
constexpr int STRIDE_D = 1, STRIDE_H = 1, STRIDE_W = 1;
constexpr int PAD_D = 0, PAD_H = 1, PAD_W = 1;
constexpr int DIL_D = 1, DIL_H = 1, DIL_W = 1;
constexpr bool CHANNELS_LAST = false;
constexpr int PRECISION = 0;  // convgen::Precision: 0 fp32, 1 tf32, 2 fp16, 3 bf16
// The tunable parameters, in kernel-name order (igemm_m64_n64_k8_tm4_tn4_st2_sk1_v1).
CONVGEN_PARAM("m", "16,32,64,128,256", "output channels per block (GEMM M tile)") constexpr int BLOCK_M = 64;
CONVGEN_PARAM("n", "16,32,64,128,256", "output pixels per block (GEMM N tile)") constexpr int BLOCK_N = 64;
CONVGEN_PARAM("k", "4,8,16,32", "reduction elements per shared-memory step") constexpr int BLOCK_K = 8;
CONVGEN_PARAM("tm", "1,2,4,8", "output channels per thread") constexpr int THREAD_M = 4;
CONVGEN_PARAM("tn", "1,2,4,8", "output pixels per thread") constexpr int THREAD_N = 4;
CONVGEN_PARAM("st", "1,2", "shared-memory stages (2: double-buffered)") constexpr int STAGES = 2;
CONVGEN_PARAM("sk", "1..64", "splits of the reduction, summed into the output with atomics") constexpr int SPLIT_K = 1;
CONVGEN_PARAM("v", "1,4", "reduction elements per global load (4: float4)") constexpr int VECTOR = 1;
using Epilogue = convgen::IdentityEpilogue;  // the prelude renders the problem's (templates/epilogue.cuh)
}  // namespace cfg
#endif

#include "common.cuh"

namespace igemm {

using namespace cfg;
using convgen::ceil_div;
using convgen::cmin;
using convgen::is_pow2;

// ---- The data type ------------------------------------------------------------------------------------------
static_assert(PRECISION >= 0 && PRECISION <= 3, "PRECISION must be convgen::Precision's value (0 to 3)");
constexpr bool IS_FP16 = PRECISION == 2;
constexpr bool IS_16BIT = PRECISION == 2 || PRECISION == 3;
using element_t = convgen::select_t<IS_16BIT, unsigned short, float>;  // fp16 / bf16 as their bits

__device__ __forceinline__ float to_float(element_t value) {
  if constexpr (!IS_16BIT)
    return value;
  else if constexpr (IS_FP16)
    return convgen::element::fp16_to_float(value);
  else
    return convgen::element::bf16_to_float(value);
}

__device__ __forceinline__ element_t to_element(float value) {
  if constexpr (!IS_16BIT)
    return value;
  else if constexpr (IS_FP16)
    return convgen::element::float_to_fp16(value);
  else
    return convgen::element::float_to_bf16(value);
}

// V consecutive elements (16-byte aligned floats, 8-byte aligned 16-bit values when V is 4) as floats.
template <int V>
__device__ __forceinline__ void load_elements(float* dst, const element_t* src) {
  if constexpr (!IS_16BIT) {
    convgen::load_floats<V>(dst, src);
  } else if constexpr (V == 1) {
    dst[0] = to_float(src[0]);
  } else {
    static_assert(V == 4, "16-bit elements load one or four at a time");
    const uint2 bits = *reinterpret_cast<const uint2*>(src);
    dst[0] = to_float((element_t)(bits.x & 0xffffu));
    dst[1] = to_float((element_t)(bits.x >> 16));
    dst[2] = to_float((element_t)(bits.y & 0xffffu));
    dst[3] = to_float((element_t)(bits.y >> 16));
  }
}

// Split-K's partial sum into an output the caller zeroed: fp32 only (the static_assert below), the 16-bit overload
// is declared for the discarded branch of the store and never defined.
__device__ __forceinline__ void add_partial(float* g_output, float value) { atomicAdd(g_output, value); }
__device__ void add_partial(unsigned short* g_output, float value);

// ---- The shape, in GEMM terms -------------------------------------------------------------------------------
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
constexpr long long MAX_ELEMENTS = ACTIVATION_ELEMENTS > FILTER_ELEMENTS
                                       ? (ACTIVATION_ELEMENTS > OUTPUT_ELEMENTS ? ACTIVATION_ELEMENTS : OUTPUT_ELEMENTS)
                                       : (FILTER_ELEMENTS > OUTPUT_ELEMENTS ? FILTER_ELEMENTS : OUTPUT_ELEMENTS);
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

// ---- The configuration --------------------------------------------------------------------------------------
static_assert(is_pow2(BLOCK_M) && is_pow2(BLOCK_N) && is_pow2(BLOCK_K),
              "BLOCK_M, BLOCK_N and BLOCK_K must be powers of two (the load arrangements divide them evenly)");
static_assert(is_pow2(THREAD_M) && is_pow2(THREAD_N), "THREAD_M and THREAD_N must be powers of two");
static_assert(BLOCK_M % THREAD_M == 0, "BLOCK_M must be a multiple of THREAD_M");
static_assert(BLOCK_N % THREAD_N == 0, "BLOCK_N must be a multiple of THREAD_N");
static_assert(BLOCK_M >= 4 && BLOCK_N >= 4, "BLOCK_M and BLOCK_N must be at least 4 (shared rows are read as float4)");
static_assert(STAGES == 1 || STAGES == 2, "STAGES must be 1 or 2");
static_assert(SPLIT_K >= 1, "SPLIT_K must be positive");
static_assert(SPLIT_K == 1 || convgen::is_identity_epilogue<cfg::Epilogue>(),
              "split-K adds partial sums into the output with atomics: an epilogue needs the whole sum (SPLIT_K 1)");
static_assert(SPLIT_K == 1 || !IS_16BIT, "split-K adds fp32 partial sums with atomics: fp16 and bf16 outputs need SPLIT_K 1");
static_assert(VECTOR == 1 || VECTOR == 4, "VECTOR must be 1 or 4");
static_assert(BLOCK_K % VECTOR == 0, "BLOCK_K must be a multiple of VECTOR");
// A vector of 4 consecutive kr must be aligned (16 bytes of fp32, 8 of fp16 / bf16) and never straddle the end of a
// row or a split:
// kr starts are multiples of 4 (BLOCK_K and the split chunk are), the filter row k * KR is when KR % 4 == 0, and
// for channels-last activations the 4 kr are channels c..c+3 of one (t, r, s) with an aligned offset when CG % 4 == 0.
// Channels-first activations are never vector-loaded (consecutive kr are not consecutive in memory).
static_assert(VECTOR == 1 || KR % 4 == 0, "VECTOR 4 needs the reduction length CG*T*R*S to be a multiple of 4");
static_assert(VECTOR == 1 || !CHANNELS_LAST || CG % 4 == 0, "VECTOR 4 needs CG to be a multiple of 4 (channels-last)");

constexpr int TM_THREADS = BLOCK_M / THREAD_M;  // threads along m
constexpr int TN_THREADS = BLOCK_N / THREAD_N;  // threads along n
constexpr int THREADS = TM_THREADS * TN_THREADS;
static_assert(THREADS >= 1 && THREADS <= 1024, "a block must have 1 to 1024 threads");

// Each split covers KR_CHUNK reduction elements (a whole number of BLOCK_K steps); the last one may be shorter.
constexpr int KR_CHUNK = (int)(ceil_div(ceil_div(KR, SPLIT_K), BLOCK_K) * BLOCK_K);

// Shared rows are padded by 4 floats: stores from kr-fast loaders (different kk in one warp) then spread over the
// banks, and rows stay 16-byte aligned for the float4 reads of the inner loop.
constexpr int SMEM_PAD = 4;
constexpr int LDM = BLOCK_M + SMEM_PAD;
constexpr int LDN = BLOCK_N + SMEM_PAD;
constexpr int SMEM_BYTES = STAGES * BLOCK_K * (LDM + LDN) * 4;
static_assert(SMEM_BYTES <= 48 * 1024, "static shared memory must not exceed 48 KiB");

// Micro tile: thread (tid_m, tid_n) owns m = (i / VM) * TM_THREADS * VM + tid_m * VM + i % VM for i < THREAD_M
// (and likewise n): runs of VM (VN) consecutive values, read from shared memory as one vector. Every m in
// [0, BLOCK_M) belongs to exactly one (tid_m, i).
constexpr int VM = cmin(4, THREAD_M);
constexpr int VN = cmin(4, THREAD_N);
__device__ __forceinline__ int micro_m(int tid_m, int i) { return (i / VM) * (TM_THREADS * VM) + tid_m * VM + i % VM; }
__device__ __forceinline__ int micro_n(int tid_n, int j) { return (j / VN) * (TN_THREADS * VN) + tid_n * VN + j % VN; }

// How the block's threads share the load of one BLOCK_K x ROWS_TILE operand tile (rows = m or pixels), VEC
// consecutive kr per load. KR_FAST: neighbouring threads take neighbouring kr (the operand is contiguous in kr);
// else neighbouring rows (channels-first activations: neighbouring pixels are neighbouring in memory). Threads at
// or past ACTIVE load nothing. Thread tid loads rows row(tid, i) for i < ROWS and kr offsets kk(tid, u) .. + VEC - 1
// for u < KUNITS; together the active threads cover every (kk, row) of the tile exactly once.
template <bool KR_FAST, int ROWS_TILE, int VEC>
struct Loader {
  static constexpr int UNITS_K = BLOCK_K / VEC;
  static constexpr int THREADS_K = KR_FAST ? cmin(THREADS, UNITS_K) : cmin(THREADS / cmin(THREADS, ROWS_TILE), UNITS_K);
  static constexpr int THREADS_ROW = KR_FAST ? cmin(THREADS / THREADS_K, ROWS_TILE) : cmin(THREADS, ROWS_TILE);
  static constexpr int ACTIVE = THREADS_K * THREADS_ROW;
  static constexpr int ROWS = ROWS_TILE / THREADS_ROW;
  static constexpr int KUNITS = UNITS_K / THREADS_K;
  static_assert(ROWS_TILE % THREADS_ROW == 0 && UNITS_K % THREADS_K == 0 && ACTIVE <= THREADS,
                "the operand tile must divide evenly among the loading threads");
  __device__ static int row(int tid, int i) { return (KR_FAST ? tid / THREADS_K : tid % THREADS_ROW) + i * THREADS_ROW; }
  __device__ static int kk(int tid, int u) {
    return ((KR_FAST ? tid % THREADS_K : tid / THREADS_ROW) + u * THREADS_K) * VEC;
  }
};
using FilterLoader = Loader<true, BLOCK_M, VECTOR>;
using ActivationLoader =
    convgen::select_t<CHANNELS_LAST, Loader<true, BLOCK_N, VECTOR>, Loader<false, BLOCK_N, 1>>;
constexpr int AVEC = CHANNELS_LAST ? VECTOR : 1;  // kr per activation load

// Registers that stage one BLOCK_K slice of both operands between global and shared memory.
struct Staging {
  float filter[FilterLoader::ROWS][FilterLoader::KUNITS][VECTOR];
  float activation[ActivationLoader::ROWS][ActivationLoader::KUNITS][AVEC];
};

// What a thread knows of each output pixel it loads activations for; fixed for the whole reduction.
struct PixelOrigin {
  idx_t base;  // offset of (n, channel g * CG, d = h = w = 0) in the activation
  int d0, h0, w0;  // input coordinate of filter tap (0, 0, 0): o * STRIDE_D - PAD_D, ...
  bool ok;     // the pixel exists (npix < NPIX) and this thread loads it
};

// Global -> registers: the slice of kr [kr0, kr0 + BLOCK_K); elements past kr_end, outside the input (padding) or
// outside the tile read as zero, so partial tiles and the reduction tail contribute nothing.
__device__ __forceinline__ void load_slice(Staging& r_stage, const element_t* __restrict__ g_activation,
                                           const element_t* __restrict__ g_filter,
                                           const idx_t (&r_filter_row)[FilterLoader::ROWS],
                                           const bool (&r_filter_ok)[FilterLoader::ROWS],
                                           const PixelOrigin (&r_pixel)[ActivationLoader::ROWS], int tid, int kr0,
                                           int kr_end) {
#pragma unroll
  for (int u = 0; u < FilterLoader::KUNITS; ++u) {
    const int kr = kr0 + FilterLoader::kk(tid, u);
#pragma unroll
    for (int i = 0; i < FilterLoader::ROWS; ++i) {
      if (r_filter_ok[i] && kr < kr_end) {
        // filter[k][kr] = filter + k * KR + kr (both layouts); r_filter_row[i] = k * KR.
        load_elements<VECTOR>(r_stage.filter[i][u], g_filter + r_filter_row[i] + kr);
      } else {
#pragma unroll
        for (int v = 0; v < VECTOR; ++v) r_stage.filter[i][u][v] = 0.0f;
      }
    }
  }
#pragma unroll
  for (int u = 0; u < ActivationLoader::KUNITS; ++u) {
    const int kr = kr0 + ActivationLoader::kk(tid, u);
    // kr -> (c, t, r, s) in the layout's reduction order (see the top of the file).
    const int c = CHANNELS_LAST ? kr % CG : kr / TRS;
    const int trs = CHANNELS_LAST ? kr / CG : kr % TRS;
    const int t = trs / RS;
    const int r = (trs / S) % R;
    const int s = trs % S;
#pragma unroll
    for (int i = 0; i < ActivationLoader::ROWS; ++i) {
      const int d = r_pixel[i].d0 + t * DIL_D;
      const int h = r_pixel[i].h0 + r * DIL_H;
      const int w = r_pixel[i].w0 + s * DIL_W;
      const bool inside = (unsigned)d < (unsigned)D && (unsigned)h < (unsigned)H && (unsigned)w < (unsigned)W;
      if (r_pixel[i].ok && kr < kr_end && inside) {
        // channels-last:  (((n * D + d) * H + h) * W + w) * C + g * CG + c = base + ((d * H + h) * W + w) * C + c
        // channels-first: (((n * C + g * CG + c) * D + d) * H + h) * W + w = base + c * DHW + (d * H + h) * W + w
        const idx_t spatial = ((idx_t)d * H + h) * W + w;
        const idx_t offset = CHANNELS_LAST ? r_pixel[i].base + spatial * C + c : r_pixel[i].base + (idx_t)c * DHW + spatial;
        load_elements<AVEC>(r_stage.activation[i][u], g_activation + offset);
      } else {
#pragma unroll
        for (int v = 0; v < AVEC; ++v) r_stage.activation[i][u][v] = 0.0f;
      }
    }
  }
}

// Registers -> shared: s_filter[kk][m] = A[m][kr0 + kk], s_activation[kk][n] = B[kr0 + kk][n].
__device__ __forceinline__ void store_slice(const Staging& r_stage, float (*s_filter)[LDM], float (*s_activation)[LDN],
                                            int tid) {
  if (tid < FilterLoader::ACTIVE) {
#pragma unroll
    for (int u = 0; u < FilterLoader::KUNITS; ++u)
#pragma unroll
      for (int i = 0; i < FilterLoader::ROWS; ++i)
#pragma unroll
        for (int v = 0; v < VECTOR; ++v)
          s_filter[FilterLoader::kk(tid, u) + v][FilterLoader::row(tid, i)] = r_stage.filter[i][u][v];
  }
  if (tid < ActivationLoader::ACTIVE) {
#pragma unroll
    for (int u = 0; u < ActivationLoader::KUNITS; ++u)
#pragma unroll
      for (int i = 0; i < ActivationLoader::ROWS; ++i)
#pragma unroll
        for (int v = 0; v < AVEC; ++v)
          s_activation[ActivationLoader::kk(tid, u) + v][ActivationLoader::row(tid, i)] = r_stage.activation[i][u][v];
  }
}

// The inner product of one shared slice into the micro tile.
__device__ __forceinline__ void multiply_slice(float (&r_acc)[THREAD_M][THREAD_N], const float (*s_filter)[LDM],
                                               const float (*s_activation)[LDN], int tid_m, int tid_n) {
#pragma unroll
  for (int kk = 0; kk < BLOCK_K; ++kk) {
    float r_a[THREAD_M];
    float r_b[THREAD_N];
#pragma unroll
    for (int i = 0; i < THREAD_M; i += VM) convgen::load_floats<VM>(&r_a[i], &s_filter[kk][micro_m(tid_m, i)]);
#pragma unroll
    for (int j = 0; j < THREAD_N; j += VN) convgen::load_floats<VN>(&r_b[j], &s_activation[kk][micro_n(tid_n, j)]);
#pragma unroll
    for (int i = 0; i < THREAD_M; ++i)
#pragma unroll
      for (int j = 0; j < THREAD_N; ++j) r_acc[i][j] = fmaf(r_a[i], r_b[j], r_acc[i][j]);
  }
}

}  // namespace igemm

extern "C" __global__ void __launch_bounds__(igemm::THREADS)
    CONVGEN_ENTRY(const igemm::element_t* __restrict__ g_activation, const igemm::element_t* __restrict__ g_filter,
                  igemm::element_t* __restrict__ g_output, float* __restrict__ g_workspace,
                  const igemm::element_t* __restrict__ g_bias, const igemm::element_t* __restrict__ g_residual) {
  convgen::wait_for_previous_grid();  // launched early (grid_dependency.cuh): the stream's previous kernel first
  convgen::allow_next_grid_at_start();
  using namespace igemm;
  (void)g_workspace;  // igemm needs no workspace
  __shared__ __align__(16) float s_filter[STAGES][BLOCK_K][LDM];
  __shared__ __align__(16) float s_activation[STAGES][BLOCK_K][LDN];

  const int tid = (int)threadIdx.x;
  const int n_tile = (int)blockIdx.x * BLOCK_N;  // first output pixel of the tile
  const int m_tile = (int)blockIdx.y * BLOCK_M;  // first output channel of the tile, within the group
  const int group = (int)blockIdx.z / SPLIT_K;
  const int split = (int)blockIdx.z % SPLIT_K;
  const int kr_begin = split * KR_CHUNK;
  const int kr_end = cmin(KR, kr_begin + KR_CHUNK);
  const int steps = kr_end > kr_begin ? (int)ceil_div(kr_end - kr_begin, BLOCK_K) : 0;

  // Output channels along the fast thread index when the output is contiguous in k (channels-last), else pixels,
  // so that neighbouring threads store neighbouring output elements.
  const int tid_m = CHANNELS_LAST ? tid % TM_THREADS : tid / TN_THREADS;
  const int tid_n = CHANNELS_LAST ? tid / TM_THREADS : tid % TN_THREADS;

  // Per-thread constants of the loads, fixed over the reduction.
  idx_t r_filter_row[FilterLoader::ROWS];
  bool r_filter_ok[FilterLoader::ROWS];
#pragma unroll
  for (int i = 0; i < FilterLoader::ROWS; ++i) {
    const int m = m_tile + FilterLoader::row(tid, i);
    r_filter_ok[i] = tid < FilterLoader::ACTIVE && m < KG;
    r_filter_row[i] = r_filter_ok[i] ? (idx_t)(group * KG + m) * KR : 0;
  }
  PixelOrigin r_pixel[ActivationLoader::ROWS];
#pragma unroll
  for (int i = 0; i < ActivationLoader::ROWS; ++i) {
    const int npix = n_tile + ActivationLoader::row(tid, i);
    const int n = npix / OPQ;
    const int opq = npix % OPQ;
    const int o = opq / PQ;
    const int p = (opq / Q) % P;
    const int q = opq % Q;
    r_pixel[i].ok = tid < ActivationLoader::ACTIVE && npix < NPIX;
    // Pixels past the end are never read; their base stays 0 so no arithmetic leaves the index range.
    const idx_t base = CHANNELS_LAST ? (idx_t)n * DHW * C + group * CG : ((idx_t)n * C + group * CG) * DHW;
    r_pixel[i].base = r_pixel[i].ok ? base : 0;
    r_pixel[i].d0 = o * STRIDE_D - PAD_D;
    r_pixel[i].h0 = p * STRIDE_H - PAD_H;
    r_pixel[i].w0 = q * STRIDE_W - PAD_W;
  }

  float r_acc[THREAD_M][THREAD_N];
#pragma unroll
  for (int i = 0; i < THREAD_M; ++i)
#pragma unroll
    for (int j = 0; j < THREAD_N; ++j) r_acc[i][j] = 0.0f;

  Staging r_stage;
  if constexpr (STAGES == 2) {
    // Double buffering, one barrier per step: while step s multiplies buffer s % 2, the loads of step s + 1 are in
    // flight and land in the other buffer, which every thread finished reading before the barrier of step s - 1.
    if (steps > 0) {
      load_slice(r_stage, g_activation, g_filter, r_filter_row, r_filter_ok, r_pixel, tid, kr_begin, kr_end);
      store_slice(r_stage, s_filter[0], s_activation[0], tid);
    }
    __syncthreads();
    for (int step = 0; step < steps; ++step) {
      const int buffer = step & 1;
      const bool more = step + 1 < steps;
      if (more)
        load_slice(r_stage, g_activation, g_filter, r_filter_row, r_filter_ok, r_pixel, tid,
                   kr_begin + (step + 1) * BLOCK_K, kr_end);
      multiply_slice(r_acc, s_filter[buffer], s_activation[buffer], tid_m, tid_n);
      if (more) store_slice(r_stage, s_filter[buffer ^ 1], s_activation[buffer ^ 1], tid);
      __syncthreads();
    }
  } else {
    for (int step = 0; step < steps; ++step) {
      load_slice(r_stage, g_activation, g_filter, r_filter_row, r_filter_ok, r_pixel, tid, kr_begin + step * BLOCK_K,
                 kr_end);
      store_slice(r_stage, s_filter[0], s_activation[0], tid);
      __syncthreads();
      multiply_slice(r_acc, s_filter[0], s_activation[0], tid_m, tid_n);
      __syncthreads();
    }
  }
  convgen::allow_next_grid_after_main_loop();

  // Epilogue: C[m][npix] -> output through the problem's epilogue; split-K blocks (identity epilogue only) add into
  // an output the caller zeroed.
#pragma unroll
  for (int j = 0; j < THREAD_N; ++j) {
    const int npix = n_tile + micro_n(tid_n, j);
    if (npix >= NPIX) continue;
    const int n = npix / OPQ;
    const int opq = npix % OPQ;
#pragma unroll
    for (int i = 0; i < THREAD_M; ++i) {
      const int m = m_tile + micro_m(tid_m, i);
      if (m >= KG) continue;
      const int k = group * KG + m;
      // channels-last:  (((n * O + o) * P + p) * Q + q) * K + k = npix * K + k
      // channels-first: (((n * K + k) * O + o) * P + p) * Q + q = (n * K + k) * OPQ + opq
      const idx_t offset = CHANNELS_LAST ? (idx_t)npix * K + k : ((idx_t)n * K + k) * OPQ + opq;
      using E = cfg::Epilogue;
      if constexpr (SPLIT_K == 1)
        g_output[offset] = to_element(convgen::apply_epilogue<E>(
            r_acc[i][j], E::BIAS ? to_float(g_bias[k]) : 0.0f, E::RESIDUAL ? to_float(g_residual[offset]) : 0.0f));
      else
        add_partial(g_output + offset, r_acc[i][j]);
    }
  }
}
