// default_not_allowed: a default outside the allowed values
#include "interface.cuh"

#define CONVGEN_ENTRY convgen_default_not_allowed_default
namespace cfg {
CONVGEN_PARAM("m", "16,32", "tile") constexpr int BLOCK_M = 48;
}  // namespace cfg

extern "C" __global__ void CONVGEN_ENTRY(const float* __restrict__ g_activation, float* __restrict__ g_output) {
  g_output[threadIdx.x] = g_activation[threadIdx.x] * cfg::BLOCK_M;
}
