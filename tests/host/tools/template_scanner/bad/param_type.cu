// param_type: a parameter that is neither int nor bool
#include "interface.cuh"

#define CONVGEN_ENTRY convgen_param_type_default
namespace cfg {
CONVGEN_PARAM("m", "1,2", "tile") constexpr long BLOCK_M = 2;
}  // namespace cfg

extern "C" __global__ void CONVGEN_ENTRY(const float* __restrict__ g_activation, float* __restrict__ g_output) {
  g_output[threadIdx.x] = g_activation[threadIdx.x] * cfg::BLOCK_M;
}
