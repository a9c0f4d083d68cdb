// grid_dependency: programmatic dependent launch in the kernel templates (sm_90 and later; no-ops before, on the host
// and where the kernel was launched normally); included by NVRTC as a header, and by common.cuh.
#pragma once

// Where a main kernel (one with a main loop) lets the stream's next kernel start its blocks:
//   0  at its start, right after its own wait (the next kernel's blocks then sit on the SMs, waiting, for the whole
//      of this kernel, where they fit beside its blocks);
//   1  after its main loop, before its stores (CUTLASS's and nvFuser's place);
//   2  never explicitly: as its blocks exit (the next kernel's launch still overlaps the end of this one).
// Pass kernels (transforms, reduce, pad) have no main loop: they allow it at their start under 0 and 1.
// 2 unless the template says otherwise before it includes this header (igemm_wgmma: 1). Measured in chains of
// ResNet-50's and cuSNN's layers on the H200 (bench/results/h200/next-grid-trigger-2026-11-30/): with 0 the SIMT
// families' blocks, small and many to an SM, ran 1.13-1.19x slower than with 2, and winograd_gemm's three kernels and
// split-K's reduce pass the most; igemm_wgmma's, one large block an SM, gained 1.07-1.15x from 0 or 1 over 2.
// A compile-time define, so one build can compare them: CONVGEN_NVRTC_OPTIONS=-DCONVGEN_NEXT_GRID_AT=k (part of the
// JIT cache key).
#ifndef CONVGEN_NEXT_GRID_AT
#define CONVGEN_NEXT_GRID_AT 2
#endif

namespace convgen {

// A kernel of a plan step marked early_launch may start while the stream's previous kernel still runs. Every block
// then calls wait_for_previous_grid() before it reads or writes global memory an earlier kernel may write or read
// (the previous kernel waited for its own predecessor, so the order holds down the stream); before it, a block may
// only set up shared memory. The allow_next_grid calls let the stream's next kernel start its blocks once every block
// of this one has made one (any thread's first call counts for its block; a block that exits counts too): they wait
// in turn.
__device__ __forceinline__ void wait_for_previous_grid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

__device__ __forceinline__ void launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

// A pass kernel's call, at its start.
__device__ __forceinline__ void allow_next_grid() {
  if constexpr (CONVGEN_NEXT_GRID_AT != 2) launch_dependents();
}

// A main kernel's call at its start, after its wait.
__device__ __forceinline__ void allow_next_grid_at_start() {
  if constexpr (CONVGEN_NEXT_GRID_AT == 0) launch_dependents();
}

// A main kernel's call after its main loop, before its stores.
__device__ __forceinline__ void allow_next_grid_after_main_loop() {
  if constexpr (CONVGEN_NEXT_GRID_AT == 1) launch_dependents();
}

}  // namespace convgen
