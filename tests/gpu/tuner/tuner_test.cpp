// tuner_test (GPU): two small layers tuned end to end into a scratch database: the best is verified, measured and
// recorded with every other outcome, and a second tune of the same layer is answered by the database.
#include "tuner/tuner.hpp"

#include <gtest/gtest.h>

#include "runtime/device.hpp"
#include "runtime/driver.hpp"
#include "runtime/module.hpp"
#include "tests/host/tuner/fixtures.hpp"

namespace convgen {
namespace {

using namespace testing_tuner;

class GpuTuner : public testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_available()) GTEST_SKIP() << "no CUDA device: " << no_device_reason();
    context_ = std::make_unique<Context>(0);
    gpu_ = query_device(0);
  }

  std::unique_ptr<Context> context_;
  Gpu gpu_;
  JitCache cache_{std::nullopt};
  ThreadPool pool_;
  ScratchDir dir_;
};

TEST_F(GpuTuner, TunesTwoLayersRecordsTheVerifiedBestAndThenAnswersFromTheDatabase) {
  const auto is_family_default = [&](const KernelSpec& spec, const Problem& p) {
    const auto d = family(spec.family).default_spec(p, gpu_);
    return d && *d == spec;
  };
  TuningDb db = TuningDb::open(dir_ / "tuning.sqlite");
  Tuner tuner(gpu_, cache_, pool_, &db);
  const TuneOptions options{.budget = 6, .timing = {.warmup_calls = 2, .samples = 5, .calls_per_sample = 5,
                                                    .graph = false}};
  for (const Problem& p :
       {conv3x3(), parse_problem_key("n1_c32_k32_i1x14x14_f1x1x1_s1x1x1_p0x0x0_d1x1x1_g1_nchw_fp32")}) {
    SCOPED_TRACE(problem_key(p));
    const TuneResult r = tuner.tune(p, options);
    ASSERT_TRUE(r.best.has_value());
    EXPECT_FALSE(r.from_db.has_value());
    EXPECT_GE(r.measured, 1);
    EXPECT_LE(r.measured, options.budget);
    EXPECT_GE(r.rounds, 1);
    EXPECT_GT(r.wall_ms, r.compile_wall_ms);

    // Rank order: the families' default configurations first, then predicted times ascending up to the
    // candidates without a prediction.
    std::size_t first_ranked = 0;
    while (first_ranked < r.candidates.size() && is_family_default(r.candidates[first_ranked].spec, p))
      ++first_ranked;
    EXPECT_GE(first_ranked, 1u);
    for (std::size_t i = first_ranked + 1; i < r.candidates.size(); ++i) {
      if (r.candidates[i].prediction && r.candidates[i - 1].prediction) {
        EXPECT_LE(r.candidates[i - 1].prediction->time_us, r.candidates[i].prediction->time_us);
      }
    }

    const CandidateOutcome& best = r.candidates[*r.best];
    EXPECT_EQ(best.status, MeasurementStatus::ok);
    ASSERT_TRUE(best.verification.has_value());
    EXPECT_TRUE(passes(*best.verification, p.precision));
    ASSERT_TRUE(best.timing.has_value());
    int timed = 0, recorded = 0;
    for (const CandidateOutcome& c : r.candidates) {
      if (c.timing) {
        ++timed;
        EXPECT_LE(headline_us(*best.timing), headline_us(*c.timing));
        EXPECT_TRUE(c.verification && passes(*c.verification, p.precision)) << kernel_name(c.spec);
      }
      recorded += c.timing.has_value() || c.status != MeasurementStatus::ok;
    }
    EXPECT_EQ(timed, r.measured);

    const std::optional<BestChoice> known = db.best(gpu_, p);
    ASSERT_TRUE(known.has_value());
    EXPECT_EQ(known->kernel, kernel_name(best.spec));
    EXPECT_DOUBLE_EQ(known->median_us, headline_us(*best.timing));
    const std::vector<MeasurementRecord> records = db.measurements({.problem = p});
    EXPECT_EQ(static_cast<int>(records.size()), recorded);
    for (const MeasurementRecord& m : records) {
      EXPECT_FALSE(m.driver.empty());
      EXPECT_FALSE(m.nvrtc.empty());
      if (m.status == MeasurementStatus::ok) {
        EXPECT_EQ(static_cast<int>(m.samples_us.size()), options.timing.samples);
        EXPECT_TRUE(m.predicted_us.has_value());
        EXPECT_GT(m.registers, 0);
      }
    }

    const TuneResult again = tuner.tune(p, options);
    ASSERT_TRUE(again.from_db.has_value());
    EXPECT_EQ(again.measured, 0);
    EXPECT_EQ(again.from_db->kernel, kernel_name(best.spec));
    ASSERT_TRUE(again.best.has_value());
    EXPECT_EQ(again.candidates[*again.best].spec, best.spec);
    EXPECT_EQ(db.measurements({.problem = p}).size(), records.size());
  }
}

TEST_F(GpuTuner, ALayerPrefetchedWhileAnotherIsMeasuredHasTheCandidatesOfOneTunedAlone) {
  const Problem first = conv3x3();
  const Problem second = parse_problem_key("n1_c32_k32_i1x14x14_f1x1x1_s1x1x1_p0x0x0_d1x1x1_g1_nchw_fp32");
  const TuneOptions options{.budget = 4,
                            .timing = {.warmup_calls = 1, .samples = 3, .calls_per_sample = 3, .graph = false}};
  Tuner overlapped(gpu_, cache_, pool_, nullptr);
  overlapped.prefetch(second, options);  // compiles while `first` is measured
  overlapped.tune(first, options);
  const TuneResult prefetched = overlapped.tune(second, options);
  EXPECT_TRUE(prefetched.prefetched);
  JitCache fresh_cache(std::nullopt);  // compiles again: nothing shared with the prefetch
  const TuneResult alone = Tuner(gpu_, fresh_cache, pool_, nullptr).tune(second, options);
  ASSERT_EQ(prefetched.candidates.size(), alone.candidates.size());
  for (std::size_t i = 0; i < alone.candidates.size(); ++i) {
    SCOPED_TRACE(kernel_name(alone.candidates[i].spec));
    EXPECT_EQ(prefetched.candidates[i].spec, alone.candidates[i].spec);
    EXPECT_EQ(prefetched.candidates[i].report, alone.candidates[i].report);
    EXPECT_EQ(prefetched.candidates[i].prediction.has_value(), alone.candidates[i].prediction.has_value());
    if (alone.candidates[i].prediction) {
      EXPECT_DOUBLE_EQ(prefetched.candidates[i].prediction->time_us, alone.candidates[i].prediction->time_us);
    }
    EXPECT_EQ(prefetched.candidates[i].status == MeasurementStatus::compile_error,
              alone.candidates[i].status == MeasurementStatus::compile_error);
    if (alone.candidates[i].status != MeasurementStatus::compile_error) {
      EXPECT_GT(prefetched.candidates[i].compile_ms, 0);  // compiled by the prefetch, not found in the cache
    }
  }
  ASSERT_TRUE(prefetched.best.has_value());
}

// `convgen tune`'s worker loop: the next layer's prefetch starts before this layer's tune, while this layer's own
// prefetch may still be compiling. Each tune takes its own prefetch (none is dropped and compiled again in the tune).
TEST_F(GpuTuner, APipelineThatPrefetchesTheNextLayerBeforeTuningThisOneTakesEveryPrefetch) {
  const std::vector<Problem> layers = {
      conv3x3(), parse_problem_key("n1_c32_k32_i1x14x14_f1x1x1_s1x1x1_p0x0x0_d1x1x1_g1_nchw_fp32"),
      parse_problem_key("n1_c16_k24_i1x10x10_f1x3x3_s1x1x1_p0x1x1_d1x1x1_g1_nchw_fp32")};
  const TuneOptions options{.budget = 2,
                            .timing = {.warmup_calls = 1, .samples = 3, .calls_per_sample = 3, .graph = false}};
  Tuner tuner(gpu_, cache_, pool_, nullptr);
  tuner.prefetch(layers[0], options);
  for (std::size_t j = 0; j < layers.size(); ++j) {
    if (j + 1 < layers.size()) tuner.prefetch(layers[j + 1], options);
    const TuneResult r = tuner.tune(layers[j], options);
    SCOPED_TRACE(problem_key(layers[j]));
    EXPECT_TRUE(r.prefetched);
    EXPECT_TRUE(r.best.has_value());
  }
  // Without a prefetch the tune builds its own candidates.
  EXPECT_FALSE(tuner.tune(layers[1], options).prefetched);
}

TEST_F(GpuTuner, ExhaustiveTuningMeasuresEveryVerifiedCandidateWithoutTheDatabase) {
  Tuner tuner(gpu_, cache_, pool_, nullptr);
  const Problem p = parse_problem_key("n1_c32_k32_i1x14x14_f1x1x1_s1x1x1_p0x0x0_d1x1x1_g1_nchw_fp32");
  const TuneResult r = tuner.tune(p, {.budget = 0, .timing = {.warmup_calls = 1, .samples = 3,
                                                               .calls_per_sample = 3, .graph = false}});
  ASSERT_TRUE(r.best.has_value());
  for (const CandidateOutcome& c : r.candidates)
    EXPECT_TRUE(c.timing.has_value() || c.status != MeasurementStatus::ok) << kernel_name(c.spec);
}

}  // namespace
}  // namespace convgen
