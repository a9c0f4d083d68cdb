// cost_model_test: occupancy, the model's terms and their weighted sum, non-negative least squares, calibration per
// family, its storage, ranking and accuracy measures.
#include "tuner/cost_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "convgen/error.hpp"
#include "generator/family.hpp"
#include "support/errors.hpp"
#include "tests/host/tuner/fixtures.hpp"

namespace convgen {
namespace {

using namespace testing_tuner;
using testing_support::input_error;

std::size_t at(CostTerm term) { return static_cast<std::size_t>(term); }

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

// A launch of 1000 blocks of 256 threads with 16 KiB, its per-block work chosen so that on an H100 (132 SMs at
// 1980 MHz, 3350 GB/s) every term comes out a round number; see TheTermsFollowTheirFormulas.
CostFeatures hand_computed(std::int64_t blocks = 1000) {
  return {.blocks = blocks,
          .threads_per_block = 256,
          .smem_bytes_per_block = 16 * 1024,
          .dram_bytes = 6.7e6,
          .fma_instructions = 9900,
          .shared_load_instructions = 3960,
          .global_load_instructions = 1980,
          .address_instructions = 990,
          .main_loop_steps = 36,
          .pipelined = false,
          .atomic_outputs = 837500,
          .extra_launches = 1};
}

const PtxasReport k64Registers{.registers = 64};

TEST(CostTerms, TheTermsFollowTheirFormulas) {
  const Gpu gpu = h100();
  ASSERT_EQ(gpu.sm_count, 132);
  ASSERT_EQ(gpu.clock_mhz, 1980.0);
  ASSERT_EQ(gpu.dram_bandwidth_gbs, 3350.0);
  const std::optional<CostTerms> t = cost_terms(hand_computed(), k64Registers, gpu);
  ASSERT_TRUE(t.has_value());
  // The busiest SM runs ceil(1000 / 132) = 8 blocks; 4 schedulers at 1980 MHz issue 4 x 1980 = 7920 per µs.
  EXPECT_DOUBLE_EQ((*t)[at(CostTerm::fma)], 10.0);          // 8 x 9900 / 7920
  EXPECT_DOUBLE_EQ((*t)[at(CostTerm::shared_loads)], 4.0);  // 8 x 3960 / 7920
  EXPECT_DOUBLE_EQ((*t)[at(CostTerm::global_loads)], 2.0);  // 8 x 1980 / 7920
  EXPECT_DOUBLE_EQ((*t)[at(CostTerm::address)], 1.0);       // 8 x 990 / 7920
  // 64 registers x 256 threads: 4 resident blocks per SM, 528 per wave; 1000 blocks take 2 waves; 2 x 36 steps,
  // not pipelined.
  EXPECT_DOUBLE_EQ((*t)[at(CostTerm::serial_steps)], 72.0);
  EXPECT_DOUBLE_EQ((*t)[at(CostTerm::pipelined_steps)], 0.0);
  EXPECT_DOUBLE_EQ((*t)[at(CostTerm::waves)], 2.0);
  EXPECT_DOUBLE_EQ((*t)[at(CostTerm::atomics)], 1.0);  // 837500 x 4 B / (3350 GB/s = 3.35e6 B/µs)
  EXPECT_DOUBLE_EQ((*t)[at(CostTerm::extra_launches)], 1.0);
  EXPECT_DOUBLE_EQ((*t)[at(CostTerm::dram)], 2.0);  // 6.7e6 B / 3.35e6 B/µs
  EXPECT_DOUBLE_EQ((*t)[at(CostTerm::launch)], 1.0);
}

TEST(CostTerms, APipelinedKernelCountsItsStepsAsPipelinedOnly) {
  CostFeatures f = hand_computed();
  f.pipelined = true;
  const CostTerms t = *cost_terms(f, k64Registers, h100());
  EXPECT_DOUBLE_EQ(t[at(CostTerm::serial_steps)], 0.0);
  EXPECT_DOUBLE_EQ(t[at(CostTerm::pipelined_steps)], 72.0);  // 2 waves x 36 steps
}

// Another launch's exposed chain (winograd_gemm's transforms) is counted once, whatever the main launch's waves, and
// whether or not its loop is pipelined.
TEST(CostTerms, ExtraSerialStepsAddToTheSerialTermOnceNotPerWave) {
  CostFeatures f = hand_computed();
  f.extra_serial_steps = 2.5;
  EXPECT_DOUBLE_EQ((*cost_terms(f, k64Registers, h100()))[at(CostTerm::serial_steps)], 74.5);  // 2 waves x 36 + 2.5
  f.pipelined = true;
  const CostTerms t = *cost_terms(f, k64Registers, h100());
  EXPECT_DOUBLE_EQ(t[at(CostTerm::serial_steps)], 2.5);
  EXPECT_DOUBLE_EQ(t[at(CostTerm::pipelined_steps)], 72.0);
}

TEST(CostTerms, IssueTermsCountTheBlocksOfTheBusiestSmAndStepsCountWaves) {
  // 132 blocks: one per SM, one wave. 133 blocks: one SM runs 2, still one wave (528 fit at once).
  const CostTerms one = *cost_terms(hand_computed(132), k64Registers, h100());
  EXPECT_DOUBLE_EQ(one[at(CostTerm::fma)], 1.25);  // 1 x 9900 / 7920
  EXPECT_DOUBLE_EQ(one[at(CostTerm::serial_steps)], 36.0);
  const CostTerms two = *cost_terms(hand_computed(133), k64Registers, h100());
  EXPECT_DOUBLE_EQ(two[at(CostTerm::fma)], 2.5);  // 2 x 9900 / 7920
  EXPECT_DOUBLE_EQ(two[at(CostTerm::serial_steps)], 36.0);
  EXPECT_DOUBLE_EQ(two[at(CostTerm::waves)], 1.0);
}

// hand_computed's blocks have 256 threads (8 warps). 132 blocks: one per SM, 8 warps at once; at 0.25 instructions per
// warp and cycle they issue 2 per cycle, half the 4 schedulers: the issue terms double. 1000 blocks: 4 resident per SM
// (32 warps), so the schedulers bound the issue again, as at rate 0 (the schedulers alone).
TEST(CostTerms, FewWarpsOnAnSmIssueAtTheirOwnRateWhenTheFamilyGivesOne) {
  CostFeatures few = hand_computed(132);
  few.warp_issue_rate = 0.25;
  const CostTerms slow = *cost_terms(few, k64Registers, h100());
  EXPECT_DOUBLE_EQ(slow[at(CostTerm::fma)], 2.5);  // 1 x 9900 / (2 x 1980)
  EXPECT_DOUBLE_EQ(slow[at(CostTerm::shared_loads)], 1.0);  // 1 x 3960 / 3960
  EXPECT_DOUBLE_EQ(slow[at(CostTerm::serial_steps)], 36.0);  // the other terms as before
  few.warp_issue_rate = 1;  // 8 warps x 1: the schedulers' 4 bound it
  EXPECT_DOUBLE_EQ((*cost_terms(few, k64Registers, h100()))[at(CostTerm::fma)], 1.25);
  CostFeatures many = hand_computed();
  many.warp_issue_rate = 0.25;
  EXPECT_EQ(*cost_terms(many, k64Registers, h100()), *cost_terms(hand_computed(), k64Registers, h100()));
}

TEST(CostTerms, AKernelThatCannotLaunchHasNone) {
  EXPECT_EQ(cost_terms(hand_computed(), {.registers = 32, .smem_bytes = 300 * 1024}, h100()), std::nullopt);
}

// Weights with every term distinct, and another set for the other family.
Coefficients test_coefficients() {
  Coefficients c;
  c.of("igemm") = {1, 2, 3, 4, 0.5, 0.25, 5, 6, 7, 8, 9};
  c.of("direct") = {1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1};
  return c;
}

TEST(Prediction, IsTheSumOfTheFamilysWeightsTimesTheTerms) {
  const Coefficients c = test_coefficients();
  // Terms (TheTermsFollowTheirFormulas): fma 10, shared 4, global 2, address 1, serial 72, pipelined 0, waves 2,
  // atomics 1, extra launches 1, dram 2, launch 1.
  const Prediction igemm = predict("igemm", hand_computed(), k64Registers, h100(), c);
  // 10x1 + 4x2 + 2x3 + 1x4 + 72x0.5 + 0x0.25 + 2x5 + 1x6 + 1x7 + 2x8 + 1x9 = 112
  EXPECT_DOUBLE_EQ(igemm.time_us, 112.0);
  EXPECT_EQ(igemm.terms_us, (CostTerms{10, 8, 6, 4, 36, 0, 10, 6, 7, 16, 9}));
  EXPECT_EQ(igemm.largest_term(), CostTerm::serial_steps);
  // 10 + 4 + 2 + 1 + 0 (serial weighs 0) + 0 + 2 + 1 + 1 + 2 + 1 = 24
  const Prediction direct = predict("direct", hand_computed(), k64Registers, h100(), c);
  EXPECT_DOUBLE_EQ(direct.time_us, 24.0);
  EXPECT_EQ(direct.largest_term(), CostTerm::fma);
  for (const Prediction& p : {igemm, direct}) {
    double sum = 0;
    for (double part : p.terms_us) sum += part;
    EXPECT_DOUBLE_EQ(sum, p.time_us);
    EXPECT_EQ(p.resident_blocks_per_sm, 4);
    EXPECT_EQ(p.waves, 2);
  }
}

TEST(Prediction, UsesTheDefaultWeightsOfTheFamilyByDefault) {
  const CostTerms terms = *cost_terms(hand_computed(), k64Registers, h100());
  EXPECT_NE(family("igemm").default_cost_weights(), family("direct").default_cost_weights());
  for (const std::string_view name : {"igemm", "direct"}) {
    SCOPED_TRACE(name);
    const CostTerms defaults = family(name).default_cost_weights();
    double expected = 0;
    for (std::size_t t = 0; t < cost_term_count; ++t) expected += terms[t] * defaults[t];
    EXPECT_DOUBLE_EQ(predict(name, hand_computed(), k64Registers, h100()).time_us, expected);
  }
}

TEST(Prediction, WavesAndTheLastWaveFillFollowTheResidentBlocks) {
  // 4 resident blocks x 132 SMs = 528 blocks per wave.
  const Prediction full = predict("igemm", hand_computed(528), k64Registers, h100());
  EXPECT_EQ(full.resident_blocks_per_sm, 4);
  EXPECT_EQ(full.waves, 1);
  EXPECT_EQ(full.last_wave_fill, 1);
  const Prediction one_more = predict("igemm", hand_computed(529), k64Registers, h100());
  EXPECT_EQ(one_more.waves, 2);
  EXPECT_DOUBLE_EQ(one_more.last_wave_fill, 1.0 / 528);
  const Prediction partial = predict("igemm", hand_computed(1000), k64Registers, h100());
  EXPECT_EQ(partial.waves, 2);
  EXPECT_DOUBLE_EQ(partial.last_wave_fill, (1000.0 - 528) / 528);
}

TEST(Prediction, SharedMemoryIsTheLargerOfTheFeaturesAndTheReport) {
  CostFeatures f = hand_computed(528);
  f.smem_bytes_per_block = 0;
  EXPECT_EQ(predict("igemm", f, {.registers = 32, .smem_bytes = 100 * 1024}, h100()).resident_blocks_per_sm,
            2);
}

TEST(Prediction, AKernelThatCannotLaunchIsInfinitelySlow) {
  const Prediction p = predict("igemm", hand_computed(528), {.registers = 255, .smem_bytes = 0}, h100());
  EXPECT_EQ(p.resident_blocks_per_sm, 1);  // 256 x 256 = 65536 registers: one block fits
  EXPECT_TRUE(std::isfinite(p.time_us));
  const Prediction none =
      predict("igemm", hand_computed(528), {.registers = 32, .smem_bytes = 300 * 1024}, h100());
  EXPECT_EQ(none.resident_blocks_per_sm, 0);
  EXPECT_TRUE(std::isinf(none.time_us));
  EXPECT_EQ(none.terms_us, CostTerms{});
}

TEST(Prediction, ALaunchWithoutBlocksIsRefused) {
  EXPECT_EQ(input_error([] { predict("igemm", hand_computed(0), k64Registers, h100()); }),
            "cost model: the launch must have at least one block, got 0");
  EXPECT_EQ(input_error([] { cost_terms(hand_computed(0), k64Registers, h100()); }),
            "cost model: the launch must have at least one block, got 0");
}

TEST(Prediction, AGpuWithoutClockSmsOrBandwidthIsRefused) {
  const std::string expected =
      "cost model: NVIDIA H100 80GB HBM3 must give a positive SM count, clock and DRAM bandwidth";
  Gpu gpu = h100();
  gpu.clock_mhz = 0;
  EXPECT_EQ(input_error([&] { predict("direct", hand_computed(), k64Registers, gpu); }), expected);
  gpu = h100();
  gpu.sm_count = 0;
  EXPECT_EQ(input_error([&] { predict("direct", hand_computed(), k64Registers, gpu); }), expected);
  gpu = h100();
  gpu.dram_bandwidth_gbs = 0;
  EXPECT_EQ(input_error([&] { cost_terms(hand_computed(), k64Registers, gpu); }), expected);
}

TEST(DefaultCoefficients, AreNonNegativeAsAFitGivesThemAndNeverAllZero) {
  for (const Family* f : all_families()) {
    SCOPED_TRACE(f->name());
    const CostTerms weights = f->default_cost_weights();
    for (double w : weights) EXPECT_GE(w, 0.0);
    EXPECT_TRUE(std::any_of(weights.begin(), weights.end(), [](double w) { return w > 0; }));
  }
}

TEST(DefaultCoefficients, PredictAPositiveTimeForEveryCandidateOfTypicalLayers) {
  const Gpu gpu = h200();
  for (const Problem& p : {conv3x3(), conv1x1()})
    for (const std::string_view kind : {"igemm", "direct"})
      for (const KernelSpec& s : family(kind).enumerate(p, gpu)) {
        const Prediction prediction = predict(kind, family(kind).cost_features(p, s), k64Registers, gpu);
        EXPECT_TRUE(std::isfinite(prediction.time_us) && prediction.time_us > 0) << kernel_name(s);
      }
}

TEST(DescribeCoefficients, ListsEachFamilysNonZeroWeightsOrSaysAllZero) {
  Coefficients c;
  for (const Family* f : all_families()) c.of(f->name()).fill(0);
  c.of("igemm")[at(CostTerm::launch)] = 3.14159;
  c.of("igemm")[at(CostTerm::fma)] = 0.5;
  std::string expected;  // every registered family, by name
  for (const Family* f : all_families())
    expected += fmt::format("{}{}: {}", expected.empty() ? "" : "; ", f->name(),
                            f->name() == "igemm" ? "fma 0.5, launch 3.14" : "all 0");
  EXPECT_EQ(describe_coefficients(c), expected);
}

TEST(Rank, OrdersByPredictedTimeWithTiesInPlaceAndUnlaunchableLast) {
  std::vector<Prediction> p(5);
  p[0].time_us = 5;
  p[2].time_us = 2;
  p[3].time_us = 5;
  p[4].time_us = 1;  // p[1] keeps the default: cannot launch
  EXPECT_EQ(rank(p), (std::vector<std::size_t>{4, 2, 0, 3, 1}));
}

// ---- Non-negative least squares ---------------------------------------------------------------------------------

TEST(NonnegativeLeastSquares, RecoversAnExactNonNegativeSolution) {
  // 4 rows x 3 columns; b = A (1, 2, 0.5).
  const std::vector<double> a{1, 2, 0,  //
                              0, 1, 1,  //
                              2, 0, 1,  //
                              1, 1, 1};
  const std::vector<double> b{5, 2.5, 2.5, 3.5};
  const std::vector<double> x = nonnegative_least_squares(a, b, 3);
  ASSERT_EQ(x.size(), 3u);
  EXPECT_NEAR(x[0], 1.0, 1e-12);
  EXPECT_NEAR(x[1], 2.0, 1e-12);
  EXPECT_NEAR(x[2], 0.5, 1e-12);
}

TEST(NonnegativeLeastSquares, HoldsAtZeroAComponentTheUnconstrainedFitMakesNegative) {
  // Columns (1, 0, 1) and (0, 1, 1), b = (1, -1, 0). Unconstrained: AᵀA = [[2, 1], [1, 2]], Aᵀb = (1, -1), so
  // x = (1, -1). With x2 >= 0: x2 = 0 and x1 minimizes (x1 - 1)² + 1 + x1², x1 = 0.5; the gradient of x2 there,
  // Aᵀ(b - Ax) = -1 - 0.5 = -1.5 < 0, keeps it at 0.
  const std::vector<double> a{1, 0,  //
                              0, 1,  //
                              1, 1};
  const std::vector<double> x = nonnegative_least_squares(a, std::vector<double>{1, -1, 0}, 2);
  EXPECT_NEAR(x[0], 0.5, 1e-12);
  EXPECT_EQ(x[1], 0.0);
}

TEST(NonnegativeLeastSquares, DropsAVariableThatEnteredFirstAndRefitsTheOthers) {
  // Columns a1 = (3, 1, 0), a2 = (1, 0, 0), a3 = (0, 0, 1); b = (3, -0.5, 2). Unconstrained: x = (-0.5, 4.5, 2).
  // Clamping that gives (0, 4.5, 2), which is wrong: with x1 = 0, x2 = 3 fits the first row exactly. The answer
  // (0, 3, 2) leaves r = b - Ax = (0, -0.5, 0) and gradient Aᵀr = (-0.5, 0, 0): x1 stays at 0. a1 has the largest
  // gradient at the start (Aᵀb = (8.5, 3, 2)), so the method takes it in first and has to drop it again.
  const std::vector<double> a{3, 1, 0,  //
                              1, 0, 0,  //
                              0, 0, 1};
  const std::vector<double> x = nonnegative_least_squares(a, std::vector<double>{3, -0.5, 2}, 3);
  EXPECT_EQ(x[0], 0.0);
  EXPECT_NEAR(x[1], 3.0, 1e-12);
  EXPECT_NEAR(x[2], 2.0, 1e-12);
}

TEST(NonnegativeLeastSquares, ADuplicatedColumnDoesNotBreakIt) {
  // Columns 0 and 1 are the same, (1, 0, 1, 2); column 2 is (0, 1, 1, 0); b = 2 x column 0 + column 2.
  const std::vector<double> a{1, 1, 0,  //
                              0, 0, 1,  //
                              1, 1, 1,  //
                              2, 2, 0};
  const std::vector<double> x = nonnegative_least_squares(a, std::vector<double>{2, 1, 3, 4}, 3);
  ASSERT_EQ(x.size(), 3u);
  for (double v : x) {
    EXPECT_TRUE(std::isfinite(v));
    EXPECT_GE(v, 0.0);
  }
  EXPECT_NEAR(x[0] + x[1], 2.0, 1e-12);
  EXPECT_NEAR(x[2], 1.0, 1e-12);
}

TEST(NonnegativeLeastSquares, AColumnMuchSmallerThanTheOthersIsNotTakenForADependentOne) {
  // Orthogonal columns (1e-7, 0) and (0, 1), b = (1, 1): the exact answer is (1e7, 1). The first column's squared
  // norm, 1e-14, is tiny beside the second's, but it is independent of it and needed.
  const std::vector<double> a{1e-7, 0,  //
                              0, 1};
  const std::vector<double> x = nonnegative_least_squares(a, std::vector<double>{1, 1}, 2);
  EXPECT_NEAR(x[0], 1e7, 1e7 * 1e-12);
  EXPECT_NEAR(x[1], 1.0, 1e-12);
}

TEST(NonnegativeLeastSquares, AZeroColumnGetsZero) {
  const std::vector<double> a{1, 0,  //
                              2, 0};
  const std::vector<double> x = nonnegative_least_squares(a, std::vector<double>{3, 6}, 2);
  EXPECT_NEAR(x[0], 3.0, 1e-12);
  EXPECT_EQ(x[1], 0.0);
}

TEST(NonnegativeLeastSquares, AllNegativeCorrelationsGiveZero) {
  const std::vector<double> a{1, 2,  //
                              1, 1};
  EXPECT_EQ(nonnegative_least_squares(a, std::vector<double>{-1, -2}, 2), (std::vector<double>{0, 0}));
}

TEST(NonnegativeLeastSquares, RefusesAMatrixOfTheWrongSize) {
  const std::vector<double> five(5, 1.0), two(2, 1.0);
  EXPECT_EQ(input_error([&] { nonnegative_least_squares(five, two, 3); }),
            "nonnegative_least_squares: a has 5 values, expected 2 rows x 3 columns");
  EXPECT_EQ(input_error([&] { nonnegative_least_squares(std::vector<double>{}, two, 0); }),
            "nonnegative_least_squares: a has 0 values, expected 2 rows x 0 columns");
}

// ---- Calibration ------------------------------------------------------------------------------------------------

// A small deterministic generator (an LCG) for synthetic kernels.
class Lcg {
 public:
  explicit Lcg(std::uint64_t seed) : state_(seed) {}
  double uniform() {  // in [0, 1)
    state_ = state_ * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(state_ >> 11) / 9007199254740992.0;
  }
  double between(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  int integer(int lo, int hi) { return lo + static_cast<int>(uniform() * (hi - lo + 1)); }

 private:
  std::uint64_t state_;
};

// `count` kernels of a family with varied launches and work of every kind the family has, timed exactly by `truth`:
// igemm kernels use every term; direct kernels have no address arithmetic, pipelining, atomics or extra launches.
std::vector<CalibrationSample> synthetic(std::string_view family, int count, const Coefficients& truth, const Gpu& gpu,
                                         std::uint64_t seed = 1) {
  Lcg r(seed);
  std::vector<CalibrationSample> out;
  while (static_cast<int>(out.size()) < count) {
    const bool igemm = family == "igemm";
    const bool split = igemm && r.uniform() < 0.4;
    const CostFeatures f{.blocks = r.integer(20, 6000),
                         .threads_per_block = 64 * r.integer(1, 4),
                         .smem_bytes_per_block = 1024 * r.integer(1, 40),
                         .dram_bytes = r.between(1e5, 5e7),
                         .fma_instructions = r.between(1e3, 1e5),
                         .shared_load_instructions = r.between(1e2, 2e4),
                         .global_load_instructions = r.between(1e2, 1e4),
                         .address_instructions = igemm ? r.between(1e2, 2e4) : 0,
                         .main_loop_steps = r.integer(2, 150),
                         .pipelined = igemm && r.uniform() < 0.5,
                         .atomic_outputs = split ? r.between(1e4, 1e7) : 0,
                         .extra_launches = split ? 1 : 0};
    const PtxasReport report{.registers = 8 * r.integer(3, 16)};
    const Prediction p = predict(family, f, report, gpu, truth);
    if (!std::isfinite(p.time_us)) continue;
    out.push_back({.family = std::string(family), .features = f, .report = report, .measured_us = p.time_us});
  }
  return out;
}

Coefficients truth() {
  Coefficients c;
  c.of("igemm") = {2.5, 0, 3, 0.75, 0.5, 0.25, 2, 5, 2, 1.5, 3};
  c.of("direct") = {0.5, 9.5, 17, 0, 0.4, 0, 2.5, 0, 0, 0.25, 1};
  return c;
}

void expect_weights_near(const CostTerms& actual, const CostTerms& expected) {
  for (std::size_t t = 0; t < cost_term_count; ++t)
    EXPECT_NEAR(actual[t], expected[t], 1e-6 * std::max(1.0, expected[t])) << EnumNames<CostTerm>::table[t].second;
}

std::vector<CalibrationSample> concat(std::vector<CalibrationSample> a, const std::vector<CalibrationSample>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(Calibration, RecoversEachFamilysWeightsFromExactMeasurements) {
  const Gpu gpu = h100();
  const auto samples =
      concat(synthetic("igemm", 80, truth(), gpu), synthetic("direct", 60, truth(), gpu, 2));
  const Calibration fit = calibrate(samples, gpu);
  EXPECT_EQ(fit.samples, 140);
  for (const std::string_view family : {"igemm", "direct"}) {
    SCOPED_TRACE(family);
    const FamilyCalibration& fc = fit.families.at(std::string(family));
    EXPECT_EQ(fc.samples, family == "igemm" ? 80 : 60);
    EXPECT_TRUE(fc.fitted);
    EXPECT_LT(fc.rms_relative_error, 1e-9);
    expect_weights_near(fit.coefficients.of(family), truth().of(family));
  }
}

TEST(Calibration, FitsEachFamilyOnItsOwnSamples) {
  // The igemm fit is the same with or without direct samples beside it, and direct samples timed by wildly other
  // weights do not move it.
  const Gpu gpu = h100();
  const auto igemm = synthetic("igemm", 50, truth(), gpu);
  Coefficients other = truth();
  for (double& w : other.of("direct")) w *= 7;
  const Calibration alone = calibrate(igemm, gpu);
  const Calibration beside = calibrate(concat(igemm, synthetic("direct", 40, other, gpu, 3)), gpu);
  expect_weights_near(alone.coefficients.of("igemm"), truth().of("igemm"));
  EXPECT_EQ(beside.coefficients.of("igemm"), alone.coefficients.of("igemm"));
  expect_weights_near(beside.coefficients.of("direct"), other.of("direct"));
}

TEST(Calibration, GivesZeroToTermsNoSampleExercises) {
  // Direct samples never have address arithmetic, pipelined steps, atomics or extra launches: whatever the start
  // said, those weights become 0.
  const Gpu gpu = h100();
  Coefficients start;
  start.of("direct").fill(1.0);
  const Calibration fit = calibrate(synthetic("direct", 40, truth(), gpu), gpu, start);
  for (const CostTerm term :
       {CostTerm::address, CostTerm::pipelined_steps, CostTerm::atomics, CostTerm::extra_launches})
    EXPECT_EQ(fit.coefficients.of("direct")[at(term)], 0.0) << to_string(term);
}

TEST(Calibration, AFamilyWithTooFewSamplesKeepsItsStartWeights) {
  const Gpu gpu = h100();
  Coefficients start = truth();
  start.of("direct") = {1, 2, 3, 0, 1, 0, 1, 0, 0, 1, 1};
  // The direct samples are timed by twice the start's weights: kept, those predict half of every time, a relative
  // error of -0.5 each.
  Coefficients twice = start;
  for (double& w : twice.of("direct")) w *= 2;
  const auto samples = concat(synthetic("igemm", min_calibration_samples, truth(), gpu),
                              synthetic("direct", min_calibration_samples - 1, twice, gpu));
  const Calibration fit = calibrate(samples, gpu, start);
  const FamilyCalibration& direct = fit.families.at("direct");
  EXPECT_EQ(direct, (FamilyCalibration{.samples = min_calibration_samples - 1,
                                       .fitted = false,
                                       .rms_relative_error = direct.rms_relative_error}));
  EXPECT_NEAR(direct.rms_relative_error, 0.5, 1e-12);
  EXPECT_EQ(fit.coefficients.of("direct"), start.of("direct"));
  const FamilyCalibration& igemm = fit.families.at("igemm");
  EXPECT_TRUE(igemm.fitted);
  EXPECT_EQ(igemm.samples, min_calibration_samples);
  EXPECT_EQ(fit.samples, 2 * min_calibration_samples - 1);
}

TEST(Calibration, NeedsEnoughLaunchableTimedSamplesOfOneFamily) {
  EXPECT_EQ(min_calibration_samples, 33);  // 3 per term
  const Gpu gpu = h100();
  auto samples = concat(synthetic("igemm", 32, truth(), gpu), synthetic("direct", 5, truth(), gpu));
  // Samples that cannot launch or have no usable time are not counted.
  CalibrationSample unlaunchable = samples[0];
  unlaunchable.report.smem_bytes = 300 * 1024;
  CalibrationSample untimed = samples[1];
  untimed.measured_us = 0;
  CalibrationSample nan = samples[2];
  nan.measured_us = std::nan("");
  samples.insert(samples.end(), {unlaunchable, untimed, nan});
  // Every registered family is counted, by name; those without samples as 0.
  const auto counts = [](int direct, int igemm) {
    std::string text;
    for (const Family* f : all_families())
      text += fmt::format("{}{} {}", text.empty() ? "" : ", ", f->name(),
                          f->name() == "direct" ? direct : f->name() == "igemm" ? igemm : 0);
    return "calibrate: need at least 33 measurements of launchable kernels of one family, got " + text;
  };
  EXPECT_EQ(input_error([&] { calibrate(samples, gpu); }), counts(5, 32));
  EXPECT_EQ(input_error([&] { calibrate(std::vector<CalibrationSample>{}, gpu); }), counts(0, 0));
  // One more igemm sample is enough.
  samples.push_back(synthetic("igemm", 33, truth(), gpu).back());
  const Calibration fit = calibrate(samples, gpu);
  EXPECT_EQ(fit.families.at("igemm").samples, 33);
  EXPECT_EQ(fit.samples, 38);
}

TEST(Calibration, WithNoisyMeasurementsFitsAtLeastAsWellAsTheTruth) {
  // The fit minimizes the squared relative error over non-negative weights, and the true weights are such weights:
  // the fit's rms relative error cannot exceed theirs.
  const Gpu gpu = h100();
  auto samples = synthetic("igemm", 120, truth(), gpu);
  double truth_sum = 0;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const double exact = samples[i].measured_us;
    samples[i].measured_us *= 1 + 0.05 * std::sin(static_cast<double>(i) * 1.7);
    const double e = (exact - samples[i].measured_us) / samples[i].measured_us;
    truth_sum += e * e;
  }
  const double truth_rms = std::sqrt(truth_sum / static_cast<double>(samples.size()));
  const Calibration fit = calibrate(samples, gpu);
  const double fit_rms = fit.families.at("igemm").rms_relative_error;
  EXPECT_GT(truth_rms, 0.01);
  EXPECT_LE(fit_rms, truth_rms + 1e-12);
  for (double w : fit.coefficients.of("igemm")) EXPECT_GE(w, 0.0);
}

TEST(Calibration, FitsTheRelativeErrorSoThatAFastKernelCountsAsMuchAsASlowOne) {
  // One block of one warp with no work: its only terms are waves = 1 and launch = 1, so the fit can only choose
  // c = w_waves + w_launch, the predicted time of every sample. 11 samples each at 1, 2 and 4 µs. Minimizing
  // Σ ((c − m) / m)² gives c = Σ 1/m / Σ 1/m² = (1 + 1/2 + 1/4) / (1 + 1/4 + 1/16) = 1.75 / 1.3125 = 4/3 (the
  // absolute error would give the mean, 7/3). Relative errors 1/3, −1/3, −2/3: rms = sqrt((1 + 1 + 4) / 27) =
  // sqrt(2) / 3.
  const Gpu gpu = h100();
  const CostFeatures idle{.blocks = 1, .threads_per_block = 32};
  std::vector<CalibrationSample> samples;
  for (const double us : {1.0, 2.0, 4.0})
    for (int i = 0; i < 11; ++i)
      samples.push_back(
          {.family = "direct", .features = idle, .report = {.registers = 32}, .measured_us = us});
  const Calibration fit = calibrate(samples, gpu);
  const CostTerms& w = fit.coefficients.of("direct");
  EXPECT_NEAR(w[at(CostTerm::waves)] + w[at(CostTerm::launch)], 4.0 / 3, 1e-12);
  EXPECT_NEAR(predict("direct", idle, {.registers = 32}, gpu, fit.coefficients).time_us, 4.0 / 3, 1e-12);
  EXPECT_NEAR(fit.families.at("direct").rms_relative_error, std::sqrt(2.0) / 3, 1e-12);
}

TEST(Calibration, IsStoredPerGpuInTheTuningDatabase) {
  ScratchDir dir;
  TuningDb db = TuningDb::open(dir / "t.sqlite");
  EXPECT_EQ(load_calibration(db, h100()), std::nullopt);
  Calibration c{.samples = 45};
  c.coefficients.of("igemm") = {2.5, 0, 3, 0.1, 0.5, 0.25, 2, 5, 2, 1.0 / 3, 3};
  c.families["igemm"] = {
      .samples = 40, .fitted = true, .rms_relative_error = 0.0625};
  c.families["direct"] = {.samples = 5, .fitted = false, .rms_relative_error = 0.5};
  save_calibration(db, h100(), c);
  EXPECT_EQ(load_calibration(db, h100()), c);
  EXPECT_EQ(load_calibration(db, h200()), std::nullopt);
  EXPECT_EQ(db.load_calibration(h100(), cost_model_version)->samples, 45);
  // Another version of the model's formula does not use this fit.
  EXPECT_EQ(db.load_calibration(h100(), cost_model_version + 1), std::nullopt);
}

TEST(Calibration, OfAnotherModelVersionIsNotUsed) {
  ScratchDir dir;
  TuningDb db = TuningDb::open(dir / "t.sqlite");
  db.save_calibration(h100(), {.model_version = cost_model_version - 1,
                               .coefficients_json = R"({"compute": 1.5, "memory": 1.2, "launch_us": 4})",
                               .samples = 30});
  EXPECT_EQ(load_calibration(db, h100()), std::nullopt);
}

TEST(Calibration, StoredWithoutTheModelsCoefficientsIsAnError) {
  ScratchDir dir;
  TuningDb db = TuningDb::open(dir / "t.sqlite");
  // A family's weights lack most terms (a family missing altogether keeps its defaults: not an error).
  db.save_calibration(h100(), {.model_version = cost_model_version,
                               .coefficients_json = R"({"families": {"igemm": {"weights": {"fma": 1}}}})"});
  const std::string message = input_error([&] { load_calibration(db, h100()); });
  EXPECT_EQ(message.rfind(fmt::format("{}: calibration of {} does not hold the model's coefficients: ",
                                      db.path().string(), describe_gpu(h100())),
                          0),
            0u)
      << message;
}

// ---- Accuracy measures --------------------------------------------------------------------------------------------

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
  EXPECT_EQ(input_error([] {
              spearman(std::vector<double>{1, 2, 3}, std::vector<double>{1, 2});
            }),
            "spearman: the series must be equally long, got 3 and 2");
  EXPECT_EQ(input_error([] { spearman(std::vector<double>{1}, std::vector<double>{1}); }),
            "spearman: need at least 2 pairs, got 1");
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

TEST(BestInTopK, RefusesMismatchedOrEmptySeries) {
  EXPECT_EQ(input_error([] {
              best_in_top_k(std::vector<double>{1, 2}, std::vector<double>{1}, 1);
            }),
            "best_in_top_k: the series must be equally long, got 2 and 1");
  EXPECT_EQ(input_error([] { best_in_top_k(std::vector<double>{}, std::vector<double>{}, 1); }),
            "best_in_top_k: need at least one candidate");
}

}  // namespace
}  // namespace convgen
