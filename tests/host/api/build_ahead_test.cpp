// build_ahead_test: what ConvContext::prepare compiles at once under the policies that do not tune.
#include "api/build_ahead.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "generator/gpu_json.hpp"
#include "generator/kernel_spec.hpp"
#include "runtime/jit_cache.hpp"
#include "runtime/thread_pool.hpp"
#include "support/scratch_dir.hpp"

namespace convgen {
namespace {

class BuildAhead : public testing::Test {
 protected:
  BuildAhead()
      : gpu_(load_gpu(std::string(CONVGEN_SOURCE_DIR) + "/gpus/h200.json")),
        db_(TuningDb::open(scratch_ / "tuning.sqlite")),
        tuner_(gpu_, cache_, pool_, &db_, Coefficients{}, 0) {}

  std::vector<std::string> names(const std::vector<BuildRequest>& requests, const Problem& p) const {
    std::vector<std::string> out;
    for (const BuildRequest& r : requests)
      if (r.problem == p) out.push_back(kernel_name(r.spec));
    return out;
  }

  testing_support::ScratchDir scratch_{"convgen-build-ahead-test"};
  Gpu gpu_;
  TuningDb db_;
  JitCache cache_{std::nullopt};
  ThreadPool pool_{1};
  Tuner tuner_;
  Problem fp32_ = parse_problem_key("n1_c64_k64_i1x56x56_f1x3x3_s1x1x1_p0x1x1_d1x1x1_g1_nchw_fp32");
  Problem fp16_ = parse_problem_key("n8_c256_k64_i1x28x28_f1x1x1_s1x1x1_p0x0x0_d1x1x1_g1_nhwc_fp16");
};

TEST_F(BuildAhead, CostModelOnlyCompilesEveryProblemsDefaultsAndNothingElse) {
  const std::vector<const Problem*> problems{&fp32_, &fp16_};
  const std::vector<BuildRequest> requests =
      kernels_to_build_ahead(problems, TuningPolicy::cost_model_only, db_, tuner_);
  for (const Problem* p : problems) {
    std::vector<std::string> defaults;
    for (const Family* f : all_families())
      if (auto spec = f->default_spec(*p, gpu_)) defaults.push_back(kernel_name(*spec));
    ASSERT_GE(defaults.size(), 2u) << problem_key(*p);
    std::vector<std::string> got = names(requests, *p);
    std::sort(got.begin(), got.end());
    std::sort(defaults.begin(), defaults.end());
    EXPECT_EQ(got, defaults) << problem_key(*p);
  }
}

TEST_F(BuildAhead, DatabaseOnlyCompilesEachRecordedBestAndLeavesTheUnrecordedToConv) {
  const std::string best = kernel_name(default_choice(fp32_, gpu_));
  MeasurementRecord m{.gpu = gpu_, .problem = fp32_, .kernel = best, .median_us = 12.5, .samples_us = {12.5}};
  db_.record(m);
  const std::vector<const Problem*> problems{&fp32_, &fp16_};
  const std::vector<BuildRequest> requests = kernels_to_build_ahead(problems, TuningPolicy::database_only, db_, tuner_);
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].problem, fp32_);
  EXPECT_EQ(kernel_name(requests[0].spec), best);
}

TEST_F(BuildAhead, ARecordThisConvgenCannotReadIsLeftToConv) {
  db_.record({.gpu = gpu_, .problem = fp32_, .kernel = "igemm_m999", .median_us = 9.0, .samples_us = {9.0}});
  ASSERT_TRUE(db_.best(gpu_, fp32_));
  const std::vector<const Problem*> problems{&fp32_};
  EXPECT_TRUE(kernels_to_build_ahead(problems, TuningPolicy::database_only, db_, tuner_).empty());
}

TEST_F(BuildAhead, TuningOnFirstUseCompilesNothingHere) {
  const std::vector<const Problem*> problems{&fp32_, &fp16_};
  EXPECT_TRUE(kernels_to_build_ahead(problems, TuningPolicy::tune_on_first_use, db_, tuner_).empty());
}

}  // namespace
}  // namespace convgen
