// gpu: the GPU descriptor, from a gpus/*.json file or the live device, and the capabilities derived from it.
#pragma once

#include <cstdint>
#include <string>

#include "convgen/problem.hpp"

namespace convgen {

// What the generator and cost model need to know of a GPU. Limits are per SM or per block as named.
struct Gpu {
  std::string name;                        // "NVIDIA H100 SXM"
  std::string arch;                        // "sm_90"
  int sm_count = 0;
  int max_threads_per_sm = 0;
  int max_threads_per_block = 1024;
  int max_blocks_per_sm = 0;
  int regs_per_sm = 0;                     // 32-bit registers
  int regs_per_block = 0;
  int max_regs_per_thread = 255;
  int smem_per_sm_bytes = 0;
  int smem_per_block_bytes = 48 * 1024;    // without opting in
  int smem_per_block_optin_bytes = 0;      // maximum after cuFuncSetAttribute
  std::int64_t l2_bytes = 0;
  double dram_bandwidth_gbs = 0;           // GB/s (1e9 bytes per second)
  double clock_mhz = 0;                    // boost SM clock
  double peak_fp32_tflops = 0;
  double peak_tf32_tflops = 0;             // dense tensor-core rates
  double peak_fp16_tflops = 0;
  double peak_bf16_tflops = 0;
  bool operator==(const Gpu&) const = default;
};

// Returns the compute capability as an integer (sm_90 -> 90, sm_90a -> 90).
int compute_capability(const Gpu& gpu);

// Capabilities that templates test, derived from the architecture.
inline bool has_cp_async(const Gpu& gpu) { return compute_capability(gpu) >= 80; }
inline bool has_mma_tf32(const Gpu& gpu) { return compute_capability(gpu) >= 80; }
// wgmma exists on compute capability 9.0 only; kernels that use it are compiled for sm_90a.
inline bool has_wgmma(const Gpu& gpu) { return compute_capability(gpu) == 90; }

// The most shared memory one block may have: the opt-in maximum where the descriptor gives one.
inline int max_smem_per_block_bytes(const Gpu& gpu) {
  return gpu.smem_per_block_optin_bytes > gpu.smem_per_block_bytes ? gpu.smem_per_block_optin_bytes
                                                                    : gpu.smem_per_block_bytes;
}

// Returns the peak FLOP/s of the precision, in TFLOP/s.
double peak_tflops(const Gpu& gpu, Precision precision);

}  // namespace convgen
