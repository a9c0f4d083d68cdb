// tuner_rank_only_test: Tuner::rank_only compiles the candidates a compile limit keeps (the ones tune would compile;
// the families' defaults alone under a limit of 1, what the cost-model-only policy chooses from) and ranks those by
// the model with their ptxas reports.
#include <algorithm>
#include <filesystem>
#include <optional>
#include <vector>

#include <gtest/gtest.h>

#include "generator/family.hpp"
#include "generator/gpu_json.hpp"
#include "runtime/jit_cache.hpp"
#include "runtime/thread_pool.hpp"
#include "tuner/tuner.hpp"

namespace convgen {
namespace {

const std::filesystem::path kSourceDir = CONVGEN_SOURCE_DIR;

// A tuner on a GPU descriptor, without a database or JIT cache folder, and the families' defaults for a problem.
class RankOnly : public testing::Test {
 protected:
  void use_gpu(const char* descriptor) { gpu_ = load_gpu(kSourceDir / "gpus" / descriptor); }
  Tuner& tuner() { return tuner_.emplace(gpu_, cache_, pool_, nullptr, Coefficients{}, 0); }
  std::vector<KernelSpec> defaults(const Problem& p) const {
    std::vector<KernelSpec> specs;
    for (const Family* f : all_families())
      if (auto spec = f->default_spec(p, gpu_)) specs.push_back(*spec);
    return specs;
  }

  Gpu gpu_;
  JitCache cache_{std::nullopt};
  ThreadPool pool_{2};
  std::optional<Tuner> tuner_;
};

TEST_F(RankOnly, UnderACompileLimitRanksTheCandidatesTuneWouldCompileWithTheirReports) {
  use_gpu("h100_sxm.json");
  const Problem p = parse_problem_key("n1_c16_k16_i1x12x12_f1x3x3_s1x1x1_p0x1x1_d1x1x1_g1_nchw_fp32");
  Tuner& tuner = this->tuner();
  const std::vector<KernelSpec> all = tuning_candidates(p, gpu_);
  constexpr int kLimit = 16;
  ASSERT_GT(all.size(), static_cast<std::size_t>(kLimit));
  const std::vector<KernelSpec> kept = tuner.worth_compiling(p, all, kLimit);

  const TuneResult ranked = tuner.rank_only(p, kLimit);
  ASSERT_EQ(ranked.candidates.size(), kept.size());
  const std::vector<KernelSpec> defaults = this->defaults(p);
  std::size_t compiled = 0;
  for (std::size_t i = 0; i < ranked.candidates.size(); ++i) {
    const CandidateOutcome& c = ranked.candidates[i];
    EXPECT_NE(std::find(kept.begin(), kept.end(), c.spec), kept.end()) << kernel_name(c.spec);
    if (!c.prediction) continue;
    ++compiled;
    EXPECT_GT(c.report.registers, 0) << kernel_name(c.spec);  // ranked with its ptxas report
  }
  EXPECT_GE(compiled, kept.size() - 2);
  // The families' defaults first (the tuner's safety net), then the rest by predicted time.
  std::size_t first_other = 0;
  while (first_other < ranked.candidates.size() &&
         std::find(defaults.begin(), defaults.end(), ranked.candidates[first_other].spec) != defaults.end())
    ++first_other;
  EXPECT_GE(first_other, 1u);
  for (std::size_t i = first_other + 1; i < ranked.candidates.size(); ++i) {
    const auto& a = ranked.candidates[i - 1].prediction;
    const auto& b = ranked.candidates[i].prediction;
    if (a && b) {
      EXPECT_LE(a->time_us, b->time_us) << i;
    }
  }
}

TEST_F(RankOnly, ALimitOfOneRanksTheFamiliesDefaultsAloneAsTheCostModelOnlyPolicyDoes) {
  use_gpu("h200.json");
  const Problem p = parse_problem_key("n2_c96_k32_i1x14x14_f1x1x1_s1x1x1_p0x0x0_d1x1x1_g1_nhwc_fp16");
  Tuner& tuner = this->tuner();
  const std::vector<KernelSpec> defaults = this->defaults(p);
  ASSERT_GE(defaults.size(), 2u);  // several families serve it: a choice to rank
  const TuneResult ranked = tuner.rank_only(p, 1);
  ASSERT_EQ(ranked.candidates.size(), defaults.size());
  for (std::size_t i = 0; i < ranked.candidates.size(); ++i) {
    const CandidateOutcome& c = ranked.candidates[i];
    EXPECT_NE(std::find(defaults.begin(), defaults.end(), c.spec), defaults.end()) << kernel_name(c.spec);
    ASSERT_TRUE(c.prediction) << kernel_name(c.spec) << ": " << c.error;
    if (i > 0) {
      EXPECT_LE(ranked.candidates[i - 1].prediction->time_us, c.prediction->time_us) << i;
    }
  }
}

}  // namespace
}  // namespace convgen
