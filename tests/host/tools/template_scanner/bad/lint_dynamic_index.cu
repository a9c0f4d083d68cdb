// lint_dynamic_index: per-thread arrays indexed by the thread index and by a loop that is not unrolled (lint:
// per-thread-dynamic-index); the unrolled loop's index is fine.
#include "interface.cuh"

#define CONVGEN_ENTRY convgen_lint_dynamic_index_default
namespace cfg {
CONVGEN_PARAM("m", "1,2", "tile") constexpr int BLOCK_M = 2;
}  // namespace cfg

extern "C" __global__ void CONVGEN_ENTRY(const float* __restrict__ g_activation, float* __restrict__ g_output) {
  float r_value[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) r_value[i] = g_activation[i * cfg::BLOCK_M];
  g_output[threadIdx.x] = r_value[threadIdx.x % 4];
  float r_sum[2] = {0.0f, 0.0f};
  for (int i = 0; i < 4; ++i) r_sum[i % 2] += r_value[3];
  g_output[threadIdx.x + 1] = r_sum[0];
}
