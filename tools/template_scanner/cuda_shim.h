// cuda_shim: what NVRTC declares built in and the templates use, for the template scanner's clang (no CUDA headers).
#pragma once

// NVRTC defines these; templates may test them (direct.cu's unroll pragmas do).
#define __CUDACC__ 1
#define __CUDACC_RTC__ 1

#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __host__ __attribute__((host))
#define __shared__ __attribute__((shared))
#define __constant__ __attribute__((constant))
#define __forceinline__ __inline__ __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...) __attribute__((launch_bounds(__VA_ARGS__)))
#define __cluster_dims__(...)  // a launch property (a cluster of blocks): nothing the scanner reads
#define __align__(n) __attribute__((aligned(n)))
#define __grid_constant__  // a by-value entry parameter read where it lies (a TMA tensor map): nothing the scanner reads

struct __attribute__((aligned(8))) float2 {
  float x, y;
};
struct __attribute__((aligned(16))) float4 {
  float x, y, z, w;
};
struct __attribute__((aligned(8))) int2 {
  int x, y;
};
struct __attribute__((aligned(16))) int4 {
  int x, y, z, w;
};
struct __attribute__((aligned(8))) uint2 {
  unsigned x, y;
};
struct __attribute__((aligned(16))) uint4 {
  unsigned x, y, z, w;
};
struct uint3 {
  unsigned x, y, z;
};
struct dim3 {
  unsigned x, y, z;
};

extern __device__ const uint3 threadIdx;
extern __device__ const uint3 blockIdx;
extern __device__ const dim3 blockDim;
extern __device__ const dim3 gridDim;
extern __device__ const int warpSize;

__device__ void __syncthreads();
__device__ float fmaf(float a, float b, float c);
__device__ float __ldg(const float* address);
__device__ float2 __ldg(const float2* address);
__device__ float4 __ldg(const float4* address);
__device__ float atomicAdd(float* address, float value);
__device__ int atomicAdd(int* address, int value);
__device__ unsigned atomicAdd(unsigned* address, unsigned value);
__device__ float __int_as_float(int bits);
__device__ int __float_as_int(float value);
__device__ float fmaxf(float a, float b);
__device__ float fminf(float a, float b);
// Warp-level primitives (sm_70 and later).
__device__ unsigned __ballot_sync(unsigned mask, int predicate);
__device__ int __any_sync(unsigned mask, int predicate);
__device__ int __all_sync(unsigned mask, int predicate);
__device__ float __shfl_sync(unsigned mask, float value, int lane, int width = 32);
__device__ int __shfl_sync(unsigned mask, int value, int lane, int width = 32);
__device__ unsigned __shfl_sync(unsigned mask, unsigned value, int lane, int width = 32);
__device__ float __shfl_xor_sync(unsigned mask, float value, int lane_mask, int width = 32);
__device__ float __shfl_down_sync(unsigned mask, float value, unsigned delta, int width = 32);
__device__ void __syncwarp(unsigned mask = 0xffffffffu);
__device__ int __ffs(int value);
__device__ int __popc(unsigned value);
__device__ int __clz(int value);
