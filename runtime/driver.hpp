// driver: the CUDA driver API, loaded from libcuda.so.1 on first use so that binaries start without a GPU.
#pragma once

// cuda.h gives the types and maps each API name to its current versioned symbol (cuMemAlloc -> cuMemAlloc_v2);
// nothing links against libcuda, so calling a cu* function directly would fail to link: go through driver().
#include <cuda.h>

#include <string>

#include "convgen/error.hpp"

namespace convgen {

// Every driver entry point convgen calls. The names are macro-expanded by cuda.h before use, so each
// member is declared with, and resolved by, the versioned symbol the header maps it to.
// clang-format off
#define CONVGEN_DRIVER_FUNCTIONS(X) \
  X(cuInit) X(cuDriverGetVersion) X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetName) \
  X(cuDeviceGetAttribute) X(cuDeviceTotalMem) X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease) X(cuCtxSetCurrent) \
  X(cuCtxGetCurrent) X(cuCtxSynchronize) X(cuModuleLoadData) X(cuModuleUnload) X(cuModuleGetFunction) \
  X(cuFuncGetAttribute) X(cuFuncSetAttribute) X(cuLaunchKernel) X(cuLaunchKernelEx) X(cuMemAlloc) X(cuMemFree) X(cuMemGetInfo) \
  X(cuMemcpyHtoD) X(cuMemcpyDtoH) X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync) X(cuMemsetD32Async) \
  X(cuMemsetD8Async) X(cuStreamCreate) X(cuStreamDestroy) X(cuStreamSynchronize) X(cuStreamIsCapturing) X(cuStreamBeginCapture) \
  X(cuStreamEndCapture) X(cuGraphInstantiate) X(cuGraphLaunch) X(cuGraphExecDestroy) X(cuGraphDestroy) \
  X(cuEventCreate) X(cuEventRecord) X(cuEventSynchronize) X(cuEventElapsedTime) X(cuEventDestroy) \
  X(cuGetErrorName) X(cuGetErrorString) X(cuTensorMapEncodeTiled) X(cuTensorMapEncodeIm2col) \
  X(cuPointerGetAttribute)
// clang-format on

#define CONVGEN_DRIVER_MEMBER(name) decltype(&::name) name = nullptr;

// The resolved driver entry points: driver().cuMemAlloc(&ptr, bytes).
struct DriverApi {
  CONVGEN_DRIVER_FUNCTIONS(CONVGEN_DRIVER_MEMBER)
};

#undef CONVGEN_DRIVER_MEMBER

// Returns true when libcuda.so.1 loaded, cuInit succeeded and the driver reports at least one device.
bool cuda_available();

// Returns why there is no usable CUDA device ("libcuda.so.1 could not be loaded (...)"), or "" when there is one.
std::string no_device_reason();

// Returns the driver's entry points, loading and initializing the driver on first use.
// Throws NoDeviceError("no CUDA device: <why>") when cuda_available() is false.
//   CONVGEN_CU_CHECK(driver().cuCtxSynchronize());
const DriverApi& driver();

namespace detail {

// What loading a driver library gave: the entry points, or the reason there is no usable device.
struct DriverLoad {
  DriverApi api;
  std::string no_device_reason;  // "" when the driver loaded, initialized and reports a device
  int device_count = 0;
};

// Loads `library` with dlopen, resolves every entry point and calls cuInit. Not cached: driver() caches the
// load of "libcuda.so.1"; tests call this with other names to see the failure messages on any machine.
DriverLoad load_driver(const std::string& library);

// Throws ApiError "<file>:<line>: <expr> failed: <CUDA_ERROR_NAME> (<description>)" unless result is CUDA_SUCCESS.
void cu_check(CUresult result, const char* expr, const char* file, int line);

}  // namespace detail

// Returns "CUDA_ERROR_NAME (description)" for a driver result, using the loaded driver's own tables.
std::string cu_error_text(CUresult result);

}  // namespace convgen

// Calls a driver function and throws ApiError naming the expression, the error, the file and line on failure.
#define CONVGEN_CU_CHECK(expr) ::convgen::detail::cu_check((expr), #expr, __FILE__, __LINE__)
