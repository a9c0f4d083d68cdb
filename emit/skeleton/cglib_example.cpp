// cglib_example.cpp: runs every convolution of the cglib library on the GPU and checks outputs against a CPU loop.
//
// Exit status: 0 every problem ran and matched, 1 a call failed or an output did not match, 2 no usable GPU (no
// driver, no device, or no cubin for this GPU's architecture): the message says which.
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include "cglib.h"

namespace {

struct Extents {
  long long activation, filter, output;
  int o, p, q;
};

Extents extents(const cglib_problem& x) {
  Extents e{};
  e.o = (x.d + 2 * x.pad_d - x.dilation_d * (x.t - 1) - 1) / x.stride_d + 1;
  e.p = (x.h + 2 * x.pad_h - x.dilation_h * (x.r - 1) - 1) / x.stride_h + 1;
  e.q = (x.w + 2 * x.pad_w - x.dilation_w * (x.s - 1) - 1) / x.stride_w + 1;
  e.activation = 1LL * x.n * x.c * x.d * x.h * x.w;
  e.filter = 1LL * x.k * (x.c / x.groups) * x.t * x.r * x.s;
  e.output = 1LL * x.n * x.k * e.o * e.p * e.q;
  return e;
}

bool channels_last(cglib_layout layout) {
  return layout == CGLIB_LAYOUT_NWC || layout == CGLIB_LAYOUT_NHWC || layout == CGLIB_LAYOUT_NDHWC;
}

// One output element computed on the CPU in double precision; `index` is flat in the output's layout.
double cpu_output(const cglib_problem& x, const Extents& e, const std::vector<float>& activation,
                  const std::vector<float>& filter, long long index) {
  const bool last = channels_last(x.layout);
  long long i = index;
  int n, k, o, p, q;
  if (last) {
    k = static_cast<int>(i % x.k);
    i /= x.k;
    q = static_cast<int>(i % e.q);
    i /= e.q;
    p = static_cast<int>(i % e.p);
    i /= e.p;
    o = static_cast<int>(i % e.o);
    n = static_cast<int>(i / e.o);
  } else {
    q = static_cast<int>(i % e.q);
    i /= e.q;
    p = static_cast<int>(i % e.p);
    i /= e.p;
    o = static_cast<int>(i % e.o);
    i /= e.o;
    k = static_cast<int>(i % x.k);
    n = static_cast<int>(i / x.k);
  }
  const int cg = x.c / x.groups;
  const int group = k / (x.k / x.groups);
  double sum = 0;
  for (int c = 0; c < cg; ++c)
    for (int t = 0; t < x.t; ++t)
      for (int r = 0; r < x.r; ++r)
        for (int s = 0; s < x.s; ++s) {
          const int z = o * x.stride_d - x.pad_d + t * x.dilation_d;
          const int y = p * x.stride_h - x.pad_h + r * x.dilation_h;
          const int w = q * x.stride_w - x.pad_w + s * x.dilation_w;
          if (z < 0 || z >= x.d || y < 0 || y >= x.h || w < 0 || w >= x.w) continue;
          const int ci = group * cg + c;
          const long long a = last ? (((1LL * n * x.d + z) * x.h + y) * x.w + w) * x.c + ci
                                   : (((1LL * n * x.c + ci) * x.d + z) * x.h + y) * x.w + w;
          const long long f = last ? (((1LL * k * x.t + t) * x.r + r) * x.s + s) * cg + c
                                   : (((1LL * k * cg + c) * x.t + t) * x.r + r) * x.s + s;
          sum += static_cast<double>(activation[a]) * filter[f];
        }
  return sum;
}

bool cuda_ok(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return true;
  std::fprintf(stderr, "cglib_example: %s failed: %s\n", what, cudaGetErrorString(error));
  return false;
}

}  // namespace

int main() {
  std::printf("cglib: %zu problems\n", cglib_problem_count());
  const cglib_status device = cglib_check_device();
  if (device != CGLIB_SUCCESS) {
    std::fprintf(stderr, "cglib_example: %s: %s\n", cglib_status_string(device), cglib_last_error_message());
    return device == CGLIB_ERROR_CUDA ? 1 : 2;
  }
  int ordinal = 0, major = 0, minor = 0;
  if (!cuda_ok(cudaGetDevice(&ordinal), "cudaGetDevice") ||
      !cuda_ok(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, ordinal), "cudaDeviceGetAttribute") ||
      !cuda_ok(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, ordinal), "cudaDeviceGetAttribute"))
    return 1;
  const int arch = major * 10 + minor;
  int failures = 0;
  for (size_t i = 0; i < cglib_problem_count(); ++i) {
    const cglib_problem& x = *cglib_problem_at(i);
    const Extents e = extents(x);
    if (x.precision != CGLIB_PRECISION_FP32 && x.precision != CGLIB_PRECISION_TF32) {
      std::printf("%-24s skipped (the example fills fp32 tensors only)\n", cglib_problem_name(i));
      continue;
    }
    std::vector<float> activation(e.activation), filter(e.filter), output(e.output);
    unsigned state = 12345u + static_cast<unsigned>(i);
    for (float& v : activation)
      v = static_cast<float>((state = state * 1664525u + 1013904223u) >> 8) / 16777216.0f - 0.5f;
    for (float& v : filter) v = static_cast<float>((state = state * 1664525u + 1013904223u) >> 8) / 16777216.0f - 0.5f;
    void *d_activation = nullptr, *d_filter = nullptr, *d_output = nullptr;
    cudaEvent_t start = nullptr, stop = nullptr;
    if (!cuda_ok(cudaMalloc(&d_activation, activation.size() * 4), "cudaMalloc") ||
        !cuda_ok(cudaMalloc(&d_filter, filter.size() * 4), "cudaMalloc") ||
        !cuda_ok(cudaMalloc(&d_output, output.size() * 4), "cudaMalloc") ||
        !cuda_ok(cudaMemcpy(d_activation, activation.data(), activation.size() * 4, cudaMemcpyHostToDevice), "copy") ||
        !cuda_ok(cudaMemcpy(d_filter, filter.data(), filter.size() * 4, cudaMemcpyHostToDevice), "copy") ||
        !cuda_ok(cudaEventCreate(&start), "cudaEventCreate") || !cuda_ok(cudaEventCreate(&stop), "cudaEventCreate"))
      return 1;
    const auto a = reinterpret_cast<unsigned long long>(d_activation);
    const auto f = reinterpret_cast<unsigned long long>(d_filter);
    const auto o = reinterpret_cast<unsigned long long>(d_output);
    // An op sets the problem's plan up once (its persistent buffers, its setup steps); each run needs a workspace
    // of the size the op says.
    cglib_op op = nullptr;
    void* d_workspace = nullptr;
    cglib_status status = cglib_op_create(&x, f, nullptr, &op);
    if (status == CGLIB_SUCCESS && cglib_op_workspace_size(op) > 0 &&
        !cuda_ok(cudaMalloc(&d_workspace, cglib_op_workspace_size(op)), "cudaMalloc"))
      return 1;
    const auto ws = reinterpret_cast<unsigned long long>(d_workspace);
    if (status == CGLIB_SUCCESS) status = cglib_op_run(op, a, o, ws, nullptr);
    // Then 20 calls between events: a rough time per call, not a benchmark.
    cudaEventRecord(start, nullptr);
    for (int call = 0; call < 20 && status == CGLIB_SUCCESS; ++call) status = cglib_op_run(op, a, o, ws, nullptr);
    cudaEventRecord(stop, nullptr);
    if (status != CGLIB_SUCCESS) {
      std::fprintf(stderr, "cglib_example: %s: %s: %s\n", cglib_problem_name(i), cglib_status_string(status),
                   cglib_last_error_message());
      return 1;
    }
    float ms = 0;
    if (!cuda_ok(cudaEventSynchronize(stop), "running the kernels") ||
        !cuda_ok(cudaMemcpy(output.data(), d_output, output.size() * 4, cudaMemcpyDeviceToHost), "copy"))
      return 1;
    cudaEventElapsedTime(&ms, start, stop);
    // 16 outputs spread over the tensor, against the CPU in double precision: the largest error relative to the
    // largest output (an output near zero, where a long tf32 reduction cancels, would make each one's own relative
    // error meaningless).
    double worst_error = 0, largest = 1e-3;
    for (int j = 0; j < 16; ++j) {
      const long long index = e.output * j / 16;
      const double want = cpu_output(x, e, activation, filter, index);
      worst_error = std::fmax(worst_error, std::fabs(output[index] - want));
      largest = std::fmax(largest, std::fabs(want));
    }
    const double worst = worst_error / largest;
    const bool ok = worst < (x.precision == CGLIB_PRECISION_FP32 ? 1e-4 : 1e-2);
    failures += ok ? 0 : 1;
    std::printf("%-24s %-40s %8.1f us  %s (worst error relative to the largest output %.1e)\n", cglib_problem_name(i),
                cglib_kernel_name(&x, arch) ? cglib_kernel_name(&x, arch) : "?", ms * 1000 / 20, ok ? "ok" : "MISMATCH",
                worst);
    if (cglib_op_destroy(op) != CGLIB_SUCCESS) {
      std::fprintf(stderr, "cglib_example: cglib_op_destroy: %s\n", cglib_last_error_message());
      return 1;
    }
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    cudaFree(d_workspace);
    cudaFree(d_activation);
    cudaFree(d_filter);
    cudaFree(d_output);
  }
  return failures == 0 ? 0 : 1;
}
