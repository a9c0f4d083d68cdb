// plan_passes_gpu_test: the zero pass writes zeros over exactly the bytes asked, at any alignment and length (the head
// and tail bytes, the 16-byte body, the grid-stride loop past 1024 blocks), launched normally and early; the relu
// pass writes max(0, x) of exactly the elements asked, 32- and 16-bit, input and output at equal and at different
// alignments.
#include <array>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "conv/conv_kernel.hpp"
#include "conv/plan_passes.hpp"
#include "runtime/device.hpp"
#include "runtime/module.hpp"

namespace convgen {
namespace {

TEST(ZeroPassGpu, ZeroesExactlyTheBytesAskedAtEveryAlignmentAndLength) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: " << no_device_reason();
  Context context(0);
  const Gpu gpu = query_device(0);
  Module module(plan_passes_cubin(gpu.arch), "convgen_plan_passes.cu");
  const Kernel kernel = module.kernel(kZeroPassEntry);
  Stream stream;
  const std::size_t large = 16 * 256 * 1024 * 2 + 40;  // two passes of the grid-stride loop
  DeviceBuffer buffer(large + 64);
  std::vector<std::uint8_t> host(buffer.size());
  for (const std::size_t offset : {0, 1, 3, 8, 15, 16, 17}) {
    for (const std::size_t bytes : {std::size_t{0}, std::size_t{1}, std::size_t{15}, std::size_t{16},
                                    std::size_t{17}, std::size_t{33}, std::size_t{4099}, large}) {
      for (const bool early : {false, has_early_launch(gpu.arch)}) {
        buffer.fill_u8(0xAB, stream.get());
        CUdeviceptr address = buffer.ptr() + offset;
        auto count = static_cast<unsigned long long>(bytes);
        std::array<void*, 2> args = {&address, &count};
        launch(kernel, zero_pass_config(static_cast<std::int64_t>(bytes), early), args, stream.get());
        stream.synchronize();
        buffer.download_bytes(host.data(), host.size());
        std::size_t wrong = 0;
        for (std::size_t i = 0; i < host.size(); ++i) {
          const bool inside = i >= offset && i < offset + bytes;
          wrong += host[i] != (inside ? 0 : 0xAB);
        }
        EXPECT_EQ(wrong, 0u) << "offset " << offset << ", " << bytes << " bytes, early " << early;
      }
    }
  }
}

// max(0, x) of one 32- or 16-bit element, as its sign bit says.
std::uint32_t rectified(std::uint32_t bits, int width) {
  const std::uint32_t sign = width == 32 ? 0x80000000u : 0x8000u;
  return (bits & sign) != 0 ? 0u : bits;
}

TEST(ReluPassGpu, WritesMaxOfZeroAndEachElementAtEveryAlignmentAndLength) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: " << no_device_reason();
  Context context(0);
  const Gpu gpu = query_device(0);
  Module module(plan_passes_cubin(gpu.arch), "convgen_plan_passes.cu");
  Stream stream;
  const std::size_t large = 16 * 256 * 1024 * 2 + 40;  // two passes of the grid-stride loop
  DeviceBuffer in(large + 64), out(large + 64);
  // Every byte pattern of a sign: values alternating in sign, -0, +0, a negative NaN, and the rest.
  std::vector<std::uint8_t> source(in.size());
  for (std::size_t i = 0; i < source.size(); ++i) source[i] = static_cast<std::uint8_t>((i * 37 + 11) ^ (i >> 3));
  in.upload_bytes(source.data(), source.size());
  std::vector<std::uint8_t> host(out.size());
  for (const int width : {32, 16}) {
    const std::size_t element = static_cast<std::size_t>(width) / 8;
    const Kernel kernel = module.kernel(width == 32 ? kReluPass32Entry : kReluPass16Entry);
    for (const auto& [in_offset, out_offset] :
         std::vector<std::pair<std::size_t, std::size_t>>{{0, 0}, {4, 4}, {8, 0}, {12, 12}, {2, 2}, {6, 0}}) {
      if (in_offset % element != 0 || out_offset % element != 0) continue;
      for (const std::size_t elements : {std::size_t{0}, std::size_t{1}, std::size_t{3}, std::size_t{4}, std::size_t{9},
                                         std::size_t{1025}, large / element}) {
        const std::size_t bytes = elements * element;
        for (const bool early : {false, has_early_launch(gpu.arch)}) {
          out.fill_u8(0xAB, stream.get());
          CUdeviceptr src = in.ptr() + in_offset;
          CUdeviceptr dst = out.ptr() + out_offset;
          auto count = static_cast<unsigned long long>(bytes);
          std::array<void*, 3> args = {&src, &dst, &count};
          launch(kernel, relu_pass_config(static_cast<std::int64_t>(bytes), early), args, stream.get());
          stream.synchronize();
          out.download_bytes(host.data(), host.size());
          std::size_t wrong = 0;
          for (std::size_t i = 0; i < host.size(); ++i)
            if (i < out_offset || i >= out_offset + bytes) wrong += host[i] != 0xAB;
          for (std::size_t e = 0; e < elements; ++e) {
            std::uint32_t x = 0, y = 0;
            std::memcpy(&x, source.data() + in_offset + e * element, element);
            std::memcpy(&y, host.data() + out_offset + e * element, element);
            wrong += y != rectified(x, width);
          }
          EXPECT_EQ(wrong, 0u) << width << "-bit, input at +" << in_offset << ", output at +" << out_offset << ", "
                               << elements << " elements, early " << early;
        }
      }
    }
  }
}

}  // namespace
}  // namespace convgen
