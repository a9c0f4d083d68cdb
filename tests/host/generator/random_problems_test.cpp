// random_problems_test: the stress test's problem generator: the same problems for a seed (pinned keys), every
// problem valid and within its bounds, every kind of shape covered, and its options' errors.
#include "generator/random_problems.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "convgen/weights.hpp"
#include "generator/family.hpp"
#include "reference/pruning.hpp"
#include "support/corpus.hpp"
#include "support/errors.hpp"

namespace convgen {
namespace {

using testing_support::input_error;

std::map<std::string, std::set<std::string>> buckets_of(const std::vector<RandomProblem>& problems) {
  std::map<std::string, std::set<std::string>> seen;
  for (const RandomProblem& p : problems)
    for (const auto& [axis, bucket] : coverage_buckets(p)) seen[std::string(axis)].insert(bucket);
  return seen;
}

// The problem with the filter `convgen stress` attaches to it: pruned 2:4 or to its zero fraction, or none.
Problem with_its_filter(const RandomProblem& rp) {
  if (rp.two_four) return with_weights(rp.problem, two_four_pruned_random_filter(rp.problem, rp.seed));
  if (rp.weight_sparsity > 0)
    return with_weights(rp.problem, pruned_random_filter(rp.problem, rp.weight_sparsity, rp.seed));
  return rp.problem;
}

// The mappings are our own and std::mt19937_64's sequence is the standard's: these keys are the same with every
// compiler and standard library. A change of the generator that changes them changes what `--seed 1` means.
TEST(RandomProblems, SeedOneGivesTheSameProblemsOnEveryMachine) {
  const std::vector<RandomProblem> p = random_problems(1, 3);
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(problem_key(p[0].problem), "n1_c33_k3_i1x12x17_f1x1x1_s1x1x1_p0x0x0_d1x2x2_g1_nhwc_fp32");
  EXPECT_EQ(problem_key(p[1].problem), "n7_c252_k7_i1x1x2_f1x1x1_s1x1x1_p0x0x0_d1x1x1_g1_ndhwc_fp32");
  EXPECT_EQ(problem_key(p[2].problem),
            "n1_c2_k20_i1x7x4_f1x3x3_s1x3x3_p0x0x0_d1x1x1_g1_nhwc_fp32_z50_eadd:2+clip:-0.5:0.5");
  EXPECT_EQ(p[1].index, 1);
}

TEST(RandomProblems, TheSameSeedGivesTheSameSequenceAndAnotherSeedAnother) {
  EXPECT_EQ(random_problems(42, 50), random_problems(42, 50));
  EXPECT_NE(random_problems(42, 50), random_problems(43, 50));
}

TEST(RandomProblems, ProblemIDoesNotDependOnTheCount) {
  const std::vector<RandomProblem> few = random_problems(7, 40);
  const std::vector<RandomProblem> many = random_problems(7, 200);
  EXPECT_EQ(few, std::vector<RandomProblem>(many.begin(), many.begin() + 40));
  EXPECT_EQ(random_problem(7, 123), many[123]);
}

TEST(RandomProblems, EveryProblemIsValidWithinTheMacCapAndFromTheOptions) {
  for (const std::int64_t cap : {std::int64_t{4096}, std::int64_t{1} << 20, std::int64_t{1} << 24}) {
    const RandomProblemOptions options{
        .ranks = {1, 2, 3}, .precisions = {Precision::fp32, Precision::fp16, Precision::bf16}, .max_macs = cap};
    for (const RandomProblem& rp : random_problems(3, 2000, options)) {
      const Problem& p = rp.problem;
      ASSERT_EQ(validate(p), "") << problem_key(p);
      EXPECT_LE(macs(p), cap) << problem_key(p);
      EXPECT_NE(p.precision, Precision::tf32) << problem_key(p);
      EXPECT_TRUE(p.weights.pattern.empty()) << problem_key(p);
      for (const int v : {p.filter.d, p.filter.h, p.filter.w}) EXPECT_TRUE(v >= 1 && v <= 7) << problem_key(p);
      EXPECT_EQ(parse_problem_key(problem_key(p)), p) << problem_key(p);  // `convgen run --problem` repeats it
    }
  }
}

TEST(RandomProblems, TheRanksAreTheOptionsOnes) {
  for (const RandomProblem& rp : random_problems(5, 200, {.ranks = {1}})) {
    EXPECT_EQ(rank(rp.problem.layout), 1) << problem_key(rp.problem);
    EXPECT_EQ(rp.problem.input.h, 1);
  }
  std::set<Layout> layouts;
  for (const RandomProblem& rp : random_problems(5, 200, {.ranks = {3}})) layouts.insert(rp.problem.layout);
  EXPECT_EQ(layouts, (std::set<Layout>{Layout::ncdhw, Layout::ndhwc}));
}

TEST(RandomProblems, PrunedFiltersAttachToTheWeightSparseOnes) {
  int pruned = 0;
  for (const RandomProblem& rp : random_problems(1, 300)) {
    if (rp.weight_sparsity == 0) continue;
    ++pruned;
    EXPECT_FALSE(rp.two_four) << "2:4 in fp32: " << problem_key(rp.problem);
    const Problem p = with_its_filter(rp);
    ASSERT_EQ(validate(p), "") << problem_key(p);
    EXPECT_NEAR(weight_zero_fraction(p), rp.weight_sparsity, 0.5) << problem_key(p);
  }
  EXPECT_GT(pruned, 20);
}

// In fp16 and bf16 the 50% draw is 2:4, with a filter that is 2:4 sparse; in fp32 and tf32 never.
TEST(RandomProblems, SixteenBitProblemsDrawTwoFourFilters) {
  int two_four = 0;
  for (const RandomProblem& rp : random_problems(1, 400, {.precisions = {Precision::tf32, Precision::fp16,
                                                                         Precision::bf16}})) {
    const bool sixteen_bit = rp.problem.precision == Precision::fp16 || rp.problem.precision == Precision::bf16;
    EXPECT_EQ(rp.two_four, sixteen_bit && rp.weight_sparsity == 0.5) << problem_key(rp.problem);
    if (!rp.two_four) continue;
    ++two_four;
    const Problem p = with_its_filter(rp);
    EXPECT_TRUE(is_two_four_sparse(p)) << problem_key(p);
    const std::vector<std::pair<std::string_view, std::string>> buckets = coverage_buckets(rp);
    EXPECT_NE(std::find(buckets.begin(), buckets.end(), std::pair<std::string_view, std::string>{"filter zeros", "2:4"}),
              buckets.end());
  }
  EXPECT_GT(two_four, 5);
}

TEST(RandomProblems, FiveHundredCoverEveryKindOfShape) {
  const std::map<std::string, std::set<std::string>> seen = buckets_of(
      random_problems(1, 500, {.precisions = {Precision::fp32, Precision::tf32, Precision::fp16, Precision::bf16}}));
  const std::map<std::string, std::set<std::string>> expected = {
      {"dims", {"2-D", "3-D"}},
      {"layout", {"nchw", "nhwc", "ncdhw", "ndhwc"}},
      {"filter", {"1x1", "square", "non-square"}},
      {"filter extent", {"1", "2", "3", "4", "5", "6", "7"}},
      {"stride", {"1", "2", "3", "mixed"}},
      {"dilation", {"1", "2", "3", "mixed"}},
      {"padding", {"none", "at most stride", "beyond stride"}},
      {"groups", {"dense", "grouped", "depthwise"}},
      {"precision", {"fp32", "tf32", "fp16", "bf16"}},
      {"batch", {"1", "2-4", "5-16", "17+"}},
      {"C/g", {"1", "2-4", "5-16", "17-64", "65+"}},
      {"K/g", {"1", "2-4", "5-16", "17-64", "65+"}},
      {"MACs", {"< 2^16", "2^16-2^20", "2^20-2^22", ">= 2^22"}},
      {"activation zeros", {"0%", "50%", "70%", "90%"}},
      {"ReLU on load", {"no", "yes"}},
      {"filter zeros", {"0%", "50%", "2:4", "80%", "95%"}},
      {"epilogue", {"none", "alpha", "bias", "add", "relu", "relu6", "clip"}},
  };
  EXPECT_EQ(seen, expected);
}

// coverage_axes lists the axes in coverage_buckets' order, with every bucket a problem lands in.
TEST(RandomProblems, CoverageAxesListEveryBucketInOrder) {
  const std::vector<CoverageAxis>& axes = coverage_axes();
  for (const RandomProblem& rp : random_problems(2, 300, {.ranks = {1, 2, 3}})) {
    std::size_t next = 0;
    for (const auto& [axis, bucket] : coverage_buckets(rp)) {
      while (next < axes.size() && axes[next].axis != axis) ++next;
      ASSERT_LT(next, axes.size()) << axis << " out of order";
      EXPECT_NE(std::find(axes[next].buckets.begin(), axes[next].buckets.end(), bucket), axes[next].buckets.end())
          << axis << ": " << bucket;
    }
  }
}

// Every family serves some of the problems on the H100 (weight_sparse those that carry a pruned filter, igemm_tc the
// tensor-core precisions), so that a stress run verifies each of them.
TEST(RandomProblems, EveryFamilyServesSomeOfFiveHundred) {
  const Gpu gpu = testing_support::h100();
  std::map<std::string, int> served;
  for (const RandomProblem& rp : random_problems(1, 500, {.precisions = {Precision::fp32, Precision::fp16}})) {
    const Problem p = with_its_filter(rp);
    for (const Family* f : all_families())
      if (const auto spec = f->default_spec(p, gpu)) {
        ++served[std::string(f->name())];
        EXPECT_EQ(check_support(p, gpu, *spec), std::nullopt) << problem_key(p) << ": " << kernel_name(*spec);
      }
  }
  for (const Family* f : all_families()) EXPECT_GE(served[std::string(f->name())], 5) << f->name();
}

// Only problems that expect zeros take their input before the ReLU, in about the share asked for, each with an
// activation sparsity; several families serve them, act_sparse applying max(0, x) itself and the others behind a
// ReLU prologue.
TEST(RandomProblems, SomeSparseProblemsTakeTheirInputBeforeItsRelu) {
  const Gpu gpu = testing_support::h100();
  int sparse = 0, before_relu = 0, applied = 0, behind_a_prologue = 0;
  for (const RandomProblem& rp : random_problems(3, 1000, {.ranks = {1, 2, 3}})) {
    if (rp.problem.act_sparsity > 0) ++sparse;
    if (!rp.problem.relu_on_load) continue;
    ++before_relu;
    EXPECT_GT(rp.problem.act_sparsity, 0) << problem_key(rp.problem);
    EXPECT_TRUE(problem_key(rp.problem).find("_relu") != std::string::npos);
    for (const Family* f : all_families())
      if (const auto spec = f->default_spec(rp.problem, gpu)) {
        EXPECT_EQ(check_support(rp.problem, gpu, *spec), std::nullopt) << kernel_name(*spec);
        (needs_relu_prologue(rp.problem, *spec) ? behind_a_prologue : applied) += 1;
        EXPECT_EQ(plan_for(rp.problem, *spec).activation_buffer.empty(), !needs_relu_prologue(rp.problem, *spec));
      }
  }
  EXPECT_NEAR(before_relu, 0.3 * sparse, 0.1 * sparse) << sparse << " sparse";
  EXPECT_GE(applied, 5);
  EXPECT_GE(behind_a_prologue, 5);
  for (const RandomProblem& rp : random_problems(3, 200, {.relu_on_load_share = 0})) EXPECT_FALSE(rp.problem.relu_on_load);
}

TEST(RandomProblems, CoverageBucketsOfAKnownProblem) {
  RandomProblem rp{.problem = {.n = 3,
                               .c = 8,
                               .k = 8,
                               .input = {1, 9, 9},
                               .filter = {1, 3, 1},
                               .stride = {1, 2, 1},
                               .padding = {0, 3, 0},
                               .groups = 8,
                               .layout = Layout::nhwc,
                               .epilogue = {.bias = true, .act = Activation::relu}},
                   .weight_sparsity = 0.8};
  const std::vector<std::pair<std::string_view, std::string>> expected = {
      {"dims", "2-D"},
      {"layout", "nhwc"},
      {"filter", "non-square"},
      {"filter extent", "3"},
      {"filter extent", "1"},
      {"stride", "mixed"},
      {"dilation", "1"},
      {"padding", "beyond stride"},
      {"groups", "depthwise"},
      {"precision", "fp32"},
      {"batch", "2-4"},
      {"C/g", "1"},
      {"K/g", "1"},
      {"MACs", "< 2^16"},
      {"activation zeros", "0%"},
      {"ReLU on load", "no"},
      {"filter zeros", "80%"},
      {"epilogue", "bias"},
      {"epilogue", "relu"},
  };
  EXPECT_EQ(coverage_buckets(rp), expected);
  EXPECT_EQ(macs(rp.problem), 3 * 8 * 7 * 9 * 1 * 3);  // N K P Q x C/g R S
}

TEST(RandomProblems, OptionsItCannotServeAreNamed) {
  EXPECT_EQ(input_error([] { random_problem(1, 0, {.ranks = {}}); }),
            "random problems: no spatial rank to draw from, expected some of 1, 2, 3");
  EXPECT_EQ(input_error([] { random_problem(1, 0, {.ranks = {4}}); }), "random problems: rank 4 is not 1, 2 or 3");
  EXPECT_EQ(input_error([] { random_problem(1, 0, {.precisions = {}}); }),
            "random problems: no precision to draw from");
  EXPECT_EQ(input_error([] { random_problem(1, 0, {.max_macs = 100}); }),
            "random problems: max_macs must be at least 4096, got 100");
  EXPECT_EQ(input_error([] { random_problem(1, 0, {.epilogue_share = 1.5}); }),
            "random problems: a share must be in [0, 1], got 1.5");
  EXPECT_EQ(input_error([] { random_problem(1, 0, {.relu_on_load_share = -0.5}); }),
            "random problems: a share must be in [0, 1], got -0.5");
}

}  // namespace
}  // namespace convgen
