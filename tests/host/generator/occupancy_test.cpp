// occupancy_test: blocks per SM under each of the GPU's limits, and the limits a descriptor leaves at 0.
#include "generator/occupancy.hpp"

#include <gtest/gtest.h>

namespace convgen {
namespace {

TEST(Occupancy, TheTightestOfTheBlockThreadRegisterAndSharedMemoryLimitsWins) {
  Gpu gpu;
  gpu.max_blocks_per_sm = 32;
  gpu.max_threads_per_sm = 2048;
  gpu.regs_per_sm = 65536;
  gpu.smem_per_sm_bytes = 228 * 1024;
  EXPECT_EQ(resident_blocks_per_sm(gpu, 32, 8, 1024), 32);         // the block limit
  EXPECT_EQ(resident_blocks_per_sm(gpu, 256, 8, 1024), 8);         // threads: 2048 / 256
  EXPECT_EQ(resident_blocks_per_sm(gpu, 128, 121, 1024), 4);       // registers: 121 -> 128, 65536 / (128 x 128)
  EXPECT_EQ(resident_blocks_per_sm(gpu, 128, 32, 100 * 1024), 2);  // shared memory: 228 KiB / 100 KiB
  EXPECT_EQ(resident_blocks_per_sm(gpu, 1024, 255, 200 * 1024), 1);  // never fewer than 1
}

TEST(Occupancy, LimitsTheDescriptorLeavesAtZeroAreNotApplied) {
  const Gpu gpu;  // every limit 0: 32 blocks
  EXPECT_EQ(resident_blocks_per_sm(gpu, 1024, 255, 200 * 1024), 32);
}

}  // namespace
}  // namespace convgen
