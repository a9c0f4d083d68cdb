// affine_concat_emulation_test: runs templates/affine_concat.cuh on the host, a std::thread per CUDA thread, with the
// launches conv/affine_concat.cpp plans, against a plain loop over the concatenation: every element type (fp32, fp16,
// bf16) and vector width the pass picks, both layouts, inputs of unequal channel counts, more inputs than one launch
// takes (a second launch from its first channel on), a grid-stride loop, and each activation (a NaN passed on).
// The outputs must match bit for bit: a misplaced element cannot hide in a tolerance. Also the pass's checks.
#include <math.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <random>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "conv/affine_concat.hpp"
#include "convgen/error.hpp"
#include "reference/host_tensor.hpp"
#include "support/concatenation.hpp"
#include "support/host_cuda.hpp"

// ---- The CUDA vocabulary of the header, for a host compiler (support/host_cuda.hpp) ------------------------------
#define __align__(n) __attribute__((aligned(n)))
#include "support/host_element.hpp"  // templates/element.cuh on the host
namespace convgen::affine_concat {
using namespace convgen::host_cuda;  // NOLINT(google-build-using-namespace): the header's CUDA words
}  // namespace convgen::affine_concat
#include "templates/affine_concat.cuh"

namespace convgen {
namespace {

static_assert(sizeof(affine_concat::Segments) == sizeof(AffineConcatSegments) &&
                  offsetof(affine_concat::Segments, channels) == offsetof(AffineConcatSegments, channels) &&
                  offsetof(affine_concat::Segments, first) == offsetof(AffineConcatSegments, first) &&
                  offsetof(affine_concat::Segments, count) == offsetof(AffineConcatSegments, count) &&
                  affine_concat::kMaxSegments == kAffineConcatMaxInputs,
              "the host's Segments must be the kernel's parameter, byte for byte");

// Host memory aligned as cudaMalloc's (256 bytes), at an offset of `skew` bytes to test narrower vectors.
struct Buffer {
  explicit Buffer(std::size_t bytes, std::size_t skew = 0)
      : base(static_cast<unsigned char*>(::operator new(bytes + skew + 256, std::align_val_t(256))), Free{}),
        data(base.get() + skew) {}
  struct Free {
    void operator()(unsigned char* p) const { ::operator delete(p, std::align_val_t(256)); }
  };
  std::unique_ptr<unsigned char, Free> base;
  unsigned char* data;
  CUdeviceptr address() const { return reinterpret_cast<CUdeviceptr>(data); }
};

float load(const unsigned char* data, std::size_t index, Precision precision) {
  if (precision == Precision::fp16 || precision == Precision::bf16) {
    std::uint16_t bits;
    std::memcpy(&bits, data + 2 * index, 2);
    return precision == Precision::fp16 ? half_to_float(bits) : bfloat16_to_float(bits);
  }
  float value;
  std::memcpy(&value, data + 4 * index, 4);
  return value;
}

void store(unsigned char* data, std::size_t index, float value, Precision precision) {
  if (precision == Precision::fp16 || precision == Precision::bf16) {
    const std::uint16_t bits = precision == Precision::fp16 ? float_to_half(value) : float_to_bfloat16(value);
    std::memcpy(data + 2 * index, &bits, 2);
  } else {
    std::memcpy(data + 4 * index, &value, 4);
  }
}

template <int E, int V>
void emulate_launch(const AffineConcat& pass, const AffineConcatLaunch& launch) {
  const std::array<float, 2> clamp = affine_concat_clamp(pass);
  const float lo = clamp[0], hi = clamp[1];  // not a structured binding: lambdas capture them from C++20 on
  const LaunchGeometry geometry{.grid = launch.config.grid, .block = launch.config.block};
  host_cuda::launch(geometry, [&] {
    affine_concat::Segments segments;
    std::memcpy(&segments, &launch.segments, sizeof segments);
    affine_concat::run<E, V>(reinterpret_cast<void*>(pass.output), segments, reinterpret_cast<const float*>(pass.scale),
                             reinterpret_cast<const float*>(pass.shift), pass.batch, pass.pixels,
                             static_cast<int>(pass.out_channels()), launch.first_channel, pass.channels_last, lo, hi);
  });
}

template <int E>
void emulate_element(const AffineConcat& pass, int vector, const AffineConcatLaunch& launch) {
  switch (vector) {
    case 1:
      return emulate_launch<E, 1>(pass, launch);
    case 2:
      return emulate_launch<E, 2>(pass, launch);
    case 4:
      return emulate_launch<E, 4>(pass, launch);
    case 8:
      if constexpr (E != 0) return emulate_launch<E, 8>(pass, launch);
  }
  FAIL() << "no variant of vector " << vector;
}

struct Case {
  Precision precision = Precision::fp32;
  bool channels_last = false;
  std::vector<int> channels;
  int batch = 2;
  std::int64_t pixels = 5;
  Activation act = Activation::relu;
  std::size_t skew = 0;  // bytes added to every address
  int expect_vector = 1;
  int expect_launches = 1;
  float clip_lo = 0.0f, clip_hi = 0.0f;
  unsigned grid_x = 0;  // blocks along x in place of the plan's (fewer: the stride loop covers the rest)
};

// Runs `c` and checks its output, element by element, against the concatenation's loop; returns how many differ.
int run_case(const Case& c) {
  const int element = element_bytes(c.precision);
  std::mt19937 random(7);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  AffineConcat pass{.batch = c.batch,
                    .pixels = c.pixels,
                    .precision = c.precision,
                    .channels_last = c.channels_last,
                    .act = c.act,
                    .clip_lo = c.clip_lo,
                    .clip_hi = c.clip_hi};
  std::vector<Buffer> inputs;
  for (int channels : c.channels) {
    const std::size_t count = static_cast<std::size_t>(c.batch) * c.pixels * channels;
    inputs.emplace_back(count * element, c.skew);
    for (std::size_t i = 0; i < count; ++i) store(inputs.back().data, i, normal(random), c.precision);
    pass.inputs.push_back(inputs.back().address());
    pass.channels.push_back(channels);
  }
  store(inputs[0].data, 1, std::numeric_limits<float>::quiet_NaN(), c.precision);  // passed on by every activation
  const auto out_channels = static_cast<int>(pass.out_channels());
  const std::size_t out_count = static_cast<std::size_t>(c.batch) * c.pixels * out_channels;
  Buffer output(out_count * element, c.skew), scale(4 * out_channels), shift(4 * out_channels);
  std::memset(output.data, 0xff, out_count * element);
  for (int k = 0; k < out_channels; ++k) {
    store(scale.data, k, normal(random), Precision::fp32);
    store(shift.data, k, normal(random), Precision::fp32);
  }
  pass.output = output.address();
  pass.scale = scale.address();
  pass.shift = shift.address();
  check_affine_concat(pass);

  const int vector = affine_concat_vector(pass);
  EXPECT_EQ(vector, c.expect_vector);
  const std::vector<AffineConcatLaunch> launches = plan_affine_concat(pass, vector, false);
  EXPECT_EQ(static_cast<int>(launches.size()), c.expect_launches);
  for (AffineConcatLaunch launch : launches) {
    if (c.grid_x != 0) launch.config.grid[0] = c.grid_x;
    if (c.precision == Precision::fp16)
      emulate_element<1>(pass, vector, launch);
    else if (c.precision == Precision::bf16)
      emulate_element<2>(pass, vector, launch);
    else
      emulate_element<0>(pass, vector, launch);
  }

  const std::array<float, 2> clamp = affine_concat_clamp(pass);
  const float lo = clamp[0], hi = clamp[1];  // not a structured binding: lambdas capture them from C++20 on
  int wrong = 0;
  testing_support::for_each_concatenated(
      c.channels, c.batch, c.pixels, c.channels_last,
      [&](std::size_t i, std::size_t in_index, std::size_t out_index, int channel) {
        float v = std::fma(load(scale.data, channel, Precision::fp32), load(inputs[i].data, in_index, c.precision),
                           load(shift.data, channel, Precision::fp32));
        if (v < lo) v = lo;
        if (v > hi) v = hi;
        Buffer expected(4);
        store(expected.data, 0, v, c.precision);
        if (std::memcmp(expected.data, output.data + out_index * element, element) != 0 && ++wrong <= 5)
          ADD_FAILURE() << fmt::format("output element {} (channel {}): expected {}, got {}", out_index, channel,
                                       load(expected.data, 0, c.precision), load(output.data, out_index, c.precision));
      });
  return wrong;
}

TEST(AffineConcatEmulation, Fp32ChannelsFirstOfUnequalInputsWithPixelsThatTakeNoVector) {
  EXPECT_EQ(run_case({.channels = {3, 5, 1}, .pixels = 7, .expect_vector = 1}), 0);
}

TEST(AffineConcatEmulation, Fp32ChannelsFirstInFourWideVectors) {
  EXPECT_EQ(run_case({.channels = {2, 6}, .pixels = 12, .act = Activation::relu6, .expect_vector = 4}), 0);
}

TEST(AffineConcatEmulation, Fp32ChannelsLastAtAnAddressOnlyTwoFloatsAligned) {
  EXPECT_EQ(
      run_case({.channels_last = true, .channels = {8, 4}, .act = Activation::none, .skew = 8, .expect_vector = 2}), 0);
}

TEST(AffineConcatEmulation, Fp16ChannelsLastAsDenseNetConcatenatesInEightWideVectors) {
  EXPECT_EQ(run_case({.precision = Precision::fp16,
                      .channels_last = true,
                      .channels = {64, 32, 32, 32},
                      .batch = 2,
                      .pixels = 9,
                      .expect_vector = 8}),
            0);
}

TEST(AffineConcatEmulation, Fp16ChannelsLastWithOddChannelCountsOneAtATime) {
  EXPECT_EQ(run_case({.precision = Precision::fp16,
                      .channels_last = true,
                      .channels = {3, 5},
                      .pixels = 4,
                      .act = Activation::clip,
                      .expect_vector = 1,
                      .clip_lo = -0.5f,
                      .clip_hi = 1.5f}),
            0);
}

TEST(AffineConcatEmulation, Bf16ChannelsFirstAndOneInput) {
  EXPECT_EQ(run_case({.precision = Precision::bf16, .channels = {6}, .pixels = 16, .expect_vector = 8}), 0);
}

TEST(AffineConcatEmulation, MoreInputsThanALaunchTakesGoToASecondLaunchFromItsFirstChannel) {
  std::vector<int> channels(kAffineConcatMaxInputs + 6, 2);
  channels[0] = 4;
  EXPECT_EQ(run_case({.precision = Precision::fp16,
                      .channels_last = true,
                      .channels = channels,
                      .batch = 1,
                      .pixels = 3,
                      .expect_vector = 2,
                      .expect_launches = 2}),
            0);
}

TEST(AffineConcatEmulation, AnInputLargerThanTheGridIsCoveredByTheStrideLoop) {
  // 1 × 1100 pixels × 256 channels / 8 = 35200 packs: 138 blocks of 256 threads would be needed; the plan caps the
  // grid at 1024 blocks, so this checks the loop with a grid of its own below.
  AffineConcat pass{.inputs = {256},
                    .channels = {256},
                    .output = 256,
                    .scale = 256,
                    .shift = 256,
                    .batch = 1,
                    .pixels = 1100,
                    .precision = Precision::fp16,
                    .channels_last = true};
  const auto launches = plan_affine_concat(pass, 8, false);
  ASSERT_EQ(launches.size(), 1u);
  EXPECT_EQ(launches[0].config.grid[0], 138u);
  EXPECT_EQ(launches[0].config.grid[1], 1u);
  pass.pixels = 1 << 20;
  EXPECT_EQ(plan_affine_concat(pass, 8, true)[0].config.grid[0], 1024u);
  EXPECT_TRUE(plan_affine_concat(pass, 8, true)[0].config.early);
  // And run one on a grid of one block, under its 2 × 256 threads' worth of packs, both layouts.
  EXPECT_EQ(
      run_case({.channels_last = true, .channels = {4, 8}, .batch = 1, .pixels = 300, .expect_vector = 4, .grid_x = 1}),
      0);
  EXPECT_EQ(run_case({.channels = {3}, .batch = 2, .pixels = 400, .expect_vector = 4, .grid_x = 1}), 0);
}

TEST(AffineConcatChecks, EachRefusalNamesWhatWasExpected) {
  const AffineConcat good{.inputs = {256}, .channels = {4}, .output = 256, .scale = 256, .shift = 256};
  EXPECT_NO_THROW(check_affine_concat(good));
  auto message = [](const AffineConcat& pass) {
    try {
      check_affine_concat(pass);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  AffineConcat pass = good;
  pass.inputs.clear();
  pass.channels.clear();
  EXPECT_EQ(message(pass), "affine_concat: no input given");
  pass = good;
  pass.channels.push_back(3);
  EXPECT_EQ(message(pass), "affine_concat: 1 inputs but 2 channel counts: expected one count per input");
  pass = good;
  pass.channels[0] = 0;
  EXPECT_EQ(message(pass), "affine_concat: input 0 has 0 channels: expected at least 1");
  pass = good;
  pass.inputs[0] = 0;
  EXPECT_EQ(message(pass), "affine_concat: input 0 is a null pointer");
  pass = good;
  pass.batch = 0;
  EXPECT_EQ(message(pass), "affine_concat: batch 0: expected at least 1");
  pass = good;
  pass.pixels = 0;
  EXPECT_EQ(message(pass), "affine_concat: pixels 0: expected at least 1");
  pass = good;
  pass.output = 0;
  EXPECT_EQ(message(pass), "affine_concat: the output is a null pointer");
  pass = good;
  pass.shift = 0;
  EXPECT_EQ(message(pass), "affine_concat: scale and shift must both be given (fp32, one per output channel)");
  pass = good;
  pass.act = Activation::clip;
  pass.clip_lo = 1.0f;
  pass.clip_hi = -1.0f;
  EXPECT_EQ(message(pass), "affine_concat: clip bounds 1 and -1: expected clip_lo <= clip_hi");
}

}  // namespace
}  // namespace convgen
