// affine_concat: the pass before a convolution in pre-activation networks, as one kernel (ConvContext::affine_concat):
//   output[:, c] = act(scale[c] * concat(inputs)[:, c] + shift[c])
// DenseNet's concatenation → BatchNorm → ReLU (a BatchNorm in eval mode is a per-channel scale and shift), or a
// pre-activation ResNet's BatchNorm → ReLU (one input). PyTorch runs each as a launch and a pass over the tensor.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <vector>

#include "convgen/problem.hpp"

namespace convgen {

struct AffineConcat {
  // The inputs in channel order, each a contiguous tensor of batch × channels[i] × pixels elements in `layout`'s
  // order (N, C, pixels) or, channels-last, (N, pixels, C); the output the same with the sum of channels.
  std::vector<CUdeviceptr> inputs;
  std::vector<int> channels;
  CUdeviceptr output = 0;
  // fp32, one per output channel.
  CUdeviceptr scale = 0;
  CUdeviceptr shift = 0;
  int batch = 1;
  std::int64_t pixels = 1;                // D × H × W
  Precision precision = Precision::fp32;  // the element type of inputs and output (tf32 counts as fp32)
  bool channels_last = false;
  Activation act = Activation::none;
  float clip_lo = 0.0f, clip_hi = 0.0f;  // Activation::clip's bounds

  // The output's channels: the sum of `channels`.
  std::int64_t out_channels() const {
    std::int64_t sum = 0;
    for (int c : channels) sum += c;
    return sum;
  }
};

// Checks a pass before anything is enqueued: InputError naming the field and what was expected (no input, as many
// channel counts as inputs, counts and extents of at least 1, no null pointer, clip_lo <= clip_hi for clip).
void check_affine_concat(const AffineConcat& pass);

}  // namespace convgen
