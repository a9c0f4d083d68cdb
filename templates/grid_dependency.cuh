// grid_dependency: programmatic dependent launch in the kernel templates (sm_90 and later; no-ops before, on the host
// and where the kernel was launched normally); included by NVRTC as a header, and by common.cuh.
#pragma once

namespace convgen {

// A kernel of a plan step marked early_launch may start while the stream's previous kernel still runs. Every block
// then calls wait_for_previous_grid() before it reads or writes global memory an earlier kernel may write or read
// (the previous kernel waited for its own predecessor, so the order holds down the stream); before it, a block may
// only set up shared memory. allow_next_grid() lets the stream's next kernel start its blocks as soon as every block
// of this one has called it: they wait in turn.
__device__ __forceinline__ void wait_for_previous_grid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

__device__ __forceinline__ void allow_next_grid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

}  // namespace convgen
