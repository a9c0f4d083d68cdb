// zero_pass_gpu_test: the zero pass writes zeros over exactly the bytes asked, at any alignment and length (the head
// and tail bytes, the 16-byte body, the grid-stride loop past 1024 blocks), launched normally and early.
#include <array>
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "conv/conv_kernel.hpp"
#include "conv/zero_pass.hpp"
#include "runtime/device.hpp"
#include "runtime/module.hpp"

namespace convgen {
namespace {

TEST(ZeroPassGpu, ZeroesExactlyTheBytesAskedAtEveryAlignmentAndLength) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: " << no_device_reason();
  Context context(0);
  const Gpu gpu = query_device(0);
  Module module(zero_pass_cubin(gpu.arch), "convgen_zero_pass.cu");
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

}  // namespace
}  // namespace convgen
