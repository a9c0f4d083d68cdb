// lint_dynamic_index: a per-thread array indexed by the thread index (lint: per-thread-dynamic-index)
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
}
