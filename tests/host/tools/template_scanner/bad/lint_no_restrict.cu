// lint_no_restrict: an entry pointer without __restrict__ (lint: entry-restrict)
#include "interface.cuh"

#define CONVGEN_ENTRY convgen_lint_no_restrict_default
namespace cfg {
CONVGEN_PARAM("m", "1,2", "tile") constexpr int BLOCK_M = 2;
}  // namespace cfg

extern "C" __global__ void CONVGEN_ENTRY(const float* g_activation, float* __restrict__ g_output) {
  g_output[threadIdx.x] = g_activation[threadIdx.x] * cfg::BLOCK_M;
}
