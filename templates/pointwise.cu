// pointwise: FP32 1x1 convolution (any stride, no padding, ungrouped), channels-first, as one SGEMM over the whole
// batch:
//     Y (K x N*OPQ) = W (K x C) * X (C x N*OPQ),  X[c][n * OPQ + (o, p, q)] = x[n][c][o * STRIDE_D, p * STRIDE_H,
//     q * STRIDE_W]
// the GEMM shape of a projection, a bottleneck's reduce and expand, or a DenseNet transition (issue 13's "GEMM-shaped
// layers"). The GEMM's columns run over the images' pixels, image after image, so a block of pixels may span two
// images and a small feature map (7x7 at batch 8) fills whole blocks. Channels-first rows of X are pixels, contiguous
// at stride 1: the activation is read as float4 along the pixels (VECTOR 4) where a row's length allows it.
//   setup  pack_filter  W^T into the persistent buffer packed_filter, [c][k], zero-padded to C_PAD (a multiple of
//                       BLOCK_K) x K_PAD (of BLOCK_M): the filter slabs need no bounds test and move as float4;
//   run    main entry   per block BLOCK_M output channels x BLOCK_N columns; per step of BLOCK_K input channels its
//                       threads stage s_a[c][k] (the packed filter) and s_b[c][column] (the activation, zero past C
//                       and past the last column) in shared memory (simt_gemm.cuh's register tiles compute on them),
//                       one barrier per step, in one of two pipelines:
//                         CP_STAGES 0   two buffers, the next step's loads held in registers during this step's
//                                       FMAs (any GPU);
//                         CP_STAGES 2-4 a ring of that many buffers filled by cp.async (sm_80 and later), the loads
//                                       of CP_STAGES - 1 steps in flight: a short reduction (a batch-1 layer, a
//                                       split) waits for memory about once, not once per step;
//                       then each thread stores its outputs through the epilogue where they exist.
//   SPLIT_K > 1         (small grids: a projection at batch 1) the channel steps are split among SPLIT_K blocks of
//                       each tile; each writes fp32 partial sums to the per-call buffer partials (g_workspace), and
//                       the `reduce` entry adds them in split order and applies the epilogue to the whole sum.
// Grid: x = ceil(N * OPQ / BLOCK_N), y = K_PAD / BLOCK_M, z = SPLIT_K.
#include "async_copy.cuh"
#include "epilogue.cuh"
#include "interface.cuh"

#ifndef CONVGEN_PRELUDE
#define CONVGEN_ENTRY convgen_pointwise_default
namespace cfg {
constexpr int N = 8, C = 256, K = 64, GROUPS = 1;
constexpr int D = 1, H = 56, W = 56;
constexpr int T = 1, R = 1, S = 1;
constexpr int O = 1, P = 56, Q = 56;
constexpr int STRIDE_D = 1, STRIDE_H = 1, STRIDE_W = 1;
constexpr int PAD_D = 0, PAD_H = 0, PAD_W = 0;
constexpr int DIL_D = 1, DIL_H = 1, DIL_W = 1;
constexpr bool CHANNELS_LAST = false;
// The tunable parameters, in kernel-name order (pointwise_bm64_bn64_bk8_tm8_tn8_v4_sk1_cp0).
CONVGEN_PARAM("bm", "32,64,128", "output channels per block") constexpr int BLOCK_M = 64;
CONVGEN_PARAM("bn", "32,64,128", "output columns (pixels of the batch) per block") constexpr int BLOCK_N = 64;
CONVGEN_PARAM("bk", "8,16", "input channels per step") constexpr int BLOCK_K = 8;
CONVGEN_PARAM("tm", "4,8", "output channels per thread (register tile)") constexpr int THREAD_M = 8;
CONVGEN_PARAM("tn", "4,8", "output pixels per thread (register tile)") constexpr int THREAD_N = 8;
CONVGEN_PARAM("v", "1,4", "activation loads: 4 a float4 of 4 pixels (stride 1, pixels per image a multiple of 4)")
constexpr int VECTOR = 4;
CONVGEN_PARAM("sk", "1,2,4,8,16", "splits of the input channels, fp32 partial sums added by the reduce entry")
constexpr int SPLIT_K = 1;
CONVGEN_PARAM("cp", "0,2,3,4", "shared-memory pipeline: 0 loads through registers, 2-4 cp.async stages (sm_80+)")
constexpr int CP_STAGES = 0;
using Epilogue = convgen::IdentityEpilogue;  // the prelude renders the problem's (templates/epilogue.cuh)
}  // namespace cfg
#endif

#include "common.cuh"

namespace pointwise {

using namespace cfg;
using convgen::ceil_div;

// ---- The shape ----------------------------------------------------------------------------------------------
constexpr int PIXELS = O * P * Q;    // output pixels of an image
constexpr int COLUMNS = N * PIXELS;  // the GEMM's columns: every image's pixels
constexpr int IMAGE = D * H * W;     // input pixels of an image
constexpr int C_PAD = (int)ceil_div(C, BLOCK_K) * BLOCK_K;
constexpr int K_PAD = (int)ceil_div(K, BLOCK_M) * BLOCK_M;
constexpr bool UNIT_STRIDE = STRIDE_D == 1 && STRIDE_H == 1 && STRIDE_W == 1;

static_assert(!CHANNELS_LAST, "pointwise handles channels-first layouts only");
static_assert(GROUPS == 1, "pointwise handles ungrouped convolutions only");
static_assert(T == 1 && R == 1 && S == 1, "pointwise handles 1x1 filters only");
static_assert(PAD_D == 0 && PAD_H == 0 && PAD_W == 0, "pointwise handles unpadded convolutions only");
static_assert(O == convgen::conv_out_extent(D, T, STRIDE_D, PAD_D, DIL_D), "O does not match D, stride");
static_assert(P == convgen::conv_out_extent(H, R, STRIDE_H, PAD_H, DIL_H), "P does not match H, stride");
static_assert(Q == convgen::conv_out_extent(W, S, STRIDE_W, PAD_W, DIL_W), "Q does not match W, stride");
static_assert((long long)N * C * IMAGE <= convgen::kIntMax && (long long)N * K * PIXELS <= convgen::kIntMax,
              "pointwise indexes tensors with int: each must have fewer than 2^31 elements");
static_assert((long long)C_PAD * K_PAD <= convgen::kIntMax, "the packed filter must have fewer than 2^31 floats");

// ---- The configuration --------------------------------------------------------------------------------------
static_assert(BLOCK_M == 32 || BLOCK_M == 64 || BLOCK_M == 128, "BLOCK_M must be 32, 64 or 128");
static_assert(BLOCK_N == 32 || BLOCK_N == 64 || BLOCK_N == 128, "BLOCK_N must be 32, 64 or 128");
static_assert(BLOCK_K == 8 || BLOCK_K == 16, "BLOCK_K must be 8 or 16");
static_assert(THREAD_M == 4 || THREAD_M == 8, "THREAD_M must be 4 or 8");
static_assert(THREAD_N == 4 || THREAD_N == 8, "THREAD_N must be 4 or 8");
static_assert(VECTOR == 1 || VECTOR == 4, "VECTOR must be 1 or 4");
static_assert(SPLIT_K == 1 || SPLIT_K == 2 || SPLIT_K == 4 || SPLIT_K == 8 || SPLIT_K == 16,
              "SPLIT_K must be 1, 2, 4, 8 or 16");
static_assert(SPLIT_K <= C_PAD / BLOCK_K, "SPLIT_K must not exceed the channel steps");
static_assert(CP_STAGES == 0 || CP_STAGES == 2 || CP_STAGES == 3 || CP_STAGES == 4, "CP_STAGES must be 0, 2, 3 or 4");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
static_assert(CP_STAGES == 0, "the cp.async pipeline (CP_STAGES 2-4) needs sm_80 or later");
#endif
static_assert(SPLIT_K == 1 || (long long)SPLIT_K * N * K * PIXELS <= convgen::kIntMax,
              "the partial sums of every split must have fewer than 2^31 elements");
static_assert(VECTOR == 1 || (UNIT_STRIDE && PIXELS % 4 == 0),
              "VECTOR 4 reads 4 pixels at once: stride 1 and a multiple of 4 pixels per image");

#include "simt_gemm.cuh"  // THREADS_M, THREADS_N, THREADS, FM, FN, gemm_m, gemm_step
static_assert(THREADS >= 32 && THREADS <= 512, "a block must have 32 to 512 threads");
constexpr int A_VECS = BLOCK_K * BLOCK_M / 4;        // float4s of one step's filter slab
constexpr int B_ELEMS = BLOCK_K * BLOCK_N / VECTOR;  // loads of its activation slab
static_assert(A_VECS % THREADS == 0 && B_ELEMS % THREADS == 0,
              "every thread must copy the same number of float4s (and activation loads) of each slab");
constexpr int A_PER_THREAD = A_VECS / THREADS;
constexpr int B_PER_THREAD = B_ELEMS / THREADS;
constexpr int STEPS = C_PAD / BLOCK_K;                      // channel steps of the whole reduction
constexpr int SPLIT_STEPS = (int)ceil_div(STEPS, SPLIT_K);  // of one split (the last may have fewer, or none)
constexpr int OUTPUTS = N * K * PIXELS;
constexpr int BUFFERS = CP_STAGES == 0 ? 2 : CP_STAGES;  // shared stages of the two slabs
constexpr int PACK_THREADS = 256;
constexpr int REDUCE_THREADS = 256;

// The input element of output pixel `pixel` (< PIXELS) within a channel of an image.
__device__ __forceinline__ int input_offset(int pixel) {
  if constexpr (UNIT_STRIDE) {
    return pixel;
  } else {
    const int q = pixel % Q;
    const int p = (pixel / Q) % P;
    const int o = pixel / (P * Q);
    return ((o * STRIDE_D) * H + p * STRIDE_H) * W + q * STRIDE_W;
  }
}

}  // namespace pointwise

// Setup, once per filter: packed_filter[c][k] = filter[k][c] (K C 1 1 channels-first), zero for c >= C or k >= K. One
// thread per element of the padded buffer, k fastest.
extern "C" __global__ void __launch_bounds__(pointwise::PACK_THREADS)
    CONVGEN_ENTRY_NAMED(pack_filter)(const float* __restrict__ g_filter, float* __restrict__ g_packed_filter) {
  using namespace pointwise;
  const int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= C_PAD * K_PAD) return;
  const int k = i % K_PAD;
  const int c = i / K_PAD;
  g_packed_filter[i] = c < C && k < K ? g_filter[k * C + c] : 0.0f;
}

extern "C" __global__ void __launch_bounds__(pointwise::THREADS)
    CONVGEN_ENTRY(const float* __restrict__ g_activation, const float* __restrict__ g_packed_filter,
                  float* __restrict__ g_output, const float* __restrict__ g_bias, const float* __restrict__ g_residual,
                  float* __restrict__ g_workspace) {
  convgen::wait_for_previous_grid();  // launched early (grid_dependency.cuh): the stream's previous kernel first
  convgen::allow_next_grid_at_start();
  using namespace pointwise;
  __shared__ __align__(16) float s_a[BUFFERS][BLOCK_K][BLOCK_M];
  __shared__ __align__(16) float s_b[BUFFERS][BLOCK_K][BLOCK_N];
  const int tid = (int)threadIdx.x;
  const int tx = tid % THREADS_N;
  const int ty = tid / THREADS_N;
  const int split = (int)blockIdx.z;
  const int step_begin = split * SPLIT_STEPS;
  const int step_end = STEPS < step_begin + SPLIT_STEPS ? STEPS : step_begin + SPLIT_STEPS;
  const int m0 = (int)blockIdx.y * BLOCK_M;
  const int n0 = (int)blockIdx.x * BLOCK_N;  // the block's first column
  const float* __restrict__ g_a = g_packed_filter + m0;

  // A thread's loads of a step: filter float4 e = tid + i * THREADS is row e / (BLOCK_M / 4), column
  // 4 * (e % (BLOCK_M / 4)); activation load e is row e / (BLOCK_N / VECTOR), columns VECTOR * (e % (BLOCK_N /
  // VECTOR)). The columns' images and input offsets are the same every step: computed once. VECTOR 4: PIXELS is a
  // multiple of 4, so a run of 4 columns lies in one image, wholly before or wholly past the last column.
  int b_offset[B_PER_THREAD];  // of the run's first column in channel 0, or -1 past the last column
#pragma unroll
  for (int i = 0; i < B_PER_THREAD; ++i) {
    const int column = n0 + VECTOR * ((tid + i * THREADS) % (BLOCK_N / VECTOR));
    b_offset[i] = column < COLUMNS ? (column / PIXELS) * C * IMAGE + input_offset(column % PIXELS) : -1;
  }
  auto a_source = [&](int c0, int i) {
    const int e = tid + i * THREADS;
    return g_a + (c0 + e / (BLOCK_M / 4)) * K_PAD + 4 * (e % (BLOCK_M / 4));
  };
  auto a_target = [&](int buffer, int i) {
    const int e = tid + i * THREADS;
    return &s_a[buffer][e / (BLOCK_M / 4)][4 * (e % (BLOCK_M / 4))];
  };
  auto b_row = [&](int i) { return (tid + i * THREADS) / (BLOCK_N / VECTOR); };
  auto b_target = [&](int buffer, int i) {
    return &s_b[buffer][b_row(i)][VECTOR * ((tid + i * THREADS) % (BLOCK_N / VECTOR))];
  };

  float acc[THREAD_M][THREAD_N];
#pragma unroll
  for (int i = 0; i < THREAD_M; ++i)
#pragma unroll
    for (int j = 0; j < THREAD_N; ++j) acc[i][j] = 0.0f;

  if constexpr (CP_STAGES == 0) {
    float r_a[A_PER_THREAD][4];
    float r_b[B_PER_THREAD][VECTOR];
    auto load_step = [&](int c0) {
#pragma unroll
      for (int i = 0; i < A_PER_THREAD; ++i) convgen::load_floats<4>(r_a[i], a_source(c0, i));
#pragma unroll
      for (int i = 0; i < B_PER_THREAD; ++i) {
        const int c = c0 + b_row(i);
        if (c < C && b_offset[i] >= 0) {
          convgen::load_floats<VECTOR>(r_b[i], g_activation + c * IMAGE + b_offset[i]);
        } else {
#pragma unroll
          for (int j = 0; j < VECTOR; ++j) r_b[i][j] = 0.0f;
        }
      }
    };
    auto store_step = [&](int buffer) {
#pragma unroll
      for (int i = 0; i < A_PER_THREAD; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) a_target(buffer, i)[j] = r_a[i][j];
#pragma unroll
      for (int i = 0; i < B_PER_THREAD; ++i)
#pragma unroll
        for (int j = 0; j < VECTOR; ++j) b_target(buffer, i)[j] = r_b[i][j];
    };
    if (step_begin < step_end) {  // the same for the whole block: a split past the last step has no work
      load_step(step_begin * BLOCK_K);
      store_step(0);
      __syncthreads();
#pragma unroll 1
      for (int step = step_begin; step < step_end; ++step) {
        const int buffer = (step - step_begin) & 1;
        if (step + 1 < step_end) load_step((step + 1) * BLOCK_K);  // in flight during this step's FMAs
        gemm_step(acc, s_a[buffer], s_b[buffer], tx, ty);
        // The other buffer was last read in the previous step, before its closing barrier.
        if (step + 1 < step_end) store_step(buffer ^ 1);
        __syncthreads();
      }
    }
  } else {
    // Step `step`'s copies into ring buffer `buffer` (simt_gemm.cuh's gemm_ring commits and waits).
    auto copy_step = [&](int step, int buffer) {
      const int c0 = step * BLOCK_K;
#pragma unroll
      for (int i = 0; i < A_PER_THREAD; ++i) convgen::async::copy<16>(a_target(buffer, i), a_source(c0, i), true);
#pragma unroll
      for (int i = 0; i < B_PER_THREAD; ++i) {
        const int c = c0 + b_row(i);
        const bool full = c < C && b_offset[i] >= 0;
        convgen::async::copy<4 * VECTOR>(b_target(buffer, i),
                                         full ? g_activation + c * IMAGE + b_offset[i] : g_activation, full);
      }
    };
    gemm_ring<(CP_STAGES > 0 ? CP_STAGES : 2)>(acc, s_a, s_b, step_begin, step_end, copy_step, tx, ty);
  }
  convgen::allow_next_grid_after_main_loop();

  // Channels-first output: ((n * K + k) * PIXELS + pixel); with SPLIT_K > 1 this split's partial sums, at the same
  // index in its slice of the workspace. A thread's runs of 4 columns are 4-aligned: where PIXELS is a multiple of 4
  // a run lies in one image, wholly before or wholly past the last column, and is stored as one float4 (a row's
  // runs in consecutive instructions, so the warp fills whole sectors); otherwise column by column.
  auto store = [&](float(&values)[4], int k, int column, int count) {
    const int o = (column / PIXELS) * K * PIXELS + k * PIXELS + column % PIXELS;
    float* __restrict__ target = SPLIT_K == 1 ? g_output + o : g_workspace + split * OUTPUTS + o;
    if constexpr (SPLIT_K == 1) {
#pragma unroll
      for (int j = 0; j < 4; ++j)
        if (j < count) values[j] = convgen::apply_epilogue_fp32<cfg::Epilogue>(values[j], g_bias, g_residual, k, o + j);
    }
    if (count == 4) {
      *reinterpret_cast<float4*>(target) = float4{values[0], values[1], values[2], values[3]};
    } else {
#pragma unroll
      for (int j = 0; j < 4; ++j)
        if (j < count) target[j] = values[j];
    }
  };
#pragma unroll
  for (int i = 0; i < THREAD_M; ++i) {
    const int k = m0 + gemm_m(ty, i);
    if (k >= K) continue;
#pragma unroll
    for (int f = 0; f < FN; ++f) {
      const int column = n0 + f * (BLOCK_N / FN) + tx * 4;
      if (column >= COLUMNS) continue;
      float values[4];
#pragma unroll
      for (int j = 0; j < 4; ++j) values[j] = acc[i][4 * f + j];
      if constexpr (PIXELS % 4 == 0) {
        store(values, k, column, 4);
      } else {
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          if (column + j >= COLUMNS) continue;
          float one[4] = {values[j], 0.0f, 0.0f, 0.0f};
          store(one, k, column + j, 1);
        }
      }
    }
  }
}

// Split-K's second pass (SPLIT_K > 1): output = the sum of the splits' partial sums, in split order, through the
// epilogue. One thread per output element.
extern "C" __global__ void __launch_bounds__(pointwise::REDUCE_THREADS)
    CONVGEN_ENTRY_NAMED(reduce)(const float* __restrict__ g_workspace, float* __restrict__ g_output,
                                const float* __restrict__ g_bias, const float* __restrict__ g_residual) {
  convgen::wait_for_previous_grid();  // launched early (grid_dependency.cuh): the stream's previous kernel first
  convgen::allow_next_grid();
  using namespace pointwise;
  if constexpr (SPLIT_K > 1) {  // the plan launches it with split-K only; else compiled empty
    const int o = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    if (o >= OUTPUTS) return;
    float sum = 0.0f;
#pragma unroll 4
    for (int split = 0; split < SPLIT_K; ++split) sum += g_workspace[split * OUTPUTS + o];
    const int k = (o / PIXELS) % K;
    g_output[o] = convgen::apply_epilogue_fp32<cfg::Epilogue>(sum, g_bias, g_residual, k, o);
  }
}
