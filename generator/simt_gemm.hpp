// simt_gemm: the register-tiled SGEMM block of templates/simt_gemm.cuh as the families built on it (winograd_gemm,
// pointwise) see it: its threads, shared memory and registers, the checks of its fields and resources, and its work
// per block for their estimates and cost features.
#pragma once

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "convgen/gpu.hpp"
#include "generator/occupancy.hpp"

namespace convgen {

// A block of BLOCK_M x BLOCK_N outputs over steps of BLOCK_K reduction elements, THREAD_M x THREAD_N a thread.
// `staged_loads` is a thread's global loads of one step (the two slabs), held in registers across the step's FMAs
// unless a cp.async ring of `cp_stages` (2 to 4) shared buffers takes them straight to shared memory; 0: the register
// pipeline, two buffers (the templates' CP_STAGES).
struct SimtGemmTile {
  int block_m = 0, block_n = 0, block_k = 0, thread_m = 0, thread_n = 0;
  int staged_loads = 0;
  int cp_stages = 0;

  int threads() const { return thread_m > 0 && thread_n > 0 ? (block_m / thread_m) * (block_n / thread_n) : 0; }
  // Shared buffers of the two slabs, and their bytes.
  int buffers() const { return cp_stages > 0 ? cp_stages : 2; }
  int smem_bytes() const { return buffers() * block_k * (block_m + block_n) * 4; }
  // Registers per thread, roughly: accumulators, one step's operands, the staged loads, addresses. ptxas decides
  // (56 to 221 for the configurations measured); this only prunes what cannot fit.
  int register_estimate() const {
    return thread_m * thread_n + thread_m + thread_n + (cp_stages > 0 ? 1 : 4) * staged_loads + 24;
  }
  int resident_blocks_per_sm(const Gpu& gpu) const {
    return convgen::resident_blocks_per_sm(gpu, std::max(threads(), 1), register_estimate(), smem_bytes());
  }
  // Warp instructions of one block over `steps` steps: per reduction element a thread's FMAs and its float4 shared
  // loads, per step its staged loads and stores.
  double fma_instructions(double steps) const { return warps() * steps * block_k * thread_m * thread_n; }
  double shared_load_instructions(double steps) const {
    return warps() * steps * block_k * (thread_m + thread_n) / 4.0;
  }
  double global_load_instructions(double steps) const { return warps() * steps * staged_loads; }
  double warps() const { return std::ceil(threads() / 32.0); }
  // Of `steps` main-loop steps, those whose loads' latency shows (CostFeatures::main_loop_steps): every one with the
  // register pipeline, whose loads run one step ahead; one in cp_stages - 1 with a cp.async ring, whose copies run
  // cp_stages - 1 steps ahead. (On the H200 this feature raised pointwise's right pick with igemm's coefficients from
  // 63% to 73% of resnet50's 1x1 layer-batches, bench/results/h200/pointwise-2026-11-28.)
  int exposed_steps(double steps) const {
    return static_cast<int>(std::ceil(steps / (cp_stages > 1 ? cp_stages - 1.0 : 1.0)));
  }

  // The reason the fields are not ones the template takes (block_m and block_n 32, 64 or 128, block_k 8 or 16,
  // thread_m and thread_n 4 or 8, 32 to 512 threads), or nothing.
  std::optional<std::string> check_fields() const {
    if (block_m != 32 && block_m != 64 && block_m != 128)
      return fmt::format("block_m must be 32, 64 or 128, got {}", block_m);
    if (block_n != 32 && block_n != 64 && block_n != 128)
      return fmt::format("block_n must be 32, 64 or 128, got {}", block_n);
    if (block_k != 8 && block_k != 16) return fmt::format("block_k must be 8 or 16, got {}", block_k);
    if (thread_m != 4 && thread_m != 8) return fmt::format("thread_m must be 4 or 8, got {}", thread_m);
    if (thread_n != 4 && thread_n != 8) return fmt::format("thread_n must be 4 or 8, got {}", thread_n);
    if (threads() < 32 || threads() > 512)
      return fmt::format("{} threads per block ({}/{} x {}/{}): the GEMM takes 32 to 512", threads(), block_m, thread_m,
                         block_n, thread_n);
    return std::nullopt;
  }

  // The reason the block does not fit the GPU (threads, 48 KiB of static shared memory, registers), or nothing.
  std::optional<std::string> check_resources(const Gpu& gpu) const {
    if (threads() > gpu.max_threads_per_block)
      return fmt::format("{} threads per block exceed the gpu's {}", threads(), gpu.max_threads_per_block);
    if (smem_bytes() > 48 * 1024) return fmt::format("{} bytes of static shared memory exceed 48 KiB", smem_bytes());
    const int regs = register_estimate();
    if (regs > gpu.max_regs_per_thread)
      return fmt::format("about {} registers per thread exceed the gpu's {}", regs, gpu.max_regs_per_thread);
    if (gpu.regs_per_block > 0 && regs * threads() > gpu.regs_per_block)
      return fmt::format("about {} registers per block ({} threads of {}) exceed the gpu's {}", regs * threads(),
                         threads(), regs, gpu.regs_per_block);
    return std::nullopt;
  }

  // A rough time in microseconds of `blocks` blocks of `steps` steps each (the families' candidate ordering; the
  // tuner's cost model ranks for real): waves of resident blocks, each issuing its FMAs, shared loads and staged
  // loads (with their address work, `load_cost` instructions each) at 4 warp instructions per clock per SM, slowed
  // when fewer than 8 warps per SM hide the latencies.
  double estimate_us(const Gpu& gpu, double blocks, double steps, double load_cost) const {
    const int sm_count = std::max(gpu.sm_count, 1);
    const int per_sm = resident_blocks_per_sm(gpu);
    const double waves = std::ceil(blocks / (static_cast<double>(sm_count) * per_sm));
    const double resident = std::min<double>(per_sm, std::ceil(blocks / sm_count));
    const double instructions =
        fma_instructions(steps) + shared_load_instructions(steps) + warps() * steps * (staged_loads * load_cost + 4);
    const double latency = std::max(1.0, 8.0 / (resident * warps()));
    const double clock_mhz = gpu.clock_mhz > 0 ? gpu.clock_mhz : 1700;
    return waves * resident * (instructions / 4) * latency / clock_mhz;
  }
};

}  // namespace convgen
