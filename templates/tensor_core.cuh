// tensor_core: the sm_80 warp-level instructions the tensor-core templates use (cp.async, ldmatrix, mma.sync, mma.sp
// and the conversions to tf32, fp16 and bf16), each one inline-PTX function; included by NVRTC as a header.
//
// Every instruction a template issues on tensor cores is here and nowhere else, so that a host test
// (tests/support/host_tensor_core.hpp) can put its own definitions of these functions in place of this header, with
// the semantics of the PTX ISA, and run the template's index arithmetic, pipeline and fragment bookkeeping on the CPU.
#ifndef CONVGEN_TENSOR_CORE_CUH
#define CONVGEN_TENSOR_CORE_CUH

#include "element.cuh"

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#error "the tensor-core templates need sm_80 or later (cp.async, ldmatrix, mma.sync with tf32 and bf16)"
#endif

namespace convgen::tc {

// The dynamic shared memory of the block (the launch plan gives its size).
__device__ __forceinline__ unsigned char* dynamic_shared() {
  extern __shared__ __align__(16) unsigned char s_dynamic[];
  return s_dynamic;
}

// The 32-bit shared-state-space address of a generic pointer into shared memory (what cp.async and ldmatrix take).
__device__ __forceinline__ unsigned shared_address(const void* pointer) {
  unsigned address;
  asm("{\n\t.reg .u64 a;\n\tcvta.to.shared.u64 a, %1;\n\tcvt.u32.u64 %0, a;\n\t}\n" : "=r"(address) : "l"(pointer));
  return address;
}

// Copies 16 bytes global -> shared without passing through registers (L1 bypassed: .cg). When `full` is false
// nothing is read (the source size is 0) and the 16 bytes are zero-filled: padding, partial tiles and the reduction
// tail cost no branch. `global` must be 16-byte aligned and, even when `full` is false, a valid address.
__device__ __forceinline__ void cp_async_16(unsigned s_address, const void* global, bool full) {
  const int source_bytes = full ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s_address), "l"(global), "r"(source_bytes));
}

// As cp_async_16, but through L1 (.ca), whose line is kept for other loads of the block to read again soon, and of
// BYTES = 4, 8 or 16 (.cg copies 16 only): `global` must be BYTES-aligned.
template <int BYTES>
__device__ __forceinline__ void cp_async_l1(unsigned s_address, const void* global, bool full) {
  static_assert(BYTES == 4 || BYTES == 8 || BYTES == 16, "cp.async copies 4, 8 or 16 bytes");
  const int source_bytes = full ? BYTES : 0;
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(s_address), "l"(global), "n"(BYTES),
               "r"(source_bytes));
}

// Closes the group of cp.async issued since the last commit (an empty group is allowed and completes at once).
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

// Waits until at most `PENDING` committed groups are still in flight (the older ones have landed in shared memory;
// a __syncthreads() then makes them visible to the whole block).
template <int PENDING>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(PENDING));
}

// Loads four 8x8 matrices of 16-bit elements (rows of 16 bytes) from shared memory: lanes 8i..8i+7 give the row
// addresses of matrix i, and lane l receives in r[i] the two elements of row l / 4, columns 2 (l % 4) and + 1
// (the low half is the lower column). 32-bit elements load as pairs of halves: r[i] is then element l % 4 of row l / 4.
__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], unsigned s_address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(s_address));
}

// D = A * B + D for one 16x8 tile, fp32 accumulators. With g = lane / 4, t = lane % 4:
//   d[0], d[1]: row g, columns 2t, 2t+1;  d[2], d[3]: row g + 8, same columns.
// m16n8k16 fp16 / bf16 (two elements per register, the lower column in the low half):
//   a[0]: row g, k 2t..2t+1;  a[1]: row g+8, k 2t..;  a[2]: row g, k 2t+8..;  a[3]: row g+8, k 2t+8..
//   b[0]: k 2t..2t+1, column g;  b[1]: k 2t+8..2t+9, column g
// m16n8k8 tf32 (one element per register):
//   a[0]: row g, k t;  a[1]: row g+8, k t;  a[2]: row g, k t+4;  a[3]: row g+8, k t+4
//   b[0]: k t, column g;  b[1]: k t+4, column g
__device__ __forceinline__ void mma_fp16(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

__device__ __forceinline__ void mma_bf16(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

__device__ __forceinline__ void mma_tf32(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// D = A * B + D for one 16x8 tile of m16n8k32 whose A is 2:4 sparse (mma.sp, fp16 / bf16, fp32 accumulators;
// templates/sparse24_tc.cu). A holds only each row's kept half: its 16x16 compressed values have the fragment layout
// of mma_fp16's A (a[0]: row g, kept values 2t..2t+1, i.e. of k chunk 4t..4t+3; a[1]: row g+8; a[2], a[3]: the
// chunks of k 16..31). B is 32x8: b[i] holds k 8i+2t..8i+2t+1 of column g. `e`, the metadata, holds for each chunk
// of 4 k the positions of its two kept values (2 bits each, ordered), one 4-bit nibble per chunk; with the sparsity
// selector 0 only threads t = 0 and 1 of each group give it: thread t holds chunks of k 16t..16t+15, row g in bits
// 0-15, row g+8 in bits 16-31.
__device__ __forceinline__ void mma_sp_fp16(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[4], unsigned e) {
  asm volatile(
      "mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9, %10, %11}, {%0, %1, %2, %3}, %12, 0x0;\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(b[2]), "r"(b[3]), "r"(e));
}

__device__ __forceinline__ void mma_sp_bf16(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[4], unsigned e) {
  asm volatile(
      "mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9, %10, %11}, {%0, %1, %2, %3}, %12, 0x0;\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(b[2]), "r"(b[3]), "r"(e));
}

// Rounds the fp32 value with bits `bits` to tf32 (10 mantissa bits, to nearest, ties away from zero), as the bits of
// an fp32 value. The tensor core would otherwise ignore the low 13 mantissa bits (truncation).
__device__ __forceinline__ unsigned round_to_tf32(unsigned bits) {
  unsigned rounded;
  asm("{\n\t.reg .f32 f;\n\tmov.b32 f, %1;\n\tcvt.rna.tf32.f32 %0, f;\n\t}\n" : "=r"(rounded) : "r"(bits));
  return rounded;
}

// Rounds an fp32 value to fp16 / bf16 (to nearest even), as the element's 16 bits (fp16 as element.cuh does; bf16
// in one sm_80 cvt, where element.cuh must round by hand).
__device__ __forceinline__ unsigned short float_to_fp16_bits(float value) {
  return convgen::element::float_to_fp16(value);
}

__device__ __forceinline__ unsigned short float_to_bf16_bits(float value) {
  unsigned short bits;
  asm("cvt.rn.bf16.f32 %0, %1;\n" : "=h"(bits) : "f"(value));
  return bits;
}

// Widens fp16 / bf16 bits to fp32 (exact): the epilogue reads the bias and the residual in the data type.
__device__ __forceinline__ float fp16_bits_to_float(unsigned short bits) { return convgen::element::fp16_to_float(bits); }

__device__ __forceinline__ float bf16_bits_to_float(unsigned short bits) { return convgen::element::bf16_to_float(bits); }

}  // namespace convgen::tc

#endif  // CONVGEN_TENSOR_CORE_CUH
