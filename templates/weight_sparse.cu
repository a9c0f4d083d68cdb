// weight_sparse: FP32 convolution with the pruned filter's nonzero pattern baked into the code, or read from a table.
//
// Baked (TABLE false): the family (generator/families/weight_sparse.cpp) renders, into the prelude, namespace
// ws_code: for each group of K_GROUP output channels a straight-line block with one activation load per (c, r, s)
// that some channel of the group needs — at a compile-time offset from the thread's pixel, predicated by the tap's
// bounds bit — and one FMA per nonzero weight into that channel's accumulator. Zero weights cost nothing, not even a
// branch. Values are immediates in the code (IMMEDIATES) or read from a packed array, in code order, that the
// pack_values entry gathers once per op from the filter (ws_code::kGather lists each value's filter index). NVRTC
// time grows faster than the nonzeros, so the family bakes small filters only.
//
// Table (TABLE true): the same work as a rolled loop over data, so that the code (and NVRTC's time) no longer
// depends on the nonzeros. The pack_pattern entry writes once per op, from the filter, per output channel k its
// nonzeros in filter order (at most ws_code::SLOTS, the largest count of a channel): a code (the activation offset
// of (c, r, s) from the pixel's base, shifted left 5, or'ed with the tap r * S + s) into g_pattern_codes and the
// value into g_packed_values, and the count into g_pattern_codes[k]. The main entry walks a block's K_GROUP channels
// one after another, each a loop over its entries (staged in shared memory, ROW_CHUNK at a time) with
// PIXELS_PER_THREAD accumulators; SPLIT slices of BLOCK_PIXELS
// threads take every SPLIT-th entry of the row and add their sums in shared memory (small images have few pixels to
// spread, and one thread's walk down a long row is a chain of dependent loads).
//
// Staged (TABLE 2): the table's rows, but the activations a block needs come through shared memory, and each
// staged activation serves every nonzero of the block's K_GROUP channels that reads it, where the table variant
// loads it once per nonzero. ws_code::STAGE_CHANNELS input channels are staged at a time (coalesced in both
// layouts, zeros where the input is padded), then each channel of the block walks the entries of its row that fall
// in those channels (pack_pattern orders a row by chunk and writes where each chunk starts). SPLIT slices of
// BLOCK_PIXELS threads stage together and share the block's channels (slice i takes channels i, i + SPLIT, ...),
// each thread with K_GROUP / SPLIT * PIXELS_PER_THREAD accumulators. An entry's code is its activation's place in
// the staged chunk, so that a pixel's read is the code plus the pixel's own base. 1x1 filters stage one activation
// per output pixel of a tile of BLOCK_PIXELS * PIXELS_PER_THREAD consecutive pixels (across rows and images); other
// filters stage the input patch under a ws_code::TILE_H x TILE_W tile of output pixels of one image.
// With LIVE_CHANNELS (`lc`, activation and weight zeros at once) the staging also marks each staged channel that
// holds a nonzero, and the block's warps then compact each of its rows' entries of the chunk to those of marked
// channels (in row order: the same sums as without, less the zero products) into shared memory, from which the
// channels walk them: a channel whose patch is all zeros costs its entries nothing. ws_code::CHUNK_SLOTS is the most
// entries of one row in one chunk (the family stages fewer channels at once so that the rows fit). On the H200
// (cuSNN's layers, 90% zero weights) lc1 took 0.75x its lc0 twin's time on dense and on 70% blob-sparse input alike:
// the entries' loads from shared memory, off the walk's chain, pay; the dropped channels saved at most 5%.
//
// Grid: x = ceil(N * P * Q / (BLOCK_PIXELS * PIXELS_PER_THREAD)) pixel blocks, y = ceil(K / K_GROUP) channel groups
// (warp-uniform: a switch over the group's code, or its channels' table rows). Block: BLOCK_PIXELS threads, each
// PIXELS_PER_THREAD output pixels BLOCK_PIXELS apart (1 when baked), times SPLIT slices (1 when baked). NCHW and
// NHWC, any filter size with R * S <= 32, stride, padding, dilation; groups 1; 1-D and 2-D.
#include "interface.cuh"
#include "common.cuh"
#include "epilogue.cuh"
#include "grid_dependency.cuh"

#ifndef CONVGEN_PRELUDE
// Defaults so the template compiles alone: a 3x3 layer, 8 -> 4 channels at 14x14, with a two-nonzero filter.
#define CONVGEN_ENTRY convgen_weight_sparse_default
namespace cfg {
constexpr int N = 1, C = 8, K = 4, GROUPS = 1;
constexpr int D = 1, H = 14, W = 14;
constexpr int T = 1, R = 3, S = 3;
constexpr int O = 1, P = 14, Q = 14;
constexpr int STRIDE_D = 1, STRIDE_H = 1, STRIDE_W = 1;
constexpr int PAD_D = 0, PAD_H = 1, PAD_W = 1;
constexpr int DIL_D = 1, DIL_H = 1, DIL_W = 1;
constexpr bool CHANNELS_LAST = false;
CONVGEN_PARAM("p", "32,64,128,256", "output pixels per block, one per thread") constexpr int BLOCK_PIXELS = 128;
CONVGEN_PARAM("kg", "1..128", "output channels per block (accumulators per thread)") constexpr int K_GROUP = 4;
CONVGEN_PARAM("iv", "bool", "weights as immediates in the code (else read from the packed array)")
// convgen-lint: allow unused-param (the generated ws_code reads it: immediates, or wv[] from the packed array)
constexpr bool IMMEDIATES = false;
CONVGEN_PARAM("tb", "0,1,2", "the pattern: 0 baked into the code, 1 a table read by a rolled loop, 2 a table over activations staged in shared memory")
constexpr int TABLE = 0;
CONVGEN_PARAM("pt", "1,2,4,8", "output pixels per thread (the table only; 1 when baked)")
constexpr int PIXELS_PER_THREAD = 1;
CONVGEN_PARAM("sk", "1,2,4,8,16", "slices of BLOCK_PIXELS threads: of a channel's table row, summed in shared memory (tb 1); of the block's channels (tb 2)")
constexpr int SPLIT = 1;
CONVGEN_PARAM("lc", "bool", "the staged table only: each chunk's entries of channels whose staged activations are all zero dropped, the block compacting its rows in shared memory")
constexpr bool LIVE_CHANNELS = false;
using Epilogue = convgen::IdentityEpilogue;  // the prelude renders the problem's (templates/epilogue.cuh)
}  // namespace cfg
namespace ws_code {
constexpr int NNZ = 2;    // nonzero weights
constexpr int SLOTS = 1;  // table entries per output channel: the most nonzeros of one channel
constexpr int STAGE_CHANNELS = 1;  // input channels staged at once (TABLE 2)
constexpr int CHUNK_SLOTS = 1;     // the most entries of one row in one chunk (TABLE 2 with LIVE_CHANNELS)
constexpr int TILE_H = 1, TILE_W = 1;  // the staged table's output tile for filters other than 1x1 (TABLE 2)
__device__ const int kGather[NNZ] = {4, 2 * 9 * 8 + 9 + 4};
__device__ __forceinline__ void group(int g, const float* __restrict__ x, const long long* tb, unsigned valid,
                                      const float* __restrict__ wv, float* acc) {
  switch (g) {
    case 0: {
      { const float v = __ldg(x + tb[4] + 196 * 0 + 14 * 1 + 1); const float a = (valid >> 4) & 1u ? v : 0.0f;
        acc[0] = fmaf(wv[0], a, acc[0]); }  // c 0, r 1, s 1
      { const float v = __ldg(x + tb[4] + 196 * 1 + 14 * 1 + 1); const float a = (valid >> 4) & 1u ? v : 0.0f;
        acc[2] = fmaf(wv[1], a, acc[2]); }  // c 1, r 1, s 1
    } break;
    default: break;
  }
}
}  // namespace ws_code
#endif

namespace weight_sparse {

using namespace cfg;
constexpr long long PIXELS = 1LL * N * P * Q;
constexpr int HW = H * W;
static_assert(GROUPS == 1, "weight_sparse handles ungrouped convolutions");
static_assert(R * S <= 32, "one bit per filter tap in a 32-bit mask");
static_assert(K_GROUP >= 1 && K_GROUP <= (TABLE == 2 ? 128 : 64), "K_GROUP accumulators per thread (shared by SPLIT slices: tb 2)");
static_assert(PIXELS_PER_THREAD >= 1 && PIXELS_PER_THREAD <= 8, "PIXELS_PER_THREAD accumulators per thread");
static_assert(TABLE || PIXELS_PER_THREAD == 1, "baked code computes one pixel per thread");
static_assert(TABLE || SPLIT == 1, "baked code sums a whole channel group in one thread");
static_assert(SPLIT >= 1 && SPLIT <= (TABLE == 2 ? 16 : 8), "SPLIT slices of a table row (of the block's channels: tb 2)");
// Entries in flight per thread: 4 (2 with 4 or more pixels a thread, where 4 spilled registers).
constexpr int ENTRY_UNROLL = PIXELS_PER_THREAD >= 4 ? 2 : 4;
constexpr int ROW_CHUNK = 1024;  // table entries a block stages in shared memory at once (8 KiB)
static_assert((SPLIT - 1) * PIXELS_PER_THREAD * BLOCK_PIXELS * 4 + ROW_CHUNK * 8 <= 48 * 1024,
              "the slices' sums and a chunk of the row fit static shared memory");
static_assert(!(TABLE && IMMEDIATES), "the table reads its values from the packed array");
static_assert(!TABLE || 1LL * C * H * W < (1LL << 26), "table codes hold an image's activation offsets in 26 bits");
static_assert(ws_code::SLOTS >= 1, "a table row of at least one entry");
constexpr int TAP_BITS = 5;  // R * S <= 32 taps
constexpr bool STAGED = TABLE == 2;
static_assert(!STAGED || T == 1, "the staged table serves 1-D and 2-D filters");
static_assert(!STAGED || K_GROUP % SPLIT == 0, "the staged table's SPLIT slices take K_GROUP / SPLIT channels each");
static_assert(ws_code::STAGE_CHANNELS >= 1 && ws_code::STAGE_CHANNELS <= C, "1 to C input channels staged at once");
constexpr int TILE = BLOCK_PIXELS * PIXELS_PER_THREAD;  // output pixels of a block
// 1x1 filters stage a tile of consecutive pixels; others the input patch under a TILE_H x TILE_W output tile.
constexpr bool PATCH = STAGED && !(R == 1 && S == 1);
constexpr int TILE_H = ws_code::TILE_H, TILE_W = ws_code::TILE_W;
static_assert(!PATCH || (TILE_H >= 1 && TILE_W >= 1 && TILE_H * TILE_W <= TILE), "the output tile has a pixel a thread");
constexpr int PATCH_H = (TILE_H - 1) * STRIDE_H + (R - 1) * DIL_H + 1;
constexpr int PATCH_W = (TILE_W - 1) * STRIDE_W + (S - 1) * DIL_W + 1;
// A staged channel's floats: odd (channels-last staging, consecutive threads on consecutive channels, is then free of
// bank conflicts) unless the pixels are read as vectors.
// 1x1 filters with 2 or 4 pixels a thread take a thread's pixels consecutive in the staged row, read with one float2
// or float4 a step (one shared load for PIXEL_VECTOR FMAs): a staged channel then starts at a multiple of 4 floats,
// padded by 4 channels-last (whose staging stores go down a pixel's channels: a 4-way bank conflict there, paid once a
// chunk). Otherwise a slice's pixels are BLOCK_PIXELS apart, one shared load an FMA.
constexpr int PIXEL_VECTOR = !STAGED || PATCH ? 1 : PIXELS_PER_THREAD % 4 == 0 ? 4 : PIXELS_PER_THREAD % 2 == 0 ? 2 : 1;
constexpr int STAGE_ROW = PIXEL_VECTOR > 1 ? TILE + (CHANNELS_LAST ? 4 : 0) : (PATCH ? PATCH_H * PATCH_W : TILE) | 1;
constexpr int STAGE_CHUNKS = (C + ws_code::STAGE_CHANNELS - 1) / ws_code::STAGE_CHANNELS;
constexpr int TILES_H = (P + TILE_H - 1) / TILE_H, TILES_W = (Q + TILE_W - 1) / TILE_W;  // a patch tile's grid
static_assert(!STAGED || (ws_code::STAGE_CHANNELS * STAGE_ROW + TILE) * 4 <= 40 * 1024,
              "the staged channels and the tile's pixel bases fit static shared memory");
static_assert(!LIVE_CHANNELS || STAGED, "lc (live channels) serves the staged table (tb 2)");
static_assert(ws_code::CHUNK_SLOTS >= 1, "a compacted row of at least one entry");
// Live channels: the staged chunk's liveness marks, and per channel of the block its compacted entries and their count.
constexpr int LIVE_SHARED_BYTES =
    LIVE_CHANNELS ? (ws_code::STAGE_CHANNELS + K_GROUP) * 4 + K_GROUP * ws_code::CHUNK_SLOTS * 8 : 0;
static_assert((STAGED ? (ws_code::STAGE_CHANNELS * STAGE_ROW + TILE + K_GROUP) * 4 : 0) + LIVE_SHARED_BYTES <=
                  46 * 1024,
              "the staged channels, the tile's bases, the rows' ends and the compacted rows fit static shared memory");

// The activation offset of (c, r, s) from a pixel's base (c 0, h0, w0), as the baked code's compile-time offsets.
__device__ __forceinline__ int activation_offset(int c, int r, int s) {
  const int spatial = r * DIL_H * W + s * DIL_W;
  return CHANNELS_LAST ? spatial * C + c : c * HW + spatial;
}

// The staged table's place of (c, r, s) in its chunk, from the pixel's base: the channel's row, plus the tap's
// offset in the patch (1x1: the channel's row alone).
__device__ __forceinline__ int staged_offset(int c, int r, int s) {
  return c % ws_code::STAGE_CHANNELS * STAGE_ROW + (PATCH ? r * DIL_H * PATCH_W + s * DIL_W : 0);
}

}  // namespace weight_sparse

// One-time setup of the table: one thread per output channel k writes its count into g_pattern_codes[k] and its
// nonzeros, in filter order, as codes into g_pattern_codes[K + k * SLOTS + i] and values into
// g_packed_values[k * SLOTS + i]; the staged table's values are pairs, (its code's bits, value), at float2
// [k * SLOTS + i]. A channel with more than SLOTS nonzeros (a filter of another pattern than the one rendered) keeps
// its first SLOTS.
extern "C" __global__ void __launch_bounds__(256)
    CONVGEN_ENTRY_NAMED(pack_pattern)(const float* __restrict__ g_filter, int* __restrict__ g_pattern_codes,
                                      float* __restrict__ g_packed_values) {
  using namespace weight_sparse;
  const int k = (int)(blockIdx.x * blockDim.x + threadIdx.x);
  if (k >= K) return;
  const float* filter = g_filter + (long long)k * C * R * S;
  int* codes = g_pattern_codes + K + (long long)k * ws_code::SLOTS;
  float* values = g_packed_values + (long long)k * ws_code::SLOTS;  // (the table's)
  int count = 0;
  // The staged table's row goes chunk by chunk of STAGE_CHANNELS input channels (a pass over the filter each: a
  // one-time setup), each entry's code its activation's place in the staged chunk; the chunk starts follow the K
  // rows, STAGE_CHUNKS + 1 a row. The table's is one pass in filter order.
  int* starts = g_pattern_codes + K + (long long)K * ws_code::SLOTS + (long long)k * (STAGE_CHUNKS + 1);
  const int passes = STAGED ? STAGE_CHUNKS : 1;
#pragma unroll 1
  for (int chunk = 0; chunk < passes; ++chunk) {
    if (STAGED) starts[chunk] = count;
    // Rolled: NVVM unrolls a loop of a known trip count of a few hundred whole (64 x 3 x 3: 190 KiB of cubin, 4 s).
#pragma unroll 1
    for (int i = 0; i < C * R * S; ++i) {
      const float v = filter[i];
      if (v == 0.0f || count == ws_code::SLOTS) continue;
      // Filter order: K C R S channels-first, K R S C channels-last.
      const int c = CHANNELS_LAST ? i % C : i / (R * S);
      const int tap = CHANNELS_LAST ? i / C : i % (R * S);
      if (STAGED && c / ws_code::STAGE_CHANNELS != chunk) continue;
      if constexpr (STAGED) {
        // The staged table's entry: its activation's place in the staged chunk (no tap: the staged patch holds
        // only what exists) beside its value, one 8-byte load in the main loop, the place in bytes there (the
        // shared address one add away).
        const int place = staged_offset(c, tap / S, tap % S);
        codes[count] = place;
        reinterpret_cast<float2*>(g_packed_values)[(long long)k * ws_code::SLOTS + count] =
            float2{__int_as_float(place * (int)sizeof(float)), v};
      } else {
        codes[count] = (activation_offset(c, tap / S, tap % S) << TAP_BITS) | tap;
        values[count] = v;
      }
      ++count;
    }
  }
  g_pattern_codes[k] = count;
  if (STAGED) starts[STAGE_CHUNKS] = count;
}

namespace weight_sparse {

// The table's main loop: the block's K_GROUP channels one after another, each a rolled loop over its entries with
// one accumulator per pixel of the thread. An outside tap's load is skipped (its bit in valid[i] is clear).
__device__ __forceinline__ void table_conv(const float* __restrict__ x, const int* __restrict__ g_pattern_codes,
                                           const float* __restrict__ g_values, float* __restrict__ y,
                                           const float* __restrict__ g_bias, const float* __restrict__ g_residual,
                                           const long long* image, const unsigned* valid, const long long* pixel,
                                           int lane, int slice) {
  for (int j = 0; j < K_GROUP; ++j) {
    const int k = (int)blockIdx.y * K_GROUP + j;
    if (k >= K) break;
    // At most SLOTS (pack_pattern stops there); not clamped here, where a known bound would let NVVM unroll it whole.
    const int count = g_pattern_codes[k];
    const int* codes = g_pattern_codes + K + (long long)k * ws_code::SLOTS;
    const float* values = g_values + (long long)k * ws_code::SLOTS;
    float acc[PIXELS_PER_THREAD];
#pragma unroll
    for (int i = 0; i < PIXELS_PER_THREAD; ++i) acc[i] = 0.0f;
    // The row goes through shared memory, ROW_CHUNK entries at a time (read once by the block, coalesced), so that
    // each step's chain is a shared load, the activation's load and the FMA.
    __shared__ int s_codes[ROW_CHUNK];
    __shared__ float s_values[ROW_CHUNK];
    for (int base = 0; base < count; base += ROW_CHUNK) {
      const int n = count - base < ROW_CHUNK ? count - base : ROW_CHUNK;
      __syncthreads();  // the previous chunk's (or channel's) readers are done
      for (int e = (int)threadIdx.x; e < n; e += BLOCK_PIXELS * SPLIT) {
        s_codes[e] = codes[base + e];
        s_values[e] = values[base + e];
      }
      __syncthreads();
#pragma unroll ENTRY_UNROLL
      for (int e = slice; e < n; e += SPLIT) {
        const int code = s_codes[e];
        const float w = s_values[e];
        const int tap = code & ((1 << TAP_BITS) - 1);
        const int offset = code >> TAP_BITS;
#pragma unroll
        for (int i = 0; i < PIXELS_PER_THREAD; ++i) {
          const float a = (valid[i] >> tap) & 1u ? __ldg(x + image[i] + offset) : 0.0f;
          acc[i] = fmaf(w, a, acc[i]);
        }
      }
    }
    if constexpr (SPLIT > 1) {
      // Slices 1.. leave their sums to slice 0; the second barrier keeps the next channel's from overwriting them.
      __shared__ float s_partial[SPLIT > 1 ? SPLIT - 1 : 1][PIXELS_PER_THREAD][BLOCK_PIXELS];
      if (slice > 0)
#pragma unroll
        for (int i = 0; i < PIXELS_PER_THREAD; ++i) s_partial[slice - 1][i][lane] = acc[i];
      __syncthreads();
      if (slice == 0)
#pragma unroll
        for (int i = 0; i < PIXELS_PER_THREAD; ++i)
#pragma unroll
          for (int u = 0; u < SPLIT - 1; ++u) acc[i] += s_partial[u][i][lane];
      __syncthreads();
    }
    if (slice != 0) continue;
#pragma unroll
    for (int i = 0; i < PIXELS_PER_THREAD; ++i) {
      if (pixel[i] >= PIXELS) break;
      const int n = (int)(pixel[i] / (P * Q));
      const int pq = (int)(pixel[i] % (P * Q));
      const long long o = CHANNELS_LAST ? pixel[i] * K + k : ((long long)n * K + k) * (P * Q) + pq;
      y[o] = convgen::apply_epilogue_fp32<cfg::Epilogue>(acc[i], g_bias, g_residual, k, o);
    }
  }
}

// The staged table's main loop: per chunk of STAGE_CHANNELS input channels, the tile's activations into shared
// memory (zero where the input is padded or a pixel lies past the last), then per channel of the block its row's
// entries of the chunk, each one shared load and one FMA per pixel of the thread.
__device__ __forceinline__ void staged_conv(const float* __restrict__ x, const int* __restrict__ g_pattern_codes,
                                            const float* __restrict__ g_values, float* __restrict__ y,
                                            const float* __restrict__ g_bias, const float* __restrict__ g_residual) {
  constexpr int SC = ws_code::STAGE_CHANNELS;
  constexpr int STAGED_PER_CHANNEL = PATCH ? PATCH_H * PATCH_W : TILE;
  constexpr int STAGED_TOTAL = SC * STAGED_PER_CHANNEL;  // floats staged per chunk
  constexpr int STAGE_BATCH = 8;                          // reads a thread has in flight while staging
  __shared__ __align__(16) float s_x[STAGED ? SC * STAGE_ROW : 1];
  __shared__ int s_image[STAGED && !PATCH ? TILE : 1];  // 1x1: each tile pixel's channel-0 offset, or -1: zeros
  // Live channels: s_live[cc] is chunk + 1 once a nonzero of the chunk's staged channel cc is stored (no reset
  // between chunks); s_list holds each block channel's entries of live channels, s_count how many.
  __shared__ int s_live[LIVE_CHANNELS ? SC : 1];
  __shared__ float2 s_list[LIVE_CHANNELS ? K_GROUP * ws_code::CHUNK_SLOTS : 1];
  __shared__ int s_count[LIVE_CHANNELS ? K_GROUP : 1];
  if constexpr (LIVE_CHANNELS)
    for (int c = (int)threadIdx.x; c < SC; c += BLOCK_PIXELS * SPLIT) s_live[c] = 0;
  // SPLIT slices of BLOCK_PIXELS threads: all of them stage, and slice `slice` sums channels slice, slice + SPLIT, ...
  // of the block's K_GROUP (more threads, each with a shorter chain of dependent loads, than one slice for all).
  constexpr int THREADS = BLOCK_PIXELS * SPLIT;
  constexpr int CHANNELS_PER_THREAD = STAGED ? K_GROUP / SPLIT : 1;  // (instantiated for the other variants too)
  // Channels-first with at least a staged channel's floats of threads: each thread stages one position (of the tile,
  // or of the patch) of channels CHANNEL_STEP apart, a load at a constant stride and a store each (the general loop
  // below spends about 20 instructions a float on its indices); the threads past CHANNEL_STEP whole channels wait.
  constexpr bool FIXED_STAGING_PIXEL = !CHANNELS_LAST && THREADS >= STAGED_PER_CHANNEL;
  const int tid = (int)threadIdx.x;
  const int lane = tid % BLOCK_PIXELS, slice = tid / BLOCK_PIXELS;
  // The block's tile: 1x1, TILE consecutive pixels from `first`; else image n's output rows p0.. and columns q0..,
  // whose patch starts at input (h0, w0).
  const long long first = (long long)blockIdx.x * TILE;
  const int n = PATCH ? (int)blockIdx.x / (TILES_H * TILES_W) : 0;
  const int p0 = PATCH ? (int)blockIdx.x / TILES_W % TILES_H * TILE_H : 0;
  const int q0 = PATCH ? (int)blockIdx.x % TILES_W * TILE_W : 0;
  const int h0 = p0 * STRIDE_H - PAD_H, w0 = q0 * STRIDE_W - PAD_W;
  if constexpr (!PATCH)
    for (int t = tid; t < TILE; t += THREADS) {
      const long long pixel = first + t;
      const int pn = (int)(pixel / (P * Q));
      const int pq = (int)(pixel % (P * Q));
      const int h = pq / Q * STRIDE_H - PAD_H, w = pq % Q * STRIDE_W - PAD_W;
      const bool inside = pixel < PIXELS && h >= 0 && h < H && w >= 0 && w < W;
      s_image[t] = !inside ? -1 : CHANNELS_LAST ? ((pn * H + h) * W + w) * C : pn * C * HW + h * W + w;
    }
  // Per pixel of the thread: its place in a staged channel, and whether it is an output pixel.
  int base[PIXELS_PER_THREAD];
  bool valid[PIXELS_PER_THREAD];
#pragma unroll
  for (int i = 0; i < PIXELS_PER_THREAD; ++i) {
    const int t = i * BLOCK_PIXELS + lane;
    if constexpr (PATCH) {
      // A thread past the tile's TILE_H x TILE_W pixels computes nothing it stores, but still reads: at the
      // patch's first position, inside the staged channel.
      const int tr = t / TILE_W, tc = t % TILE_W;
      const bool in_tile = t < TILE_H * TILE_W;
      base[i] = in_tile ? tr * STRIDE_H * PATCH_W + tc * STRIDE_W : 0;
      valid[i] = in_tile && p0 + tr < P && q0 + tc < Q;
    } else {
      const int v = PIXEL_VECTOR > 1 ? lane * PIXELS_PER_THREAD + i : t;  // consecutive pixels a thread: vectors
      base[i] = v;
      valid[i] = first + v < PIXELS;
    }
  }
  float acc[CHANNELS_PER_THREAD][PIXELS_PER_THREAD];
#pragma unroll
  for (int j = 0; j < CHANNELS_PER_THREAD; ++j)
#pragma unroll
    for (int i = 0; i < PIXELS_PER_THREAD; ++i) acc[j][i] = 0.0f;
  const int* starts = g_pattern_codes + K + (long long)K * ws_code::SLOTS;
  // Where each row of the block ends in the chunk, staged with the activations; where it starts, in `cursor`: a
  // row's entries go chunk after chunk.
  __shared__ int s_end[K_GROUP];
  int cursor[CHANNELS_PER_THREAD];
#pragma unroll
  for (int j = 0; j < CHANNELS_PER_THREAD; ++j) cursor[j] = 0;
  // A thread's pixels in a staged channel, from its first (the others at compile-time offsets from it).
  const float* const s_pixels = s_x + base[0];
  for (int chunk = 0; chunk < STAGE_CHUNKS; ++chunk) {
    const int c0 = chunk * SC;
    __syncthreads();  // the pixel bases are written; the previous chunk's readers are done
    for (int j = tid; j < K_GROUP; j += THREADS) {
      const int k = (int)blockIdx.y * K_GROUP + j;
      s_end[j] = k < K ? starts[(long long)k * (STAGE_CHUNKS + 1) + chunk + 1] : 0;
    }
    // Channels-first: consecutive threads take consecutive positions of one channel; channels-last: consecutive
    // channels of one position. Either way the global reads are coalesced. A thread issues STAGE_BATCH reads before
    // it stores any: one read at a time left the staging bound by memory latency (a block of few threads staging
    // thousands of floats per chunk).
    if constexpr (FIXED_STAGING_PIXEL) {
      constexpr int CHANNEL_STEP = THREADS / STAGED_PER_CHANNEL;
      const int pos = tid % STAGED_PER_CHANNEL, first_channel = tid / STAGED_PER_CHANNEL;
      // The position's channel-0 offset in the activation, or -1 where it is padding (or past the last pixel).
      int image = -1;
      if constexpr (PATCH) {
        const int h = h0 + pos / PATCH_W, w = w0 + pos % PATCH_W;
        if (h >= 0 && h < H && w >= 0 && w < W) image = n * C * HW + h * W + w;
      } else {
        image = s_image[pos];
      }
      const float* __restrict__ src = x + (image >= 0 ? image : 0) + (long long)(c0 + first_channel) * HW;
      float* dst = s_x + first_channel * STAGE_ROW + pos;
#pragma unroll 1
      for (int cc = first_channel; first_channel < CHANNEL_STEP && cc < SC; cc += CHANNEL_STEP * STAGE_BATCH) {
        float v[STAGE_BATCH];
#pragma unroll
        for (int u = 0; u < STAGE_BATCH; ++u) {
          const int ch = cc + u * CHANNEL_STEP;
          v[u] = image >= 0 && ch < SC && c0 + ch < C ? __ldg(src + (long long)u * CHANNEL_STEP * HW) : 0.0f;
        }
#pragma unroll
        for (int u = 0; u < STAGE_BATCH; ++u)
          if (cc + u * CHANNEL_STEP < SC) {
            dst[u * CHANNEL_STEP * STAGE_ROW] = v[u];
            if (LIVE_CHANNELS && v[u] != 0.0f) s_live[cc + u * CHANNEL_STEP] = chunk + 1;
          }
        src += (long long)CHANNEL_STEP * STAGE_BATCH * HW;
        dst += CHANNEL_STEP * STAGE_BATCH * STAGE_ROW;
      }
    } else {
      for (int batch = 0; batch < STAGED_TOTAL; batch += THREADS * STAGE_BATCH) {
        float v[STAGE_BATCH];
#pragma unroll
        for (int u = 0; u < STAGE_BATCH; ++u) {
          const int idx = batch + u * THREADS + tid;
          const int pos = CHANNELS_LAST ? idx / SC : idx % STAGED_PER_CHANNEL;
          const int c = c0 + (CHANNELS_LAST ? idx % SC : idx / STAGED_PER_CHANNEL);
          v[u] = 0.0f;
          if (idx >= STAGED_TOTAL || c >= C) continue;
          if constexpr (PATCH) {
            const int h = h0 + pos / PATCH_W, w = w0 + pos % PATCH_W;
            if (h >= 0 && h < H && w >= 0 && w < W)
              v[u] = __ldg(x + (CHANNELS_LAST ? ((n * H + h) * W + w) * C + c : (n * C + c) * HW + h * W + w));
          } else {
            const int image = s_image[pos];
            if (image >= 0) v[u] = __ldg(x + image + (CHANNELS_LAST ? c : c * HW));
          }
        }
#pragma unroll
        for (int u = 0; u < STAGE_BATCH; ++u) {
          const int idx = batch + u * THREADS + tid;
          if (idx >= STAGED_TOTAL) break;
          const int pos = CHANNELS_LAST ? idx / SC : idx % STAGED_PER_CHANNEL;
          const int cc = CHANNELS_LAST ? idx % SC : idx / STAGED_PER_CHANNEL;
          s_x[cc * STAGE_ROW + pos] = v[u];
          if (LIVE_CHANNELS && v[u] != 0.0f) s_live[cc] = chunk + 1;
        }
      }
    }
    __syncthreads();
    // Live channels: each warp compacts rows of the block's channels (warp w rows w, w + warps, ...), 32 entries at a
    // time in row order (a ballot and its prefix count), keeping those whose staged channel has a nonzero.
    if constexpr (LIVE_CHANNELS) {
      const int warp = tid / 32, lane32 = tid % 32;
      for (int j = warp; j < K_GROUP; j += THREADS / 32) {
        const int k = (int)blockIdx.y * K_GROUP + j;
        int count = 0;
        if (k < K) {
          const int* row_starts = starts + (long long)k * (STAGE_CHUNKS + 1);
          const int begin = row_starts[chunk], end = row_starts[chunk + 1];
          const float2* __restrict__ row = reinterpret_cast<const float2*>(g_values) + (long long)k * ws_code::SLOTS;
          for (int e0 = begin; e0 < end; e0 += 32) {
            const int e = e0 + lane32;
            float2 pair = float2{0.0f, 0.0f};
            bool live = false;
            if (e < end) {
              pair = __ldg(row + e);
              live = s_live[__float_as_int(pair.x) / (STAGE_ROW * (int)sizeof(float))] == chunk + 1;
            }
            const unsigned ballot = __ballot_sync(0xffffffffu, live);
            const int at = count + __popc(ballot & ((1u << lane32) - 1u));
            if (live && at < ws_code::CHUNK_SLOTS) s_list[j * ws_code::CHUNK_SLOTS + at] = pair;
            count += __popc(ballot);
          }
        }
        if (lane32 == 0) s_count[j] = count < ws_code::CHUNK_SLOTS ? count : ws_code::CHUNK_SLOTS;
      }
      __syncthreads();
    }
    // Per entry: one 8-byte load (the same for the whole slice), the address, the thread's pixels (PIXEL_VECTOR at a
    // time) and an FMA each.
#pragma unroll
    for (int j = 0; j < CHANNELS_PER_THREAD; ++j) {
      const int k = (int)blockIdx.y * K_GROUP + j * SPLIT + slice;
      const int end = s_end[j * SPLIT + slice];  // 0 past K
      // Walked by pointer, four entries a step (their loads first) and the rest one by one: an index into the row
      // made NVVM redo its 64-bit address (a multiply and 4 more integer instructions) for every entry, and it
      // unrolled no pointer loop of an unknown count.
      // With live channels, the row's compacted entries in shared memory.
      const float2* __restrict__ entry =
          LIVE_CHANNELS ? s_list + (j * SPLIT + slice) * ws_code::CHUNK_SLOTS
                        : reinterpret_cast<const float2*>(g_values) + (long long)(k < K ? k : 0) * ws_code::SLOTS +
                              cursor[j];
      const auto load_entry = [](const float2* at) { return LIVE_CHANNELS ? *at : __ldg(at); };
      const auto apply = [&](const float2 pair) {
        const float* staged = reinterpret_cast<const float*>(
            reinterpret_cast<const char*>(PIXEL_VECTOR > 1 ? s_pixels : s_x) + __float_as_int(pair.x));
        const float wv = pair.y;
        if constexpr (PIXEL_VECTOR > 1) {
#pragma unroll
          for (int i = 0; i < PIXELS_PER_THREAD; i += PIXEL_VECTOR) {
            float a[PIXEL_VECTOR];
            convgen::load_floats<PIXEL_VECTOR>(a, staged + i);
#pragma unroll
            for (int u = 0; u < PIXEL_VECTOR; ++u) acc[j][i + u] = fmaf(wv, a[u], acc[j][i + u]);
          }
        } else {
#pragma unroll
          for (int i = 0; i < PIXELS_PER_THREAD; ++i) acc[j][i] = fmaf(wv, staged[base[i]], acc[j][i]);
        }
      };
      int left = LIVE_CHANNELS ? s_count[j * SPLIT + slice] : end - cursor[j];
#pragma unroll 1
      for (; left >= 4; left -= 4, entry += 4) {
        float2 pairs[4];
#pragma unroll
        for (int u = 0; u < 4; ++u) pairs[u] = load_entry(entry + u);
#pragma unroll
        for (int u = 0; u < 4; ++u) apply(pairs[u]);
      }
#pragma unroll 1
      for (; left > 0; --left, ++entry) apply(load_entry(entry));
      cursor[j] = end;
    }
  }
  convgen::allow_next_grid_after_main_loop();
  // Each pixel's output offset at channel 0, once for all the thread's channels, in int (the family keeps the
  // output under 2^31 elements): a 64-bit division by P * Q a store was an eighth of the kernel's instructions.
  constexpr int CHANNEL_STRIDE = CHANNELS_LAST ? 1 : P * Q;
  int out_base[PIXELS_PER_THREAD];
#pragma unroll
  for (int i = 0; i < PIXELS_PER_THREAD; ++i) {
    const int t = i * BLOCK_PIXELS + lane;
    const int pixel = PATCH ? (n * P + p0 + t / TILE_W) * Q + q0 + t % TILE_W : (int)first + base[i];
    out_base[i] = CHANNELS_LAST ? pixel * K : pixel / (P * Q) * K * (P * Q) + pixel % (P * Q);
  }
#pragma unroll
  for (int j = 0; j < CHANNELS_PER_THREAD; ++j) {
    const int k = (int)blockIdx.y * K_GROUP + j * SPLIT + slice;
    if (k >= K) break;
#pragma unroll
    for (int i = 0; i < PIXELS_PER_THREAD; ++i) {
      if (!valid[i]) continue;
      const int o = out_base[i] + k * CHANNEL_STRIDE;
      y[o] = convgen::apply_epilogue_fp32<cfg::Epilogue>(acc[j][i], g_bias, g_residual, k, o);
    }
  }
}

}  // namespace weight_sparse

// One-time setup: the nonzero values, in the order the code reads them, from the filter (K C R S or K R S C).
extern "C" __global__ void __launch_bounds__(256)
    CONVGEN_ENTRY_NAMED(pack_values)(const float* __restrict__ g_filter, float* __restrict__ g_packed_values) {
  const int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < ws_code::NNZ) g_packed_values[i] = g_filter[ws_code::kGather[i]];
}

extern "C" __global__ void __launch_bounds__(cfg::BLOCK_PIXELS * cfg::SPLIT)
    CONVGEN_ENTRY(const float* __restrict__ g_activation, const float* __restrict__ g_packed_values,
                  const int* __restrict__ g_pattern_codes, float* __restrict__ g_output,
                  const float* __restrict__ g_bias, const float* __restrict__ g_residual) {
  convgen::wait_for_previous_grid();  // launched early (grid_dependency.cuh): the stream's previous kernel first
  convgen::allow_next_grid_at_start();
  using namespace weight_sparse;
  if constexpr (STAGED) {
    staged_conv(g_activation, g_pattern_codes, g_packed_values, g_output, g_bias, g_residual);
    return;
  } else if constexpr (TABLE) {
    // Per pixel of the thread: the base its entries' offsets add to, and a bit per tap inside the input. Slices are
    // whole groups of BLOCK_PIXELS threads (warp-uniform when BLOCK_PIXELS is a multiple of 32).
    const int lane = (int)threadIdx.x % BLOCK_PIXELS, slice = (int)threadIdx.x / BLOCK_PIXELS;
    long long pixel[PIXELS_PER_THREAD], image[PIXELS_PER_THREAD];
    unsigned valid[PIXELS_PER_THREAD];
#pragma unroll
    for (int i = 0; i < PIXELS_PER_THREAD; ++i) {
      pixel[i] = ((long long)blockIdx.x * PIXELS_PER_THREAD + i) * BLOCK_PIXELS + lane;
      const int n = (int)(pixel[i] / (P * Q));
      const int pq = (int)(pixel[i] % (P * Q));
      const int h0 = pq / Q * STRIDE_H - PAD_H, w0 = pq % Q * STRIDE_W - PAD_W;
      image[i] = CHANNELS_LAST ? ((long long)(n * H + h0) * W + w0) * C : (long long)n * C * HW + h0 * W + w0;
      valid[i] = 0;
#pragma unroll
      for (int r = 0; r < R; ++r)
#pragma unroll
        for (int s = 0; s < S; ++s) {
          const int h = h0 + r * DIL_H, w = w0 + s * DIL_W;
          if (pixel[i] < PIXELS && h >= 0 && h < H && w >= 0 && w < W) valid[i] |= 1u << (r * S + s);
        }
    }
    table_conv(g_activation, g_pattern_codes, g_packed_values, g_output, g_bias, g_residual, image, valid, pixel, lane,
               slice);
    return;
  }
  const long long pixel = (long long)blockIdx.x * BLOCK_PIXELS + threadIdx.x;
  if (pixel >= PIXELS) return;
  const int n = (int)(pixel / (P * Q));
  const int pq = (int)(pixel % (P * Q));
  const int p = pq / Q, q = pq % Q;
  const int h0 = p * STRIDE_H - PAD_H, w0 = q * STRIDE_W - PAD_W;
  // Per tap t = r * S + s: whether it reads inside the input, and the base its loads add the code's offset to. The
  // element at (c, r, s) is base + offset (offset = c * H * W + r*DIL_H * W + s*DIL_W channels-first,
  // (r*DIL_H * W + s*DIL_W) * C + c channels-last). An outside tap's base is minus its spatial part, so that its
  // load reads channel c of image 0 (in bounds) and a select, not a branch, makes it 0.
  const long long image = CHANNELS_LAST ? ((long long)(n * H + h0) * W + w0) * C : (long long)n * C * HW + h0 * W + w0;
  unsigned valid = 0;
  long long tap_base[R * S];
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int s = 0; s < S; ++s) {
      const int h = h0 + r * DIL_H, w = w0 + s * DIL_W;
      const bool inside = h >= 0 && h < H && w >= 0 && w < W;
      const long long spatial = (long long)(r * DIL_H * W + s * DIL_W) * (CHANNELS_LAST ? C : 1);
      if (inside) valid |= 1u << (r * S + s);
      tap_base[r * S + s] = inside ? image : -spatial;
    }
  float acc[K_GROUP];
#pragma unroll
  for (int j = 0; j < K_GROUP; ++j) acc[j] = 0.0f;
  // The generated code indexes tap_base with constants only (every case names its taps), so it stays in registers.
  ws_code::group((int)blockIdx.y, g_activation, tap_base, valid, g_packed_values, acc);
  convgen::allow_next_grid_after_main_loop();
#pragma unroll
  for (int j = 0; j < K_GROUP; ++j) {
    const int k = (int)blockIdx.y * K_GROUP + j;
    if (k >= K) break;
    const long long offset = CHANNELS_LAST ? pixel * K + k : ((long long)n * K + k) * (P * Q) + pq;
    g_output[offset] = convgen::apply_epilogue_fp32<cfg::Epilogue>(acc[j], g_bias, g_residual, k, offset);
  }
}
