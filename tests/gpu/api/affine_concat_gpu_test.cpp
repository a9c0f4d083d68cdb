// affine_concat_gpu_test: ConvContext::affine_concat on the GPU (convgen/affine_concat.hpp): DenseNet's concatenation
// → BatchNorm → ReLU as one pass, in fp32, fp16 and bf16, both layouts, the vector widths the pass picks, more inputs
// than one launch takes, on a non-blocking stream right after a kernel that writes an input (an identity pass) (the
// pass launches early on sm_90: it must wait for it); every output element equal, bit for bit, to the host's loop over
// the concatenation (a NaN equal to a NaN).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <fmt/format.h>

#include "convgen/convgen.hpp"
#include "convgen/error.hpp"
#include "reference/host_tensor.hpp"
#include "runtime/device.hpp"
#include "runtime/driver.hpp"
#include "runtime/module.hpp"
#include "support/concatenation.hpp"
#include "support/context_test.hpp"

namespace convgen {
namespace {

class AffineConcatGpu : public testing_support::ContextTest {};

std::uint16_t bits16(float value, Precision precision) {
  return precision == Precision::fp16 ? float_to_half(value) : float_to_bfloat16(value);
}
float from16(std::uint16_t bits, Precision precision) {
  return precision == Precision::fp16 ? half_to_float(bits) : bfloat16_to_float(bits);
}

// Host tensors of the element type, as bytes.
std::vector<unsigned char> encode(const std::vector<float>& values, Precision precision) {
  const int element = element_bytes(precision);
  std::vector<unsigned char> bytes(values.size() * element);
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (element == 2) {
      const std::uint16_t b = bits16(values[i], precision);
      std::memcpy(bytes.data() + 2 * i, &b, 2);
    } else {
      std::memcpy(bytes.data() + 4 * i, &values[i], 4);
    }
  }
  return bytes;
}
// The bit pattern of `value` in the element type (rounded to nearest even for the 16-bit types).
std::uint32_t element_bits(float value, Precision precision) {
  if (element_bytes(precision) == 2) return bits16(value, precision);
  std::uint32_t bits;
  std::memcpy(&bits, &value, 4);
  return bits;
}
std::uint32_t stored_bits(const std::vector<unsigned char>& bytes, std::size_t i, Precision precision) {
  std::uint32_t bits = 0;
  std::memcpy(&bits, bytes.data() + element_bytes(precision) * i, element_bytes(precision));
  return bits;
}
float decode(const std::vector<unsigned char>& bytes, std::size_t i, Precision precision) {
  if (element_bytes(precision) == 2) {
    std::uint16_t b;
    std::memcpy(&b, bytes.data() + 2 * i, 2);
    return from16(b, precision);
  }
  float v;
  std::memcpy(&v, bytes.data() + 4 * i, 4);
  return v;
}

struct Case {
  Precision precision;
  bool channels_last;
  std::vector<int> channels;
  int batch;
  std::int64_t pixels;
  Activation act;
};

// Runs the case through the context and returns how many output elements differ from the host's loop.
int run_case(ConvContext& context, const Case& c) {
  const int element = element_bytes(c.precision);
  std::mt19937 random(11);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  Stream stream;
  std::vector<std::vector<float>> host_inputs;
  std::vector<DeviceBuffer> inputs;
  AffineConcat pass{
      .batch = c.batch, .pixels = c.pixels, .precision = c.precision, .channels_last = c.channels_last, .act = c.act};
  for (int channels : c.channels) {
    std::vector<float> values(static_cast<std::size_t>(c.batch) * c.pixels * channels);
    for (float& v : values) v = normal(random);
    values[0] = std::numeric_limits<float>::quiet_NaN();
    // Rounded to the type, as the device holds them.
    if (element == 2)
      for (float& v : values) v = from16(bits16(v, c.precision), c.precision);
    const auto bytes = encode(values, c.precision);
    inputs.emplace_back(bytes.size());
    inputs.back().upload_bytes(bytes.data(), bytes.size());
    host_inputs.push_back(values);
    pass.inputs.push_back(inputs.back().ptr());
    pass.channels.push_back(channels);
  }
  const auto out_channels = static_cast<int>(pass.out_channels());
  std::vector<float> scale(out_channels), shift(out_channels);
  for (int k = 0; k < out_channels; ++k) scale[k] = normal(random), shift[k] = normal(random);
  DeviceBuffer d_scale(4 * out_channels), d_shift(4 * out_channels);
  d_scale.upload(scale);
  d_shift.upload(shift);
  const std::size_t out_count = static_cast<std::size_t>(c.batch) * c.pixels * out_channels;
  DeviceBuffer output(out_count * element);
  pass.output = output.ptr();
  pass.scale = d_scale.ptr();
  pass.shift = d_shift.ptr();
  // The last input is written by a kernel just before the pass, on its stream (an identity pass from a staged copy):
  // a pass that read before that kernel ended would see the 0xff bytes (NaN) it replaces.
  const auto last = encode(host_inputs.back(), c.precision);
  DeviceBuffer staged(last.size());
  staged.upload_bytes(last.data(), last.size());
  const int last_channels = c.channels.back();
  DeviceBuffer ones(4 * last_channels), zeros(4 * last_channels);
  ones.upload(std::vector<float>(last_channels, 1.0f));
  zeros.upload(std::vector<float>(last_channels, 0.0f));
  inputs.back().fill_u8(0xff, stream.get());
  context.affine_concat({.inputs = {staged.ptr()},
                         .channels = {last_channels},
                         .output = inputs.back().ptr(),
                         .scale = ones.ptr(),
                         .shift = zeros.ptr(),
                         .batch = c.batch,
                         .pixels = c.pixels,
                         .precision = c.precision,
                         .channels_last = c.channels_last},
                        stream.get());
  context.affine_concat(pass, stream.get());
  stream.synchronize();
  std::vector<unsigned char> got(out_count * element);
  output.download_bytes(got.data(), got.size());

  int wrong = 0;
  const float inf = std::numeric_limits<float>::infinity();
  const float lo = c.act == Activation::none ? -inf : 0.0f, hi = c.act == Activation::relu6 ? 6.0f : inf;
  testing_support::for_each_concatenated(
      c.channels, c.batch, c.pixels, c.channels_last,
      [&](std::size_t i, std::size_t in_index, std::size_t out_index, int channel) {
        float v = std::fma(scale[channel], host_inputs[i][in_index], shift[channel]);
        v = v < lo ? lo : v;
        v = v > hi ? hi : v;
        const float value = decode(got, out_index, c.precision);
        const bool same = std::isnan(v) ? std::isnan(value)  // a NaN's bits are the conversion's own
                                        : element_bits(v, c.precision) == stored_bits(got, out_index, c.precision);
        if (!same && ++wrong <= 5)
          ADD_FAILURE() << fmt::format("{} {}: output element {} (channel {}): expected {}, got {}", c.precision,
                                       c.channels_last ? "channels-last" : "channels-first", out_index, channel, v,
                                       value);
      });
  return wrong;
}

TEST_F(AffineConcatGpu, EveryTypeAndLayoutMatchesTheHostLoopBitForBit) {
  ConvContext context(options());
  const std::vector<int> dense_block = {64, 32, 32, 32, 32, 32};
  std::vector<int> many(70, 8);
  many[3] = 16;
  for (const Case& c : {Case{Precision::fp16, true, dense_block, 8, 56 * 56, Activation::relu},
                        Case{Precision::fp16, false, dense_block, 2, 14 * 14, Activation::relu},
                        Case{Precision::fp32, false, dense_block, 3, 7 * 7, Activation::relu6},
                        Case{Precision::fp32, true, {3, 5, 7}, 2, 9, Activation::none},
                        Case{Precision::bf16, true, {16, 8}, 4, 28 * 28, Activation::relu},
                        Case{Precision::fp16, true, many, 2, 7 * 7, Activation::relu},
                        Case{Precision::fp32, true, {512}, 1, 1 << 14, Activation::relu}})
    EXPECT_EQ(run_case(context, c), 0) << fmt::format("{} inputs, {}", c.channels.size(), c.precision);
}

TEST_F(AffineConcatGpu, AFirstPassInACaptureIsRefusedAndOneAfterItReplaysOnNewValues) {
  ConvContext context(options());
  Stream stream;
  const int channels = 16;
  const std::int64_t count = 2 * 9 * channels;
  DeviceBuffer input(4 * count), output(4 * count), scale(4 * channels), shift(4 * channels);
  scale.upload(std::vector<float>(channels, 2.0f));
  shift.upload(std::vector<float>(channels, -1.0f));
  const AffineConcat pass{.inputs = {input.ptr()},
                          .channels = {channels},
                          .output = output.ptr(),
                          .scale = scale.ptr(),
                          .shift = shift.ptr(),
                          .batch = 2,
                          .pixels = 9,
                          .channels_last = true,
                          .act = Activation::relu};
  try {
    Graph::capture(stream.get(), [&] { context.affine_concat(pass, stream.get()); });
    FAIL() << "no error";
  } catch (const ApiError& e) {
    EXPECT_STREQ(e.what(),
                 "affine_concat: its fp32 programs are not loaded yet, which a CUDA graph capture cannot do: run a "
                 "pass of this type once before capturing");
  }
  input.upload(std::vector<float>(count, 1.0f));
  context.affine_concat(pass, stream.get());  // warm-up: loads every fp32 width
  Graph graph = Graph::capture(stream.get(), [&] { context.affine_concat(pass, stream.get()); });
  for (float value : {3.0f, -4.0f}) {
    input.upload(std::vector<float>(count, value));
    graph.launch(stream.get());
    stream.synchronize();
    std::vector<float> got(count);
    output.download(got);
    const float want = std::max(0.0f, 2.0f * value - 1.0f);
    EXPECT_EQ(std::count(got.begin(), got.end(), want), count) << "input " << value;
  }
}

TEST_F(AffineConcatGpu, ABadPassIsRefusedBeforeAnythingIsEnqueued) {
  ConvContext context(options());
  const AffineConcat pass{.inputs = {256}, .channels = {4, 4}, .output = 256, .scale = 256, .shift = 256};
  try {
    context.affine_concat(pass, nullptr);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "affine_concat: 1 inputs but 2 channel counts: expected one count per input");
  }
}

}  // namespace
}  // namespace convgen
