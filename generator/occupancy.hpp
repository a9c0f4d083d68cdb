// occupancy: how many blocks of a kernel one SM holds at once, for the families' estimates.
#pragma once

#include <algorithm>

#include "convgen/gpu.hpp"

namespace convgen {

// Blocks of one SM that run at once, by the GPU's block, thread, register (allocated in units of 8 per thread) and
// shared-memory limits; a limit the descriptor leaves at 0 is not applied. At least 1.
inline int resident_blocks_per_sm(const Gpu& gpu, int threads_per_block, int registers_per_thread,
                                  int smem_bytes_per_block) {
  int blocks = gpu.max_blocks_per_sm > 0 ? gpu.max_blocks_per_sm : 32;
  if (gpu.max_threads_per_sm > 0) blocks = std::min(blocks, gpu.max_threads_per_sm / threads_per_block);
  if (gpu.regs_per_sm > 0) {
    const int regs = (registers_per_thread + 7) / 8 * 8;
    blocks = std::min(blocks, gpu.regs_per_sm / (regs * threads_per_block));
  }
  if (gpu.smem_per_sm_bytes > 0 && smem_bytes_per_block > 0)
    blocks = std::min(blocks, gpu.smem_per_sm_bytes / smem_bytes_per_block);
  return std::max(blocks, 1);
}

}  // namespace convgen
