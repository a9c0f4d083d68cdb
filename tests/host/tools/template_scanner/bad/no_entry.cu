// no_entry: no CONVGEN_ENTRY kernel
#include "interface.cuh"

#define CONVGEN_ENTRY convgen_no_entry_default
namespace cfg {
CONVGEN_PARAM("m", "1,2", "tile") constexpr int BLOCK_M = 2;
}  // namespace cfg

__device__ int block_m() { return cfg::BLOCK_M; }
