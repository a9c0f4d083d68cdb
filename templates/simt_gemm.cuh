// simt_gemm: the register-tiled FP32 GEMM step shared by winograd_gemm.cu and pointwise.cu, and their cp.async
// pipeline. Included inside a template's namespace after its constants BLOCK_M, BLOCK_N, BLOCK_K, THREAD_M and
// THREAD_N (4 or 8 each; no include guard: each inclusion sees its own cfg), the template having included
// async_copy.cuh at file scope.
//
// A block computes a BLOCK_M x BLOCK_N tile of C = A^T B from slabs staged in shared memory as s_a[k][m] and
// s_b[k][n] (both operands reduction-major). Thread (ty, tx), tx fastest, owns THREAD_M x THREAD_N accumulators:
// rows gemm_m(ty, i) and columns f * (BLOCK_N / FN) + tx * 4 + j, j < 4: runs of 4, FM = THREAD_M / 4 of them
// BLOCK_M / FM apart (likewise FN), so each run is one float4 shared load and a warp's loads touch distinct banks or
// broadcast.
constexpr int THREADS_M = BLOCK_M / THREAD_M;
constexpr int THREADS_N = BLOCK_N / THREAD_N;  // fastest
constexpr int THREADS = THREADS_M * THREADS_N;
constexpr int FM = THREAD_M / 4;  // float4 runs of a thread's rows, BLOCK_M / FM apart
constexpr int FN = THREAD_N / 4;  // float4 runs of its columns, BLOCK_N / FN apart

// The tile row of accumulator row i of thread row ty.
__device__ __forceinline__ int gemm_m(int ty, int i) { return (i / 4) * (BLOCK_M / FM) + ty * 4 + i % 4; }

// acc += s_a^T s_b over one staged step of BLOCK_K reduction elements.
__device__ __forceinline__ void gemm_step(float (&acc)[THREAD_M][THREAD_N], const float (*s_a)[BLOCK_M],
                                          const float (*s_b)[BLOCK_N], int tx, int ty) {
#pragma unroll
  for (int kk = 0; kk < BLOCK_K; ++kk) {
    float a[THREAD_M], b[THREAD_N];
#pragma unroll
    for (int f = 0; f < FM; ++f) convgen::load_floats<4>(a + 4 * f, &s_a[kk][f * (BLOCK_M / FM) + ty * 4]);
#pragma unroll
    for (int f = 0; f < FN; ++f) convgen::load_floats<4>(b + 4 * f, &s_b[kk][f * (BLOCK_N / FN) + tx * 4]);
#pragma unroll
    for (int i = 0; i < THREAD_M; ++i)
#pragma unroll
      for (int j = 0; j < THREAD_N; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
  }
}

// The cp.async pipeline over steps [begin, end): a ring of STAGES (2 to 4) shared buffers of both slabs, the copies of
// STAGES - 1 steps in flight. copy_step(step, buffer) issues step's copies into ring buffer `buffer`; the ring commits
// one group per step (an empty one past `end`, so that every wait counts the same groups) and waits for the oldest
// before each step's FMAs. One barrier per step: the buffer a step refills was read by the step before, which every
// thread finished before that barrier. No copy outlives the call.
template <int STAGES, typename CopyStep>
__device__ __forceinline__ void gemm_ring(float (&acc)[THREAD_M][THREAD_N], float (*s_a)[BLOCK_K][BLOCK_M],
                                          float (*s_b)[BLOCK_K][BLOCK_N], int begin, int end, CopyStep copy_step,
                                          int tx, int ty) {
  static_assert(STAGES >= 2 && STAGES <= 4, "the ring has 2 to 4 stages");
#pragma unroll
  for (int i = 0; i < STAGES - 1; ++i) {
    if (begin + i < end) copy_step(begin + i, i);
    convgen::async::commit();
  }
#pragma unroll 1
  for (int step = begin; step < end; ++step) {
    const int t = step - begin;
    convgen::async::wait<STAGES - 2>();  // this step's group has landed (the newer ones may still fly)
    __syncthreads();
    if (step + STAGES - 1 < end) copy_step(step + STAGES - 1, (t + STAGES - 1) % STAGES);
    convgen::async::commit();
    gemm_step(acc, s_a[t % STAGES], s_b[t % STAGES], tx, ty);
  }
  convgen::async::wait<0>();
}
