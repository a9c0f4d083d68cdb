// calibration_test: the tuning database's measurements as calibration samples, and how well coefficients rank them.
#include "tuner/calibration.hpp"

#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "convgen/weights.hpp"
#include "generator/family.hpp"
#include "reference/pruning.hpp"
#include "tests/host/tuner/fixtures.hpp"
#include "tools/export_file/export_file.hpp"
#include "weight_sparse_params.hpp"  // generated from templates/weight_sparse.cu

namespace convgen {
namespace {

using namespace testing_tuner;

const KernelSpec kDirect =
    to_spec(DirectParams{.block_m = 16, .block_n = 64, .block_k = 8, .thread_m = 4, .thread_n = 4});

TEST(CalibrationData, TurnsTheGpusOkMeasurementsIntoSamplesWithTheirFamilysFeatures) {
  ScratchDir dir;
  TuningDb db = TuningDb::open(dir / "t.sqlite");
  db.record(measured(h100(), conv3x3(), igemm(64), 41.5));
  MeasurementRecord direct = measured(h100(), conv1x1(), kernel_name(kDirect), 120.0);
  direct.registers = 96;
  direct.spill_bytes = 8;
  direct.smem_bytes = 20000;
  db.record(direct);
  db.record(failed(h100(), conv3x3(), igemm(128), MeasurementStatus::wrong_result, "rel_l2 0.5 > 1e-05"));
  db.record(failed(h100(), conv3x3(), igemm(32), MeasurementStatus::resources, "too many resources requested"));
  db.record(measured(h200(), conv3x3(), igemm(32), 30.0));  // another GPU

  const CalibrationData data = calibration_data(db, h100());
  ASSERT_EQ(data.rows.size(), 2u);
  EXPECT_EQ(data.problems, 2);
  EXPECT_EQ(data.excluded, 0);
  EXPECT_EQ(data.unusable, 0);

  const CalibrationRow& first = data.rows[0];
  EXPECT_EQ(first.problem, conv3x3());
  EXPECT_EQ(first.spec, parse_kernel_name(igemm(64)));
  EXPECT_EQ(first.sample.family, "igemm");
  EXPECT_EQ(first.sample.features, family("igemm").cost_features(conv3x3(), first.spec));
  EXPECT_EQ(first.sample.report, (PtxasReport{.registers = 64, .smem_bytes = 16384}));
  EXPECT_EQ(first.sample.measured_us, 41.5);

  const CalibrationRow& second = data.rows[1];
  EXPECT_EQ(second.problem, conv1x1());
  EXPECT_EQ(second.spec, kDirect);
  EXPECT_EQ(second.sample.family, "direct");
  EXPECT_EQ(second.sample.features, family("direct").cost_features(conv1x1(), kDirect));
  EXPECT_EQ(second.sample.report, (PtxasReport{.registers = 96, .spill_store_bytes = 8, .smem_bytes = 20000}));
  EXPECT_EQ(second.sample.measured_us, 120.0);

  const std::vector<CalibrationSample> samples = samples_of(data.rows);
  ASSERT_EQ(samples.size(), 2u);
  EXPECT_EQ(samples[0].measured_us, 41.5);
  EXPECT_EQ(samples[1].family, "direct");

  const CalibrationData other = calibration_data(db, h200());
  ASSERT_EQ(other.rows.size(), 1u);
  EXPECT_EQ(other.rows[0].sample.measured_us, 30.0);
}

TEST(CalibrationData, CountsExcludedProblemsAndUnknownKernelsApart) {
  ScratchDir dir;
  TuningDb db = TuningDb::open(dir / "t.sqlite");
  db.record(measured(h100(), conv3x3(), igemm(64), 41.5));
  db.record(measured(h100(), conv1x1(), igemm(64), 50.0));
  db.record(measured(h100(), conv1x1(), igemm(128), 45.0));
  db.record(measured(h100(), conv3x3(), "fft_f2x3_t64", 30.0));  // no family of this build
  // The excluded layer as a shapes file with an act_sparsity column gives it: excluded at any sparsity.
  Problem sparse_1x1 = conv1x1();
  sparse_1x1.act_sparsity = 0.6;
  const CalibrationData data = calibration_data(db, h100(), std::vector<Problem>{sparse_1x1});
  ASSERT_EQ(data.rows.size(), 1u);
  EXPECT_EQ(data.rows[0].problem, conv3x3());
  EXPECT_EQ(data.problems, 1);
  EXPECT_EQ(data.excluded, 2);
  EXPECT_EQ(data.unusable, 1);
  // The excluded rows are kept apart, to judge a calibration fitted without them.
  ASSERT_EQ(data.held_out.size(), 2u);
  EXPECT_EQ(data.held_out[0].problem, conv1x1());
  EXPECT_EQ(data.held_out[1].sample.measured_us, 45.0);
}

TEST(CalibrationData, ExcludesALayerMeasuredInAnotherPrecisionAndLayout) {
  ScratchDir dir;
  TuningDb db = TuningDb::open(dir / "t.sqlite");
  Problem fp16_nhwc = conv1x1();
  fp16_nhwc.precision = Precision::fp16;
  fp16_nhwc.layout = Layout::nhwc;
  db.record(measured(h100(), conv3x3(), igemm(64), 41.5));
  db.record(measured(h100(), fp16_nhwc, igemm(64), 12.0));
  // The layer as an fp32 channels-first shapes file gives it.
  const CalibrationData data = calibration_data(db, h100(), std::vector<Problem>{conv1x1()});
  ASSERT_EQ(data.rows.size(), 1u);
  EXPECT_EQ(data.rows[0].problem, conv3x3());
  EXPECT_EQ(data.excluded, 1);
  ASSERT_EQ(data.held_out.size(), 1u);
  EXPECT_EQ(data.held_out[0].problem, fp16_nhwc);
}

// A pruned layer as the database gives it back: its filter's pattern hash, no values. weight_sparse's features count the
// filter's nonzeros, so its measurements are left out (counted apart); igemm's of the same layer are kept.
TEST(CalibrationData, LeavesOutWeightSparseMeasurementsWhoseFilterValuesTheDatabaseDoesNotKeep) {
  ScratchDir dir;
  TuningDb db = TuningDb::open(dir / "t.sqlite");
  Problem pruned = conv3x3();
  pruned.weights.pattern = "0123456789abcdef";
  ASSERT_FALSE(pruned.weights.values);
  const std::string baked = kernel_name(to_spec(WeightSparseParams{}));
  db.record(measured(h100(), pruned, igemm(64), 41.5));
  db.record(measured(h100(), pruned, baked, 12.0));
  const CalibrationData data = calibration_data(db, h100());
  ASSERT_EQ(data.rows.size(), 1u);
  EXPECT_EQ(data.rows[0].sample.family, "igemm");
  EXPECT_EQ(data.without_filter, 1);
  EXPECT_EQ(data.unusable, 0);
  EXPECT_TRUE(family("weight_sparse").cost_features_need_filter_values());
  for (const Family* f : all_families()) {
    if (f->name() != "weight_sparse") {
      EXPECT_FALSE(f->cost_features_need_filter_values()) << f->name();
    }
  }
}

// `db calibrate --weight-sparsity 0.9 --seed 1`: the filter made again as the tune made it gives weight_sparse's
// measurement its features back; a refill that makes another pattern leaves it out.
TEST(CalibrationData, AFilterRefilledWithTheRecordedPatternGivesWeightSparseItsFeatures) {
  ScratchDir dir;
  TuningDb db = TuningDb::open(dir / "t.sqlite");
  const Problem pruned = with_weights(conv3x3(), pruned_random_filter(conv3x3(), 0.9, 1));
  Problem recorded = conv3x3();
  recorded.weights.pattern = pruned.weights.pattern;  // what the database keeps
  const KernelSpec baked = to_spec(WeightSparseParams{});
  db.record(measured(h100(), recorded, kernel_name(baked), 12.0));
  const FilterRefill same = [](const Problem& p) -> std::optional<Problem> {
    return with_weights(p, pruned_random_filter(p, 0.9, 1));
  };
  const CalibrationData data = calibration_data(db, h100(), {}, same);
  ASSERT_EQ(data.rows.size(), 1u);
  EXPECT_EQ(data.without_filter, 0);
  EXPECT_EQ(data.rows[0].sample.features, family("weight_sparse").cost_features(pruned, baked));
  EXPECT_GT(data.rows[0].sample.features.fma_instructions, 0);
  const FilterRefill other = [](const Problem& p) -> std::optional<Problem> {
    return with_weights(p, pruned_random_filter(p, 0.9, 2));
  };
  const CalibrationData mismatched = calibration_data(db, h100(), {}, other);
  EXPECT_TRUE(mismatched.rows.empty());
  EXPECT_EQ(mismatched.without_filter, 1);
}

TEST(CalibrationData, OfAGpuWithoutMeasurementsIsEmpty) {
  ScratchDir dir;
  const TuningDb db = TuningDb::open(dir / "t.sqlite");
  const CalibrationData data = calibration_data(db, h100());
  EXPECT_TRUE(data.rows.empty());
  EXPECT_EQ(data.problems, 0);
}

// Coefficients that weigh the FMA term alone: a row's prediction grows with its FMA instructions.
Coefficients fma_only() {
  Coefficients c;
  c.of("igemm").fill(0);
  c.of("direct").fill(0);
  c.of("igemm")[static_cast<std::size_t>(CostTerm::fma)] = 1;
  return c;
}

CalibrationRow row(const Problem& problem, double fma_instructions, double measured_us) {
  return {.problem = problem,
          .spec = parse_kernel_name(igemm(64)),
          .sample = {.family = "igemm",
                     .features = {.blocks = 132, .threads_per_block = 256, .fma_instructions = fma_instructions},
                     .report = {.registers = 32},
                     .measured_us = measured_us}};
}

TEST(RankingAccuracy, IsPerfectWhenThePredictedOrderIsTheMeasuredOne) {
  std::vector<CalibrationRow> rows;
  for (int i = 1; i <= 12; ++i) rows.push_back(row(conv3x3(), 1000.0 * i, 10.0 + i * i));
  for (int i = 1; i <= 3; ++i) rows.push_back(row(conv1x1(), 1000.0 * i, 5.0 * i));
  const RankingAccuracy a = ranking_accuracy(rows, h100(), fma_only());
  EXPECT_EQ(a.problems, 2);
  EXPECT_DOUBLE_EQ(a.mean_spearman, 1.0);
  EXPECT_EQ(a.share_best_in_top10, 1.0);
  EXPECT_DOUBLE_EQ(a.pick_ratio, 1.0);
}

TEST(RankingAccuracy, AveragesOverProblemsAndMissesABestPredictedSlowest) {
  std::vector<CalibrationRow> rows;
  // conv3x3: 12 candidates predicted in the reverse of their measured order: the fastest is predicted 12th.
  for (int i = 1; i <= 12; ++i) rows.push_back(row(conv3x3(), 1000.0 * i, 100.0 - i));
  // conv1x1: 3 candidates in order, and one that cannot launch (left out).
  for (int i = 1; i <= 3; ++i) rows.push_back(row(conv1x1(), 1000.0 * i, 5.0 * i));
  CalibrationRow unlaunchable = row(conv1x1(), 1.0, 1.0);
  unlaunchable.sample.report.smem_bytes = 300 * 1024;
  rows.push_back(unlaunchable);
  // A problem with one candidate has no ranking to judge.
  Problem single = conv3x3();
  single.n = 2;
  rows.push_back(row(single, 1000.0, 1.0));
  const RankingAccuracy a = ranking_accuracy(rows, h100(), fma_only());
  EXPECT_EQ(a.problems, 2);
  EXPECT_DOUBLE_EQ(a.mean_spearman, 0.0);  // (-1 + 1) / 2
  EXPECT_EQ(a.share_best_in_top10, 0.5);   // conv1x1's best is predicted first, conv3x3's twelfth
}

TEST(RankingAccuracy, CountsSeersRightPicksOverallAndWithinEachFamily) {
  std::vector<CalibrationRow> rows;
  // conv3x3: igemm predicted fastest measures 10.5 against the best 10.0 (a direct kernel): right within 10%.
  rows.push_back(row(conv3x3(), 1000, 10.5));
  rows.push_back(row(conv3x3(), 2000, 12.0));
  CalibrationRow direct = row(conv3x3(), 0, 10.0);
  direct.spec = kDirect;
  direct.sample.family = "direct";
  direct.sample.features = family("direct").cost_features(conv3x3(), kDirect);
  rows.push_back(direct);
  // conv1x1: the one predicted fastest measures 12 against 10: wrong.
  rows.push_back(row(conv1x1(), 1000, 12.0));
  rows.push_back(row(conv1x1(), 2000, 10.0));
  Coefficients c = fma_only();
  c.of("direct")[static_cast<std::size_t>(CostTerm::launch)] = 1000;  // direct predicted slowest
  const RankingAccuracy a = ranking_accuracy(rows, h100(), c);
  EXPECT_EQ(a.problems, 2);
  EXPECT_DOUBLE_EQ(a.share_right_pick, 0.5);
  ASSERT_EQ(a.families.count("igemm"), 1u);
  EXPECT_EQ(a.families.at("igemm").problems, 2);  // within igemm: 10.5 is conv3x3's igemm best; conv1x1 wrong
  EXPECT_DOUBLE_EQ(a.families.at("igemm").share_right_pick, 0.5);
  EXPECT_EQ(a.families.count("direct"), 0u);  // one direct row: no ranking to judge
  // What the picks cost: 10.5 / 10 and 12 / 10 overall; within igemm 10.5 is conv3x3's best, so 1 and 12 / 10.
  EXPECT_NEAR(a.pick_ratio, std::sqrt(1.05 * 1.2), 1e-12);
  EXPECT_NEAR(a.families.at("igemm").pick_ratio, std::sqrt(1.2), 1e-12);
}

// The guided tune replayed: of 12 candidates predicted in the reverse of their measured order, the model's 10 first
// are the 10 slowest (measured 99 down to 90); the best is 88: 88 / 90. A problem of 3 candidates
// (a guided tune would measure them all) does not count.
TEST(RankingAccuracy, ReplaysAGuidedTuneOfTenWithinAFamily) {
  std::vector<CalibrationRow> rows;
  for (int i = 1; i <= 12; ++i) rows.push_back(row(conv3x3(), 1000.0 * i, 100.0 - i));
  for (int i = 1; i <= 3; ++i) rows.push_back(row(conv1x1(), 1000.0 * i, 15.0 - 5.0 * i));
  const RankingAccuracy a = ranking_accuracy(rows, h100(), fma_only());
  ASSERT_EQ(a.families.count("igemm"), 1u);
  EXPECT_EQ(a.families.at("igemm").guided_problems, 1);
  EXPECT_DOUBLE_EQ(a.families.at("igemm").guided_ratio, 88.0 / 90.0);
}

TEST(RankingAccuracy, APredictionThatTiesEverywhereCountsForTheTopTenButHasNoSpearman) {
  const std::vector<CalibrationRow> rows{row(conv3x3(), 1000, 10), row(conv3x3(), 1000, 20)};
  const RankingAccuracy a = ranking_accuracy(rows, h100(), fma_only());
  EXPECT_EQ(a.problems, 1);
  EXPECT_TRUE(std::isnan(a.mean_spearman));
  EXPECT_EQ(a.share_best_in_top10, 1.0);
}

// Each family's default replayed: conv3x3's igemm default measured 12 us against another igemm kernel's 10 (1.2x,
// not more); conv1x1's default never measured (two other kernels were): counted, not judged; a problem with one row
// of the family has nothing to compare.
TEST(DefaultAccuracy, JudgesEachFamilysDefaultWhereItWasMeasuredAndCountsTheRest) {
  const KernelSpec chosen = *family("igemm").default_spec(conv3x3(), h100());
  ASSERT_NE(kernel_name(chosen), igemm(64));
  std::vector<CalibrationRow> rows{row(conv3x3(), 1000, 12.0), row(conv3x3(), 1000, 10.0)};
  rows[0].spec = chosen;
  rows[1].spec = parse_kernel_name(igemm(64));
  const std::string conv1x1_default = kernel_name(*family("igemm").default_spec(conv1x1(), h100()));
  ASSERT_NE(conv1x1_default, igemm(64));
  ASSERT_NE(conv1x1_default, igemm(32));
  CalibrationRow other = row(conv1x1(), 1000, 5.0);
  other.spec = parse_kernel_name(igemm(32));
  rows.push_back(other);
  rows.push_back(row(conv1x1(), 1000, 6.0));
  Problem single = conv3x3();
  single.n = 2;
  rows.push_back(row(single, 1000, 1.0));
  const DefaultAccuracy a = default_accuracy(rows, h100());
  ASSERT_EQ(a.families.count("igemm"), 1u);
  const DefaultAccuracy::Family& f = a.families.at("igemm");
  EXPECT_EQ(f.problems, 2);
  EXPECT_EQ(f.measured, 1);
  EXPECT_DOUBLE_EQ(f.ratio, 1.2);
  EXPECT_EQ(f.over_1_2, 0);
  rows[0].sample.measured_us = 12.5;  // now more than 1.2x the best
  EXPECT_EQ(default_accuracy(rows, h100()).families.at("igemm").over_1_2, 1);
  EXPECT_TRUE(default_accuracy(std::vector<CalibrationRow>{}, h100()).families.empty());
}

// igemm_wgmma's default weights (fitted on the H200: bench/results/h200/wgmma-cost-fit-2026-12-02/) on published
// exhaustive tunes: a model-guided tune of 10 replayed finds within the quoted figure of the exhaustive best (the
// README's; ResNet-50 fp16 at batch 32 and 8, and conv1's fw2 tunes in fp16 and tf32, which the fit did not see). A
// change of the weights or of the features that ranks worse on them fails here.
TEST(RankingAccuracy, IgemmWgmmasDefaultWeightsGuideATuneOfTenOnThePublishedH200Tunes) {
  struct Set {
    std::vector<const char*> files;  // under bench/results/h200/
    double quoted;                   // the guided tune's best over the exhaustive best, geometric mean
  };
  const std::vector<Set> sets = {
      {{"warp-copy-output-2026-12-02/resnet50-fp16-n32-measurements.json.gz",
        "warp-copy-output-2026-12-02/resnet50-fp16-n8-measurements.json.gz"},
       0.971},
      {{"fold-on-load-2026-12-02/conv1-fp16-measurements.json.gz",
        "fold-on-load-2026-12-02/tf32-eight-byte-copies/conv1-tf32-measurements.json.gz"},
       0.998},
  };
  for (const Set& set : sets) {
    ScratchDir dir;
    TuningDb db = TuningDb::open(dir / "t.sqlite");
    std::optional<Gpu> gpu;
    for (const char* file : set.files) {
      const std::string path = std::string(CONVGEN_SOURCE_DIR) + "/bench/results/h200/" + file;
      for (const MeasurementRecord& m : parse_export_json(read_export_file(path), path)) {
        db.record(m);
        gpu = m.gpu;
      }
    }
    ASSERT_TRUE(gpu.has_value()) << set.files.front();
    const CalibrationData data = calibration_data(db, *gpu);
    const RankingAccuracy a = ranking_accuracy(data.rows, *gpu, Coefficients{});
    ASSERT_TRUE(a.families.contains("igemm_wgmma")) << set.files.front();
    EXPECT_GE(a.families.at("igemm_wgmma").guided_ratio, set.quoted - 5e-4) << set.files.front();
  }
}

TEST(RankingAccuracy, OfNoRowsIsEmpty) {
  const RankingAccuracy a = ranking_accuracy(std::vector<CalibrationRow>{}, h100(), Coefficients{});
  EXPECT_EQ(a.problems, 0);
  EXPECT_TRUE(std::isnan(a.mean_spearman));
  EXPECT_EQ(a.share_best_in_top10, 0.0);
}

}  // namespace
}  // namespace convgen
