// pointer_name: an entry pointer not named g_...
#include "interface.cuh"

#define CONVGEN_ENTRY convgen_pointer_name_default
namespace cfg {
CONVGEN_PARAM("m", "1,2", "tile") constexpr int BLOCK_M = 2;
}  // namespace cfg

extern "C" __global__ void CONVGEN_ENTRY(const float* __restrict__ input, float* __restrict__ g_output) {
  g_output[threadIdx.x] = input[threadIdx.x] * cfg::BLOCK_M;
}
