// common: compile-time and device helpers shared by the kernel templates; included by NVRTC as a header.
#pragma once

#include "epilogue.cuh"
#include "grid_dependency.cuh"

// Nothing here includes a CUDA header: NVRTC compiles fast without them, and it declares float2/float4 itself.
namespace convgen {

constexpr long long kIntMax = 2147483647;

constexpr int cmin(int a, int b) { return a < b ? a : b; }
constexpr int cmax(int a, int b) { return a > b ? a : b; }
constexpr long long ceil_div(long long a, long long b) { return (a + b - 1) / b; }
constexpr bool is_pow2(long long v) { return v > 0 && (v & (v - 1)) == 0; }

// Output extent of one dim, as convgen::output_dims computes it on the host (the templates check the prelude).
constexpr int conv_out_extent(int in, int filter, int stride, int pad, int dil) {
  return (in + 2 * pad - dil * (filter - 1) - 1) / stride + 1;
}

// select_t<B, T, F> is T when B, else F (std::conditional without <type_traits>).
template <bool B, class T, class F>
struct select_type {
  using type = T;
};
template <class T, class F>
struct select_type<false, T, F> {
  using type = F;
};
template <bool B, class T, class F>
using select_t = typename select_type<B, T, F>::type;

// The index type for tensors of at most `max_elements` elements: int when it fits, else long long. The shape is
// baked in, so this choice costs nothing at run time and keeps 32-bit arithmetic on the common path.
template <long long max_elements>
using index_for = select_t<(max_elements > kIntMax), long long, int>;

// Copies V consecutive floats (V = 1, 2 or 4) with one load; `src` must be aligned to V floats.
template <int V>
__device__ __forceinline__ void load_floats(float* dst, const float* src) {
  static_assert(V == 1 || V == 2 || V == 4, "load_floats handles 1, 2 or 4 floats");
  if constexpr (V == 4) {
    const float4 v = *reinterpret_cast<const float4*>(src);
    dst[0] = v.x;
    dst[1] = v.y;
    dst[2] = v.z;
    dst[3] = v.w;
  } else if constexpr (V == 2) {
    const float2 v = *reinterpret_cast<const float2*>(src);
    dst[0] = v.x;
    dst[1] = v.y;
  } else {
    dst[0] = src[0];
  }
}

}  // namespace convgen
