// host_warp: the warp instructions of the templates (__syncwarp, __shfl_sync, __ballot_sync, __popc, __ffs), and
// float atomicAdd, for a host compiler, beside support/host_cuda.hpp's block. The 32 threads of a warp meet at its
// barrier to exchange a value each: a shuffle or a ballot is a write to the lane's slot, a barrier, the read, and a
// barrier (so the next exchange cannot overwrite a slot still being read). Every lane of a warp must run each of
// them in the same order: the templates call them in warp-uniform control flow with the full mask, which is all
// this emulation supports. A launch makes the block's warps first: host_cuda::launch(geometry, body,
// MakeWarps{threads}).
#pragma once

#include <atomic>
#include <barrier>
#include <bit>
#include <memory>
#include <vector>

#include "support/host_cuda.hpp"

namespace convgen::host_cuda {

struct Warp {
  std::barrier<> barrier{32};
  float values[32] = {};
  bool votes[32] = {};
};
inline std::vector<std::unique_ptr<Warp>> warps;  // the running block's, made before its threads start

inline int lane() { return static_cast<int>(threadIdx.x % 32); }
inline Warp& my_warp() { return *warps[threadIdx.x / 32]; }

inline void __syncwarp() { my_warp().barrier.arrive_and_wait(); }
inline float __shfl_sync(unsigned /*mask*/, float value, int source) {
  Warp& w = my_warp();
  w.values[lane()] = value;
  w.barrier.arrive_and_wait();
  const float result = w.values[source & 31];
  w.barrier.arrive_and_wait();
  return result;
}
inline unsigned __ballot_sync(unsigned /*mask*/, bool predicate) {
  Warp& w = my_warp();
  w.votes[lane()] = predicate;
  w.barrier.arrive_and_wait();
  unsigned ballot = 0;
  for (int l = 0; l < 32; ++l) ballot |= static_cast<unsigned>(w.votes[l]) << l;
  w.barrier.arrive_and_wait();
  return ballot;
}
inline int __popc(unsigned x) { return std::popcount(x); }
inline int __ffs(unsigned x) { return x == 0 ? 0 : std::countr_zero(x) + 1; }
inline float atomicAdd(float* address, float value) { return std::atomic_ref<float>(*address).fetch_add(value); }

// Makes the block's warps before its threads start (host_cuda::launch's per-block setup).
struct MakeWarps {
  unsigned threads;
  void operator()() const {
    warps.clear();
    for (unsigned w = 0; w < (threads + 31) / 32; ++w) warps.push_back(std::make_unique<Warp>());
  }
};

}  // namespace convgen::host_cuda
