// lint_include: a header outside the allowed set (lint: include)
#include "interface.cuh"

#define CONVGEN_ENTRY convgen_lint_include_default
namespace cfg {
CONVGEN_PARAM("m", "1,2", "tile") constexpr int BLOCK_M = 2;
}  // namespace cfg

#include "helpers.h"

extern "C" __global__ void CONVGEN_ENTRY(const float* __restrict__ g_activation, float* __restrict__ g_output) {
  g_output[threadIdx.x] = g_activation[threadIdx.x] * cfg::BLOCK_M;
}
