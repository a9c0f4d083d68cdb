// affine_concat: the pass before a convolution in pre-activation networks (DenseNet's concatenation → BatchNorm →
// ReLU, a pre-activation ResNet's BatchNorm → ReLU) as one kernel:
//   output[:, c] = act(scale[c] * concat(inputs, channels)[:, c] + shift[c])
// where PyTorch runs a copy for the concatenation, a BatchNorm and a ReLU, each a launch and a pass over the tensor.
// Not a family's template (the generator renders none of it): a header that conv/affine_concat.cpp's program includes
// after defining AC_ELEMENT and AC_VECTOR, which then declares the entry convgen_affine_concat of that element type and
// vector width; compiled once per process, architecture and (element, vector); the shapes are arguments. The body is
// a function template (the host emulation test runs every variant in one program).
//
// The grid: blockIdx.y is the input (segment) a block copies, blockIdx.x strides over its elements, AC_VECTOR at a
// time along the contiguous axis: the channels in channels-last tensors, the pixels of a channel in channels-first
// ones. Every input is a contiguous tensor of its own (N, C_i, pixels) or (N, pixels, C_i); the output holds them
// side by side along the channels, from channel `first_channel` of an output of `out_channels` channels (a launch
// takes at most kMaxSegments inputs: the host splits longer lists). Compute in fp32; the activation passes a NaN on,
// as PyTorch's does. Included by NVRTC with element.cuh and grid_dependency.cuh; plain C++ apart from the CUDA words,
// so that the host emulation test compiles it too.
#pragma once

#include "element.cuh"
#include "grid_dependency.cuh"

namespace convgen::affine_concat {

constexpr int kMaxSegments = 64;

// The inputs of one launch, by value in the kernel's parameters (under 1 KiB).
struct Segments {
  const void* data[kMaxSegments];
  int channels[kMaxSegments];
  int first[kMaxSegments];  // the output channel where input i begins, from the launch's first_channel
  int count;
};

// ELEMENT: 0 fp32, 1 fp16, 2 bf16 (its 16-bit pattern, element.cuh).
template <int ELEMENT>
struct ElementOf {
  using type = unsigned short;
};
template <>
struct ElementOf<0> {
  using type = float;
};

template <int ELEMENT, int VECTOR>
struct __align__(sizeof(typename ElementOf<ELEMENT>::type) * VECTOR) Pack {
  typename ElementOf<ELEMENT>::type e[VECTOR];
};

template <int ELEMENT>
__device__ __forceinline__ float to_float(typename ElementOf<ELEMENT>::type v) {
  if constexpr (ELEMENT == 0) return v;
  else if constexpr (ELEMENT == 1) return element::fp16_to_float(v);
  else return element::bf16_to_float(v);
}

template <int ELEMENT>
__device__ __forceinline__ typename ElementOf<ELEMENT>::type from_float(float v) {
  if constexpr (ELEMENT == 0) return v;
  else if constexpr (ELEMENT == 1) return element::float_to_fp16(v);
  else return element::float_to_bf16(v);
}

// lo and hi clamp (-inf and inf: none; 0 and inf: ReLU; 0 and 6: ReLU6); a NaN fails both tests and passes.
__device__ __forceinline__ float activate(float v, float lo, float hi) {
  v = v < lo ? lo : v;
  return v > hi ? hi : v;
}

// The kernel's body: batch: N; pixels: D*H*W; out_channels: the output's C; channels_last: the layout of every
// tensor. scale and shift: fp32, one per output channel (index first_channel + first[i] + channel of input i).
template <int ELEMENT, int VECTOR>
__device__ __forceinline__ void run(void* __restrict__ output, const Segments& segments,
                                    const float* __restrict__ scale, const float* __restrict__ shift, int batch,
                                    long long pixels, int out_channels, int first_channel, int channels_last,
                                    float lo, float hi) {
  using Element = typename ElementOf<ELEMENT>::type;
  using P = Pack<ELEMENT, VECTOR>;
  convgen::wait_for_previous_grid();  // the previous kernel may still write an input or read the output
  convgen::allow_next_grid();
  const int segment = blockIdx.y;
  const int channels = segments.channels[segment];
  const int out_first = first_channel + segments.first[segment];
  const Element* in = static_cast<const Element*>(segments.data[segment]);
  Element* out = static_cast<Element*>(output);
  // The packs of this input: channels-last, (N * pixels) rows of channels / VECTOR; channels-first, (N * channels)
  // rows of pixels / VECTOR.
  const long long row_packs = channels_last ? channels / VECTOR : pixels / VECTOR;
  const long long packs = (long long)batch * (channels_last ? pixels : channels) * row_packs;
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < packs; i += stride) {
    const long long row = i / row_packs;
    const long long column = (i - row * row_packs) * VECTOR;
    long long out_offset;
    int c;  // the output channel of the pack's first element
    if (channels_last) {
      c = out_first + static_cast<int>(column);
      out_offset = row * out_channels + c;
    } else {
      const long long n = row / channels;
      c = out_first + static_cast<int>(row - n * channels);
      out_offset = (n * out_channels + c) * pixels + column;
    }
    const P value = *reinterpret_cast<const P*>(in + i * VECTOR);
    P result;
#pragma unroll
    for (int v = 0; v < VECTOR; ++v) {
      const int channel = channels_last ? c + v : c;
      result.e[v] = from_float<ELEMENT>(activate(fmaf(scale[channel], to_float<ELEMENT>(value.e[v]), shift[channel]),
                                                 lo, hi));
    }
    *reinterpret_cast<P*>(out + out_offset) = result;
  }
}

}  // namespace convgen::affine_concat

#ifdef AC_ELEMENT
extern "C" __global__ void __launch_bounds__(256)
    convgen_affine_concat(void* __restrict__ output, const convgen::affine_concat::Segments segments,
                          const float* __restrict__ scale, const float* __restrict__ shift, int batch,
                          long long pixels, int out_channels, int first_channel, int channels_last, float lo,
                          float hi) {
  convgen::affine_concat::run<AC_ELEMENT, AC_VECTOR>(output, segments, scale, shift, batch, pixels, out_channels,
                                                     first_channel, channels_last, lo, hi);
}
#endif
