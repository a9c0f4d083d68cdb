// cost_model_test: occupancy and waves on real GPU limits, the two bounds, calibration, ranking and accuracy measures.
#include "tuner/cost_model.hpp"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "convgen/error.hpp"
#include "tests/host/tuner/fixtures.hpp"

namespace convgen {
namespace {

using namespace testing_tuner;

TEST(Occupancy, OnH100A256ThreadBlockWith64RegistersAnd16KiBIsLimitedByRegistersToFour) {
  // threads 2048 / 256 = 8; registers 65536 / (64 x 256) = 4; smem 233472 / (16384 + 1024) = 13; blocks 32.
  EXPECT_EQ(occupancy(256, 64, 16 * 1024, h100()), (Occupancy{.blocks_per_sm = 4, .limit = OccupancyLimit::registers}));
}

TEST(Occupancy, RegistersAreAllocatedInUnitsOfEightPerThread) {
  // 33 registers count as 40: 65536 / (40 x 256) = 6, where 33 exactly would give 7.
  EXPECT_EQ(occupancy(256, 33, 0, h100()).blocks_per_sm, 6);
  EXPECT_EQ(occupancy(256, 40, 0, h100()).blocks_per_sm, 6);
}

TEST(Occupancy, ThreadsAreCountedInWholeWarps) {
  // 100 threads take 4 warps: 2048 / 128 = 16 blocks.
  EXPECT_EQ(occupancy(100, 16, 0, h100()), (Occupancy{.blocks_per_sm = 16, .limit = OccupancyLimit::threads}));
}

TEST(Occupancy, SharedMemoryReservesOneKiBPerBlockFromAmpereOn) {
  EXPECT_EQ(occupancy(128, 32, 100 * 1024, h100()), (Occupancy{.blocks_per_sm = 2, .limit = OccupancyLimit::smem}));
  // 48 KiB blocks: H100 holds 233472 / (49152 + 1024) = 4; V100, without the reserve, 98304 / 49152 = 2.
  EXPECT_EQ(occupancy(128, 32, 48 * 1024, h100()).blocks_per_sm, 4);
  EXPECT_EQ(occupancy(128, 32, 48 * 1024, gpu_file("v100_sxm2")).blocks_per_sm, 2);
}

TEST(Occupancy, SmallBlocksAreLimitedByTheResidentBlockCount) {
  EXPECT_EQ(occupancy(64, 16, 0, h100()), (Occupancy{.blocks_per_sm = 32, .limit = OccupancyLimit::blocks}));
}

TEST(Occupancy, ABlockOverAPerBlockLimitCannotLaunch) {
  const Occupancy none{.blocks_per_sm = 0, .limit = OccupancyLimit::cannot_launch};
  EXPECT_EQ(occupancy(1025, 32, 0, h100()), none);
  EXPECT_EQ(occupancy(256, 256, 0, h100()), none);
  EXPECT_EQ(occupancy(256, 32, 228 * 1024, h100()), none);
  EXPECT_EQ(occupancy(1024, 72, 0, h100()), none);  // 72 x 1024 registers > 65536 per block
}

CostFeatures features(std::int64_t blocks, double flops_per_block, double dram_bytes) {
  return {.blocks = blocks,
          .threads_per_block = 256,
          .smem_bytes_per_block = 16 * 1024,
          .flops = flops_per_block * static_cast<double>(blocks),
          .dram_bytes = dram_bytes,
          .flops_per_block = flops_per_block};
}

const PtxasReport k64Registers{.registers = 64};

TEST(Prediction, WavesAndTheLastWaveFillFollowTheResidentBlocks) {
  // 4 resident blocks x 132 SMs = 528 blocks per wave.
  const Prediction full = predict(features(528, 1e6, 1e6), k64Registers, h100());
  EXPECT_EQ(full.resident_blocks_per_sm, 4);
  EXPECT_EQ(full.waves, 1);
  EXPECT_EQ(full.last_wave_fill, 1);
  const Prediction one_more = predict(features(529, 1e6, 1e6), k64Registers, h100());
  EXPECT_EQ(one_more.waves, 2);
  EXPECT_DOUBLE_EQ(one_more.last_wave_fill, 1.0 / 528);
  const Prediction partial = predict(features(1000, 1e6, 1e6), k64Registers, h100());
  EXPECT_EQ(partial.waves, 2);
  EXPECT_DOUBLE_EQ(partial.last_wave_fill, (1000.0 - 528) / 528);
}

TEST(Prediction, AKernelWithManyFlopsPerByteIsComputeBoundAndPaysForEveryWave) {
  const Gpu gpu = h100();
  const Coefficients c{.compute = 2.0, .memory = 1.5, .launch_us = 4.0};
  const Prediction p = predict(features(529, 1e7, 1e6), k64Registers, gpu, c);
  const double flops_per_us_per_sm = gpu.peak_fp32_tflops * 1e6 / gpu.sm_count;
  const double compute = 2 /*waves*/ * 2.0 * 1e7 * 4 / flops_per_us_per_sm;
  EXPECT_TRUE(p.compute_bound);
  EXPECT_DOUBLE_EQ(p.compute_us, compute);
  EXPECT_DOUBLE_EQ(p.memory_us, 1.5 * 1e6 / (gpu.dram_bandwidth_gbs * 1e3));
  EXPECT_DOUBLE_EQ(p.time_us, compute + 4.0);
}

TEST(Prediction, AKernelWithFewFlopsPerByteIsMemoryBoundAndPaysOnlyForItsBytes) {
  const Gpu gpu = h100();
  const Prediction p = predict(features(529, 1e3, 2e9), k64Registers, gpu);
  EXPECT_FALSE(p.compute_bound);
  // (waves - 1 + eps) x bytes per wave is the launch's bytes: a nearly empty last wave costs nearly nothing.
  EXPECT_NEAR(p.memory_us, 2e9 / (gpu.dram_bandwidth_gbs * 1e3), 1e-9);
  EXPECT_NEAR(p.time_us, p.memory_us + Coefficients{}.launch_us, 1e-9);
}

TEST(Prediction, ThePeakFollowsTheMathPrecision) {
  const Prediction fp32 = predict(features(528, 1e8, 1e3), k64Registers, h100(), {}, Precision::fp32);
  const Prediction fp16 = predict(features(528, 1e8, 1e3), k64Registers, h100(), {}, Precision::fp16);
  EXPECT_NEAR(fp32.compute_us / fp16.compute_us, h100().peak_fp16_tflops / h100().peak_fp32_tflops, 1e-9);
}

TEST(Prediction, SharedMemoryIsTheLargerOfTheFeaturesAndTheReport) {
  CostFeatures f = features(528, 1e6, 1e6);
  f.smem_bytes_per_block = 0;
  EXPECT_EQ(predict(f, {.registers = 32, .smem_bytes = 100 * 1024}, h100()).resident_blocks_per_sm, 2);
}

TEST(Prediction, AKernelThatCannotLaunchIsInfinitelySlow) {
  const Prediction p = predict(features(528, 1e6, 1e6), {.registers = 255, .smem_bytes = 0}, h100());
  EXPECT_EQ(p.resident_blocks_per_sm, 1);  // 256 x 256 = 65536 registers: one block fits
  const Prediction none = predict(features(528, 1e6, 1e6), {.registers = 32, .smem_bytes = 300 * 1024}, h100());
  EXPECT_EQ(none.resident_blocks_per_sm, 0);
  EXPECT_TRUE(std::isinf(none.time_us));
}

TEST(Prediction, ALaunchWithoutBlocksIsRefused) {
  try {
    predict(features(0, 1, 1), k64Registers, h100());
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "cost model: the launch must have at least one block, got 0");
  }
}

TEST(Rank, OrdersByPredictedTimeWithTiesInPlaceAndUnlaunchableLast) {
  std::vector<Prediction> p(5);
  p[0].time_us = 5;
  p[2].time_us = 2;
  p[3].time_us = 5;
  p[4].time_us = 1;  // p[1] keeps the default: cannot launch
  EXPECT_EQ(rank(p), (std::vector<std::size_t>{4, 2, 0, 3, 1}));
}

// Synthetic kernels on both sides of the bound: blocks from a fraction of a wave to many, a range of FLOPs and
// bytes per block, and three register counts.
std::vector<CalibrationSample> synthetic(const Gpu& gpu, const Coefficients& truth) {
  std::vector<CalibrationSample> out;
  for (const std::int64_t blocks : {100, 528, 700, 5000})
    for (const double flops_per_block : {1e4, 1e6, 3e7})
      for (const double bytes_per_block : {1e3, 1e5, 1e6})
        for (const int registers : {32, 64, 128}) {
          CostFeatures f = features(blocks, flops_per_block, bytes_per_block * static_cast<double>(blocks));
          const PtxasReport r{.registers = registers};
          out.push_back({.features = f, .report = r, .measured_us = predict(f, r, gpu, truth).time_us});
        }
  return out;
}

TEST(Calibration, RecoversKnownCoefficientsFromExactMeasurements) {
  const Coefficients truth{.compute = 1.7, .memory = 1.3, .launch_us = 4.5};
  const auto samples = synthetic(h100(), truth);
  const Calibration fit = calibrate(samples, h100());
  EXPECT_EQ(fit.samples, static_cast<int>(samples.size()));
  EXPECT_NEAR(fit.coefficients.compute, truth.compute, 1e-6);
  EXPECT_NEAR(fit.coefficients.memory, truth.memory, 1e-6);
  EXPECT_NEAR(fit.coefficients.launch_us, truth.launch_us, 1e-6);
  EXPECT_LT(fit.rms_relative_error, 1e-9);
}

TEST(Calibration, RecoversCoefficientsFarFromTheDefaultsAndStaysNonNegative) {
  const Coefficients truth{.compute = 6.0, .memory = 0.4, .launch_us = 0.0};
  const Calibration fit = calibrate(synthetic(h100(), truth), h100());
  EXPECT_NEAR(fit.coefficients.compute, truth.compute, 1e-6);
  EXPECT_NEAR(fit.coefficients.memory, truth.memory, 1e-6);
  EXPECT_GE(fit.coefficients.launch_us, 0.0);
  EXPECT_NEAR(fit.coefficients.launch_us, 0.0, 1e-6);
}

TEST(Calibration, WithNoisyMeasurementsLandsNearTheTruth) {
  const Coefficients truth{.compute = 1.4, .memory = 1.2, .launch_us = 3.0};
  auto samples = synthetic(h100(), truth);
  for (std::size_t i = 0; i < samples.size(); ++i) samples[i].measured_us *= 1 + 0.03 * std::sin(double(i) * 1.7);
  const Calibration fit = calibrate(samples, h100());
  EXPECT_NEAR(fit.coefficients.compute, truth.compute, 0.1);
  EXPECT_NEAR(fit.coefficients.memory, truth.memory, 0.1);
  EXPECT_LT(fit.rms_relative_error, 0.05);
}

TEST(Calibration, NeedsThreeKernelsThatLaunch) {
  auto samples = synthetic(h100(), {});
  samples.resize(3);
  samples[2].report.smem_bytes = 300 * 1024;  // cannot launch: not usable
  try {
    calibrate(samples, h100());
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "calibrate: need at least 3 measurements of kernels that launch, got 2");
  }
}

TEST(Calibration, IsStoredPerGpuInTheTuningDatabase) {
  ScratchDir dir;
  TuningDb db = TuningDb::open(dir / "t.sqlite");
  EXPECT_EQ(load_calibration(db, h100()), std::nullopt);
  const Calibration c{.coefficients = {.compute = 1.25, .memory = 0.875, .launch_us = 2.5},
                      .samples = 40,
                      .rms_relative_error = 0.0625};
  save_calibration(db, h100(), c);
  EXPECT_EQ(load_calibration(db, h100()), c);
  EXPECT_EQ(load_calibration(db, h200()), std::nullopt);
  // Another version of the model's formula does not use this fit.
  EXPECT_EQ(db.load_calibration(h100(), cost_model_version + 1), std::nullopt);
}

TEST(Spearman, IsOneForTheSameOrderAndMinusOneForTheReverse) {
  const std::vector<double> a{1, 2, 3, 4, 5};
  EXPECT_DOUBLE_EQ(spearman(a, std::vector<double>{10, 20, 30, 40, 50}), 1.0);
  EXPECT_DOUBLE_EQ(spearman(a, std::vector<double>{9, 7, 5, 3, 1}), -1.0);
  EXPECT_DOUBLE_EQ(spearman(a, std::vector<double>{1, 4, 9, 16, 1000}), 1.0);  // ranks, not values
}

TEST(Spearman, GivesTiesTheirAverageRank) {
  // Ranks of b: 1, 2, 3.5, 5, 3.5 -> rho = 8 / sqrt(10 x 9.5).
  EXPECT_DOUBLE_EQ(spearman(std::vector<double>{1, 2, 3, 4, 5}, std::vector<double>{5, 6, 7, 8, 7}),
                   8 / std::sqrt(95.0));
}

TEST(Spearman, IsUndefinedForAConstantSeriesAndRefusesMismatchedOnes) {
  EXPECT_TRUE(std::isnan(spearman(std::vector<double>{1, 2, 3}, std::vector<double>{4, 4, 4})));
  try {
    spearman(std::vector<double>{1, 2, 3}, std::vector<double>{1, 2});
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "spearman: the series must be equally long, got 3 and 2");
  }
  EXPECT_THROW(spearman(std::vector<double>{1}, std::vector<double>{1}), InputError);
}

TEST(BestInTopK, AsksWhetherTheMeasuredBestIsAmongTheKPredictedFastest) {
  const std::vector<double> predicted{3, 1, 2, 4};
  const std::vector<double> measured{10, 12, 11, 9};  // the true best, index 3, is predicted slowest
  EXPECT_FALSE(best_in_top_k(predicted, measured, 1));
  EXPECT_FALSE(best_in_top_k(predicted, measured, 3));
  EXPECT_TRUE(best_in_top_k(predicted, measured, 4));
  // SEER's rule: a pick within 12% of the best counts (10 <= 9 x 1.12).
  EXPECT_TRUE(best_in_top_k(predicted, measured, 3, 0.12));
  EXPECT_FALSE(best_in_top_k(predicted, measured, 2, 0.12));
}

}  // namespace
}  // namespace convgen
