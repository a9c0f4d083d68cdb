// direct: direct convolution for few channels per group (stems, depthwise and grouped layers), the shape baked in.
#include "interface.cuh"
#include "epilogue.cuh"
#include "grid_dependency.cuh"

#ifndef CONVGEN_PRELUDE
// Defaults so the template compiles alone: a 3x3 depthwise layer, 32 channels at 56x56, batch 2, NCHW.
#define CONVGEN_ENTRY convgen_direct_default
namespace cfg {
constexpr int N = 2, C = 32, K = 32, GROUPS = 32;
constexpr int D = 1, H = 56, W = 56;
constexpr int T = 1, R = 3, S = 3;
constexpr int O = 1, P = 56, Q = 56;
constexpr int STRIDE_D = 1, STRIDE_H = 1, STRIDE_W = 1;
constexpr int PAD_D = 0, PAD_H = 1, PAD_W = 1;
constexpr int DIL_D = 1, DIL_H = 1, DIL_W = 1;
constexpr bool CHANNELS_LAST = false;
// The tunable parameters, in kernel-name order (direct_m4_n128_k1_tm1_tn2). check_support bounds them further
// (threads per block, shared memory, BLOCK_K within the channels per group).
CONVGEN_PARAM("m", "1..4096", "output channels per block") constexpr int BLOCK_M = 4;
CONVGEN_PARAM("n", "1..4096", "output pixels per block") constexpr int BLOCK_N = 128;
CONVGEN_PARAM("k", "1..4096", "input channels staged in shared memory per step") constexpr int BLOCK_K = 1;
CONVGEN_PARAM("tm", "1..256", "output channels per thread") constexpr int THREAD_M = 1;
CONVGEN_PARAM("tn", "1..256", "output pixels per thread") constexpr int THREAD_N = 2;
using Epilogue = convgen::IdentityEpilogue;  // the prelude renders the problem's (templates/epilogue.cuh)
}  // namespace cfg
#endif

// Nothing from common.cuh is needed; including only interface.cuh (macros) and epilogue.cuh (plain C++) also lets the
// host emulation test compile this file as C++.

// How the kernel works (generator/families/direct.cpp mirrors the grid):
// - A block computes BLOCK_M output channels x BLOCK_N output pixels; pixels are linearized over (n, o, p, q).
//   A thread computes THREAD_M channels x THREAD_N pixels, strided by the thread counts along each dimension, so
//   neighbouring threads touch neighbouring channels (channels-last) or neighbouring pixels (channels-first).
// - Channel tiling: when GROUPS == 1 or BLOCK_M <= K/GROUPS, blocks tile the channels of one group (grid.y = GROUPS
//   x tiles per group) and each activation value a thread loads serves all its THREAD_M channels. Otherwise
//   (depthwise, channel multipliers) blocks tile K straight across groups (grid.y = tiles of K) and each channel
//   reads its own group's input channel.
// - The reduction walks the input channels of the group in steps of BLOCK_K: the block stages the filter of its
//   channels for those BLOCK_K channels and every tap in shared memory, then each thread accumulates over the
//   staged channels and the taps (compile-time loops) with activations read from global memory.
// Loop unrolling hints, written as macros so that a host compiler (the emulation test) can ignore them quietly.
#ifdef __CUDACC__
#define DIRECT_PRAGMA(text) _Pragma(#text)
#define DIRECT_UNROLL(count) DIRECT_PRAGMA(unroll(count))
#define DIRECT_UNROLL_ALL DIRECT_PRAGMA(unroll)
#else
#define DIRECT_UNROLL(count)
#define DIRECT_UNROLL_ALL
#endif

namespace direct {

constexpr int CG = cfg::C / cfg::GROUPS;  // input channels per group
constexpr int KG = cfg::K / cfg::GROUPS;  // output channels per group
constexpr int TAPS = cfg::T * cfg::R * cfg::S;
constexpr int THREADS_M = cfg::BLOCK_M / cfg::THREAD_M;  // threads along output channels
constexpr int THREADS_N = cfg::BLOCK_N / cfg::THREAD_N;  // threads along output pixels
constexpr int THREADS = THREADS_M * THREADS_N;
constexpr long long PIXELS = 1LL * cfg::N * cfg::O * cfg::P * cfg::Q;
constexpr int OPQ = cfg::O * cfg::P * cfg::Q;
constexpr int DHW = cfg::D * cfg::H * cfg::W;
constexpr bool GROUP_TILED = cfg::GROUPS == 1 || cfg::BLOCK_M <= KG;
constexpr int K_TILES =
    GROUP_TILED ? (KG + cfg::BLOCK_M - 1) / cfg::BLOCK_M : (cfg::K + cfg::BLOCK_M - 1) / cfg::BLOCK_M;
constexpr int FILTER_STAGE = cfg::BLOCK_M * cfg::BLOCK_K * TAPS;  // floats of s_filter

constexpr int output_extent(int in, int filter, int stride, int pad, int dil) {
  return (in + 2 * pad - dil * (filter - 1) - 1) / stride + 1;
}

static_assert(cfg::N > 0 && cfg::C > 0 && cfg::K > 0 && cfg::GROUPS > 0, "N, C, K and GROUPS must be positive");
static_assert(cfg::C % cfg::GROUPS == 0, "C must be a multiple of GROUPS");
static_assert(cfg::K % cfg::GROUPS == 0, "K must be a multiple of GROUPS");
static_assert(cfg::D > 0 && cfg::H > 0 && cfg::W > 0 && cfg::T > 0 && cfg::R > 0 && cfg::S > 0,
              "input and filter extents must be positive");
static_assert(cfg::STRIDE_D > 0 && cfg::STRIDE_H > 0 && cfg::STRIDE_W > 0, "strides must be positive");
static_assert(cfg::DIL_D > 0 && cfg::DIL_H > 0 && cfg::DIL_W > 0, "dilations must be positive");
static_assert(cfg::PAD_D >= 0 && cfg::PAD_H >= 0 && cfg::PAD_W >= 0, "paddings must not be negative");
static_assert(cfg::O == output_extent(cfg::D, cfg::T, cfg::STRIDE_D, cfg::PAD_D, cfg::DIL_D) && cfg::O > 0,
              "O must be the output depth of D, T, STRIDE_D, PAD_D and DIL_D");
static_assert(cfg::P == output_extent(cfg::H, cfg::R, cfg::STRIDE_H, cfg::PAD_H, cfg::DIL_H) && cfg::P > 0,
              "P must be the output height of H, R, STRIDE_H, PAD_H and DIL_H");
static_assert(cfg::Q == output_extent(cfg::W, cfg::S, cfg::STRIDE_W, cfg::PAD_W, cfg::DIL_W) && cfg::Q > 0,
              "Q must be the output width of W, S, STRIDE_W, PAD_W and DIL_W");
static_assert(cfg::BLOCK_M > 0 && cfg::BLOCK_N > 0 && cfg::BLOCK_K > 0 && cfg::THREAD_M > 0 && cfg::THREAD_N > 0,
              "tile sizes must be positive");
static_assert(cfg::BLOCK_M % cfg::THREAD_M == 0, "BLOCK_M must be a multiple of THREAD_M");
static_assert(cfg::BLOCK_N % cfg::THREAD_N == 0, "BLOCK_N must be a multiple of THREAD_N");
static_assert(cfg::BLOCK_K <= CG, "BLOCK_K must not exceed the input channels per group");
static_assert(THREADS <= 1024, "a block must have at most 1024 threads");
static_assert(FILTER_STAGE * 4 <= 48 * 1024, "the filter stage BLOCK_M * BLOCK_K * T * R * S floats must fit 48 KiB");

// Padding only matters on a side an index can actually leave: with no padding, the largest coordinate read,
// (out - 1) * stride + (filter - 1) * dil, is at most in - 1 by the definition of the output extent.
constexpr bool CHECK_D = cfg::PAD_D > 0 ||
                         (cfg::O - 1) * cfg::STRIDE_D - cfg::PAD_D + (cfg::T - 1) * cfg::DIL_D >= cfg::D;
constexpr bool CHECK_H = cfg::PAD_H > 0 ||
                         (cfg::P - 1) * cfg::STRIDE_H - cfg::PAD_H + (cfg::R - 1) * cfg::DIL_H >= cfg::H;
constexpr bool CHECK_W = cfg::PAD_W > 0 ||
                         (cfg::Q - 1) * cfg::STRIDE_W - cfg::PAD_W + (cfg::S - 1) * cfg::DIL_W >= cfg::W;

// Index type: int unless some index can pass 2^31 - 1. Input coordinates lie in [-PAD, extent + PAD), so every
// activation address, in range or not, is below N * C times the padded box; pixel indices reach PIXELS + BLOCK_N.
constexpr long long INT_LIMIT = 2147483647LL;
constexpr long long PADDED_ACTIVATION =
    1LL * cfg::N * cfg::C * (cfg::D + 2 * cfg::PAD_D) * (cfg::H + 2 * cfg::PAD_H) * (cfg::W + 2 * cfg::PAD_W);
constexpr long long FILTER_ELEMENTS = 1LL * cfg::K * CG * TAPS;
constexpr long long OUTPUT_ELEMENTS = PIXELS * cfg::K;
constexpr bool WIDE_INDEX = PADDED_ACTIVATION > INT_LIMIT || FILTER_ELEMENTS > INT_LIMIT ||
                            OUTPUT_ELEMENTS > INT_LIMIT || PIXELS + cfg::BLOCK_N > INT_LIMIT;
template <bool Wide>
struct IndexOf {
  using type = int;
};
template <>
struct IndexOf<true> {
  using type = long long;
};
using Index = IndexOf<WIDE_INDEX>::type;

// Unroll the filter loops while the unrolled body stays small: a fully unrolled 7x7 body lets the compiler hoist so
// many loads and padding checks that registers run out (249 for the 7x7 stem), while unrolling only its rows of 7
// taps needs ~70. Huge filters (long 1-D ones) keep every loop.
constexpr int UNROLL_S = cfg::S <= 16 ? cfg::S : 1;
constexpr int UNROLL_R = cfg::R * cfg::S <= 16 ? cfg::R : 1;
constexpr int UNROLL_T = TAPS <= 16 ? cfg::T : 1;
constexpr int UNROLL_KC = cfg::BLOCK_K * TAPS <= 32 ? cfg::BLOCK_K : 1;

// Element strides of one input channel and one output channel.
constexpr int ACTIVATION_CHANNEL_STRIDE = cfg::CHANNELS_LAST ? 1 : DHW;
constexpr int OUTPUT_CHANNEL_STRIDE = cfg::CHANNELS_LAST ? 1 : OPQ;

__device__ constexpr long long min_ll(long long a, long long b) { return a < b ? a : b; }
__device__ constexpr int min_int(int a, int b) { return a < b ? a : b; }

}  // namespace direct

extern "C" __global__ void __launch_bounds__(direct::THREADS)
    CONVGEN_ENTRY(const float* __restrict__ g_activation, const float* __restrict__ g_filter,
                  float* __restrict__ g_output, float* __restrict__ g_workspace, const float* __restrict__ g_bias,
                  const float* __restrict__ g_residual) {
  convgen::wait_for_previous_grid();  // launched early (grid_dependency.cuh): the stream's previous kernel first
  convgen::allow_next_grid_at_start();
  using namespace direct;
  using direct::Index;
  (void)g_workspace;
  // The filter of the block's channels for BLOCK_K input channels and every tap, as [kc][tap][m]: threads with
  // neighbouring m read neighbouring words (no bank conflicts), threads with the same m read one word (broadcast).
  __shared__ float s_filter[FILTER_STAGE];

  const int tid = static_cast<int>(threadIdx.x);
  // The fastest-varying thread index walks the dimension that is contiguous in memory.
  const int tm = cfg::CHANNELS_LAST ? tid % THREADS_M : tid / THREADS_N;
  const int tn = cfg::CHANNELS_LAST ? tid / THREADS_M : tid % THREADS_N;

  // The block's channels are k_first + m for m in [0, k_count).
  int k_first = 0;
  int k_count = 0;
  if constexpr (GROUP_TILED) {
    const int g = static_cast<int>(blockIdx.y) / K_TILES;
    const int kg0 = static_cast<int>(blockIdx.y) % K_TILES * cfg::BLOCK_M;
    k_first = g * KG + kg0;
    k_count = min_int(cfg::BLOCK_M, KG - kg0);
  } else {
    k_first = static_cast<int>(blockIdx.y) * cfg::BLOCK_M;
    k_count = min_int(cfg::BLOCK_M, cfg::K - k_first);
  }

  // First input channel (c = 0) of each of the thread's output channels: group g = k / KG reads g * CG + c.
  // Channels past K are clamped to K - 1 so their (unstored) reads stay inside the tensor.
  int r_channel[cfg::THREAD_M];
  DIRECT_UNROLL_ALL
  for (int i = 0; i < cfg::THREAD_M; ++i) {
    const int k = min_int(k_first + tm + i * THREADS_M, cfg::K - 1);
    r_channel[i] = GROUP_TILED ? k_first / KG * CG : k / KG * CG;
  }

  // Each pixel's origin: the input coordinates of tap (0, 0, 0) and the address they give. Pixels past the end are
  // clamped to the last pixel, so every address below is one a valid pixel reads; their outputs are not stored.
  Index r_base[cfg::THREAD_N];  // activation address of (n, channel 0, d0, h0, w0); may point outside
  Index r_out[cfg::THREAD_N];   // output address of (n, k = 0, o, p, q)
  int r_d0[cfg::THREAD_N], r_h0[cfg::THREAD_N], r_w0[cfg::THREAD_N];
  bool r_store[cfg::THREAD_N];
  DIRECT_UNROLL_ALL
  for (int j = 0; j < cfg::THREAD_N; ++j) {
    const long long pixel = 1LL * blockIdx.x * cfg::BLOCK_N + tn + j * THREADS_N;
    r_store[j] = pixel < PIXELS;
    const Index pix = static_cast<Index>(min_ll(pixel, PIXELS - 1));
    const int q = static_cast<int>(pix % cfg::Q);
    const int p = static_cast<int>(pix / cfg::Q % cfg::P);
    const int o = static_cast<int>(pix / (cfg::Q * cfg::P) % cfg::O);
    const Index n = pix / OPQ;
    r_d0[j] = o * cfg::STRIDE_D - cfg::PAD_D;
    r_h0[j] = p * cfg::STRIDE_H - cfg::PAD_H;
    r_w0[j] = q * cfg::STRIDE_W - cfg::PAD_W;
    if constexpr (cfg::CHANNELS_LAST) {
      // activation (((n*D + d)*H + h)*W + w)*C + ch; output (((n*O + o)*P + p)*Q + q)*K + k = pix*K + k
      r_base[j] = (((n * cfg::D + r_d0[j]) * cfg::H + r_h0[j]) * cfg::W + r_w0[j]) * cfg::C;
      r_out[j] = pix * cfg::K;
    } else {
      // activation (((n*C + ch)*D + d)*H + h)*W + w = n*C*DHW + ch*DHW + (d*H + h)*W + w;
      // output (((n*K + k)*O + o)*P + p)*Q + q = n*K*OPQ + k*OPQ + pix % OPQ
      r_base[j] = n * cfg::C * DHW + (static_cast<Index>(r_d0[j]) * cfg::H + r_h0[j]) * cfg::W + r_w0[j];
      r_out[j] = n * cfg::K * OPQ + pix % OPQ;
    }
  }

  float r_acc[cfg::THREAD_M][cfg::THREAD_N];
  DIRECT_UNROLL_ALL
  for (int i = 0; i < cfg::THREAD_M; ++i) {
    DIRECT_UNROLL_ALL
    for (int j = 0; j < cfg::THREAD_N; ++j) r_acc[i][j] = 0.0f;
  }

  DIRECT_UNROLL(1)
  for (int c0 = 0; c0 < CG; c0 += cfg::BLOCK_K) {
    __syncthreads();  // the previous step's readers are done with s_filter
    // Stage the filter, walking global memory in order: channels-first filter (((k*CG + c)*T + t)*R + r)*S + s =
    // (k*CG + c)*TAPS + tap is contiguous along (c, tap); channels-last (((k*T + t)*R + r)*S + s)*CG + c =
    // (k*TAPS + tap)*CG + c along (tap, c). Channels past the block's or the group's end are zero.
    for (int e = tid; e < FILTER_STAGE; e += THREADS) {
      int m, kc, tap;
      if constexpr (cfg::CHANNELS_LAST) {
        kc = e % cfg::BLOCK_K;
        tap = e / cfg::BLOCK_K % TAPS;
        m = e / (cfg::BLOCK_K * TAPS);
      } else {
        tap = e % TAPS;
        kc = e / TAPS % cfg::BLOCK_K;
        m = e / (TAPS * cfg::BLOCK_K);
      }
      const int c = c0 + kc;
      float value = 0.0f;
      if (m < k_count && c < CG) {
        const Index k = k_first + m;
        value = cfg::CHANNELS_LAST ? g_filter[(k * TAPS + tap) * CG + c] : g_filter[(k * CG + c) * TAPS + tap];
      }
      s_filter[(kc * TAPS + tap) * cfg::BLOCK_M + m] = value;
    }
    __syncthreads();

    DIRECT_UNROLL(UNROLL_KC)
    for (int kc = 0; kc < cfg::BLOCK_K; ++kc) {
      const int c = c0 + kc;
      if (CG % cfg::BLOCK_K != 0 && c >= CG) break;  // the last step of a partial channel tile
      // Each pixel's (and, across groups, each channel's) tap (0, 0, 0) for this input channel: the taps below add
      // compile-time offsets, which the loads take as immediates. These may point outside the tensor (padding);
      // only the taps that are inside are read.
      const float* r_origin[GROUP_TILED ? 1 : cfg::THREAD_M][cfg::THREAD_N];
      DIRECT_UNROLL_ALL
      for (int i = 0; i < (GROUP_TILED ? 1 : cfg::THREAD_M); ++i) {
        DIRECT_UNROLL_ALL
        for (int j = 0; j < cfg::THREAD_N; ++j)
          r_origin[i][j] =
              g_activation + (r_base[j] + static_cast<Index>(r_channel[i] + c) * ACTIVATION_CHANNEL_STRIDE);
      }
      DIRECT_UNROLL(UNROLL_T)
      for (int t = 0; t < cfg::T; ++t) {
        DIRECT_UNROLL(UNROLL_R)
        for (int r = 0; r < cfg::R; ++r) {
          DIRECT_UNROLL(UNROLL_S)
          for (int s = 0; s < cfg::S; ++s) {
            const int tap = (t * cfg::R + r) * cfg::S + s;
            // Address offset of tap (t, r, s) from the pixel's origin (see r_base).
            const Index tap_offset =
                cfg::CHANNELS_LAST
                    ? ((static_cast<Index>(t * cfg::DIL_D) * cfg::H + r * cfg::DIL_H) * cfg::W + s * cfg::DIL_W) *
                          cfg::C
                    : (static_cast<Index>(t * cfg::DIL_D) * cfg::H + r * cfg::DIL_H) * cfg::W + s * cfg::DIL_W;
            float r_filter[cfg::THREAD_M];
            DIRECT_UNROLL_ALL
            for (int i = 0; i < cfg::THREAD_M; ++i)
              r_filter[i] = s_filter[(kc * TAPS + tap) * cfg::BLOCK_M + tm + i * THREADS_M];
            DIRECT_UNROLL_ALL
            for (int j = 0; j < cfg::THREAD_N; ++j) {
              // Out-of-range coordinates (padding) read as zero.
              const bool inside = (!CHECK_D || static_cast<unsigned>(r_d0[j] + t * cfg::DIL_D) < unsigned(cfg::D)) &&
                                  (!CHECK_H || static_cast<unsigned>(r_h0[j] + r * cfg::DIL_H) < unsigned(cfg::H)) &&
                                  (!CHECK_W || static_cast<unsigned>(r_w0[j] + s * cfg::DIL_W) < unsigned(cfg::W));
              if constexpr (GROUP_TILED) {
                // One group: the value serves every channel of the thread.
                const float r_activation = inside ? __ldg(r_origin[0][j] + tap_offset) : 0.0f;
                DIRECT_UNROLL_ALL
                for (int i = 0; i < cfg::THREAD_M; ++i) r_acc[i][j] = fmaf(r_filter[i], r_activation, r_acc[i][j]);
              } else {
                DIRECT_UNROLL_ALL
                for (int i = 0; i < cfg::THREAD_M; ++i) {
                  const float r_activation = inside ? __ldg(r_origin[i][j] + tap_offset) : 0.0f;
                  r_acc[i][j] = fmaf(r_filter[i], r_activation, r_acc[i][j]);
                }
              }
            }
          }
        }
      }
    }
  }
  convgen::allow_next_grid_after_main_loop();

  DIRECT_UNROLL_ALL
  for (int i = 0; i < cfg::THREAD_M; ++i) {
    const int m = tm + i * THREADS_M;
    if (m >= k_count) continue;
    const Index k = k_first + m;
    DIRECT_UNROLL_ALL
    for (int j = 0; j < cfg::THREAD_N; ++j)
      if (r_store[j]) {
        const Index offset = r_out[j] + k * OUTPUT_CHANNEL_STRIDE;
        g_output[offset] = convgen::apply_epilogue_fp32<cfg::Epilogue>(r_acc[i][j], g_bias, g_residual,
                                                                        static_cast<int>(k), offset);
      }
  }
}
