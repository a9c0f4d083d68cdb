// wgmma: the sm_90a warpgroup instructions the Hopper tensor-core template uses (templates/igemm_wgmma.cu): the
// shared-memory matrix descriptor, wgmma.mma_async (m64nNk16 with fp16 / bf16 in, m64nNk8 with tf32 in; fp32
// accumulators, both operands from shared memory) and wgmma.mma_async.sp (a 2:4 A, m64nNk32), its fence / commit /
// wait, the proxy fence that makes cp.async's shared-memory writes visible to it, the mbarriers of the warp-specialized
// pipeline, the TMA bulk tensor copies of its `tma` variant, the output's stmatrix and bulk copies to global memory, and
// the cluster barrier and distributed shared-memory loads of split-K in a cluster; included by NVRTC as a header.
// Kernels that include it are compiled for sm_90a (Family::compile_arch).
//
// The operand layout every descriptor here describes: K-major rows of 128 bytes (64 fp16 / bf16 or 32 tf32 elements),
// in atoms of 8 rows (1,024 bytes, 1,024-aligned) with the 128-byte swizzle: the 16-byte unit u of row r is stored at
// unit u ^ (r % 8) of the row. swizzled_offset gives that position; a descriptor then names the matrix by its first
// row's address. One wgmma reads 32 bytes of each row (16 fp16 / bf16 or 8 tf32 elements) in every data type.
#ifndef CONVGEN_WGMMA_CUH
#define CONVGEN_WGMMA_CUH

#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL) && !defined(CONVGEN_TEMPLATE_SCANNER)
#error "wgmma.cuh needs sm_90a (wgmma.mma_async is an arch-specific feature of compute capability 9.0)"
#endif

namespace convgen::wg {

constexpr int kRowBytes = 128;    // one K-major row of the swizzled layout: 64 fp16 / bf16 or 32 tf32 elements
constexpr int kAtomBytes = 1024;  // 8 rows: the period of the swizzle and the descriptor's stride

// The byte offset of 16-byte unit `unit` (0-7) of row `row` in a swizzled matrix (from its 1,024-aligned start).
__device__ __forceinline__ unsigned swizzled_offset(int row, int unit) {
  return (unsigned)(row * kRowBytes + ((unit ^ (row & 7)) << 4));
}

// The wgmma descriptor of a K-major, 128-byte-swizzled matrix whose first row (of its first 32 bytes) is at shared
// address `s_address`: start address >> 4 (bits 0-13), leading byte offset 1 (bits 16-29, unused by swizzled K-major
// layouts), stride byte offset between 8-row atoms 1,024 >> 4 (bits 32-45), base offset 0 (the atoms are 1,024-aligned)
// and layout 1, the 128-byte swizzle (bits 62-63). The next 32 bytes of the same rows (the next wgmma's k): + 2 here.
__device__ __forceinline__ unsigned long long matrix_descriptor(unsigned s_address) {
  return (unsigned long long)((s_address & 0x3FFFFu) >> 4) | (1ull << 16) |
         ((unsigned long long)(kAtomBytes >> 4) << 32) | (1ull << 62);
}

// The same with the 8-row atoms `stride_bytes` apart instead of 1,024 (a multiple of 1,024: every atom's rows keep the
// first one's place in the swizzle period): a window of a larger swizzled matrix whose rows are not all consecutive,
// such as igemm_wgmma's halo patch, where an atom is 8 pixels of one patch row and the next atom the next patch row.
// The start may lie mid-period (a window shifted by whole rows): the swizzle is a function of the shared address.
__device__ __forceinline__ unsigned long long matrix_descriptor_strided(unsigned s_address, unsigned stride_bytes) {
  return (unsigned long long)((s_address & 0x3FFFFu) >> 4) | (1ull << 16) |
         ((unsigned long long)((stride_bytes & 0x3FFFFu) >> 4) << 32) | (1ull << 62);
}

// Orders this thread's earlier generic-proxy (and cp.async) writes of shared memory before later async-proxy reads
// (wgmma's operand fetches); with a barrier after it, for the whole block.
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

// ---- Pipeline barriers (mbarrier) of the warp-specialized pipeline: a 64-bit counter in shared memory whose phase
// completes when `count` arrivals have happened; waiters name the phase by its parity (0 for the first, 1 for the
// second, ...).
__device__ __forceinline__ void barrier_init(unsigned s_barrier, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(s_barrier), "r"(count) : "memory");
}

// Waits (acquire) until the phase of parity `parity` of the barrier has completed.
__device__ __forceinline__ void barrier_wait(unsigned s_barrier, unsigned parity) {
  unsigned done = 0;
  do {
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(s_barrier), "r"(parity)
        : "memory");
  } while (!done);
}

// One arrival (release) on the barrier.
__device__ __forceinline__ void barrier_arrive(unsigned s_barrier) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(s_barrier) : "memory");
}

// One arrival (release) on the barrier at this block's shared address `s_barrier`, as it lies in the shared memory of
// the cluster's block `rank` (the filter multicast's `empty` barriers: a stage is empty once every block's consumers
// that read it are done).
__device__ __forceinline__ void barrier_arrive_in_block(unsigned s_barrier, unsigned rank) {
  asm volatile(
      "{\n.reg .b32 remote;\nmapa.shared::cluster.u32 remote, %0, %1;\nmbarrier.arrive.shared::cluster.b64 _, "
      "[remote];\n}\n" ::"r"(s_barrier),
      "r"(rank)
      : "memory");
}

// This block's rank in its cluster.
__device__ __forceinline__ unsigned cluster_rank() {
  unsigned rank;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(rank));
  return rank;
}

// One arrival on the barrier once every cp.async this thread has issued so far has landed: the arrival the barrier's
// count already expects (.noinc), so a phase of `count` producer threads completes when all their copies have.
__device__ __forceinline__ void barrier_arrive_on_copies(unsigned s_barrier) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(s_barrier) : "memory");
}

// ---- TMA (cp.async.bulk.tensor) of the filter tile, igemm_wgmma's `tma` pipeline, and of the pixel rows (`ta`). Each
// tensor map is a 128-byte CUtensorMap the launcher encodes on the host over the call's tensor (launch_plan.hpp's
// PlanTensorMap) and passes by value, a __grid_constant__ parameter of the entry: the copies read it where it lies in
// the kernel's parameters, with no fence (nothing writes it while the kernel runs) and no copy of it per block.
struct __align__(64) TensorMap {
  unsigned long long words[16];
};

// Starts fetching a tensor map (a parameter's, by its generic address) before its first copy.
__device__ __forceinline__ void tensor_map_prefetch(const void* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(map) : "memory");
}

// After the barriers' initialization: makes it visible to the async proxy, whose bulk copies complete their
// transactions on them.
__device__ __forceinline__ void barrier_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

// Adds `bytes` to the transactions the barrier's current phase waits for (no arrival).
__device__ __forceinline__ void barrier_expect_bytes(unsigned s_barrier, unsigned bytes) {
  asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;\n" ::"r"(s_barrier), "r"(bytes) : "memory");
}

// One box of a 2-D / 3-D tensor map, at element coordinates (c0 innermost), into shared memory at s_dst (1,024-aligned
// for the 128-byte swizzle); the copy completes its bytes on the barrier at s_barrier. Elements outside the tensor
// arrive as zeros.
__device__ __forceinline__ void tma_load_2d(unsigned s_dst, const void* map, int c0, int c1, unsigned s_barrier) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], "
      "[%4];\n" ::"r"(s_dst),
      "l"(map), "r"(c0), "r"(c1), "r"(s_barrier)
      : "memory");
}

__device__ __forceinline__ void tma_load_3d(unsigned s_dst, const void* map, int c0, int c1, int c2,
                                            unsigned s_barrier) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], "
      "[%5];\n" ::"r"(s_dst),
      "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(s_barrier)
      : "memory");
}

// An im2col copy of a 4-D channels-last tensor map (C, W, H, N): the map's pixels (its pixels-per-column) of its
// channels (channels-per-pixel) from channel c, walking the map's bounding box from base pixel (w, h, n) in W, then
// H, then N, each pixel shifted by the tap's (dw, dh) (16-bit im2col offsets); zeros outside the tensor.
__device__ __forceinline__ void tma_load_im2col_4d(unsigned s_dst, const void* map, int c, int w, int h, int n,
                                                   unsigned short dw, unsigned short dh, unsigned s_barrier) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, "
      "%5}], [%6], {%7, %8};\n" ::"r"(s_dst),
      "l"(map), "r"(c), "r"(w), "r"(h), "r"(n), "r"(s_barrier), "h"(dw), "h"(dh)
      : "memory");
}

// The same boxes multicast: written at s_dst of every block of the cluster in `mask` (bit r: the block of rank r),
// each completing its bytes on its own barrier at s_barrier (the same shared addresses in every block).
__device__ __forceinline__ void tma_load_2d_multicast(unsigned s_dst, const void* map, int c0, int c1,
                                                      unsigned s_barrier, unsigned short mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, "
      "{%2, %3}], [%4], %5;\n" ::"r"(s_dst),
      "l"(map), "r"(c0), "r"(c1), "r"(s_barrier), "h"(mask)
      : "memory");
}

__device__ __forceinline__ void tma_load_3d_multicast(unsigned s_dst, const void* map, int c0, int c1, int c2,
                                                      unsigned s_barrier, unsigned short mask) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, "
      "{%2, %3, %4}], [%5], %6;\n" ::"r"(s_dst),
      "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(s_barrier), "h"(mask)
      : "memory");
}

// ---- The output's way out through shared memory: stmatrix writes accumulator pairs there as they lie in the
// registers, and bulk copies (cp.async.bulk, the async proxy) take whole rows to global memory while the warp goes on.

// Two fp32 values rounded (to nearest even) to fp16 or bf16 and packed in one instruction: `low` in bits 0-15.
template <bool BF16>
__device__ __forceinline__ unsigned pack_pair(float low, float high) {
  unsigned packed;
  if constexpr (BF16)
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(packed) : "f"(high), "f"(low));
  else
    asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(packed) : "f"(high), "f"(low));
  return packed;
}

// Four 8 x 8 matrices of 16-bit pairs into shared memory, one warp instruction: register i of lane l is row l / 4,
// elements 2 (l % 4) and + 1 of matrix i (a wgmma accumulator pair's place, packed); lane l gives the shared address of
// row l % 8 of matrix l / 8 (16 bytes, 16-aligned).
__device__ __forceinline__ void stmatrix_x4(unsigned s_row, const unsigned (&pairs)[4]) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(s_row), "r"(pairs[0]),
               "r"(pairs[1]), "r"(pairs[2]), "r"(pairs[3])
               : "memory");
}

// A bulk copy of `bytes` (a multiple of 16; both addresses 16-aligned) from shared memory at s_src to global memory,
// in this thread's current bulk group. The shared writes it reads must be ordered before it by fence_proxy_async.
__device__ __forceinline__ void bulk_store(void* global, unsigned s_src, unsigned bytes) {
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;\n" ::"l"(global), "r"(s_src), "r"(bytes)
               : "memory");
}

// Closes this thread's bulk copies since the last commit into one group.
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }

// Waits until this thread's committed bulk groups have read their shared memory (it may be written again).
__device__ __forceinline__ void bulk_wait_read() { asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory"); }

// Waits until this thread's committed bulk groups are complete: their writes done.
__device__ __forceinline__ void bulk_wait() { asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory"); }

// ---- Thread-block clusters: the blocks of a cluster read each other's shared memory (distributed shared memory).

// Every thread of every block of the cluster arrives, then waits for all of them: this thread's earlier shared-memory
// writes (release) are visible to the cluster's reads after it (acquire).
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}

// The address in the cluster's shared window of the variable at this block's shared address `s_address`, as it lies
// in the shared memory of the cluster's block `rank`.
__device__ __forceinline__ unsigned cluster_address(unsigned s_address, unsigned rank) {
  unsigned address;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(address) : "r"(s_address), "r"(rank));
  return address;
}

// 16 bytes as four floats from a cluster shared address (cluster_address; 16-aligned).
__device__ __forceinline__ float4 cluster_load_float4(unsigned address) {
  float4 v;
  asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];\n"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "r"(address)
               : "memory");
  return v;
}

// Before the first wgmma of a batch: orders the warpgroup's register and shared-memory accesses before it.
__device__ __forceinline__ void fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }

// Closes the batch of wgmma issued since the last commit into one group.
__device__ __forceinline__ void commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }

// Waits until at most PENDING committed groups of this warpgroup are still running: the older ones have read their
// shared-memory operands and written their accumulators.
template <int PENDING>
__device__ __forceinline__ void wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(PENDING) : "memory");
}

// Tells the compiler that `r` may have changed here: accumulators a wgmma writes asynchronously are read only after
// the wait that follows it, never from a copy the compiler made before.
__device__ __forceinline__ void fence_operand(float& r) { asm volatile("" : "+f"(r)::"memory"); }

// D (64 x N, fp32) += A (64 x k) * B (k x N) for the warpgroup (k = 32 bytes of elements: 16, or 8 in tf32), A and B
// read from shared memory through their descriptors (both K-major: A as 64 rows of K, B as N rows of K; no
// transposes, scales +1). The macros take the shape's k ("k16", "k8"), the type and the transpose immediates' text
// (", 0, 0", or "" for tf32). The accumulator layout: thread t of the warpgroup (warp w = t / 32, lane l) holds, for
// j = 0 .. N/8 - 1, d[4j], d[4j+1] at row 16w + l/4, columns 8j + 2(l%4) and + 1, and d[4j+2], d[4j+3] at row
// 16w + l/4 + 8, the same columns.
// The macros below spell out, for each N, the accumulators' operand numbers (CONVGEN_WGMMA_REGS_<N/2>: "%0, %1 ..."
// as text; inline PTX takes only literal numbers) and the accumulators themselves (CONVGEN_WGMMA_ACC_<N/2>), then
// the descriptors' numbers and the predicate's after them.
#define CONVGEN_WGMMA_ASM(N, REGS, DESCS, PRED, SHAPE_K, TYPE, TAIL, ...)                                              \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " PRED ", 0;\n"                                                       \
               "wgmma.mma_async.sync.aligned.m64n" #N SHAPE_K ".f32." TYPE "." TYPE " {" REGS "}, " DESCS              \
               ", p, 1, 1" TAIL ";\n}\n"                                                                               \
               : __VA_ARGS__                                                                                           \
               : "l"(desc_a), "l"(desc_b), "r"(1)                                                                      \
               : "memory")

#define CONVGEN_WGMMA_D8(i) \
  "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), \
  "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
#define CONVGEN_WGMMA_REGS_8 "%0, %1, %2, %3, %4, %5, %6, %7"
#define CONVGEN_WGMMA_ACC_8 CONVGEN_WGMMA_D8(0)
#define CONVGEN_WGMMA_REGS_16 CONVGEN_WGMMA_REGS_8 ", %8, %9, %10, %11, %12, %13, %14, %15"
#define CONVGEN_WGMMA_ACC_16 CONVGEN_WGMMA_ACC_8, CONVGEN_WGMMA_D8(8)
#define CONVGEN_WGMMA_REGS_24 CONVGEN_WGMMA_REGS_16 ", %16, %17, %18, %19, %20, %21, %22, %23"
#define CONVGEN_WGMMA_ACC_24 CONVGEN_WGMMA_ACC_16, CONVGEN_WGMMA_D8(16)
#define CONVGEN_WGMMA_REGS_32 CONVGEN_WGMMA_REGS_24 ", %24, %25, %26, %27, %28, %29, %30, %31"
#define CONVGEN_WGMMA_ACC_32 CONVGEN_WGMMA_ACC_24, CONVGEN_WGMMA_D8(24)
#define CONVGEN_WGMMA_REGS_40 CONVGEN_WGMMA_REGS_32 ", %32, %33, %34, %35, %36, %37, %38, %39"
#define CONVGEN_WGMMA_ACC_40 CONVGEN_WGMMA_ACC_32, CONVGEN_WGMMA_D8(32)
#define CONVGEN_WGMMA_REGS_48 CONVGEN_WGMMA_REGS_40 ", %40, %41, %42, %43, %44, %45, %46, %47"
#define CONVGEN_WGMMA_ACC_48 CONVGEN_WGMMA_ACC_40, CONVGEN_WGMMA_D8(40)
#define CONVGEN_WGMMA_REGS_56 CONVGEN_WGMMA_REGS_48 ", %48, %49, %50, %51, %52, %53, %54, %55"
#define CONVGEN_WGMMA_ACC_56 CONVGEN_WGMMA_ACC_48, CONVGEN_WGMMA_D8(48)
#define CONVGEN_WGMMA_REGS_64 CONVGEN_WGMMA_REGS_56 ", %56, %57, %58, %59, %60, %61, %62, %63"
#define CONVGEN_WGMMA_ACC_64 CONVGEN_WGMMA_ACC_56, CONVGEN_WGMMA_D8(56)
#define CONVGEN_WGMMA_REGS_72 CONVGEN_WGMMA_REGS_64 ", %64, %65, %66, %67, %68, %69, %70, %71"
#define CONVGEN_WGMMA_ACC_72 CONVGEN_WGMMA_ACC_64, CONVGEN_WGMMA_D8(64)
#define CONVGEN_WGMMA_REGS_80 CONVGEN_WGMMA_REGS_72 ", %72, %73, %74, %75, %76, %77, %78, %79"
#define CONVGEN_WGMMA_ACC_80 CONVGEN_WGMMA_ACC_72, CONVGEN_WGMMA_D8(72)
#define CONVGEN_WGMMA_REGS_88 CONVGEN_WGMMA_REGS_80 ", %80, %81, %82, %83, %84, %85, %86, %87"
#define CONVGEN_WGMMA_ACC_88 CONVGEN_WGMMA_ACC_80, CONVGEN_WGMMA_D8(80)
#define CONVGEN_WGMMA_REGS_96 CONVGEN_WGMMA_REGS_88 ", %88, %89, %90, %91, %92, %93, %94, %95"
#define CONVGEN_WGMMA_ACC_96 CONVGEN_WGMMA_ACC_88, CONVGEN_WGMMA_D8(88)
#define CONVGEN_WGMMA_REGS_104 CONVGEN_WGMMA_REGS_96 ", %96, %97, %98, %99, %100, %101, %102, %103"
#define CONVGEN_WGMMA_ACC_104 CONVGEN_WGMMA_ACC_96, CONVGEN_WGMMA_D8(96)
#define CONVGEN_WGMMA_REGS_112 CONVGEN_WGMMA_REGS_104 ", %104, %105, %106, %107, %108, %109, %110, %111"
#define CONVGEN_WGMMA_ACC_112 CONVGEN_WGMMA_ACC_104, CONVGEN_WGMMA_D8(104)
#define CONVGEN_WGMMA_REGS_120 CONVGEN_WGMMA_REGS_112 ", %112, %113, %114, %115, %116, %117, %118, %119"
#define CONVGEN_WGMMA_ACC_120 CONVGEN_WGMMA_ACC_112, CONVGEN_WGMMA_D8(112)
#define CONVGEN_WGMMA_REGS_128 CONVGEN_WGMMA_REGS_120 ", %120, %121, %122, %123, %124, %125, %126, %127"
#define CONVGEN_WGMMA_ACC_128 CONVGEN_WGMMA_ACC_120, CONVGEN_WGMMA_D8(120)

#define CONVGEN_WGMMA_M64N16(SHAPE_K, TYPE, TAIL)                                                                      \
  CONVGEN_WGMMA_ASM(16, CONVGEN_WGMMA_REGS_8, "%8, %9", "%10", SHAPE_K, TYPE, TAIL, CONVGEN_WGMMA_ACC_8)
#define CONVGEN_WGMMA_M64N32(SHAPE_K, TYPE, TAIL)                                                                      \
  CONVGEN_WGMMA_ASM(32, CONVGEN_WGMMA_REGS_16, "%16, %17", "%18", SHAPE_K, TYPE, TAIL, CONVGEN_WGMMA_ACC_16)
#define CONVGEN_WGMMA_M64N48(SHAPE_K, TYPE, TAIL)                                                                      \
  CONVGEN_WGMMA_ASM(48, CONVGEN_WGMMA_REGS_24, "%24, %25", "%26", SHAPE_K, TYPE, TAIL, CONVGEN_WGMMA_ACC_24)
#define CONVGEN_WGMMA_M64N64(SHAPE_K, TYPE, TAIL)                                                                      \
  CONVGEN_WGMMA_ASM(64, CONVGEN_WGMMA_REGS_32, "%32, %33", "%34", SHAPE_K, TYPE, TAIL, CONVGEN_WGMMA_ACC_32)
#define CONVGEN_WGMMA_M64N80(SHAPE_K, TYPE, TAIL)                                                                      \
  CONVGEN_WGMMA_ASM(80, CONVGEN_WGMMA_REGS_40, "%40, %41", "%42", SHAPE_K, TYPE, TAIL, CONVGEN_WGMMA_ACC_40)
#define CONVGEN_WGMMA_M64N96(SHAPE_K, TYPE, TAIL)                                                                      \
  CONVGEN_WGMMA_ASM(96, CONVGEN_WGMMA_REGS_48, "%48, %49", "%50", SHAPE_K, TYPE, TAIL, CONVGEN_WGMMA_ACC_48)
#define CONVGEN_WGMMA_M64N112(SHAPE_K, TYPE, TAIL)                                                                     \
  CONVGEN_WGMMA_ASM(112, CONVGEN_WGMMA_REGS_56, "%56, %57", "%58", SHAPE_K, TYPE, TAIL, CONVGEN_WGMMA_ACC_56)
#define CONVGEN_WGMMA_M64N128(SHAPE_K, TYPE, TAIL)                                                                     \
  CONVGEN_WGMMA_ASM(128, CONVGEN_WGMMA_REGS_64, "%64, %65", "%66", SHAPE_K, TYPE, TAIL, CONVGEN_WGMMA_ACC_64)
#define CONVGEN_WGMMA_M64N144(SHAPE_K, TYPE, TAIL)                                                                     \
  CONVGEN_WGMMA_ASM(144, CONVGEN_WGMMA_REGS_72, "%72, %73", "%74", SHAPE_K, TYPE, TAIL, CONVGEN_WGMMA_ACC_72)
#define CONVGEN_WGMMA_M64N160(SHAPE_K, TYPE, TAIL)                                                                     \
  CONVGEN_WGMMA_ASM(160, CONVGEN_WGMMA_REGS_80, "%80, %81", "%82", SHAPE_K, TYPE, TAIL, CONVGEN_WGMMA_ACC_80)
#define CONVGEN_WGMMA_M64N176(SHAPE_K, TYPE, TAIL)                                                                     \
  CONVGEN_WGMMA_ASM(176, CONVGEN_WGMMA_REGS_88, "%88, %89", "%90", SHAPE_K, TYPE, TAIL, CONVGEN_WGMMA_ACC_88)
#define CONVGEN_WGMMA_M64N192(SHAPE_K, TYPE, TAIL)                                                                     \
  CONVGEN_WGMMA_ASM(192, CONVGEN_WGMMA_REGS_96, "%96, %97", "%98", SHAPE_K, TYPE, TAIL, CONVGEN_WGMMA_ACC_96)
#define CONVGEN_WGMMA_M64N208(SHAPE_K, TYPE, TAIL)                                                                     \
  CONVGEN_WGMMA_ASM(208, CONVGEN_WGMMA_REGS_104, "%104, %105", "%106", SHAPE_K, TYPE, TAIL, CONVGEN_WGMMA_ACC_104)
#define CONVGEN_WGMMA_M64N224(SHAPE_K, TYPE, TAIL)                                                                     \
  CONVGEN_WGMMA_ASM(224, CONVGEN_WGMMA_REGS_112, "%112, %113", "%114", SHAPE_K, TYPE, TAIL, CONVGEN_WGMMA_ACC_112)
#define CONVGEN_WGMMA_M64N240(SHAPE_K, TYPE, TAIL)                                                                     \
  CONVGEN_WGMMA_ASM(240, CONVGEN_WGMMA_REGS_120, "%120, %121", "%122", SHAPE_K, TYPE, TAIL, CONVGEN_WGMMA_ACC_120)
#define CONVGEN_WGMMA_M64N256(SHAPE_K, TYPE, TAIL)                                                                     \
  CONVGEN_WGMMA_ASM(256, CONVGEN_WGMMA_REGS_128, "%128, %129", "%130", SHAPE_K, TYPE, TAIL, CONVGEN_WGMMA_ACC_128)

// The instruction's reduction step and operand type by the data type (convgen::Precision's value: 1 tf32, 2 fp16,
// 3 bf16): k16 for the 16-bit types, which take the two transpose immediates (0: both K-major), and k8 for tf32, which
// has none (tf32 operands are K-major only) and is given the fp32 elements as they are: no rounding step, the tensor
// core uses their tf32 part.
template <int N, int PRECISION>
__device__ __forceinline__ void mma_async(float (&d)[N / 2], unsigned long long desc_a, unsigned long long desc_b) {
  static_assert(N % 16 == 0 && N >= 16 && N <= 256, "wgmma N here: a multiple of 16 from 16 to 256");
  static_assert(PRECISION >= 1 && PRECISION <= 3, "wgmma here: tf32 (1), fp16 (2) or bf16 (3)");
#define CONVGEN_WGMMA_TYPED(MACRO)   \
  if constexpr (PRECISION == 1)      \
    MACRO("k8", "tf32", "");         \
  else if constexpr (PRECISION == 3) \
    MACRO("k16", "bf16", ", 0, 0");  \
  else                               \
    MACRO("k16", "f16", ", 0, 0")
  if constexpr (N == 16) {
    CONVGEN_WGMMA_TYPED(CONVGEN_WGMMA_M64N16);
  } else if constexpr (N == 32) {
    CONVGEN_WGMMA_TYPED(CONVGEN_WGMMA_M64N32);
  } else if constexpr (N == 48) {
    CONVGEN_WGMMA_TYPED(CONVGEN_WGMMA_M64N48);
  } else if constexpr (N == 64) {
    CONVGEN_WGMMA_TYPED(CONVGEN_WGMMA_M64N64);
  } else if constexpr (N == 80) {
    CONVGEN_WGMMA_TYPED(CONVGEN_WGMMA_M64N80);
  } else if constexpr (N == 96) {
    CONVGEN_WGMMA_TYPED(CONVGEN_WGMMA_M64N96);
  } else if constexpr (N == 112) {
    CONVGEN_WGMMA_TYPED(CONVGEN_WGMMA_M64N112);
  } else if constexpr (N == 128) {
    CONVGEN_WGMMA_TYPED(CONVGEN_WGMMA_M64N128);
  } else if constexpr (N == 144) {
    CONVGEN_WGMMA_TYPED(CONVGEN_WGMMA_M64N144);
  } else if constexpr (N == 160) {
    CONVGEN_WGMMA_TYPED(CONVGEN_WGMMA_M64N160);
  } else if constexpr (N == 176) {
    CONVGEN_WGMMA_TYPED(CONVGEN_WGMMA_M64N176);
  } else if constexpr (N == 192) {
    CONVGEN_WGMMA_TYPED(CONVGEN_WGMMA_M64N192);
  } else if constexpr (N == 208) {
    CONVGEN_WGMMA_TYPED(CONVGEN_WGMMA_M64N208);
  } else if constexpr (N == 224) {
    CONVGEN_WGMMA_TYPED(CONVGEN_WGMMA_M64N224);
  } else if constexpr (N == 240) {
    CONVGEN_WGMMA_TYPED(CONVGEN_WGMMA_M64N240);
  } else if constexpr (N == 256) {
    CONVGEN_WGMMA_TYPED(CONVGEN_WGMMA_M64N256);
  }
#undef CONVGEN_WGMMA_TYPED
}


// D (64 x N, fp32) += A (64 x 32, 2:4 sparse) * B (32 x N) for the warpgroup (wgmma.mma_async.sp, fp16 / bf16; the
// 2:4 family igemm_wgmma `sp`): A is read through its descriptor as 64 rows of its kept values only (16 a row, 32
// bytes: the layout of a dense k16 A), B as N K-major rows of 32 elements (64 bytes of each row: one half of a 128-byte
// swizzled row), and `meta`, per thread, the positions of A's kept values: warp w of the warpgroup gives rows 16w ..
// 16w + 15 with mma.sp m16n8k32's layout (templates/tensor_core.cuh, mma_sp_fp16): with the sparsity selector 0
// threads 4g and 4g + 1 give rows g (bits 0-15) and g + 8 (bits 16-31), k 0-15 and 16-31, a nibble (two ordered 2-bit
// positions) for each chunk of 4. No transposes, scales +1. Operand numbers: the accumulators', then the descriptors',
// the predicate's and the metadata's.
#define CONVGEN_WGMMA_SP_ASM(N, REGS, DESCS, PRED, META, TYPE, ...)                                                    \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " PRED ", 0;\n"                                                       \
               "wgmma.mma_async.sp.sync.aligned.m64n" #N "k32.f32." TYPE "." TYPE " {" REGS "}, " DESCS ", " META      \
               ", 0, p, 1, 1, 0, 0;\n}\n"                                                                               \
               : __VA_ARGS__                                                                                           \
               : "l"(desc_a), "l"(desc_b), "r"(1), "r"(meta)                                                          \
               : "memory")

#define CONVGEN_WGMMA_SP_M64N16(TYPE) \
  CONVGEN_WGMMA_SP_ASM(16, CONVGEN_WGMMA_REGS_8, "%8, %9", "%10", "%11", TYPE, CONVGEN_WGMMA_ACC_8)
#define CONVGEN_WGMMA_SP_M64N32(TYPE) \
  CONVGEN_WGMMA_SP_ASM(32, CONVGEN_WGMMA_REGS_16, "%16, %17", "%18", "%19", TYPE, CONVGEN_WGMMA_ACC_16)
#define CONVGEN_WGMMA_SP_M64N48(TYPE) \
  CONVGEN_WGMMA_SP_ASM(48, CONVGEN_WGMMA_REGS_24, "%24, %25", "%26", "%27", TYPE, CONVGEN_WGMMA_ACC_24)
#define CONVGEN_WGMMA_SP_M64N64(TYPE) \
  CONVGEN_WGMMA_SP_ASM(64, CONVGEN_WGMMA_REGS_32, "%32, %33", "%34", "%35", TYPE, CONVGEN_WGMMA_ACC_32)
#define CONVGEN_WGMMA_SP_M64N80(TYPE) \
  CONVGEN_WGMMA_SP_ASM(80, CONVGEN_WGMMA_REGS_40, "%40, %41", "%42", "%43", TYPE, CONVGEN_WGMMA_ACC_40)
#define CONVGEN_WGMMA_SP_M64N96(TYPE) \
  CONVGEN_WGMMA_SP_ASM(96, CONVGEN_WGMMA_REGS_48, "%48, %49", "%50", "%51", TYPE, CONVGEN_WGMMA_ACC_48)
#define CONVGEN_WGMMA_SP_M64N112(TYPE) \
  CONVGEN_WGMMA_SP_ASM(112, CONVGEN_WGMMA_REGS_56, "%56, %57", "%58", "%59", TYPE, CONVGEN_WGMMA_ACC_56)
#define CONVGEN_WGMMA_SP_M64N128(TYPE) \
  CONVGEN_WGMMA_SP_ASM(128, CONVGEN_WGMMA_REGS_64, "%64, %65", "%66", "%67", TYPE, CONVGEN_WGMMA_ACC_64)
#define CONVGEN_WGMMA_SP_M64N144(TYPE) \
  CONVGEN_WGMMA_SP_ASM(144, CONVGEN_WGMMA_REGS_72, "%72, %73", "%74", "%75", TYPE, CONVGEN_WGMMA_ACC_72)
#define CONVGEN_WGMMA_SP_M64N160(TYPE) \
  CONVGEN_WGMMA_SP_ASM(160, CONVGEN_WGMMA_REGS_80, "%80, %81", "%82", "%83", TYPE, CONVGEN_WGMMA_ACC_80)
#define CONVGEN_WGMMA_SP_M64N176(TYPE) \
  CONVGEN_WGMMA_SP_ASM(176, CONVGEN_WGMMA_REGS_88, "%88, %89", "%90", "%91", TYPE, CONVGEN_WGMMA_ACC_88)
#define CONVGEN_WGMMA_SP_M64N192(TYPE) \
  CONVGEN_WGMMA_SP_ASM(192, CONVGEN_WGMMA_REGS_96, "%96, %97", "%98", "%99", TYPE, CONVGEN_WGMMA_ACC_96)
#define CONVGEN_WGMMA_SP_M64N208(TYPE) \
  CONVGEN_WGMMA_SP_ASM(208, CONVGEN_WGMMA_REGS_104, "%104, %105", "%106", "%107", TYPE, CONVGEN_WGMMA_ACC_104)
#define CONVGEN_WGMMA_SP_M64N224(TYPE) \
  CONVGEN_WGMMA_SP_ASM(224, CONVGEN_WGMMA_REGS_112, "%112, %113", "%114", "%115", TYPE, CONVGEN_WGMMA_ACC_112)
#define CONVGEN_WGMMA_SP_M64N240(TYPE) \
  CONVGEN_WGMMA_SP_ASM(240, CONVGEN_WGMMA_REGS_120, "%120, %121", "%122", "%123", TYPE, CONVGEN_WGMMA_ACC_120)
#define CONVGEN_WGMMA_SP_M64N256(TYPE) \
  CONVGEN_WGMMA_SP_ASM(256, CONVGEN_WGMMA_REGS_128, "%128, %129", "%130", "%131", TYPE, CONVGEN_WGMMA_ACC_128)

template <int N, int PRECISION>
__device__ __forceinline__ void mma_sp_async(float (&d)[N / 2], unsigned long long desc_a, unsigned long long desc_b,
                                             unsigned meta) {
  static_assert(N % 16 == 0 && N >= 16 && N <= 256, "wgmma N here: a multiple of 16 from 16 to 256");
  static_assert(PRECISION == 2 || PRECISION == 3, "wgmma.sp here: fp16 (2) or bf16 (3)");
#define CONVGEN_WGMMA_SP_TYPED(MACRO) \
  if constexpr (PRECISION == 3)       \
    MACRO("bf16");                    \
  else                                \
    MACRO("f16")
  if constexpr (N == 16) {
    CONVGEN_WGMMA_SP_TYPED(CONVGEN_WGMMA_SP_M64N16);
  } else if constexpr (N == 32) {
    CONVGEN_WGMMA_SP_TYPED(CONVGEN_WGMMA_SP_M64N32);
  } else if constexpr (N == 48) {
    CONVGEN_WGMMA_SP_TYPED(CONVGEN_WGMMA_SP_M64N48);
  } else if constexpr (N == 64) {
    CONVGEN_WGMMA_SP_TYPED(CONVGEN_WGMMA_SP_M64N64);
  } else if constexpr (N == 80) {
    CONVGEN_WGMMA_SP_TYPED(CONVGEN_WGMMA_SP_M64N80);
  } else if constexpr (N == 96) {
    CONVGEN_WGMMA_SP_TYPED(CONVGEN_WGMMA_SP_M64N96);
  } else if constexpr (N == 112) {
    CONVGEN_WGMMA_SP_TYPED(CONVGEN_WGMMA_SP_M64N112);
  } else if constexpr (N == 128) {
    CONVGEN_WGMMA_SP_TYPED(CONVGEN_WGMMA_SP_M64N128);
  } else if constexpr (N == 144) {
    CONVGEN_WGMMA_SP_TYPED(CONVGEN_WGMMA_SP_M64N144);
  } else if constexpr (N == 160) {
    CONVGEN_WGMMA_SP_TYPED(CONVGEN_WGMMA_SP_M64N160);
  } else if constexpr (N == 176) {
    CONVGEN_WGMMA_SP_TYPED(CONVGEN_WGMMA_SP_M64N176);
  } else if constexpr (N == 192) {
    CONVGEN_WGMMA_SP_TYPED(CONVGEN_WGMMA_SP_M64N192);
  } else if constexpr (N == 208) {
    CONVGEN_WGMMA_SP_TYPED(CONVGEN_WGMMA_SP_M64N208);
  } else if constexpr (N == 224) {
    CONVGEN_WGMMA_SP_TYPED(CONVGEN_WGMMA_SP_M64N224);
  } else if constexpr (N == 240) {
    CONVGEN_WGMMA_SP_TYPED(CONVGEN_WGMMA_SP_M64N240);
  } else if constexpr (N == 256) {
    CONVGEN_WGMMA_SP_TYPED(CONVGEN_WGMMA_SP_M64N256);
  }
#undef CONVGEN_WGMMA_SP_TYPED
}

// The 32-bit word at shared address `s_address` (4-aligned).
__device__ __forceinline__ unsigned load_shared_u32(unsigned s_address) {
  unsigned value;
  asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(value) : "r"(s_address) : "memory");
  return value;
}

}  // namespace convgen::wg

#endif  // CONVGEN_WGMMA_CUH
