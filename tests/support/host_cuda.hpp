// host_cuda: what the host emulation tests need to run a kernel template with a host compiler. The CUDA words the
// templates use (the function qualifiers as nothing, threadIdx, blockIdx, blockDim, gridDim, __syncthreads, __ldg),
// the cfg constants the generator's prelude renders for a problem, and a launcher that runs a grid block after block,
// a std::thread per CUDA thread (started once a launch). A block's threads run at once and meet at a barrier, so
// `static` is a faithful
// __shared__ where a test defines it so (igemm_tc's test gives its dynamic shared memory a checked buffer instead).
// Include it before the template; a test's own namespace takes these names with `using namespace
// convgen::host_cuda;`, so a template included inside it finds them.
#pragma once

#include <barrier>
#include <thread>
#include <vector>

#include "convgen/problem.hpp"
#include "generator/launch_plan.hpp"

#define CONVGEN_PRELUDE 1
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __restrict__ __restrict

// The epilogue and grid-dependency helpers (no-ops on the host), at namespace scope once: a template includes them
// again inside a case's namespace, where #pragma once makes that a no-op.
#include <math.h>

#include "templates/epilogue.cuh"
#include "templates/grid_dependency.cuh"

static_assert(convgen::kActNone == static_cast<int>(convgen::Activation::none) &&
                  convgen::kActRelu == static_cast<int>(convgen::Activation::relu) &&
                  convgen::kActRelu6 == static_cast<int>(convgen::Activation::relu6) &&
                  convgen::kActClip == static_cast<int>(convgen::Activation::clip),
              "templates/epilogue.cuh numbers the activations as convgen::Activation");

namespace convgen::host_cuda {

struct Dim3 {
  unsigned x = 0, y = 0, z = 0;
};
inline thread_local Dim3 threadIdx;
inline thread_local Dim3 blockIdx;
inline thread_local Dim3 blockDim;
inline thread_local Dim3 gridDim;
inline std::barrier<>* block_barrier = nullptr;
inline void __syncthreads() { block_barrier->arrive_and_wait(); }
inline float __ldg(const float* address) { return *address; }

// The output extent of one dimension, as the generator computes P, Q and O.
constexpr int output_extent(int in, int filter, int stride, int pad, int dil) {
  return (in + 2 * pad - dil * (filter - 1) - 1) / stride + 1;
}

// cfg::Epilogue as the generator's prelude renders it for an epilogue (generator/render.cpp: render_epilogue; the
// members templates/epilogue.cuh reads).
template <convgen::Epilogue E>
struct PreludeEpilogue {
  static constexpr bool BIAS = E.bias, RESIDUAL = E.beta != 0;
  static constexpr int ACT = static_cast<int>(E.act);
  static constexpr float ALPHA = static_cast<float>(E.alpha), BETA = static_cast<float>(E.beta),
                         CLIP_LO = static_cast<float>(E.clip_lo), CLIP_HI = static_cast<float>(E.clip_hi);
};

struct NoBlockSetup {
  void operator()() const {}
};

// Runs body() on every thread of every block of `geometry`, block after block (x fastest), each block's threads at
// once; setup_block() runs before each block's threads start (a test's per-block state: warps, shared memory). The
// threads are started once a launch and reused block after block: a thread a CUDA thread and a block was most of an
// emulation's time under ASan (its thread start-up), and a lot of it without.
template <class Body, class Setup = NoBlockSetup>
void launch(const LaunchGeometry& geometry, Body body, Setup setup_block = {}) {
  const unsigned threads = geometry.block[0] * geometry.block[1] * geometry.block[2];
  const Dim3 block_dim{geometry.block[0], geometry.block[1], geometry.block[2]};
  const Dim3 grid_dim{geometry.grid[0], geometry.grid[1], geometry.grid[2]};
  std::barrier<> barrier(threads);
  block_barrier = &barrier;
  // The block's threads and this one meet at `gate` twice a block: once it opens (setup done, blockIdx set), once it
  // has ended. The barrier orders the writes around it, so the threads see setup_block's state and this thread theirs.
  std::barrier<> gate(threads + 1);
  Dim3 opened;
  bool finished = false;
  std::vector<std::jthread> block;
  block.reserve(threads);
  for (unsigned t = 0; t < threads; ++t)
    block.emplace_back([&, t] {
      threadIdx = {t, 0, 0};
      blockDim = block_dim;
      gridDim = grid_dim;
      for (;;) {
        gate.arrive_and_wait();
        if (finished) return;
        blockIdx = opened;
        body();
        gate.arrive_and_wait();
      }
    });
  for (unsigned z = 0; z < geometry.grid[2]; ++z)
    for (unsigned y = 0; y < geometry.grid[1]; ++y)
      for (unsigned x = 0; x < geometry.grid[0]; ++x) {
        setup_block();
        opened = {x, y, z};
        gate.arrive_and_wait();
        gate.arrive_and_wait();
      }
  finished = true;
  gate.arrive_and_wait();
}

}  // namespace convgen::host_cuda

// The problem's constants of a template's cfg namespace, as the generator's prelude renders them, from a constexpr
// LiteralShape named by PROBLEM (the family's own parameters follow in each test's case macro).
#define CONVGEN_HOST_PROBLEM_CONSTANTS(PROBLEM)                                                        \
  constexpr int N = PROBLEM.n, C = PROBLEM.c, K = PROBLEM.k, GROUPS = PROBLEM.groups;                  \
  constexpr int D = PROBLEM.input.d, H = PROBLEM.input.h, W = PROBLEM.input.w;                         \
  constexpr int T = PROBLEM.filter.d, R = PROBLEM.filter.h, S = PROBLEM.filter.w;                      \
  constexpr int STRIDE_D = PROBLEM.stride.d, STRIDE_H = PROBLEM.stride.h, STRIDE_W = PROBLEM.stride.w; \
  constexpr int PAD_D = PROBLEM.padding.d, PAD_H = PROBLEM.padding.h, PAD_W = PROBLEM.padding.w;       \
  constexpr int DIL_D = PROBLEM.dilation.d, DIL_H = PROBLEM.dilation.h, DIL_W = PROBLEM.dilation.w;    \
  constexpr int O = convgen::host_cuda::output_extent(D, T, STRIDE_D, PAD_D, DIL_D),                   \
                P = convgen::host_cuda::output_extent(H, R, STRIDE_H, PAD_H, DIL_H),                   \
                Q = convgen::host_cuda::output_extent(W, S, STRIDE_W, PAD_W, DIL_W);                   \
  constexpr bool CHANNELS_LAST = convgen::channels_last(PROBLEM.layout);                               \
  using Epilogue = convgen::host_cuda::PreludeEpilogue<PROBLEM.epilogue>;
