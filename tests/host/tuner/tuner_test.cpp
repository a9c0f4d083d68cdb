// tuner_test: the tuner's host-side rules: round planning and the stop rule, candidate order, failure
// classification, and the study's comparison and summary.
#include "tuner/tuner.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <limits>

#include <gtest/gtest.h>

#include "generator/family.hpp"
#include "runtime/jit_cache.hpp"
#include "runtime/thread_pool.hpp"
#include "tests/host/tuner/fixtures.hpp"
#include "tuner/cost_model.hpp"
#include "tuner/study.hpp"

namespace convgen {
namespace {

using namespace testing_tuner;

constexpr double kInf = std::numeric_limits<double>::infinity();

std::vector<PlanEntry> pending(std::vector<double> predicted) {
  std::vector<PlanEntry> entries;
  for (double p : predicted) entries.push_back({.predicted_us = p});
  return entries;
}

void measure(std::vector<PlanEntry>& entries, std::size_t i, double us) {
  entries[i].state = PlanState::measured;
  entries[i].measured_us = us;
}

TEST(PlanRound, TheFirstRoundTakesTheFourPredictedFastest) {
  const auto entries = pending({1, 2, 3, 4, 5, 6});
  EXPECT_EQ(plan_round(entries, 10, 1.5), (RoundPlan{.fresh = {0, 1, 2, 3}}));
}

TEST(PlanRound, FailedCandidatesAreSkipped) {
  auto entries = pending({1, 2, 3, 4, 5, 6});
  entries[1].state = PlanState::failed;
  EXPECT_EQ(plan_round(entries, 10, 1.5), (RoundPlan{.fresh = {0, 2, 3, 4}}));
}

TEST(PlanRound, LaterRoundsTakeThreeMoreAndCarryTheBest) {
  auto entries = pending({10, 11, 12, 13, 14, 15, 16, 17});
  measure(entries, 0, 10);
  measure(entries, 1, 9);
  measure(entries, 2, 12);
  measure(entries, 3, 13);
  // A ratio wide enough that the stop rule (13.5 us at 1.5) does not cut the round short.
  EXPECT_EQ(plan_round(entries, 10, 2.0), (RoundPlan{.fresh = {4, 5, 6}, .carried_best = 1}));
}

TEST(PlanRound, TheBudgetCapsTheRound) {
  auto entries = pending({10, 11, 12, 13, 14, 15});
  for (std::size_t i = 0; i < 4; ++i) measure(entries, i, 10);
  EXPECT_EQ(plan_round(entries, 5, 1.5), (RoundPlan{.fresh = {4}, .carried_best = 0}));
  measure(entries, 4, 10);
  EXPECT_EQ(plan_round(entries, 5, 1.5), RoundPlan{});
}

TEST(PlanRound, StopsWhenTheRescaledPredictionExceedsTheRatioTimesTheBest) {
  // The model underestimates by 2x here: predicted 14 reads as 28 <= 1.5 x 20, predicted 16 as 32 > 30.
  auto entries = pending({10, 11, 12, 13, 14, 16, 17});
  measure(entries, 0, 20);
  measure(entries, 1, 22);
  measure(entries, 2, 24);
  measure(entries, 3, 26);
  EXPECT_DOUBLE_EQ(model_scale(entries), 2.0);
  EXPECT_EQ(plan_round(entries, 10, 1.5), (RoundPlan{.fresh = {4}, .carried_best = 0}));
  measure(entries, 4, 28);
  EXPECT_EQ(plan_round(entries, 10, 1.5), RoundPlan{});
}

TEST(PlanRound, CandidatesThatCannotLaunchStopTheGuidedSearch) {
  auto entries = pending({10, 11, 12, 13, kInf});
  for (std::size_t i = 0; i < 4; ++i) measure(entries, i, 10);
  EXPECT_EQ(plan_round(entries, 10, 1.5), RoundPlan{});
}

TEST(PlanRound, ExhaustiveRoundsTakeEightWithoutTheStopRule) {
  auto entries = pending({1, 2, 3, 4, 5, 6, 7, 8, 100, 200, kInf});
  EXPECT_EQ(plan_round(entries, 0, 1.5), (RoundPlan{.fresh = {0, 1, 2, 3, 4, 5, 6, 7}}));
  for (std::size_t i = 0; i < 8; ++i) measure(entries, i, 1);
  EXPECT_EQ(plan_round(entries, 0, 1.5), (RoundPlan{.fresh = {8, 9, 10}, .carried_best = 0}));
}

TEST(PlanRound, StopsWhenNothingIsPending) {
  auto entries = pending({1, 2});
  measure(entries, 0, 1);
  entries[1].state = PlanState::failed;
  EXPECT_EQ(plan_round(entries, 0, 1.5), RoundPlan{});
  EXPECT_EQ(plan_round(entries, 10, 1.5), RoundPlan{});
}

TEST(ModelScale, IsTheMedianRatioOfMeasuredToPredictedTimes) {
  auto entries = pending({10, 10, 10, 10, kInf});
  EXPECT_DOUBLE_EQ(model_scale(entries), 1.0);  // nothing measured
  measure(entries, 0, 10);
  measure(entries, 1, 30);
  measure(entries, 2, 20);
  measure(entries, 4, 1000);  // no finite prediction: ignored
  EXPECT_DOUBLE_EQ(model_scale(entries), 2.0);
  measure(entries, 3, 50);
  EXPECT_DOUBLE_EQ(model_scale(entries), 2.5);
}

TEST(CandidateOrder, RanksByPredictionThenCannotLaunchThenNotCompiled) {
  const std::vector<std::optional<Prediction>> predictions = {
      std::nullopt, Prediction{.time_us = 5}, Prediction{}, Prediction{.time_us = 2}, std::nullopt,
      Prediction{.time_us = 5}};
  EXPECT_EQ(candidate_order(predictions), (std::vector<std::size_t>{3, 1, 5, 2, 0, 4}));
}

TEST(ClassifyLaunchFailure, OutOfResourcesIsResources) {
  EXPECT_EQ(classify_launch_failure("module.cpp:90: cuLaunchKernel(...) failed: CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES "
                                    "(too many resources requested for launch)",
                                    Prediction{.time_us = 3, .resident_blocks_per_sm = 1}),
            MeasurementStatus::resources);
}

TEST(ClassifyLaunchFailure, AnInvalidValueIsResourcesOnlyWhenTheBlockDoesNotFit) {
  const std::string message = "cuLaunchKernel(...) failed: CUDA_ERROR_INVALID_VALUE (invalid argument)";
  EXPECT_EQ(classify_launch_failure(message, Prediction{}), MeasurementStatus::resources);
  EXPECT_EQ(classify_launch_failure(message, Prediction{.time_us = 3, .resident_blocks_per_sm = 2}),
            MeasurementStatus::launch_error);
  EXPECT_EQ(classify_launch_failure(message, std::nullopt), MeasurementStatus::launch_error);
}

TEST(ClassifyLaunchFailure, OtherErrorsAreLaunchErrors) {
  EXPECT_EQ(classify_launch_failure("cuStreamSynchronize(...) failed: CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory "
                                    "access was encountered)",
                                    Prediction{}),
            MeasurementStatus::launch_error);
}

TEST(TuningCandidates, HoldEveryFamilysEnumerationOnce) {
  const Problem p = conv3x3();
  const Gpu gpu = h100();
  const std::vector<KernelSpec> specs = tuning_candidates(p, gpu);
  std::size_t total = 0;
  for (const Family* f : all_families()) {
    for (const KernelSpec& s : f->enumerate(p, gpu))
      EXPECT_NE(std::find(specs.begin(), specs.end(), s), specs.end()) << kernel_name(s);
    total += f->enumerate(p, gpu).size();
  }
  EXPECT_LE(specs.size(), total);
  for (std::size_t i = 0; i < specs.size(); ++i)
    for (std::size_t j = i + 1; j < specs.size(); ++j) EXPECT_NE(specs[i], specs[j]);
}

TEST(CompileLimit, IsFourTimesTheBudgetAtLeastSixteenAndEveryCandidateWhenExhaustive) {
  EXPECT_EQ(compile_limit({.budget = 10}), 40);
  EXPECT_EQ(compile_limit({.budget = 2}), 16);
  EXPECT_EQ(compile_limit({.budget = 0}), 0);
  EXPECT_EQ(compile_limit({.budget = 4, .compile_limit = 0}), 0);
  EXPECT_EQ(compile_limit({.budget = 4, .compile_limit = 7}), 7);
}

TEST(CompileOrder, ListsEachEstimableCandidateOnceAndAnyLimitKeepsItsFirstOnes) {
  const Problem p = conv3x3();
  const Gpu gpu = h100();
  JitCache cache(std::nullopt);
  ThreadPool pool(1);
  const Tuner tuner(gpu, cache, pool, nullptr, {}, 0);
  const std::vector<KernelSpec> all = tuning_candidates(p, gpu);
  const std::vector<KernelSpec> order = tuner.compile_order(p, all);
  ASSERT_GT(order.size(), 16u);
  EXPECT_LE(order.size(), all.size());
  for (std::size_t i = 0; i < order.size(); ++i) {
    EXPECT_NE(std::find(all.begin(), all.end(), order[i]), all.end());
    for (std::size_t j = i + 1; j < order.size(); ++j) EXPECT_NE(order[i], order[j]);
  }
  for (int limit : {16, 24, 40})  // past the defaults, which always stay
    EXPECT_EQ(tuner.worth_compiling(p, all, limit),
              std::vector<KernelSpec>(order.begin(), order.begin() + std::min<std::size_t>(limit, order.size())))
        << limit;
}

TEST(WorthCompiling, KeepsTheDefaultsAndTheModelsBestUpToTheLimitAndEverythingWithoutOne) {
  const Problem p = conv3x3();
  const Gpu gpu = h100();
  JitCache cache(std::nullopt);
  ThreadPool pool(1);
  const Tuner tuner(gpu, cache, pool, nullptr, {}, 0);
  const std::vector<KernelSpec> all = tuning_candidates(p, gpu);
  ASSERT_GT(all.size(), 16u);
  EXPECT_EQ(tuner.worth_compiling(p, all, 0), all);
  EXPECT_EQ(tuner.worth_compiling(p, all, static_cast<int>(all.size())), all);

  const std::vector<KernelSpec> kept = tuner.worth_compiling(p, all, 16);
  EXPECT_EQ(kept.size(), 16u);
  for (const Family* f : all_families())
    if (auto spec = f->default_spec(p, gpu)) {
      EXPECT_NE(std::find(kept.begin(), kept.end(), *spec), kept.end()) << kernel_name(*spec);
    }
  for (std::size_t i = 0; i < kept.size(); ++i) {
    EXPECT_NE(std::find(all.begin(), all.end(), kept[i]), all.end());
    for (std::size_t j = i + 1; j < kept.size(); ++j) EXPECT_NE(kept[i], kept[j]);
  }
  // Past the defaults, the kept ones are the model's best without a report: none left out is predicted faster.
  const auto predicted_us = [&](const KernelSpec& s) {
    return predict(s.family, family(s.family).cost_features(p, s), PtxasReport{}, gpu, {}).time_us;
  };
  double slowest_kept = 0;
  for (const KernelSpec& s : kept) {
    const bool is_default = [&] {
      for (const Family* f : all_families())
        if (f->default_spec(p, gpu) == s) return true;
      return false;
    }();
    if (!is_default) slowest_kept = std::max(slowest_kept, predicted_us(s));
  }
  for (const KernelSpec& s : all)
    if (std::find(kept.begin(), kept.end(), s) == kept.end()) {
      EXPECT_GE(predicted_us(s), slowest_kept) << kernel_name(s);
    }
}

TEST(BestTimeUs, ComesFromTheGraphMedianWhenThereIsOne) {
  TimingResult t;
  t.stream.median = 12;
  EXPECT_DOUBLE_EQ(headline_us(t), 12);
  t.graph = SampleStats{.median = 10};
  EXPECT_DOUBLE_EQ(headline_us(t), 10);
  TuneResult r{.candidates = {{.timing = t}}, .best = 0};
  EXPECT_EQ(best_time_us(r), 10);
  EXPECT_EQ(best_time_us(TuneResult{}), std::nullopt);
  EXPECT_EQ(best_time_us(TuneResult{.from_db = BestChoice{.median_us = 7}}), 7);
}

// A measured outcome: a spec told apart by block_m, its prediction and its time.
CandidateOutcome outcome(int block_m, double predicted_us, std::optional<double> measured_us) {
  CandidateOutcome c{.spec = to_spec(IgemmParams{.block_m = block_m, .block_n = 64, .block_k = 8}),
                     .prediction = Prediction{.time_us = predicted_us}};
  if (measured_us) {
    c.timing = TimingResult{};
    c.timing->stream.median = *measured_us;
  }
  return c;
}

TEST(CompareTunes, JudgesTheGuidedPickByItsTimeInTheExhaustiveRun) {
  TuneResult exhaustive{.candidates = {outcome(32, 1, 12), outcome(64, 2, 10), outcome(128, 3, 15),
                                       outcome(16, 4, std::nullopt)},
                        .best = 1, .measured = 3, .wall_ms = 9000, .compile_wall_ms = 4000};
  exhaustive.candidates[3].status = MeasurementStatus::wrong_result;
  const TuneResult guided{.candidates = {outcome(32, 1, 11.5), outcome(128, 3, std::nullopt)}, .best = 0,
                          .measured = 1, .wall_ms = 1500, .compile_wall_ms = 1000};
  const StudyLayer row = compare_tunes(exhaustive, guided);
  EXPECT_EQ(row.candidates, 4);
  EXPECT_EQ(row.failed, 1);
  EXPECT_EQ(row.exhaustive_measured, 3);
  EXPECT_EQ(row.guided_measured, 1);
  EXPECT_EQ(row.exhaustive_kernel, kernel_name(exhaustive.candidates[1].spec));
  EXPECT_EQ(row.guided_kernel, kernel_name(guided.candidates[0].spec));
  EXPECT_DOUBLE_EQ(row.exhaustive_us, 10);
  EXPECT_DOUBLE_EQ(row.guided_us, 12);
  EXPECT_DOUBLE_EQ(row.guided_own_us, 11.5);
  EXPECT_DOUBLE_EQ(row.ratio, 10.0 / 12.0);
  EXPECT_DOUBLE_EQ(row.spearman, 0.5);  // predicted ranks 1 2 3, measured 2 1 3
  EXPECT_TRUE(row.best_in_top10);
  EXPECT_DOUBLE_EQ(row.exhaustive_cold_ms, 9000);
  EXPECT_DOUBLE_EQ(row.guided_warm_ms, 1500);
  EXPECT_EQ(row.note, "");
}

TEST(CompareTunes, SaysSoWhenNothingVerified) {
  const StudyLayer row = compare_tunes(TuneResult{.candidates = {outcome(32, 1, std::nullopt)}}, TuneResult{});
  EXPECT_EQ(row.note, "no candidate verified");
  EXPECT_EQ(row.ratio, 0);
}

TEST(SummarizeStudy, TakesTheGeometricMeanOfTheRatiosPerSuiteAndBatch) {
  const std::vector<StudyLayer> layers = {
      {.suite = "a", .layer = "l1", .batch = 1, .ratio = 1.0, .spearman = 0.5, .best_in_top10 = true},
      {.suite = "a", .layer = "l2", .batch = 1, .ratio = 0.81, .spearman = 0.7, .best_in_top10 = false},
      {.suite = "a", .layer = "l1", .batch = 8, .ratio = 0.9},
      {.suite = "a", .layer = "l2", .batch = 8, .ratio = 0, .note = "no candidate verified"}};
  const std::vector<StudySummary> s = summarize_study(layers);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].batch, 1);
  EXPECT_EQ(s[0].layers, 2);
  EXPECT_DOUBLE_EQ(s[0].geomean_ratio, 0.9);
  EXPECT_DOUBLE_EQ(s[0].mean_spearman, 0.6);
  EXPECT_DOUBLE_EQ(s[0].share_best_in_top10, 0.5);
  EXPECT_EQ(s[1].batch, 8);
  EXPECT_DOUBLE_EQ(s[1].geomean_ratio, 0.9);  // the layer without a ratio is left out
  EXPECT_TRUE(std::isnan(s[1].mean_spearman));
}

TEST(StudyMarkdown, HasTheSummaryRowOfEachSuiteAndBatch) {
  const StudyReport report{.gpu = "NVIDIA H200 (sm_90, 132 SMs)", .command_line = "convgen tune-study",
                           .layers = {{.suite = "cusnn", .layer = "conv1", .batch = 1, .ratio = 1.0,
                                       .spearman = 0.8, .best_in_top10 = true, .exhaustive_cold_ms = 2000,
                                       .guided_warm_ms = 500, .guided_cold_ms = 1000}}};
  const std::string md = study_markdown(report);
  EXPECT_NE(md.find("| cusnn | 1 | 1 | 1.000 | 0.80 | 100% | 2.0 | 0.5 | 1.0 |\n"), std::string::npos) << md;
  EXPECT_NE(md.find("Command: `convgen tune-study`"), std::string::npos);
  // The report names the coefficients the guided tuner ranked with, and where they came from.
  EXPECT_NE(md.find("The cost model's coefficients: the model's default coefficients ("),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("direct: shared_loads 9.61, "), std::string::npos) << md;
}

// Each layer's row has its roofline floor (Winograd's beside it where it applies) and the exhaustive best over it.
TEST(StudyMarkdown, EachLayerHasItsRooflineFloorAndTheBestOverIt) {
  const StudyReport report{
      .gpu = "NVIDIA H200 (sm_90, 132 SMs)",
      .command_line = "convgen tune-study",
      .layers = {
          {.suite = "cusnn",
           .layer = "conv1",
           .batch = 1,
           .exhaustive_kernel = "k",
           .exhaustive_us = 12.5,
           .floor_us = 2.5,
           .winograd_floor_us = 0.75},
          {.suite = "cusnn", .layer = "conv2", .batch = 1, .exhaustive_kernel = "k", .exhaustive_us = 9, .floor_us = 3},
          {.suite = "cusnn", .layer = "conv3", .batch = 1, .note = "no candidate verified"}}};
  const std::string md = study_markdown(report);
  EXPECT_NE(md.find("| cusnn | 1 | conv1 | 0 | 0 | k | 12.5 | 2.50 (0.75) | 5.0 | "), std::string::npos) << md;
  EXPECT_NE(md.find("| cusnn | 1 | conv2 | 0 | 0 | k | 9.0 | 3.00 | 3.0 | "), std::string::npos) << md;
  EXPECT_NE(md.find("| cusnn | 1 | conv3 | 0 | 0 |  | – | – | – | "), std::string::npos) << md;
}

}  // namespace
}  // namespace convgen
