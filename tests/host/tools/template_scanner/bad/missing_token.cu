// missing_token: a parameter without a token
#include "interface.cuh"

#define CONVGEN_ENTRY convgen_missing_token_default
namespace cfg {
CONVGEN_PARAM("", "1,2", "tile") constexpr int BLOCK_M = 2;
}  // namespace cfg

extern "C" __global__ void CONVGEN_ENTRY(const float* __restrict__ g_activation, float* __restrict__ g_output) {
  g_output[threadIdx.x] = g_activation[threadIdx.x] * cfg::BLOCK_M;
}
