// lint_unused_param: a declared parameter the kernel never reads (lint: unused-param)
#include "interface.cuh"

#define CONVGEN_ENTRY convgen_lint_unused_param_default
namespace cfg {
CONVGEN_PARAM("m", "1,2", "tile") constexpr int BLOCK_M = 2;
CONVGEN_PARAM("n", "1,2", "unused") constexpr int BLOCK_N = 1;
}  // namespace cfg

extern "C" __global__ void CONVGEN_ENTRY(const float* __restrict__ g_activation, float* __restrict__ g_output) {
  g_output[threadIdx.x] = g_activation[threadIdx.x] * cfg::BLOCK_M;
}
