// async_copy: cp.async (sm_80 and later) for the SIMT templates' shared-memory pipelines, taking generic pointers:
// a copy global -> shared that bypasses the registers, groups of copies committed together, and a wait for all but
// the newest groups. Every function is a template, so a template that includes this header but takes another path
// (an older GPU) emits no cp.async. (The tensor-core templates use templates/tensor_core.cuh's own copies, which take
// shared-state-space addresses.)
//
// A host emulation test defines CONVGEN_ASYNC_COPY_CUH and these functions itself (tests/support/host_async_copy.hpp).
#ifndef CONVGEN_ASYNC_COPY_CUH
#define CONVGEN_ASYNC_COPY_CUH

namespace convgen::async {

// Copies BYTES (4 or 16) from `global` to `shared`, both aligned to BYTES; when `full` is false nothing is read (the
// source size is 0) and the bytes are zero-filled, so a tile's edge costs no branch. `global` must be a valid address
// even then. 16-byte copies bypass L1 (.cg); 4-byte ones cannot (.ca).
template <int BYTES>
__device__ __forceinline__ void copy(float* shared, const float* global, bool full) {
  static_assert(BYTES == 4 || BYTES == 16, "cp.async copies 4 or 16 bytes here");
  unsigned s_address;  // the shared-state-space address cp.async takes
  asm("{\n\t.reg .u64 a;\n\tcvta.to.shared.u64 a, %1;\n\tcvt.u32.u64 %0, a;\n\t}\n" : "=r"(s_address) : "l"(shared));
  const int source_bytes = full ? BYTES : 0;
  if constexpr (BYTES == 16)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s_address), "l"(global), "r"(source_bytes));
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(s_address), "l"(global), "r"(source_bytes));
}

// Closes the group of copies issued since the last commit (an empty group is allowed and completes at once).
template <int = 0>
__device__ __forceinline__ void commit() {
  asm volatile("cp.async.commit_group;\n" ::);
}

// Waits until at most PENDING committed groups are still in flight; a __syncthreads() then makes the landed ones
// visible to the whole block.
template <int PENDING>
__device__ __forceinline__ void wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(PENDING));
}

}  // namespace convgen::async

#endif  // CONVGEN_ASYNC_COPY_CUH
