// gpu: capabilities derived from a GPU descriptor.
#include "convgen/gpu.hpp"

#include <cctype>

namespace convgen {

int compute_capability(const Gpu& gpu) {
  int value = 0;
  for (char ch : gpu.arch)
    if (std::isdigit(static_cast<unsigned char>(ch))) value = value * 10 + (ch - '0');
  return value;
}

double peak_tflops(const Gpu& gpu, Precision precision) {
  switch (precision) {
    case Precision::fp32: return gpu.peak_fp32_tflops;
    case Precision::tf32: return gpu.peak_tf32_tflops;
    case Precision::fp16: return gpu.peak_fp16_tflops;
    case Precision::bf16: return gpu.peak_bf16_tflops;
  }
  return 0;
}

}  // namespace convgen
