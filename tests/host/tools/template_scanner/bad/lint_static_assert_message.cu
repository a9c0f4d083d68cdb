// lint_static_assert_message: a static_assert with no message (lint: static-assert-message)
#include "interface.cuh"

#define CONVGEN_ENTRY convgen_lint_static_assert_message_default
namespace cfg {
CONVGEN_PARAM("m", "1,2", "tile") constexpr int BLOCK_M = 2;
}  // namespace cfg

static_assert(cfg::BLOCK_M > 0);

extern "C" __global__ void CONVGEN_ENTRY(const float* __restrict__ g_activation, float* __restrict__ g_output) {
  g_output[threadIdx.x] = g_activation[threadIdx.x] * cfg::BLOCK_M;
}
