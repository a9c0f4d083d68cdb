// act_sparse: FP32 direct convolution that skips the zero activations (ReLU's zeros), found inside the kernel.
//
// Input-stationary over a register-resident output tile. A warp owns TILE_H x TILE_W output pixels of one image
// and KW = 32 * K_PER_LANE output channels: lane l holds the accumulators of channels k0 + t * 32 + l (t <
// K_PER_LANE) for every pixel of the tile, so every lane needs the same activations and every zero test is
// warp-uniform. Per input channel c the warp
//   1. loads the channel's input halo (HALO_H x HALO_W values; lane l holds halo elements j * 32 + l),
//      and takes max(0, x) of each value, where the channel is computed, when RELU_ON_LOAD;
//   2. takes one __ballot_sync per 32 halo elements: the nonzero mask, and its population count;
//   3. if the count reaches DENSE_MIN, runs the fully unrolled dense loop over every halo position (broadcast by
//      __shfl_sync, FMAs into compile-time accumulator indices); else walks the set bits (ffs loop) and jumps
//      (switch over the halo position, every case compile-time code) to the FMAs of that position only;
//      a channel whose halo is all zero costs its loads and nothing else.
// The lane's filter values for channel c (K_PER_LANE x R x S) come from the packed filter, written once per op by
// the pack_filter entry: [c][k][R*S padded to 4] read as float4 (R*S >= 4), else [c][r][s][k], with k padded by
// zeros to a whole number of warps' channels (no bounds test on a tap load). Loads of channel c + 1 are issued
// before channel c is computed.
// With LOAD_BATCH > 1 the loads of a batch of channels are all issued before the first of them is computed: a warp
// then waits for memory once per batch instead of once per channel, which is what a small layer at batch 1 (few
// warps, nothing to hide a DRAM round trip behind) is bound by.
// With BLOCK_STAGED the block first stages the halos of a chunk of its channels in shared memory (each warp loads
// whole channels, several at once, and stores them with their nonzero masks), then one warp lists the channels of
// the chunk with a nonzero; the warps take the listed channels in turn and read halos and masks from shared memory.
// A channel whose halo is all zero then costs no tap load and no step of any warp's loop, the warps' work stays
// balanced however the nonzeros cluster (a blob of ReLU's nonzeros falls in few channels of a tile), and the halo
// loads of many channels are in flight at once instead of one channel ahead.
// Nothing is built or counted outside the kernel: no second launch, no host round trip, no atomics for lists.
//
// Grid: x = N * TILES_H * TILES_W output tiles, y = ceil(K / KW) channel groups, z = SPLIT_C input-channel splits.
// Block: WARPS warps that split the block's input channels; they sum their accumulators in shared memory (shared
// atomics), then the block writes its tile: plain stores when SPLIT_C == 1, else global atomic adds into an output
// the caller zeroed (the launch plan's zero step), or, with CLUSTER_REDUCE, the tile's SPLIT_C blocks form a cluster
// and each stores a share of the tile summed from all of their shared memories.
#include "interface.cuh"
#include "epilogue.cuh"

#ifndef CONVGEN_PRELUDE
#define CONVGEN_ENTRY convgen_act_sparse_default
namespace cfg {
constexpr int N = 1, C = 64, K = 64, GROUPS = 1;
constexpr int D = 1, H = 56, W = 56;
constexpr int T = 1, R = 3, S = 3;
constexpr int O = 1, P = 56, Q = 56;
constexpr int STRIDE_D = 1, STRIDE_H = 1, STRIDE_W = 1;
constexpr int PAD_D = 0, PAD_H = 1, PAD_W = 1;
constexpr int DIL_D = 1, DIL_H = 1, DIL_W = 1;
constexpr bool CHANNELS_LAST = false;
CONVGEN_PARAM("th", "1..8", "output rows per warp tile") constexpr int TILE_H = 4;
CONVGEN_PARAM("tw", "1..16", "output columns per warp tile") constexpr int TILE_W = 7;
CONVGEN_PARAM("tk", "1,2,4", "output channels per lane (a warp owns 32 * tk)") constexpr int K_PER_LANE = 1;
CONVGEN_PARAM("wp", "1,2,4,8,16", "warps per block, splitting the block's input channels") constexpr int WARPS = 4;
CONVGEN_PARAM("sc", "1..64", "blocks splitting the input channels (atomic adds into a zeroed output)")
constexpr int SPLIT_C = 1;
CONVGEN_PARAM("dm", "0..128", "nonzeros in a channel's halo from which the dense loop runs (0: from the cost model)")
constexpr int DENSE_AT = 0;
CONVGEN_PARAM("sm", "0,1,2,3", "sparse loop: 3 halo in shared memory, read by 8 (2 x float4) + per-position branches; "
              "2 the same with 8 shuffles; 0 one shuffle per nonzero; 1 ffs loop + switch")
constexpr int SPARSE_MODE = 3;
CONVGEN_PARAM("ur", "bool", "unroll the channel loop by 2 (two register sets, no copies between channels)")
constexpr bool UNROLL2 = false;
CONVGEN_PARAM("relu", "bool", "apply max(0, x) to the activation as it is loaded") constexpr bool RELU_ON_LOAD = false;
CONVGEN_PARAM("lb", "1,2,4,8", "input channels a warp loads in one batch before computing them (1: one channel ahead)")
constexpr int LOAD_BATCH = 1;
CONVGEN_PARAM("bs", "bool", "the block stages its channels' halos in shared memory and lists the channels with a "
              "nonzero, which its warps take in turn (sparse loop 3, one channel ahead)")
constexpr bool BLOCK_STAGED = false;
CONVGEN_PARAM("cr", "bool", "the SPLIT_C blocks of a tile (2 to 8) are one cluster and add their partial tiles from "
              "each other's shared memory: no zeroed output, no atomics, the epilogue applied (sm_90)")
constexpr bool CLUSTER_REDUCE = false;
using Epilogue = convgen::IdentityEpilogue;  // the prelude renders the problem's (templates/epilogue.cuh)
}  // namespace cfg
#endif

#include "common.cuh"
#include "cluster.cuh"

namespace act_sparse {

using namespace cfg;
using convgen::ceil_div;

constexpr int RS = R * S;
constexpr int KW = 32 * K_PER_LANE;  // output channels per warp
constexpr int TP = TILE_H * TILE_W;  // output pixels per warp tile
constexpr int HALO_H = (TILE_H - 1) * STRIDE_H + (R - 1) * DIL_H + 1;
constexpr int HALO_W = (TILE_W - 1) * STRIDE_W + (S - 1) * DIL_W + 1;
constexpr int HALO = HALO_H * HALO_W;
constexpr int HALO_REGS = (HALO + 31) / 32;  // halo elements per lane
constexpr int TILES_H = (int)ceil_div(P, TILE_H);
constexpr int TILES_W = (int)ceil_div(Q, TILE_W);
constexpr int C_CHUNK = (int)ceil_div(C, SPLIT_C);          // input channels per block
constexpr int C_PER_WARP = (int)ceil_div(C_CHUNK, WARPS);   // input channels per warp
constexpr int THREADS = 32 * WARPS;
constexpr int HW = H * W;

static_assert(GROUPS == 1, "act_sparse handles ungrouped convolutions only");
static_assert(D == 1 && T == 1 && O == 1 && PAD_D == 0, "act_sparse handles 2-D convolutions only");
static_assert(P == convgen::conv_out_extent(H, R, STRIDE_H, PAD_H, DIL_H), "P does not match H, R, stride, padding");
static_assert(Q == convgen::conv_out_extent(W, S, STRIDE_W, PAD_W, DIL_W), "Q does not match W, S, stride, padding");
static_assert(HALO_REGS <= 4, "the input halo of a warp tile must have at most 128 elements");
static_assert(K_PER_LANE == 1 || K_PER_LANE == 2 || K_PER_LANE == 4, "K_PER_LANE must be 1, 2 or 4");
static_assert(WARPS >= 1 && WARPS <= 16, "WARPS must be 1 to 16");
static_assert(SPLIT_C >= 1 && SPLIT_C <= C, "SPLIT_C must be 1 to C");
static_assert(SPLIT_C == 1 || CLUSTER_REDUCE || convgen::is_identity_epilogue<cfg::Epilogue>(),
              "SPLIT_C adds partial sums into the output with atomics: an epilogue needs the whole sum (SPLIT_C 1, or "
              "the cluster's reduction)");
static_assert(!CLUSTER_REDUCE || (SPLIT_C >= 2 && SPLIT_C <= 8),
              "CLUSTER_REDUCE needs SPLIT_C 2 to 8 (a portable cluster)");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
static_assert(!CLUSTER_REDUCE, "CLUSTER_REDUCE needs thread-block clusters (sm_90 and later)");
#endif
// The blocks of a cluster: the SPLIT_C splits of a tile along the grid's z (the cluster rank is the split).
constexpr int CLUSTER_SIZE = CLUSTER_REDUCE ? SPLIT_C : 1;
static_assert((long long)N * C * H * W <= convgen::kIntMax && (long long)N * K * P * Q <= convgen::kIntMax,
              "act_sparse indexes tensors with int: each must have fewer than 2^31 elements");

// The dense loop costs about HALO shuffles and TP * RS * K_PER_LANE FMAs per channel: 1 + A per halo position,
// A = TP * RS * K_PER_LANE / HALO. The unrolled sparse loop (SPARSE_MODE 0) costs 2 per position (bit test,
// branch) and about 4 + A more per nonzero (shuffle, convergence check, FMAs); the ffs/switch loop (SPARSE_MODE 1)
// about 12 + A per nonzero, and a chain of dependent branches. The dense loop runs from the count where it is the
// cheaper; DENSE_AT overrides.
constexpr int TAP_FMAS = TP * RS * K_PER_LANE;  // FMAs of the dense loop per channel
constexpr int DENSE_MIN_MODEL =
    SPARSE_MODE != 1 ? (int)ceil_div((long long)HALO * (TAP_FMAS - HALO), 4LL * HALO + TAP_FMAS)
                     : (int)ceil_div((long long)(HALO + TAP_FMAS) * HALO, 12LL * HALO + TAP_FMAS);
constexpr int DENSE_MIN = DENSE_AT > 0 ? DENSE_AT : (DENSE_MIN_MODEL < 1 ? 1 : DENSE_MIN_MODEL);
static_assert(SPARSE_MODE >= 0 && SPARSE_MODE <= 3, "SPARSE_MODE must be 0 to 3");
static_assert(LOAD_BATCH == 1 || LOAD_BATCH == 2 || LOAD_BATCH == 4 || LOAD_BATCH == 8,
              "LOAD_BATCH must be 1, 2, 4 or 8");
static_assert(LOAD_BATCH == 1 || !UNROLL2, "the channel loop is unrolled by 2 or loaded in batches, not both");
static_assert(!BLOCK_STAGED || (SPARSE_MODE == 3 && !UNROLL2 && LOAD_BATCH == 1),
              "the block-staged channel loop reads halos from shared memory (sparse loop 3), one channel ahead");

// Packed filter: with R * S >= 4 taps, [c][k][RS_PAD] (a lane's taps of one channel are contiguous, read as
// float4: RS_PAD / 4 loads per output channel instead of R * S), else [c][r][s][k] (lanes read consecutive k).
constexpr bool VEC_TAPS = RS >= 4;
constexpr int RS_PAD = VEC_TAPS ? (RS + 3) / 4 * 4 : RS;
constexpr int HALO_SLOTS = HALO_REGS * 32;  // shared halo floats per warp (SPARSE_MODE 3)
constexpr int K_PAD = (int)ceil_div(K, KW) * KW;  // output channels of the packed filter (zeros past K)

constexpr unsigned FULL = 0xffffffffu;

// Shared memory of the main entry: the warps' reduction rows (one per output channel, padded so that lane-indexed
// rows hit distinct banks) and, with BLOCK_STAGED, a chunk of the block's channels: each channel's halo (HALO_STRIDE
// floats, a whole number of the sparse loop's groups of 8, zeros past HALO), its nonzero masks and a list entry.
constexpr bool REDUCE = WARPS > 1 || SPLIT_C > 1;
constexpr int LDP = TP + 1;
constexpr int SUM_FLOATS = REDUCE ? KW * LDP : 1;
constexpr int HALO_STRIDE = (HALO + 7) / 8 * 8;
#ifndef CONVGEN_ACT_SPARSE_STAGE_BYTES  // smaller only in the host emulation test, to stage several chunks
#define CONVGEN_ACT_SPARSE_STAGE_BYTES (44 * 1024)
#endif
constexpr int STAGE_BUDGET_FLOATS = CONVGEN_ACT_SPARSE_STAGE_BYTES / 4 - SUM_FLOATS;  // static shared stays < 48 KiB
constexpr int STAGE_FIT = STAGE_BUDGET_FLOATS / (HALO_STRIDE + HALO_REGS + 1);
constexpr int STAGE_CHANNELS = !BLOCK_STAGED ? 1 : (C_CHUNK < STAGE_FIT ? C_CHUNK : STAGE_FIT);
constexpr int STAGE_BATCH = 4;  // channels a warp loads at once while staging
static_assert(!BLOCK_STAGED || STAGE_FIT >= 1, "the reduction rows leave no shared memory to stage a channel in");

using Acc = float[K_PER_LANE][TILE_H][TILE_W];
using Taps = float[K_PER_LANE][R][S];

// Adds x times the taps that reach from halo position `pos` to each pixel of the tile. Called with a constant
// `pos` only: after inlining and unrolling every condition and index below is a compile-time constant.
__device__ __forceinline__ void apply(Acc& acc, const Taps& f, float x, int pos) {
  const int hh = pos / HALO_W;
  const int ww = pos % HALO_W;
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const int dh = hh - r * DIL_H;
    if (dh < 0 || dh % STRIDE_H != 0 || dh / STRIDE_H >= TILE_H) continue;
#pragma unroll
    for (int s = 0; s < S; ++s) {
      const int dw = ww - s * DIL_W;
      if (dw < 0 || dw % STRIDE_W != 0 || dw / STRIDE_W >= TILE_W) continue;
#pragma unroll
      for (int t = 0; t < K_PER_LANE; ++t)
        // convgen-lint: allow per-thread-dynamic-index (pos is a constant at every call: see above)
        acc[t][dh / STRIDE_H][dw / STRIDE_W] = fmaf(f[t][r][s], x, acc[t][dh / STRIDE_H][dw / STRIDE_W]);
    }
  }
}

// The sparse step of halo register J: one case per bit, each a constant position.
#define ACT_SPARSE_CASE(b)                                               \
  case b:                                                                \
    if constexpr (J * 32 + (b) < HALO) apply(acc, f, x, J * 32 + (b));   \
    break;
#define ACT_SPARSE_CASE4(b) ACT_SPARSE_CASE(b) ACT_SPARSE_CASE(b + 1) ACT_SPARSE_CASE(b + 2) ACT_SPARSE_CASE(b + 3)

template <int J>
__device__ __forceinline__ void sparse_reg(Acc& acc, const Taps& f, float v, unsigned mask) {
  while (mask != 0) {
    const int b = __ffs(mask) - 1;
    mask &= mask - 1;
    const float x = __shfl_sync(FULL, v, b);
    switch (b) {
      ACT_SPARSE_CASE4(0) ACT_SPARSE_CASE4(4) ACT_SPARSE_CASE4(8) ACT_SPARSE_CASE4(12)
      ACT_SPARSE_CASE4(16) ACT_SPARSE_CASE4(20) ACT_SPARSE_CASE4(24) ACT_SPARSE_CASE4(28)
      default: break;
    }
  }
}
#undef ACT_SPARSE_CASE4
#undef ACT_SPARSE_CASE

template <int J>
__device__ __forceinline__ void sparse_all(Acc& acc, const Taps& f, const float (&v)[HALO_REGS],
                                           const unsigned (&mask)[HALO_REGS]) {
  if constexpr (J < HALO_REGS) {
    sparse_reg<J>(acc, f, v[J], mask[J]);
    sparse_all<J + 1>(acc, f, v, mask);
  }
}

// The sparse step without a jump: every halo position in turn, its FMAs behind a warp-uniform test of its mask bit
// (a branch over the block, no serial chain from one nonzero to the next); whole zero mask words are skipped.
__device__ __forceinline__ void sparse_unrolled(Acc& acc, const Taps& f, const float (&v)[HALO_REGS],
                                                const unsigned (&mask)[HALO_REGS]) {
#pragma unroll
  for (int j = 0; j < HALO_REGS; ++j) {
    if (mask[j] == 0) continue;
#pragma unroll
    for (int b = 0; b < 32; ++b)
      if (j * 32 + b < HALO && (mask[j] & (1u << b)) != 0) apply(acc, f, __shfl_sync(FULL, v[j], b), j * 32 + b);
  }
}

// As sparse_unrolled, but each group of 8 positions with a nonzero is shuffled at once (8 independent shuffles in
// flight instead of one shuffle-then-FMA chain per nonzero); the FMAs stay behind their bit's branch.
__device__ __forceinline__ void sparse_grouped(Acc& acc, const Taps& f, const float (&v)[HALO_REGS],
                                               const unsigned (&mask)[HALO_REGS]) {
#pragma unroll
  for (int j = 0; j < HALO_REGS; ++j) {
#pragma unroll
    for (int g = 0; g < 4; ++g) {
      if (j * 32 + g * 8 >= HALO || ((mask[j] >> (g * 8)) & 0xffu) == 0) continue;
      float x[8];
#pragma unroll
      for (int b = 0; b < 8; ++b) x[b] = __shfl_sync(FULL, v[j], g * 8 + b);
#pragma unroll
      for (int b = 0; b < 8; ++b) {
        const int pos = j * 32 + g * 8 + b;
        if (pos < HALO && (mask[j] & (1u << (g * 8 + b))) != 0) apply(acc, f, x[b], pos);
      }
    }
  }
}

// The groups of 8 positions of a halo in shared memory (s_channel, 16-byte aligned): a group with a nonzero is read
// with two float4 broadcasts, then each set bit's FMAs run behind its branch.
__device__ __forceinline__ void sparse_groups(Acc& acc, const Taps& f, const unsigned (&mask)[HALO_REGS],
                                              const float* s_channel) {
#pragma unroll
  for (int j = 0; j < HALO_REGS; ++j) {
#pragma unroll
    for (int g = 0; g < 4; ++g) {
      if (j * 32 + g * 8 >= HALO || ((mask[j] >> (g * 8)) & 0xffu) == 0) continue;
      float x[8];
      convgen::load_floats<4>(x, s_channel + j * 32 + g * 8);
      convgen::load_floats<4>(x + 4, s_channel + j * 32 + g * 8 + 4);
#pragma unroll
      for (int b = 0; b < 8; ++b) {
        const int pos = j * 32 + g * 8 + b;
        if (pos < HALO && (mask[j] & (1u << (g * 8 + b))) != 0) apply(acc, f, x[b], pos);
      }
    }
  }
}

// As sparse_grouped, but the halo goes through the warp's shared buffer: a group of 8 positions with a nonzero is
// read with two float4 broadcasts instead of 8 shuffles (and needs no convergence check).
__device__ __forceinline__ void sparse_shared(Acc& acc, const Taps& f, const float (&v)[HALO_REGS],
                                              const unsigned (&mask)[HALO_REGS], float* s_halo, int lane) {
  __syncwarp();  // the previous channel's reads are done
#pragma unroll
  for (int j = 0; j < HALO_REGS; ++j) s_halo[j * 32 + lane] = v[j];
  __syncwarp();
  sparse_groups(acc, f, mask, s_halo);
}

// Every position of a halo in shared memory (s_channel), read 8 at a time by two float4 broadcasts.
__device__ __forceinline__ void dense_shared(Acc& acc, const Taps& f, const float* s_channel) {
#pragma unroll
  for (int g = 0; g * 8 < HALO; ++g) {
    float x[8];
    convgen::load_floats<4>(x, s_channel + g * 8);
    convgen::load_floats<4>(x + 4, s_channel + g * 8 + 4);
#pragma unroll
    for (int b = 0; b < 8; ++b)
      if (g * 8 + b < HALO) apply(acc, f, x[b], g * 8 + b);
  }
}

__device__ __forceinline__ void dense_all(Acc& acc, const Taps& f, const float (&v)[HALO_REGS]) {
#pragma unroll
  for (int j = 0; j < HALO_REGS; ++j)
#pragma unroll
    for (int b = 0; b < 32; ++b)
      if (j * 32 + b < HALO) apply(acc, f, __shfl_sync(FULL, v[j], b), j * 32 + b);
}

// Per-channel steps of the activation pointer and of a lane's packed-filter pointer.
constexpr int CHANNEL_STEP = CHANNELS_LAST ? 1 : HW;
constexpr int TAPS_STEP = VEC_TAPS ? K_PAD * RS_PAD : RS * K_PAD;

// Loads this lane's elements of a channel's halo, from the channel's first element g_channel (zero outside the
// input). As loaded: RELU_ON_LOAD's max(0, x) is applied where the halo is used (rectified), not here. Here it
// would wait for the load at once: the next channel's halo is loaded a channel ahead, and ptxas placed the max
// right after its load, before the branches of the current channel's computation (SASS of relu1 on the H200: FMNMX
// next to its LDG), so that the load's latency was no longer hidden.
__device__ __forceinline__ void load_halo(float (&v)[HALO_REGS], const float* __restrict__ g_channel,
                                          const int (&spatial)[HALO_REGS]) {
#pragma unroll
  for (int j = 0; j < HALO_REGS; ++j) v[j] = spatial[j] >= 0 ? __ldg(g_channel + spatial[j]) : 0.0f;
}

// A loaded halo value as the convolution takes it: max(0, x) with RELU_ON_LOAD.
__device__ __forceinline__ float rectified(float x) {
  if constexpr (RELU_ON_LOAD) return fmaxf(x, 0.0f);
  return x;
}

// Loads the lane's taps of a channel, from g_taps (the lane's first tap of the channel).
__device__ __forceinline__ void load_taps(Taps& f, const float* __restrict__ g_taps) {
  if constexpr (VEC_TAPS) {
#pragma unroll
    for (int t = 0; t < K_PER_LANE; ++t) {
      float r_taps[RS_PAD];
#pragma unroll
      for (int i = 0; i < RS_PAD; i += 4) convgen::load_floats<4>(r_taps + i, g_taps + t * 32 * RS_PAD + i);
#pragma unroll
      for (int r = 0; r < R; ++r)
#pragma unroll
        for (int s = 0; s < S; ++s) f[t][r][s] = r_taps[r * S + s];
    }
  } else {
#pragma unroll
    for (int t = 0; t < K_PER_LANE; ++t)
#pragma unroll
      for (int r = 0; r < R; ++r)
#pragma unroll
        for (int s = 0; s < S; ++s)
          f[t][r][s] = __ldg(g_taps + (r * S + s) * K_PAD + t * 32);
  }
}

// The taps of the channel about to be computed, copied out of the registers the next channel's taps load into.
__device__ __forceinline__ void copy_taps(Taps& dst, const Taps& src) {
#pragma unroll
  for (int t = 0; t < K_PER_LANE; ++t)
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
      for (int s = 0; s < S; ++s) dst[t][r][s] = src[t][r][s];
}

// Loads a channel's halo and the lane's taps of that channel. The callers advance both pointers by a channel step,
// so a load costs an address add, not an index computation.
__device__ __forceinline__ void load_channel(float (&v)[HALO_REGS], Taps& f, const float* __restrict__ g_channel,
                                             const float* __restrict__ g_taps, const int (&spatial)[HALO_REGS]) {
  load_halo(v, g_channel, spatial);
  load_taps(f, g_taps);
}

// `v`: the channel's halo as loaded, rectified here in place (RELU_ON_LOAD).
__device__ __forceinline__ void compute_channel(Acc& acc, const Taps& f, float (&v)[HALO_REGS], float* s_halo,
                                                int lane) {
  unsigned mask[HALO_REGS];
  int count = 0;
#pragma unroll
  for (int j = 0; j < HALO_REGS; ++j) {
    v[j] = rectified(v[j]);
    mask[j] = __ballot_sync(FULL, v[j] != 0.0f);
    count += __popc(mask[j]);
  }
  if (count >= DENSE_MIN)
    dense_all(acc, f, v);
  else if (count > 0) {
    if constexpr (SPARSE_MODE == 1)
      sparse_all<0>(acc, f, v, mask);
    else if constexpr (SPARSE_MODE == 2)
      sparse_grouped(acc, f, v, mask);
    else if constexpr (SPARSE_MODE == 3)
      sparse_shared(acc, f, v, mask, s_halo, lane);
    else
      sparse_unrolled(acc, f, v, mask);
  }
}

// Stages the halos of channels [c0, c0 + chunk) in shared memory (s_stage, HALO_STRIDE floats each) with their
// nonzero masks (s_masks), then lists those with a nonzero (s_list, s_live[0] of them). Warp w stages channels w,
// w + WARPS, ..., STAGE_BATCH at a time (their loads in flight together); warp 0 makes the list. Called by every
// thread of the block; returns after a barrier, the list complete.
__device__ __forceinline__ void stage_channels(const float* __restrict__ g_first, int chunk,
                                               const int (&spatial)[HALO_REGS], float* s_stage, unsigned* s_masks,
                                               int* s_list, int* s_live, int warp, int lane) {
  __syncthreads();  // the previous chunk's readers are done
#pragma unroll 1
  for (int i0 = warp; i0 < chunk; i0 += WARPS * STAGE_BATCH) {
    float v[STAGE_BATCH][HALO_REGS];
#pragma unroll
    for (int b = 0; b < STAGE_BATCH; ++b)
      if (i0 + b * WARPS < chunk) load_halo(v[b], g_first + (i0 + b * WARPS) * CHANNEL_STEP, spatial);
#pragma unroll
    for (int b = 0; b < STAGE_BATCH; ++b) {
      const int i = i0 + b * WARPS;
      if (i >= chunk) break;
#pragma unroll
      for (int j = 0; j < HALO_REGS; ++j) {
        const float x = rectified(v[b][j]);
        const unsigned mask = __ballot_sync(FULL, x != 0.0f);
        if (j * 32 + lane < HALO_STRIDE) s_stage[i * HALO_STRIDE + j * 32 + lane] = x;
        if (lane == 0) s_masks[i * HALO_REGS + j] = mask;
      }
    }
  }
  __syncthreads();
  if (warp == 0) {
    int listed = 0;
#pragma unroll 1
    for (int i0 = 0; i0 < chunk; i0 += 32) {
      const int i = i0 + lane;
      bool live = false;
      if (i < chunk) {
#pragma unroll
        for (int j = 0; j < HALO_REGS; ++j) live = live || s_masks[i * HALO_REGS + j] != 0;
      }
      const unsigned ballot = __ballot_sync(FULL, live);
      if (live) s_list[listed + __popc(ballot & ((1u << lane) - 1u))] = i;
      listed += __popc(ballot);
    }
    if (lane == 0) s_live[0] = listed;
  }
  __syncthreads();
}

// One listed channel of a chunk: its masks from s_masks, its halo from s_channel (shared), the lane's taps f.
__device__ __forceinline__ void compute_staged_channel(Acc& acc, const Taps& f, const unsigned* s_channel_masks,
                                                       const float* s_channel) {
  unsigned mask[HALO_REGS];
  int count = 0;
#pragma unroll
  for (int j = 0; j < HALO_REGS; ++j) {
    mask[j] = s_channel_masks[j];
    count += __popc(mask[j]);
  }
  if (count >= DENSE_MIN)
    dense_shared(acc, f, s_channel);
  else
    sparse_groups(acc, f, mask, s_channel);
}

}  // namespace act_sparse

// One-time setup: filter (K C R S, or K R S C channels-last) -> packed [c][k][rs4] or [c][r][s][k], k up to K_PAD
// (zeros past K).
extern "C" __global__ void __launch_bounds__(256)
    CONVGEN_ENTRY_NAMED(pack_filter)(const float* __restrict__ g_filter, float* __restrict__ g_packed_filter) {
  using namespace act_sparse;
  const int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= C * K_PAD * RS_PAD) return;
  int c, k, rs;
  if constexpr (VEC_TAPS) {  // packed index (c * K_PAD + k) * RS_PAD + rs; the padding taps are zero
    rs = i % RS_PAD;
    k = (i / RS_PAD) % K_PAD;
    c = i / (RS_PAD * K_PAD);
  } else {  // packed index (c * RS + rs) * K_PAD + k
    k = i % K_PAD;
    rs = (i / K_PAD) % RS;
    c = i / (K_PAD * RS);
  }
  if (rs >= RS || k >= K) {
    g_packed_filter[i] = 0.0f;
    return;
  }
  g_packed_filter[i] = CHANNELS_LAST ? g_filter[(k * RS + rs) * C + c] : g_filter[(k * C + c) * RS + rs];
}

// With CLUSTER_REDUCE, a cluster of CLUSTER_SIZE blocks along z: the prelude defines CONVGEN_ACT_SPARSE_CLUSTER_SIZE
// (the family's render) for those kernels only, so that every other kernel is launched as it was, without a cluster.
#ifdef CONVGEN_ACT_SPARSE_CLUSTER_SIZE
static_assert(CONVGEN_ACT_SPARSE_CLUSTER_SIZE == act_sparse::CLUSTER_SIZE,
              "the prelude's CONVGEN_ACT_SPARSE_CLUSTER_SIZE is CLUSTER_SIZE");
#else
static_assert(act_sparse::CLUSTER_SIZE == 1, "CLUSTER_REDUCE needs the prelude's CONVGEN_ACT_SPARSE_CLUSTER_SIZE");
#endif
#if defined(CONVGEN_ACT_SPARSE_CLUSTER_SIZE) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define CONVGEN_ACT_SPARSE_CLUSTER __cluster_dims__(1, 1, CONVGEN_ACT_SPARSE_CLUSTER_SIZE)
#else
#define CONVGEN_ACT_SPARSE_CLUSTER
#endif

// An A/B switch for measuring register pressure, not a tuning parameter: -DCONVGEN_ACT_SPARSE_MAX_REGISTERS=R in
// CONVGEN_NVRTC_OPTIONS asks ptxas for at most R registers a thread (as many blocks per SM as R allows; NVRTC's
// --maxrregcount is ignored where __launch_bounds__ is given). Unset: the threads alone bound the registers.
#ifdef CONVGEN_ACT_SPARSE_MAX_REGISTERS
#define CONVGEN_ACT_SPARSE_MIN_BLOCKS , (65536 / (act_sparse::THREADS * CONVGEN_ACT_SPARSE_MAX_REGISTERS) > 0 \
                                          ? 65536 / (act_sparse::THREADS * CONVGEN_ACT_SPARSE_MAX_REGISTERS) : 1)
#else
#define CONVGEN_ACT_SPARSE_MIN_BLOCKS
#endif

extern "C" __global__ void __launch_bounds__(act_sparse::THREADS CONVGEN_ACT_SPARSE_MIN_BLOCKS) CONVGEN_ACT_SPARSE_CLUSTER
    CONVGEN_ENTRY(const float* __restrict__ g_activation, const float* __restrict__ g_packed_filter,
                  float* __restrict__ g_output, const float* __restrict__ g_bias,
                  const float* __restrict__ g_residual) {
  convgen::wait_for_previous_grid();  // launched early (grid_dependency.cuh): the stream's previous kernel first
  convgen::allow_next_grid_at_start();
  using namespace act_sparse;
  __shared__ float s_sum[SUM_FLOATS];
  __shared__ __align__(16) float s_halo[SPARSE_MODE == 3 && !BLOCK_STAGED ? WARPS * HALO_SLOTS : 4];
  __shared__ __align__(16) float s_stage[BLOCK_STAGED ? STAGE_CHANNELS * HALO_STRIDE : 4];
  __shared__ unsigned s_masks[BLOCK_STAGED ? STAGE_CHANNELS * HALO_REGS : 1];
  __shared__ int s_list[STAGE_CHANNELS];
  __shared__ int s_live[1];

  const int lane = (int)threadIdx.x & 31;
  const int warp = (int)threadIdx.x >> 5;
  int tile = (int)blockIdx.x;
  const int tw = tile % TILES_W;
  tile /= TILES_W;
  const int th = tile % TILES_H;
  const int n = tile / TILES_H;
  const int p0 = th * TILE_H, q0 = tw * TILE_W;
  const int k0 = (int)blockIdx.y * KW;
  const int k_lane = k0 + lane;

  if constexpr (REDUCE) {
    for (int i = (int)threadIdx.x; i < KW * LDP; i += THREADS) s_sum[i] = 0.0f;
  }

  // This lane's halo elements: spatial offsets within a channel (channels-first) or an image (channels-last),
  // -1 outside the input (padding) or past the halo.
  int spatial[HALO_REGS];
#pragma unroll
  for (int j = 0; j < HALO_REGS; ++j) {
    const int e = j * 32 + lane;
    const int h = p0 * STRIDE_H - PAD_H + e / HALO_W;
    const int w = q0 * STRIDE_W - PAD_W + e % HALO_W;
    const bool inside = e < HALO && (unsigned)h < (unsigned)H && (unsigned)w < (unsigned)W;
    spatial[j] = inside ? (CHANNELS_LAST ? (h * W + w) * C : h * W + w) : -1;
  }
  const int image_base = n * C * HW;

  const int c_block = (int)blockIdx.z * C_CHUNK;
  const int c_lo = c_block + warp * C_PER_WARP;
  const int c_end = C < c_block + C_CHUNK ? C : c_block + C_CHUNK;
  const int c_hi = c_end < c_lo + C_PER_WARP ? c_end : c_lo + C_PER_WARP;

  float acc[K_PER_LANE][TILE_H][TILE_W];
#pragma unroll
  for (int t = 0; t < K_PER_LANE; ++t)
#pragma unroll
    for (int i = 0; i < TILE_H; ++i)
#pragma unroll
      for (int j = 0; j < TILE_W; ++j) acc[t][i][j] = 0.0f;

  float* s_my_halo = s_halo + (SPARSE_MODE == 3 && !BLOCK_STAGED ? warp * HALO_SLOTS : 0);
  if constexpr (BLOCK_STAGED) {
    // A chunk of the block's channels at a time: staged and listed by the whole block, then each warp takes the
    // listed channels warp, warp + WARPS, ... (taps loaded one listed channel ahead).
    const int tap_lane = VEC_TAPS ? k_lane * RS_PAD : k_lane;
#pragma unroll 1
    for (int c0 = c_block; c0 < c_end; c0 += STAGE_CHANNELS) {
      const int chunk = c_end - c0 < STAGE_CHANNELS ? c_end - c0 : STAGE_CHANNELS;
      stage_channels(g_activation + image_base + c0 * CHANNEL_STEP, chunk, spatial, s_stage, s_masks, s_list, s_live,
                     warp, lane);
      const int live = s_live[0];
      const float* g_chunk_taps = g_packed_filter + c0 * TAPS_STEP + tap_lane;
      float f[K_PER_LANE][R][S];
      if (warp < live) load_taps(f, g_chunk_taps + s_list[warp] * TAPS_STEP);
#pragma unroll 1
      for (int l = warp; l < live; l += WARPS) {
        const int i = s_list[l];
        float cf[K_PER_LANE][R][S];
        copy_taps(cf, f);
        if (l + WARPS < live) load_taps(f, g_chunk_taps + s_list[l + WARPS] * TAPS_STEP);
        compute_staged_channel(acc, cf, s_masks + i * HALO_REGS, s_stage + i * HALO_STRIDE);
      }
    }
  } else if (c_lo < c_hi) {
    const float* g_channel = g_activation + image_base + c_lo * CHANNEL_STEP;
    const float* g_taps = g_packed_filter + c_lo * TAPS_STEP + (VEC_TAPS ? k_lane * RS_PAD : k_lane);
    if constexpr (LOAD_BATCH > 1) {
      // Every load of a batch first (a register set per channel), then its channels' math.
      float v[LOAD_BATCH][HALO_REGS];
      float f[LOAD_BATCH][K_PER_LANE][R][S];
#pragma unroll 1
      for (int c = c_lo; c < c_hi; c += LOAD_BATCH) {
#pragma unroll
        for (int i = 0; i < LOAD_BATCH; ++i)
          if (c + i < c_hi) load_channel(v[i], f[i], g_channel + i * CHANNEL_STEP, g_taps + i * TAPS_STEP, spatial);
#pragma unroll
        for (int i = 0; i < LOAD_BATCH; ++i)
          if (c + i < c_hi) compute_channel(acc, f[i], v[i], s_my_halo, lane);
        g_channel += LOAD_BATCH * CHANNEL_STEP;
        g_taps += LOAD_BATCH * TAPS_STEP;
      }
    } else if constexpr (UNROLL2) {
      // Two register sets in turn: channel c + 1 loads into one while channel c computes from the other.
      float va[HALO_REGS], vb[HALO_REGS];
      float fa[K_PER_LANE][R][S], fb[K_PER_LANE][R][S];
      load_channel(va, fa, g_channel, g_taps, spatial);
#pragma unroll 1
      for (int c = c_lo; c < c_hi; c += 2) {
        if (c + 1 < c_hi) load_channel(vb, fb, g_channel + CHANNEL_STEP, g_taps + TAPS_STEP, spatial);
        compute_channel(acc, fa, va, s_my_halo, lane);
        if (c + 1 >= c_hi) break;
        g_channel += 2 * CHANNEL_STEP;
        g_taps += 2 * TAPS_STEP;
        if (c + 2 < c_hi) load_channel(va, fa, g_channel, g_taps, spatial);
        compute_channel(acc, fb, vb, s_my_halo, lane);
      }
    } else {
      float v[HALO_REGS];
      float f[K_PER_LANE][R][S];
      load_channel(v, f, g_channel, g_taps, spatial);
#pragma unroll 1
      for (int c = c_lo; c < c_hi; ++c) {
        float cv[HALO_REGS];
        float cf[K_PER_LANE][R][S];
#pragma unroll
        for (int j = 0; j < HALO_REGS; ++j) cv[j] = v[j];
        copy_taps(cf, f);
        g_channel += CHANNEL_STEP;
        g_taps += TAPS_STEP;
        if (c + 1 < c_hi) load_channel(v, f, g_channel, g_taps, spatial);
        compute_channel(acc, cf, cv, s_my_halo, lane);
      }
    }
  }
  convgen::allow_next_grid_after_main_loop();

  const int out_image = n * K * P * Q;
  if constexpr (!REDUCE) {
#pragma unroll
    for (int t = 0; t < K_PER_LANE; ++t) {
      const int k = k_lane + t * 32;
#pragma unroll
      for (int i = 0; i < TILE_H; ++i)
#pragma unroll
        for (int j = 0; j < TILE_W; ++j) {
          const int p = p0 + i, q = q0 + j;
          if (k < K && p < P && q < Q) {
            const int o = CHANNELS_LAST ? out_image + (p * Q + q) * K + k : out_image + (k * P + p) * Q + q;
            g_output[o] = convgen::apply_epilogue_fp32<cfg::Epilogue>(acc[t][i][j], g_bias, g_residual, k, o);
          }
        }
    }
  } else {
    __syncthreads();  // s_sum is zero
#pragma unroll
    for (int t = 0; t < K_PER_LANE; ++t)
#pragma unroll
      for (int i = 0; i < TILE_H; ++i)
#pragma unroll
        for (int j = 0; j < TILE_W; ++j) {
          if constexpr (WARPS > 1)
            atomicAdd(&s_sum[(t * 32 + lane) * LDP + i * TILE_W + j], acc[t][i][j]);
          else
            s_sum[(t * 32 + lane) * LDP + i * TILE_W + j] = acc[t][i][j];
        }
    __syncthreads();
    // The tile's elements this block stores: all of them, or with CLUSTER_REDUCE the r-th share of them (r its rank)
    // once the cluster's barrier has published every block's s_sum, each summed from all of them in rank order (the
    // same sums whatever the timing); a second barrier keeps its shared memory until the others have read it.
    int first = 0, end = KW * TP;
    if constexpr (CLUSTER_REDUCE) {
      convgen::cluster::sync();
      constexpr int SHARE = (KW * TP + SPLIT_C - 1) / SPLIT_C;
      first = (int)convgen::cluster::rank() * SHARE;
      end = first + SHARE < KW * TP ? first + SHARE : KW * TP;
    }
    // Pixels fastest for channels-first outputs, channels fastest for channels-last: neighbouring threads write
    // neighbouring elements.
    for (int e = first + (int)threadIdx.x; e < end; e += THREADS) {
      const int kl = CHANNELS_LAST ? e % KW : e / TP;
      const int pix = CHANNELS_LAST ? e / KW : e % TP;
      const int k = k0 + kl, p = p0 + pix / TILE_W, q = q0 + pix % TILE_W;
      if (k >= K || p >= P || q >= Q) continue;
      const int o = CHANNELS_LAST ? out_image + (p * Q + q) * K + k : out_image + (k * P + p) * Q + q;
      float value = s_sum[kl * LDP + pix];
      if constexpr (CLUSTER_REDUCE) {
        value = 0.0f;
#pragma unroll
        for (int r = 0; r < SPLIT_C; ++r) value += convgen::cluster::load(&s_sum[kl * LDP + pix], (unsigned)r);
      }
      if constexpr (SPLIT_C > 1 && !CLUSTER_REDUCE)
        atomicAdd(g_output + o, value);
      else
        g_output[o] = convgen::apply_epilogue_fp32<cfg::Epilogue>(value, g_bias, g_residual, k, o);
    }
    if constexpr (CLUSTER_REDUCE) convgen::cluster::sync();
  }
}
