// tensor_maps_sm90_example.cpp: runs every convolution of the tensor_maps_sm90 library on the GPU and checks outputs against a CPU loop:
// random tensors in the problem's data type (fp32 and tf32 problems hold floats, fp16 and bf16 ones their 16-bit
// types), its fused epilogue (a random bias and residual where it reads them) and its ReLU on load where it has one.
//
// Exit status: 0 every problem ran and matched, 1 a call failed or an output did not match, 2 no usable GPU (no
// driver, no device, or no cubin for this GPU's architecture): the message says which.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "tensor_maps_sm90.h"

namespace {

struct Extents {
  long long activation, filter, output;
  int o, p, q;
};

Extents extents(const tensor_maps_sm90_problem& x) {
  Extents e{};
  e.o = (x.d + 2 * x.pad_d - x.dilation_d * (x.t - 1) - 1) / x.stride_d + 1;
  e.p = (x.h + 2 * x.pad_h - x.dilation_h * (x.r - 1) - 1) / x.stride_h + 1;
  e.q = (x.w + 2 * x.pad_w - x.dilation_w * (x.s - 1) - 1) / x.stride_w + 1;
  e.activation = 1LL * x.n * x.c * x.d * x.h * x.w;
  e.filter = 1LL * x.k * (x.c / x.groups) * x.t * x.r * x.s;
  e.output = 1LL * x.n * x.k * e.o * e.p * e.q;
  return e;
}

bool channels_last(tensor_maps_sm90_layout layout) {
  return layout == TENSOR_MAPS_SM90_LAYOUT_NWC || layout == TENSOR_MAPS_SM90_LAYOUT_NHWC || layout == TENSOR_MAPS_SM90_LAYOUT_NDHWC;
}

// Bytes of one element of the problem's tensors.
int element_bytes(tensor_maps_sm90_precision precision) {
  return precision == TENSOR_MAPS_SM90_PRECISION_FP16 || precision == TENSOR_MAPS_SM90_PRECISION_BF16 ? 2 : 4;
}

// Random values in [-0.5, 0.5) rounded to the problem's data type (what the device holds, and so what the CPU loop
// convolves), and their bytes in that type.
std::vector<unsigned char> random_tensor(tensor_maps_sm90_precision precision, unsigned& state, std::vector<float>& values) {
  const int bytes = element_bytes(precision);
  std::vector<unsigned char> out(values.size() * bytes);
  for (size_t i = 0; i < values.size(); ++i) {
    float v = static_cast<float>((state = state * 1664525u + 1013904223u) >> 8) / 16777216.0f - 0.5f;
    if (precision == TENSOR_MAPS_SM90_PRECISION_FP16) {
      const __half h = __float2half(v);
      v = __half2float(h);
      std::memcpy(&out[i * 2], &h, 2);
    } else if (precision == TENSOR_MAPS_SM90_PRECISION_BF16) {
      const __nv_bfloat16 h = __float2bfloat16(v);
      v = __bfloat162float(h);
      std::memcpy(&out[i * 2], &h, 2);
    } else {
      std::memcpy(&out[i * 4], &v, 4);
    }
    values[i] = v;
  }
  return out;
}

// Element i of a tensor of the problem's data type, as a float.
float element(tensor_maps_sm90_precision precision, const std::vector<unsigned char>& bytes, long long i) {
  if (precision == TENSOR_MAPS_SM90_PRECISION_FP16) {
    __half h;
    std::memcpy(&h, &bytes[i * 2], 2);
    return __half2float(h);
  }
  if (precision == TENSOR_MAPS_SM90_PRECISION_BF16) {
    __nv_bfloat16 h;
    std::memcpy(&h, &bytes[i * 2], 2);
    return __bfloat162float(h);
  }
  float v;
  std::memcpy(&v, &bytes[i * 4], 4);
  return v;
}

// The epilogue's activation of `v`.
double activate(const tensor_maps_sm90_epilogue& epilogue, double v) {
  switch (epilogue.act) {
    case TENSOR_MAPS_SM90_ACTIVATION_RELU:
      return std::max(v, 0.0);
    case TENSOR_MAPS_SM90_ACTIVATION_RELU6:
      return std::min(std::max(v, 0.0), 6.0);
    case TENSOR_MAPS_SM90_ACTIVATION_CLIP:
      return std::min(std::max(v, epilogue.clip_lo), epilogue.clip_hi);
    default:
      return v;
  }
}

// One output element's convolution computed on the CPU in double precision (of max(0, x) of the activation for a
// problem that applies its ReLU on load); `index` is flat in the output's layout, *channel its output channel.
double cpu_output(const tensor_maps_sm90_problem& x, const Extents& e, const std::vector<float>& activation,
                  const std::vector<float>& filter, long long index, int* channel) {
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
  *channel = k;
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
          const double input = x.relu_on_load ? std::max(activation[a], 0.0f) : activation[a];
          sum += input * filter[f];
        }
  return sum;
}

bool cuda_ok(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return true;
  std::fprintf(stderr, "tensor_maps_sm90_example: %s failed: %s\n", what, cudaGetErrorString(error));
  return false;
}

}  // namespace

int main() {
  std::printf("tensor_maps_sm90: %zu problems\n", tensor_maps_sm90_problem_count());
  const tensor_maps_sm90_status device = tensor_maps_sm90_check_device();
  if (device != TENSOR_MAPS_SM90_SUCCESS) {
    std::fprintf(stderr, "tensor_maps_sm90_example: %s: %s\n", tensor_maps_sm90_status_string(device), tensor_maps_sm90_last_error_message());
    return device == TENSOR_MAPS_SM90_ERROR_CUDA ? 1 : 2;
  }
  int ordinal = 0, major = 0, minor = 0;
  if (!cuda_ok(cudaGetDevice(&ordinal), "cudaGetDevice") ||
      !cuda_ok(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, ordinal), "cudaDeviceGetAttribute") ||
      !cuda_ok(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, ordinal), "cudaDeviceGetAttribute"))
    return 1;
  const int arch = major * 10 + minor;
  int failures = 0;
  for (size_t i = 0; i < tensor_maps_sm90_problem_count(); ++i) {
    const tensor_maps_sm90_problem& x = *tensor_maps_sm90_problem_at(i);
    const Extents e = extents(x);
    const int bytes = element_bytes(x.precision);
    std::vector<float> activation(e.activation), filter(e.filter), bias(x.k), residual(e.output);
    unsigned state = 12345u + static_cast<unsigned>(i);
    const std::vector<unsigned char> activation_bytes = random_tensor(x.precision, state, activation);
    const std::vector<unsigned char> filter_bytes = random_tensor(x.precision, state, filter);
    const bool reads_bias = x.epilogue.enabled && x.epilogue.bias;
    const bool reads_residual = x.epilogue.enabled && x.epilogue.beta != 0;
    const std::vector<unsigned char> bias_bytes = random_tensor(x.precision, state, bias);
    const std::vector<unsigned char> residual_bytes = random_tensor(x.precision, state, residual);
    // A problem emitted for a filter of its own (its kernel has the filter's nonzeros, or values, in its code) takes
    // no random one.
    if (tensor_maps_sm90_check_filter(&x, filter_bytes.data()) == TENSOR_MAPS_SM90_ERROR_FILTER_MISMATCH) {
      std::printf("%-24s skipped (emitted for a filter of its own, which the example does not have)\n",
                  tensor_maps_sm90_problem_name(i));
      continue;
    }
    std::vector<unsigned char> output(e.output * bytes);
    void *d_activation = nullptr, *d_filter = nullptr, *d_output = nullptr, *d_bias = nullptr, *d_residual = nullptr;
    cudaEvent_t start = nullptr, stop = nullptr;
    if (!cuda_ok(cudaMalloc(&d_activation, activation_bytes.size()), "cudaMalloc") ||
        !cuda_ok(cudaMalloc(&d_filter, filter_bytes.size()), "cudaMalloc") ||
        !cuda_ok(cudaMalloc(&d_output, output.size()), "cudaMalloc") ||
        !cuda_ok(cudaMalloc(&d_bias, bias_bytes.size()), "cudaMalloc") ||
        !cuda_ok(cudaMalloc(&d_residual, residual_bytes.size()), "cudaMalloc") ||
        !cuda_ok(cudaMemcpy(d_activation, activation_bytes.data(), activation_bytes.size(), cudaMemcpyHostToDevice),
                 "copy") ||
        !cuda_ok(cudaMemcpy(d_filter, filter_bytes.data(), filter_bytes.size(), cudaMemcpyHostToDevice), "copy") ||
        !cuda_ok(cudaMemcpy(d_bias, bias_bytes.data(), bias_bytes.size(), cudaMemcpyHostToDevice), "copy") ||
        !cuda_ok(cudaMemcpy(d_residual, residual_bytes.data(), residual_bytes.size(), cudaMemcpyHostToDevice),
                 "copy") ||
        !cuda_ok(cudaEventCreate(&start), "cudaEventCreate") || !cuda_ok(cudaEventCreate(&stop), "cudaEventCreate"))
      return 1;
    const auto a = reinterpret_cast<unsigned long long>(d_activation);
    const auto f = reinterpret_cast<unsigned long long>(d_filter);
    const auto o = reinterpret_cast<unsigned long long>(d_output);
    const auto b = reads_bias ? reinterpret_cast<unsigned long long>(d_bias) : 0ull;
    const auto res = reads_residual ? reinterpret_cast<unsigned long long>(d_residual) : 0ull;
    // An op sets the problem's plan up once (its persistent buffers, its setup steps); each run needs a workspace
    // of the size the op says.
    tensor_maps_sm90_op op = nullptr;
    void* d_workspace = nullptr;
    tensor_maps_sm90_status status = tensor_maps_sm90_op_create(&x, f, nullptr, &op);
    if (status == TENSOR_MAPS_SM90_SUCCESS && tensor_maps_sm90_op_workspace_size(op) > 0 &&
        !cuda_ok(cudaMalloc(&d_workspace, tensor_maps_sm90_op_workspace_size(op)), "cudaMalloc"))
      return 1;
    const auto ws = reinterpret_cast<unsigned long long>(d_workspace);
    if (status == TENSOR_MAPS_SM90_SUCCESS) status = tensor_maps_sm90_op_run_epilogue(op, a, o, b, res, ws, nullptr);
    // Then 20 calls between events: a rough time per call, not a benchmark.
    cudaEventRecord(start, nullptr);
    for (int call = 0; call < 20 && status == TENSOR_MAPS_SM90_SUCCESS; ++call)
      status = tensor_maps_sm90_op_run_epilogue(op, a, o, b, res, ws, nullptr);
    cudaEventRecord(stop, nullptr);
    if (status != TENSOR_MAPS_SM90_SUCCESS) {
      std::fprintf(stderr, "tensor_maps_sm90_example: %s: %s: %s\n", tensor_maps_sm90_problem_name(i), tensor_maps_sm90_status_string(status),
                   tensor_maps_sm90_last_error_message());
      return 1;
    }
    float ms = 0;
    if (!cuda_ok(cudaEventSynchronize(stop), "running the kernels") ||
        !cuda_ok(cudaMemcpy(output.data(), d_output, output.size(), cudaMemcpyDeviceToHost), "copy"))
      return 1;
    cudaEventElapsedTime(&ms, start, stop);
    // 16 outputs spread over the tensor, against the CPU in double precision: the largest error relative to the
    // largest output (an output near zero, where a long tf32 reduction cancels, would make each one's own relative
    // error meaningless).
    double worst_error = 0, largest = 1e-3;
    for (int j = 0; j < 16; ++j) {
      const long long index = e.output * j / 16;
      int k = 0;
      double want = cpu_output(x, e, activation, filter, index, &k);
      if (x.epilogue.enabled)
        want = activate(x.epilogue, x.epilogue.alpha * want + (reads_residual ? x.epilogue.beta * residual[index] : 0) +
                                        (reads_bias ? bias[k] : 0));
      worst_error = std::fmax(worst_error, std::fabs(element(x.precision, output, index) - want));
      largest = std::fmax(largest, std::fabs(want));
    }
    const double worst = worst_error / largest;
    const bool ok = worst < (x.precision == TENSOR_MAPS_SM90_PRECISION_FP32 ? 1e-4 : 1e-2);
    failures += ok ? 0 : 1;
    std::printf("%-24s %-40s %8.1f us  %s (worst error relative to the largest output %.1e)\n", tensor_maps_sm90_problem_name(i),
                tensor_maps_sm90_kernel_name(&x, arch) ? tensor_maps_sm90_kernel_name(&x, arch) : "?", ms * 1000 / 20, ok ? "ok" : "MISMATCH",
                worst);
    if (tensor_maps_sm90_op_destroy(op) != TENSOR_MAPS_SM90_SUCCESS) {
      std::fprintf(stderr, "tensor_maps_sm90_example: tensor_maps_sm90_op_destroy: %s\n", tensor_maps_sm90_last_error_message());
      return 1;
    }
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    cudaFree(d_workspace);
    cudaFree(d_activation);
    cudaFree(d_filter);
    cudaFree(d_output);
    cudaFree(d_bias);
    cudaFree(d_residual);
  }
  return failures == 0 ? 0 : 1;
}
