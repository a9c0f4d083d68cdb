// weight_sparse: FP32 convolution with the pruned filter's nonzero pattern baked into the code.
//
// The family (generator/families/weight_sparse.cpp) renders, into the prelude, namespace ws_code: for each group of
// K_GROUP output channels a straight-line block with one activation load per (c, r, s) that some channel of the
// group needs — at a compile-time offset from the thread's pixel, predicated by the tap's bounds bit — and one
// FMA per nonzero weight into that channel's accumulator. Zero weights cost nothing, not even a branch.
// Values are immediates in the code (IMMEDIATES) or read from a packed array, in code order, that the
// pack_values entry gathers once per op from the filter (ws_code::kGather lists each value's filter index).
//
// Grid: x = ceil(N * P * Q / BLOCK_PIXELS) pixel blocks, y = ceil(K / K_GROUP) channel groups (warp-uniform
// switch over the group's code). Block: BLOCK_PIXELS threads, one output pixel each, K_GROUP accumulators.
// NCHW and NHWC, any filter size with R * S <= 32, stride, padding, dilation; groups 1; 1-D and 2-D.
#include "interface.cuh"
#include "epilogue.cuh"

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
CONVGEN_PARAM("kg", "1..64", "output channels per block (accumulators per thread)") constexpr int K_GROUP = 4;
CONVGEN_PARAM("iv", "bool", "weights as immediates in the code (else read from the packed array)")
// convgen-lint: allow unused-param (the generated ws_code reads it: immediates, or wv[] from the packed array)
constexpr bool IMMEDIATES = false;
using Epilogue = convgen::IdentityEpilogue;  // the prelude renders the problem's (templates/epilogue.cuh)
}  // namespace cfg
namespace ws_code {
constexpr int NNZ = 2;  // nonzero weights
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
static_assert(K_GROUP >= 1 && K_GROUP <= 64, "K_GROUP accumulators per thread");

}  // namespace weight_sparse

// One-time setup: the nonzero values, in the order the code reads them, from the filter (K C R S or K R S C).
extern "C" __global__ void __launch_bounds__(256)
    CONVGEN_ENTRY_NAMED(pack_values)(const float* __restrict__ g_filter, float* __restrict__ g_packed_values) {
  const int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < ws_code::NNZ) g_packed_values[i] = g_filter[ws_code::kGather[i]];
}

extern "C" __global__ void __launch_bounds__(cfg::BLOCK_PIXELS)
    CONVGEN_ENTRY(const float* __restrict__ g_activation, const float* __restrict__ g_packed_values,
                  float* __restrict__ g_output, const float* __restrict__ g_bias,
                  const float* __restrict__ g_residual) {
  using namespace weight_sparse;
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
#pragma unroll
  for (int j = 0; j < K_GROUP; ++j) {
    const int k = (int)blockIdx.y * K_GROUP + j;
    if (k >= K) break;
    const long long offset = CHANNELS_LAST ? pixel * K + k : ((long long)n * K + k) * (P * Q) + pq;
    g_output[offset] = convgen::apply_epilogue_fp32<cfg::Epilogue>(acc[j], g_bias, g_residual, k, offset);
  }
}
