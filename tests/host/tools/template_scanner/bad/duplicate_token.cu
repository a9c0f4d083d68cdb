// duplicate_token: two parameters with one token
#include "interface.cuh"

#define CONVGEN_ENTRY convgen_duplicate_token_default
namespace cfg {
CONVGEN_PARAM("m", "1,2", "tile") constexpr int BLOCK_M = 2;
CONVGEN_PARAM("m", "1,2", "again") constexpr int THREAD_M = 1;
}  // namespace cfg

extern "C" __global__ void CONVGEN_ENTRY(const float* __restrict__ g_activation, float* __restrict__ g_output) {
  g_output[threadIdx.x] = g_activation[threadIdx.x] * cfg::BLOCK_M;
}
__device__ int unused_thread_m() { return cfg::THREAD_M; }
