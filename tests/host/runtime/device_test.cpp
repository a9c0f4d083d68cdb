// device_test: the per-architecture peak estimates and the merge of a GPU file with the live device.
#include "runtime/device.hpp"

#include <gtest/gtest.h>

namespace convgen {
namespace {

// What query_device reports on an H100 SXM (peaks are filled in by with_estimated_peaks).
Gpu h100_live() {
  return {.name = "NVIDIA H100 80GB HBM3",
          .arch = "sm_90",
          .sm_count = 132,
          .max_threads_per_sm = 2048,
          .max_threads_per_block = 1024,
          .max_blocks_per_sm = 32,
          .regs_per_sm = 65536,
          .regs_per_block = 65536,
          .smem_per_sm_bytes = 233472,
          .smem_per_block_bytes = 49152,
          .smem_per_block_optin_bytes = 232448,
          .l2_bytes = 52428800,
          .dram_bandwidth_gbs = 3352.3,
          .clock_mhz = 1980};
}

TEST(Device, PeaksAreSmsTimesClockTimesLanesForHopper) {
  const Gpu gpu = with_estimated_peaks(h100_live());
  // 132 SMs x 1.98 GHz x 128 lanes x 2 FLOPs per FMA.
  EXPECT_NEAR(gpu.peak_fp32_tflops, 66.908, 1e-3);
  EXPECT_NEAR(gpu.peak_tf32_tflops, 8 * 66.908, 1e-2);
  EXPECT_NEAR(gpu.peak_fp16_tflops, 16 * 66.908, 1e-2);
  EXPECT_NEAR(gpu.peak_bf16_tflops, 16 * 66.908, 1e-2);
}

TEST(Device, AmpereHas64LanesAndVoltaNoTf32OrBf16) {
  EXPECT_EQ(arch_rates(80)->fp32_lanes_per_sm, 64);
  EXPECT_EQ(arch_rates(86)->fp32_lanes_per_sm, 128);
  EXPECT_EQ(arch_rates(70)->tf32_over_fp32, 0);
  EXPECT_EQ(arch_rates(70)->bf16_over_fp32, 0);
  // A100: 108 SMs at 1410 MHz, 19.5 TFLOP/s FP32 and 312 dense FP16 on the datasheet.
  const Gpu a100 = with_estimated_peaks({.arch = "sm_80", .sm_count = 108, .clock_mhz = 1410});
  EXPECT_NEAR(a100.peak_fp32_tflops, 19.49, 0.01);
  EXPECT_NEAR(a100.peak_fp16_tflops, 311.9, 0.1);
}

TEST(Device, AnArchitectureOutsideTheTableKeepsItsPeaks) {
  EXPECT_EQ(arch_rates(120), std::nullopt);
  const Gpu gpu{.arch = "sm_120", .sm_count = 170, .clock_mhz = 2400, .peak_fp32_tflops = 104.8};
  EXPECT_EQ(with_estimated_peaks(gpu), gpu);
}

TEST(Device, LiveValuesWinOverTheFile) {
  Gpu file = h100_live();
  file.name = "NVIDIA H100 SXM";
  file.sm_count = 114;  // a PCIe part's file used on an SXM device
  file.clock_mhz = 1755;
  file.l2_bytes = 1;
  const Gpu live = with_estimated_peaks(h100_live());
  const Gpu merged = merge_live(file, live);
  EXPECT_EQ(merged.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(merged.sm_count, 132);
  EXPECT_EQ(merged.clock_mhz, 1980);
  EXPECT_EQ(merged.l2_bytes, 52428800);
}

TEST(Device, TheFileKeepsItsPeaksItsArchSuffixAndWhatTheDeviceDoesNotReport) {
  Gpu file = h100_live();
  file.arch = "sm_90a";
  file.max_regs_per_thread = 200;
  file.peak_fp32_tflops = 67;
  file.peak_bf16_tflops = 989.4;
  Gpu live = with_estimated_peaks(h100_live());
  live.dram_bandwidth_gbs = 0;  // not reported
  const Gpu merged = merge_live(file, live);
  EXPECT_EQ(merged.arch, "sm_90a");
  EXPECT_EQ(merged.max_regs_per_thread, 200);
  EXPECT_EQ(merged.peak_fp32_tflops, 67);
  EXPECT_EQ(merged.peak_bf16_tflops, 989.4);
  EXPECT_EQ(merged.peak_tf32_tflops, live.peak_tf32_tflops);  // the file had none: the estimate fills it
  EXPECT_EQ(merged.dram_bandwidth_gbs, file.dram_bandwidth_gbs);
}

TEST(Device, ADifferentArchitectureOnTheDeviceReplacesTheFilesArch) {
  Gpu file = h100_live();
  file.arch = "sm_90a";
  Gpu live = h100_live();
  live.arch = "sm_89";
  EXPECT_EQ(merge_live(file, live).arch, "sm_89");
}

}  // namespace
}  // namespace convgen
