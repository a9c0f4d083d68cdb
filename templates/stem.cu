// stem: FP32 2-D convolution for few input channels (a network's stem: an image's 3 channels through a 7x7 stride-2
// or a 3x3 filter), channels-first, ungrouped, the shape baked in. The block stages its input patch (every input
// channel, the rows and columns its output tile reads: the filter's halo and padding included, zeros outside) and
// its channels' filter in shared memory once, then each thread slides its filter taps over columns of the patch held
// in registers: no im2col gather, every input value read from global memory once per block.
//
// Mapping (generator/families/stem.cpp mirrors the grid):
// - A block computes BLOCK_P output rows x BLOCK_Q output columns of one image, for BLOCK_K output channels.
//   grid.x = column tiles x row tiles, grid.y = channel tiles, grid.z = images.
// - A warp's lanes take BLOCK_Q consecutive columns (lq) and 32 / BLOCK_Q groups of rows (lr); the warps of a block
//   are WARPS_P along the rows and WARPS_K along the channels. A thread computes THREAD_P consecutive rows of its
//   column for THREAD_K consecutive channels: THREAD_P x THREAD_K accumulators.
// - Per input channel and filter column s, a thread loads the patch column its rows read for every filter row:
//   (THREAD_P - 1) * STRIDE_H + (R - 1) * DIL_H + 1 values, one load each. Then, per filter row r, THREAD_K filter
//   values (one word for the whole warp's channels: a broadcast, 16-byte loads) and THREAD_P x THREAD_K FMAs.
// - The patch is stored by phase of the column stride: column col at [row][col % STRIDE_W][col / STRIDE_W], so the
//   lanes' columns, STRIDE_W apart in the image, are consecutive words (no bank conflict); a row's pitch is padded so
//   that lanes of different row groups fall in different banks where it can.
// - Stores: a lane's column, consecutive across the warp (coalesced), every channel and row of the thread.
#include "interface.cuh"
#include "epilogue.cuh"
#include "grid_dependency.cuh"

#ifndef CONVGEN_PRELUDE
// Defaults so the template compiles alone: ResNet-50's stem, 3 -> 64 channels, 7x7 stride 2 pad 3 at 224x224.
#define CONVGEN_ENTRY convgen_stem_default
namespace cfg {
constexpr int N = 1, C = 3, K = 64, GROUPS = 1;
constexpr int D = 1, H = 224, W = 224;
constexpr int T = 1, R = 7, S = 7;
constexpr int O = 1, P = 112, Q = 112;
constexpr int STRIDE_D = 1, STRIDE_H = 2, STRIDE_W = 2;
constexpr int PAD_D = 0, PAD_H = 3, PAD_W = 3;
constexpr int DIL_D = 1, DIL_H = 1, DIL_W = 1;
constexpr bool CHANNELS_LAST = false;
// The tunable parameters, in kernel-name order (stem_q32_tp4_tk16_wp2_wk2). check_support bounds them further
// (threads per block, shared memory, registers).
CONVGEN_PARAM("q", "16,32", "output columns per warp (consecutive lanes); 32 / q row groups of lanes") constexpr int BLOCK_Q = 32;
CONVGEN_PARAM("tp", "1..8", "consecutive output rows per thread") constexpr int THREAD_P = 4;
CONVGEN_PARAM("tk", "4,8,16", "consecutive output channels per thread") constexpr int THREAD_K = 16;
CONVGEN_PARAM("wp", "1..8", "warps along the output rows") constexpr int WARPS_P = 2;
CONVGEN_PARAM("wk", "1..8", "warps along the output channels") constexpr int WARPS_K = 2;
using Epilogue = convgen::IdentityEpilogue;  // the prelude renders the problem's (templates/epilogue.cuh)
}  // namespace cfg
#endif

// Nothing from common.cuh is needed (interface.cuh's macros and epilogue.cuh are plain C++), so the host emulation
// test compiles this file as C++.
#ifdef __CUDACC__
#define STEM_PRAGMA(text) _Pragma(#text)
#define STEM_UNROLL_ALL STEM_PRAGMA(unroll)
#define STEM_UNROLL(count) STEM_PRAGMA(unroll(count))
#else
#define STEM_UNROLL_ALL
#define STEM_UNROLL(count)
#endif

namespace stem {

constexpr int LANE_ROWS = 32 / cfg::BLOCK_Q;                               // row groups of a warp's lanes
constexpr int BLOCK_P = cfg::WARPS_P * LANE_ROWS * cfg::THREAD_P;          // output rows of a block
constexpr int BLOCK_K = cfg::WARPS_K * cfg::THREAD_K;                      // output channels of a block
constexpr int THREADS = 32 * cfg::WARPS_P * cfg::WARPS_K;
constexpr int TAPS = cfg::R * cfg::S;
constexpr int COL_ROWS = (cfg::THREAD_P - 1) * cfg::STRIDE_H + (cfg::R - 1) * cfg::DIL_H + 1;  // a thread's column
constexpr int PATCH_ROWS = (BLOCK_P - 1) * cfg::STRIDE_H + (cfg::R - 1) * cfg::DIL_H + 1;
constexpr int PATCH_COLS = (cfg::BLOCK_Q - 1) * cfg::STRIDE_W + (cfg::S - 1) * cfg::DIL_W + 1;
constexpr int PHASE_COLS = (PATCH_COLS + cfg::STRIDE_W - 1) / cfg::STRIDE_W;  // patch columns of one phase
constexpr int ROW_STEP = cfg::THREAD_P * cfg::STRIDE_H;  // patch rows between a warp's row groups of lanes

// Whether lanes of different row groups read distinct banks with this row pitch (their columns are consecutive
// words: lane lq of row group lr reads word lr * ROW_STEP * pitch + lq + a common offset).
constexpr bool conflict_free(int pitch) {
  for (int a = 0; a < LANE_ROWS; ++a)
    for (int b = a + 1; b < LANE_ROWS; ++b) {
      const int shift = ((b - a) * ROW_STEP * pitch) % 32;
      if (shift < cfg::BLOCK_Q || shift > 32 - cfg::BLOCK_Q) return false;
    }
  return true;
}
// The smallest row pitch (all phases of a row) of at least STRIDE_W * PHASE_COLS words that is conflict-free, or that
// length where none within 32 more words is.
constexpr int row_pitch() {
  for (int pitch = cfg::STRIDE_W * PHASE_COLS; pitch < cfg::STRIDE_W * PHASE_COLS + 32; ++pitch)
    if (conflict_free(pitch)) return pitch;
  return cfg::STRIDE_W * PHASE_COLS;
}
constexpr int ROW_PITCH = row_pitch();
constexpr int PATCH_FLOATS = cfg::C * PATCH_ROWS * ROW_PITCH;
constexpr int FILTER_FLOATS = cfg::C * TAPS * BLOCK_K;  // [c][r][s][k]: a tap's channels contiguous

constexpr int Q_TILES = (cfg::Q + cfg::BLOCK_Q - 1) / cfg::BLOCK_Q;
constexpr int P_TILES = (cfg::P + BLOCK_P - 1) / BLOCK_P;
constexpr int K_TILES = (cfg::K + BLOCK_K - 1) / BLOCK_K;

constexpr int output_extent(int in, int filter, int stride, int pad, int dil) {
  return (in + 2 * pad - dil * (filter - 1) - 1) / stride + 1;
}

static_assert(cfg::GROUPS == 1 && !cfg::CHANNELS_LAST, "stem serves ungrouped channels-first layers");
static_assert(cfg::D == 1 && cfg::T == 1 && cfg::O == 1 && cfg::PAD_D == 0, "stem serves 2-D layers");
static_assert(cfg::N > 0 && cfg::C > 0 && cfg::K > 0, "N, C and K must be positive");
static_assert(cfg::STRIDE_H > 0 && cfg::STRIDE_W > 0 && cfg::DIL_H > 0 && cfg::DIL_W > 0,
              "strides and dilations must be positive");
static_assert(cfg::P == output_extent(cfg::H, cfg::R, cfg::STRIDE_H, cfg::PAD_H, cfg::DIL_H) && cfg::P > 0,
              "P must be the output height of H, R, STRIDE_H, PAD_H and DIL_H");
static_assert(cfg::Q == output_extent(cfg::W, cfg::S, cfg::STRIDE_W, cfg::PAD_W, cfg::DIL_W) && cfg::Q > 0,
              "Q must be the output width of W, S, STRIDE_W, PAD_W and DIL_W");
static_assert(cfg::BLOCK_Q == 16 || cfg::BLOCK_Q == 32, "BLOCK_Q must be 16 or 32");
static_assert(cfg::THREAD_K % 4 == 0, "THREAD_K must be a multiple of 4 (16-byte filter loads)");
static_assert(cfg::THREAD_P > 0 && cfg::WARPS_P > 0 && cfg::WARPS_K > 0, "tile sizes must be positive");
static_assert(THREADS <= 1024, "a block must have at most 1024 threads");
static_assert((PATCH_FLOATS + FILTER_FLOATS) * 4 <= 48 * 1024, "the patch and the filter must fit 48 KiB");
static_assert(1LL * cfg::N * cfg::C * cfg::H * cfg::W < 2147483647LL &&
                  1LL * cfg::N * cfg::K * cfg::P * cfg::Q < 2147483647LL && 1LL * cfg::K * cfg::C * TAPS < 2147483647LL,
              "stem indexes tensors with int");

constexpr int PATCH_STAGED = cfg::C * PATCH_ROWS * cfg::STRIDE_W * PHASE_COLS;  // patch words staged, by phase

// Stages TOTAL words into shared memory: word e (e = tid, tid + THREADS, ...) is load(e, at), stored at s[at]. A
// thread issues up to STAGE_BATCH loads before it stores any of them, so their latencies overlap instead of adding.
constexpr int STAGE_BATCH = 24;
template <int TOTAL, class Load>
__device__ __forceinline__ void stage(int tid, float* s, Load load) {
  constexpr int ITEMS = (TOTAL + THREADS - 1) / THREADS;
  constexpr int BATCH = ITEMS < STAGE_BATCH ? ITEMS : STAGE_BATCH;
  STEM_UNROLL(1)
  for (int first = 0; first < ITEMS; first += BATCH) {
    float v[BATCH];
    int at[BATCH];
    STEM_UNROLL_ALL
    for (int i = 0; i < BATCH; ++i) {
      const int e = tid + (first + i) * THREADS;
      at[i] = -1;
      if (e < TOTAL) v[i] = load(e, at[i]);
    }
    STEM_UNROLL_ALL
    for (int i = 0; i < BATCH; ++i)
      if (at[i] >= 0) s[at[i]] = v[i];
  }
}

// Four consecutive filter values: one 16-byte shared load.
struct alignas(16) Float4 {
  float v[4];
};

__device__ __forceinline__ int min_int(int a, int b) { return a < b ? a : b; }

}  // namespace stem

extern "C" __global__ void __launch_bounds__(stem::THREADS)
    CONVGEN_ENTRY(const float* __restrict__ g_activation, const float* __restrict__ g_filter,
                  float* __restrict__ g_output, float* __restrict__ g_workspace, const float* __restrict__ g_bias,
                  const float* __restrict__ g_residual) {
  using namespace stem;
  (void)g_workspace;
  // The filter ([c][r][s][k]: FILTER_FLOATS, a multiple of 4) and after it the patch, staged in one pass.
  alignas(16) __shared__ float s_stage[FILTER_FLOATS + PATCH_FLOATS];
  const float* s_filter = s_stage;
  const float* s_patch = s_stage + FILTER_FLOATS;
  convgen::wait_for_previous_grid();  // launched early (grid_dependency.cuh): the stream's previous kernel first
  convgen::allow_next_grid_at_start();

  const int tid = static_cast<int>(threadIdx.x);
  const int q_tile = static_cast<int>(blockIdx.x) % Q_TILES;
  const int p_tile = static_cast<int>(blockIdx.x) / Q_TILES;
  const int q0 = q_tile * cfg::BLOCK_Q;  // the block's first output column, row and channel
  const int p0 = p_tile * BLOCK_P;
  const int k0 = static_cast<int>(blockIdx.y) * BLOCK_K;
  const int n = static_cast<int>(blockIdx.z);

  // One staging pass (its loads in flight together): the filter of the block's channels as [c][tap][k], channels past
  // K zero, consecutive threads taking consecutive channels k (consecutive shared words: no bank conflict; each reads
  // its channel's row of the filter, from L2); then the patch: input rows p0 * STRIDE_H - PAD_H + row, columns
  // q0 * STRIDE_W - PAD_W + col, zeros outside the image (and past the patch's last column), walked in the order it is
  // stored: each row's columns of phase 0, then of phase 1 ... (consecutive threads, consecutive shared words).
  const int h0 = p0 * cfg::STRIDE_H - cfg::PAD_H;
  const int w0 = q0 * cfg::STRIDE_W - cfg::PAD_W;
  const float* image = g_activation + n * cfg::C * cfg::H * cfg::W;
  stage<FILTER_FLOATS + PATCH_STAGED>(tid, s_stage, [&](int e, int& at) {
    if (e < FILTER_FLOATS) {
      const int m = e % BLOCK_K;
      const int ct = e / BLOCK_K;  // c * TAPS + tap
      const int k = k0 + m;
      at = e;
      return k < cfg::K ? __ldg(g_filter + k * cfg::C * TAPS + ct) : 0.0f;
    }
    e -= FILTER_FLOATS;
    const int j = e % PHASE_COLS;
    const int phase = e / PHASE_COLS % cfg::STRIDE_W;
    const int row = e / (PHASE_COLS * cfg::STRIDE_W) % PATCH_ROWS;
    const int c = e / (PHASE_COLS * cfg::STRIDE_W * PATCH_ROWS);
    const int col = j * cfg::STRIDE_W + phase;
    const int h = h0 + row;
    const int w = w0 + col;
    at = FILTER_FLOATS + (c * PATCH_ROWS + row) * ROW_PITCH + phase * PHASE_COLS + j;
    const bool inside = col < PATCH_COLS && static_cast<unsigned>(h) < unsigned(cfg::H) &&
                        static_cast<unsigned>(w) < unsigned(cfg::W);
    return inside ? __ldg(image + (c * cfg::H + h) * cfg::W + w) : 0.0f;
  });
  __syncthreads();

  const int lane = tid % 32;
  const int warp = tid / 32;
  const int lq = lane % cfg::BLOCK_Q;
  const int lr = lane / cfg::BLOCK_Q;
  const int first_row = ((warp % cfg::WARPS_P) * LANE_ROWS + lr) * cfg::THREAD_P;  // of the block's output rows
  const int first_k = (warp / cfg::WARPS_P) * cfg::THREAD_K;                      // of the block's channels

  float r_acc[cfg::THREAD_P][cfg::THREAD_K];
  STEM_UNROLL_ALL
  for (int i = 0; i < cfg::THREAD_P; ++i) {
    STEM_UNROLL_ALL
    for (int j = 0; j < cfg::THREAD_K; ++j) r_acc[i][j] = 0.0f;
  }

  STEM_UNROLL(1)
  for (int c = 0; c < cfg::C; ++c) {
    const float* patch_rows = s_patch + (c * PATCH_ROWS + first_row * cfg::STRIDE_H) * ROW_PITCH + lq;
    STEM_UNROLL(1)
    for (int s = 0; s < cfg::S; ++s) {
      // The column of the patch that filter column s reads for this lane's output column, in every row it needs.
      const int x = s * cfg::DIL_W;
      const float* column = patch_rows + x % cfg::STRIDE_W * PHASE_COLS + x / cfg::STRIDE_W;
      float r_col[COL_ROWS];
      STEM_UNROLL_ALL
      for (int i = 0; i < COL_ROWS; ++i) r_col[i] = column[i * ROW_PITCH];
      const float* taps = s_filter + (c * TAPS + s) * BLOCK_K + first_k;  // tap (r = 0, s)
      STEM_UNROLL_ALL
      for (int r = 0; r < cfg::R; ++r) {
        float r_filter[cfg::THREAD_K];
        STEM_UNROLL_ALL
        for (int j4 = 0; j4 < cfg::THREAD_K / 4; ++j4) {
          const Float4 f = reinterpret_cast<const Float4*>(taps + r * cfg::S * BLOCK_K)[j4];
          STEM_UNROLL_ALL
          for (int v = 0; v < 4; ++v) r_filter[j4 * 4 + v] = f.v[v];
        }
        STEM_UNROLL_ALL
        for (int i = 0; i < cfg::THREAD_P; ++i) {
          const float a = r_col[i * cfg::STRIDE_H + r * cfg::DIL_H];
          STEM_UNROLL_ALL
          for (int j = 0; j < cfg::THREAD_K; ++j) r_acc[i][j] = fmaf(a, r_filter[j], r_acc[i][j]);
        }
      }
    }
  }
  convgen::allow_next_grid_after_main_loop();

  const int q = q0 + lq;
  if (q >= cfg::Q) return;
  STEM_UNROLL_ALL
  for (int i = 0; i < cfg::THREAD_P; ++i) {
    const int p = p0 + first_row + i;
    if (p >= cfg::P) break;
    STEM_UNROLL_ALL
    for (int j = 0; j < cfg::THREAD_K; ++j) {
      const int k = k0 + first_k + j;
      if (k >= cfg::K) break;
      const int offset = ((n * cfg::K + k) * cfg::P + p) * cfg::Q + q;
      g_output[offset] = convgen::apply_epilogue_fp32<cfg::Epilogue>(r_acc[i][j], g_bias, g_residual, k, offset);
    }
  }
}
