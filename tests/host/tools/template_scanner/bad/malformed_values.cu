// malformed_values: values that are neither a list, a range nor bool
#include "interface.cuh"

#define CONVGEN_ENTRY convgen_malformed_values_default
namespace cfg {
CONVGEN_PARAM("m", "1,,2", "tile") constexpr int BLOCK_M = 2;
}  // namespace cfg

extern "C" __global__ void CONVGEN_ENTRY(const float* __restrict__ g_activation, float* __restrict__ g_output) {
  g_output[threadIdx.x] = g_activation[threadIdx.x] * cfg::BLOCK_M;
}
