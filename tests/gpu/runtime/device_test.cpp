// device_test: the live device's properties are sane and an ordinal out of range is named.
#include "runtime/device.hpp"

#include <regex>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "runtime/driver.hpp"

namespace convgen {
namespace {

class LiveDevice : public testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_available()) GTEST_SKIP() << "no CUDA device: " << no_device_reason();
  }
};

TEST_F(LiveDevice, QueryReturnsSaneProperties) {
  const Gpu gpu = query_device(0);
  std::cout << fmt::format(
      "{}: {}, {} SMs, {} MHz, {} threads/SM, {} regs/SM, smem {}/SM {}/block {} opt-in, L2 {} B, "
      "{:.0f} GB/s, fp32 {:.1f} tf32 {:.1f} fp16 {:.1f} TFLOP/s\n",
      gpu.name, gpu.arch, gpu.sm_count, gpu.clock_mhz, gpu.max_threads_per_sm, gpu.regs_per_sm, gpu.smem_per_sm_bytes,
      gpu.smem_per_block_bytes, gpu.smem_per_block_optin_bytes, gpu.l2_bytes, gpu.dram_bandwidth_gbs,
      gpu.peak_fp32_tflops, gpu.peak_tf32_tflops, gpu.peak_fp16_tflops);
  EXPECT_FALSE(gpu.name.empty());
  EXPECT_TRUE(gpu.arch.starts_with("sm_")) << gpu.arch;
  EXPECT_GT(gpu.sm_count, 0);
  EXPECT_GE(gpu.max_threads_per_block, 512);
  EXPECT_GE(gpu.max_threads_per_sm, gpu.max_threads_per_block);
  EXPECT_GT(gpu.max_blocks_per_sm, 0);
  EXPECT_GT(gpu.regs_per_sm, 0);
  EXPECT_GT(gpu.regs_per_block, 0);
  EXPECT_GE(gpu.smem_per_block_optin_bytes, gpu.smem_per_block_bytes);
  EXPECT_GE(gpu.smem_per_sm_bytes, gpu.smem_per_block_optin_bytes);
  EXPECT_GT(gpu.l2_bytes, 0);
  EXPECT_GT(gpu.dram_bandwidth_gbs, 100);
  EXPECT_GT(gpu.clock_mhz, 100);
  if (arch_rates(compute_capability(gpu))) {
    EXPECT_GT(gpu.peak_fp32_tflops, 1);
  }
}

TEST_F(LiveDevice, CountAndDriverVersionAreReported) {
  EXPECT_GE(device_count(), 1);
  EXPECT_TRUE(std::regex_match(driver_version(), std::regex(R"(\d+\.\d+)"))) << driver_version();
}

TEST_F(LiveDevice, AnOrdinalOutOfRangeIsAnInputError) {
  const int count = device_count();
  try {
    query_device(count);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), fmt::format("device ordinal {}: expected 0 to {} (the driver reports {} device{})",
                                                 count, count - 1, count, count == 1 ? "" : "s"));
  }
}

TEST_F(LiveDevice, MergingAFileKeepsTheLiveLimits) {
  const Gpu live = query_device(0);
  const Gpu file{
      .name = "from a file", .arch = live.arch, .sm_count = 1, .max_regs_per_thread = 255, .peak_fp32_tflops = 12.5};
  const Gpu merged = merge_live(file, live);
  EXPECT_EQ(merged.name, live.name);
  EXPECT_EQ(merged.sm_count, live.sm_count);
  EXPECT_EQ(merged.peak_fp32_tflops, 12.5);
}

}  // namespace
}  // namespace convgen
