// host_tensor_core: templates/tensor_core.cuh on the host, for the emulation tests of the tensor-core templates
// (igemm_tc, sparse24_tc). Host definitions with the PTX ISA's semantics: cp.async copies at once, ldmatrix and
// mma.sync / mma.sp exchange their fragments between the 32 threads of a warp at the warp's barrier, and each lane
// computes its own accumulators in float64 from the whole warp's fragments. Shared memory is a checked buffer: a
// misaligned or out-of-range cp.async or ldmatrix sets bad_shared_access instead of touching memory.
// Include it after support/host_cuda.hpp and before a template; run each kernel step with run_blocks.
#pragma once

#include <algorithm>
#include <atomic>
#include <barrier>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#include "generator/launch_plan.hpp"
#include "reference/host_tensor.hpp"
#include "support/host_cuda.hpp"

namespace tc_emulation {
using namespace convgen::host_cuda;  // NOLINT(google-build-using-namespace): the template's CUDA words

// The running block: threads meet at block_barrier; the 32 threads of warp w exchange fragments through warps[w].
struct Warp {
  explicit Warp() : barrier(32) {}
  std::barrier<> barrier;
  unsigned address[32] = {};
  unsigned a[32][4] = {};
  unsigned b[32][4] = {};
  unsigned e[32] = {};
};
inline std::vector<std::unique_ptr<Warp>>* warps = nullptr;
inline unsigned char* shared_memory = nullptr;
inline std::size_t shared_bytes = 0;
// Set when an mma.sync tf32 operand still has the low 13 mantissa bits that the template must round away.
inline std::atomic<bool> unrounded_tf32_operand{false};
// Set when a cp.async or ldmatrix address is misaligned or outside the dynamic shared memory.
inline std::atomic<bool> bad_shared_access{false};
// Set when an mma.sp metadata nibble does not name two kept positions in increasing order (ordered_metadata).
inline std::atomic<bool> bad_sparse_metadata{false};

inline int lane() { return static_cast<int>(threadIdx.x % 32); }
inline Warp& my_warp() { return *(*warps)[threadIdx.x / 32]; }

inline void check_shared(unsigned address, unsigned bytes) {
  if (address % 16 != 0 || address + bytes > shared_bytes) bad_shared_access = true;
}

inline float as_float(unsigned bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Element e (0 low, 1 high) of a register holding two 16-bit values, or the register as one tf32.
enum class MmaType { fp16, bf16, tf32 };
inline double element(unsigned reg, int e, MmaType type) {
  const auto half = static_cast<std::uint16_t>(e == 0 ? reg & 0xffffu : reg >> 16);
  switch (type) {
    case MmaType::fp16: return convgen::half_to_float(half);
    case MmaType::bf16: return convgen::bfloat16_to_float(half);
    case MmaType::tf32:
      if ((reg & 0x1fffu) != 0) unrounded_tf32_operand = true;
      return as_float(reg);
  }
  return 0;
}

// Each lane's four D of an m16n8 tile: d[i] is row g + 8 (i / 2), column 2 t + i % 2 (g = lane / 4, t = lane % 4),
// plus the sum over k < k_extent of A[row][k] B[k][column], in float64.
template <int ROWS_K, int COLS_K>
void accumulate(float (&d)[4], const double (&A)[16][ROWS_K], const double (&B)[COLS_K][8], int k_extent) {
  const int g = lane() / 4, t = lane() % 4;
  for (int i = 0; i < 4; ++i) {
    const int row = g + 8 * (i / 2), col = 2 * t + i % 2;
    double sum = d[i];
    for (int k = 0; k < k_extent; ++k) sum += A[row][k] * B[k][col];
    d[i] = static_cast<float>(sum);
  }
}

// mma.sync m16n8k16 (fp16, bf16) or m16n8k8 (tf32), fp32 accumulation, with the PTX ISA's fragment layouts (the
// table in templates/tensor_core.cuh): every lane publishes its A and B registers, then computes its own four D.
inline void mma(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2], MmaType type) {
  Warp& w = my_warp();
  const int l = lane();
  for (int i = 0; i < 4; ++i) w.a[l][i] = a[i];
  for (int i = 0; i < 2; ++i) w.b[l][i] = b[i];
  w.barrier.arrive_and_wait();
  const int k_extent = type == MmaType::tf32 ? 8 : 16;
  double A[16][16] = {}, B[16][8] = {};
  for (int src = 0; src < 32; ++src) {
    const int g = src / 4, t = src % 4;
    if (type == MmaType::tf32) {
      A[g][t] = element(w.a[src][0], 0, type);
      A[g + 8][t] = element(w.a[src][1], 0, type);
      A[g][t + 4] = element(w.a[src][2], 0, type);
      A[g + 8][t + 4] = element(w.a[src][3], 0, type);
      B[t][g] = element(w.b[src][0], 0, type);
      B[t + 4][g] = element(w.b[src][1], 0, type);
    } else {
      for (int e = 0; e < 2; ++e) {
        A[g][2 * t + e] = element(w.a[src][0], e, type);
        A[g + 8][2 * t + e] = element(w.a[src][1], e, type);
        A[g][2 * t + 8 + e] = element(w.a[src][2], e, type);
        A[g + 8][2 * t + 8 + e] = element(w.a[src][3], e, type);
        B[2 * t + e][g] = element(w.b[src][0], e, type);
        B[2 * t + 8 + e][g] = element(w.b[src][1], e, type);
      }
    }
  }
  w.barrier.arrive_and_wait();  // every lane has read the fragments before any lane's next mma overwrites them
  accumulate(d, A, B, k_extent);
}

// mma.sp::ordered_metadata m16n8k32 (fp16, bf16), sparsity selector 0, fp32 accumulation (templates/tensor_core.cuh,
// mma_sp_fp16): A's 16x16 compressed values have mma.sync m16n8k16's A layout, compressed column 2 j + v being the
// v-th kept value of k chunk j (k 4 j .. 4 j + 3); B is 32x8, b[i] holding k 8 i + 2 t .. 8 i + 2 t + 1 of column g;
// the metadata of chunk j of rows g and g + 8 comes from thread 4 g + j / 4, nibble j % 4 of its low and high
// half-word, each nibble two 2-bit positions within the chunk, the first below the second. A is expanded to its
// dense 16x32 and multiplied.
inline void mma_sp(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[4], unsigned e, MmaType type) {
  Warp& w = my_warp();
  const int l = lane();
  for (int i = 0; i < 4; ++i) {
    w.a[l][i] = a[i];
    w.b[l][i] = b[i];
  }
  w.e[l] = e;
  w.barrier.arrive_and_wait();
  double A[16][32] = {}, B[32][8] = {};
  for (int src = 0; src < 32; ++src) {
    const int g = src / 4, t = src % 4;
    for (int i = 0; i < 4; ++i)
      for (int v = 0; v < 2; ++v) B[8 * i + 2 * t + v][g] = element(w.b[src][i], v, type);
  }
  for (int row = 0; row < 16; ++row) {
    const int g = row % 8, half = row / 8;
    for (int j = 0; j < 8; ++j) {
      const unsigned meta = w.e[4 * g + j / 4] >> (16 * half + 4 * (j % 4));
      const int first = static_cast<int>(meta & 3u), second = static_cast<int>((meta >> 2) & 3u);
      if (first >= second) bad_sparse_metadata = true;
      // Compressed columns 2 j and 2 j + 1: register a[half] (chunks 0-3) or a[2 + half] (chunks 4-7) of thread
      // 4 g + j % 4, low and high element.
      const unsigned reg = w.a[4 * g + j % 4][(j < 4 ? 0 : 2) + half];
      A[row][4 * j + first] += element(reg, 0, type);
      A[row][4 * j + second] += element(reg, 1, type);
    }
  }
  w.barrier.arrive_and_wait();
  accumulate(d, A, B, 32);
}

}  // namespace tc_emulation

// templates/tensor_core.cuh's functions, on the host.
#define CONVGEN_TENSOR_CORE_CUH
namespace convgen::tc {
using namespace tc_emulation;  // NOLINT(google-build-using-namespace): the emulated instructions
inline unsigned char* dynamic_shared() { return shared_memory; }
inline unsigned shared_address(const void* pointer) {
  return static_cast<unsigned>(static_cast<const unsigned char*>(pointer) - shared_memory);
}
inline void cp_async_16(unsigned s_address, const void* global, bool full) {
  check_shared(s_address, 16);
  if (bad_shared_access) return;
  if (full)
    std::memcpy(shared_memory + s_address, global, 16);
  else
    std::memset(shared_memory + s_address, 0, 16);
}
inline void cp_async_commit() {}
template <int PENDING>
inline void cp_async_wait() {}
inline void ldmatrix_x4(unsigned (&r)[4], unsigned s_address) {
  Warp& w = my_warp();
  const int l = lane();
  check_shared(s_address, 16);
  w.address[l] = s_address;
  w.barrier.arrive_and_wait();
  for (int i = 0; i < 4; ++i) {
    const unsigned row = w.address[8 * i + l / 4];
    if (!bad_shared_access) std::memcpy(&r[i], shared_memory + row + 4 * (l % 4), 4);
  }
  w.barrier.arrive_and_wait();
}
inline void mma_fp16(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) { mma(d, a, b, MmaType::fp16); }
inline void mma_bf16(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) { mma(d, a, b, MmaType::bf16); }
inline void mma_tf32(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) { mma(d, a, b, MmaType::tf32); }
inline void mma_sp_fp16(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[4], unsigned e) {
  mma_sp(d, a, b, e, MmaType::fp16);
}
inline void mma_sp_bf16(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[4], unsigned e) {
  mma_sp(d, a, b, e, MmaType::bf16);
}
// cvt.rna.tf32.f32: to nearest, ties away from zero, on the magnitude (finite values).
inline unsigned round_to_tf32(unsigned bits) { return (bits + 0x1000u) & ~0x1fffu; }
inline unsigned short float_to_fp16_bits(float value) { return convgen::float_to_half(value); }
inline unsigned short float_to_bf16_bits(float value) { return convgen::float_to_bfloat16(value); }
inline float fp16_bits_to_float(unsigned short bits) { return convgen::half_to_float(bits); }
inline float bf16_bits_to_float(unsigned short bits) { return convgen::bfloat16_to_float(bits); }
}  // namespace convgen::tc

namespace tc_emulation {

// Runs one kernel step of a plan: every block of its grid in turn, its threads at once, each block with fresh warps
// and its dynamic shared memory poisoned (0x7f bytes: NaN in fp16 and fp32 words).
inline void run_blocks(const convgen::LaunchGeometry& geometry, const std::function<void()>& entry) {
  const unsigned threads = geometry.block[0] * geometry.block[1] * geometry.block[2];
  if (threads % 32 != 0) throw std::logic_error("run_blocks: a block of whole warps is needed");
  std::vector<unsigned char> shared(geometry.dynamic_smem_bytes, 0x7f);
  std::vector<std::unique_ptr<Warp>> block_warps;
  launch(geometry, entry, [&] {
    block_warps.clear();
    for (unsigned w = 0; w < threads / 32; ++w) block_warps.push_back(std::make_unique<Warp>());
    std::fill(shared.begin(), shared.end(), 0x7f);
    warps = &block_warps;
    shared_memory = shared.data();
    shared_bytes = shared.size();
  });
}

}  // namespace tc_emulation
