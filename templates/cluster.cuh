// cluster: thread-block clusters (sm_90 and later) for the SIMT templates: the blocks of a cluster meet at a barrier
// and read each other's shared memory (distributed shared memory); included by NVRTC as a header. Before sm_90 and on
// the host (the templates' emulation) a cluster is one block: rank 0, a block barrier (none on the host), this block's
// own value. A
// template that runs clusters of several blocks refuses those targets itself (act_sparse: a static_assert).
// igemm_wgmma's sm_90a helpers (templates/wgmma.cuh) take raw shared addresses and read 16 bytes at a time.
#pragma once

namespace convgen::cluster {

// This block's rank in its cluster.
__device__ __forceinline__ unsigned rank() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
#else
  return 0;
#endif
}

// Every thread of every block of the cluster arrives, then waits for all of them: this thread's earlier shared-memory
// writes (release) are visible to the cluster's reads after it (acquire).
__device__ __forceinline__ void sync() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
#elif defined(__CUDA_ARCH__)
  __syncthreads();
#endif  // the host's emulation runs no cluster of several blocks: nothing to wait for
}

// The float at `s_local` (a shared variable of this block) as it lies in the shared memory of the cluster's block
// `block`.
__device__ __forceinline__ float load(const float* s_local, unsigned block) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  unsigned remote;  // this block's shared-state-space address, then the cluster's address of block `block`'s copy
  asm volatile("{\n\t.reg .u64 a;\n\t.reg .u32 own;\n\tcvta.to.shared.u64 a, %1;\n\tcvt.u32.u64 own, a;\n\t"
               "mapa.shared::cluster.u32 %0, own, %2;\n\t}\n"
               : "=r"(remote)
               : "l"(s_local), "r"(block));
  float v;
  asm volatile("ld.shared::cluster.f32 %0, [%1];\n" : "=f"(v) : "r"(remote) : "memory");
  return v;
#else
  (void)block;
  return *s_local;
#endif
}

}  // namespace convgen::cluster
