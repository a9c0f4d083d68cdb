// weight_sparse_test: the weight-sparse family's support reasons, the code it generates from a pruned filter (one
// FMA per nonzero, one load per activation a channel group needs, values as immediates or gathered), its launch
// plan and its place in the default choice.
#include <regex>
#include <set>

#include <gtest/gtest.h>

#include "convgen/weights.hpp"
#include "generator/family.hpp"
#include "reference/pruning.hpp"
#include "support/corpus.hpp"
#include "weight_sparse_params.hpp"

namespace convgen {
namespace {

using testing_support::h100;

const Family& weight_sparse() { return family("weight_sparse"); }

const Problem kLayer{.n = 1, .c = 16, .k = 12, .input = {1, 9, 9}, .filter = {1, 3, 3}, .padding = {0, 1, 1}};

WeightSparseParams params(int pixels, int k_group, bool immediates) {
  WeightSparseParams s;
  s.block_pixels = pixels;
  s.k_group = k_group;
  s.immediates = immediates;
  return s;
}

std::size_t count(const std::string& text, const std::string& pattern) {
  const std::regex re(pattern);
  return static_cast<std::size_t>(std::distance(std::sregex_iterator(text.begin(), text.end(), re), std::sregex_iterator()));
}

TEST(WeightSparseFamily, ServesOnlyProblemsThatCarryTheirFilter) {
  const KernelSpec s = to_spec(params(128, 4, true));
  EXPECT_EQ(weight_sparse().check_support(kLayer, h100(), s),
            "weight_sparse bakes the problem's own filter, and this problem has none");
  EXPECT_TRUE(weight_sparse().enumerate(kLayer, h100()).empty());
  const Problem pruned = with_weights(kLayer, pruned_random_filter(kLayer, 0.9, 1));
  EXPECT_EQ(weight_sparse().check_support(pruned, h100(), s), std::nullopt);
  Problem pattern_only = pruned;
  pattern_only.weights.values = nullptr;
  EXPECT_NE(weight_sparse().check_support(pattern_only, h100(), s)->find("needs the values of filter pattern"),
            std::string::npos);
  Problem half = pruned;
  half.precision = Precision::fp16;
  EXPECT_EQ(weight_sparse().check_support(half, h100(), s), "precision fp16 is not supported by weight_sparse (fp32 only)");
  const Problem big{.n = 1, .c = 512, .k = 512, .input = {1, 7, 7}, .filter = {1, 3, 3}, .padding = {0, 1, 1}};
  EXPECT_EQ(weight_sparse().check_support(with_weights(big, pruned_random_filter(big, 0.5, 1)), h100(), s),
            "1179648 nonzero weights exceed the 8192 baked into one kernel (code size and NVRTC time)");
}

TEST(WeightSparseFamily, GeneratesOneFmaPerNonzeroAndOneLoadPerNeededActivation) {
  for (const Layout layout : {Layout::nchw, Layout::nhwc}) {
    Problem p = kLayer;
    p.layout = layout;
    const std::vector<float> values = pruned_random_filter(p, 0.9, 3);
    p = with_weights(p, values);
    std::size_t nnz = 0;
    for (float v : values) nnz += v != 0.0f;
    for (const bool immediates : {true, false}) {
      // The generated code: the prelude, before the template's own (default) text.
      std::string text = weight_sparse().render(p, to_spec(params(64, 4, immediates))).text;
      text = text.substr(0, text.find("#line 1"));
      EXPECT_EQ(count(text, R"(acc\[\d+\] = fmaf\()"), nnz) << to_string(layout);
      // Each group's loads are distinct activations: at most one per nonzero.
      const std::size_t loads = count(text, R"(const float v = __ldg\(x \+ tb\[)");
      EXPECT_LE(loads, nnz);
      EXPECT_GT(loads, 0u);
      EXPECT_NE(text.find(p.weights.pattern), std::string::npos);
      if (immediates) {
        EXPECT_EQ(count(text, R"(wv\[)"), 0u);
        EXPECT_NE(text.find("constexpr int NNZ = 0;"), std::string::npos);
      } else {
        EXPECT_EQ(count(text, R"(fmaf\(wv\[)"), nnz);
        EXPECT_NE(text.find(fmt::format("constexpr int NNZ = {};", nnz)), std::string::npos);
      }
    }
  }
}

TEST(WeightSparseFamily, GathersEachPackedValueFromItsFilterIndex) {
  // One nonzero, at k 5, c 3, r 2, s 0: index ((5 * 16 + 3) * 3 + 2) * 3 + 0 = 753 in K C R S.
  std::vector<float> values(static_cast<std::size_t>(filter_elements(kLayer)), 0.0f);
  values[753] = 0.5f;
  const Problem p = with_weights(kLayer, values);
  const std::string text = weight_sparse().render(p, to_spec(params(64, 4, false))).text;
  EXPECT_NE(text.find("__device__ const int kGather[NNZ] = {\n  753\n};"), std::string::npos) << text.substr(0, 3000);
  // Channel 5 is accumulator 1 of group 1; its activation is channel 3 at row offset 2 (3 * 81 + 2 * 9 + 0 = 261),
  // tap 6.
  EXPECT_NE(text.find("case 1: {\n      { const float v = __ldg(x + tb[6] + 261); const float a = (valid >> 6) & 1u ? "
                      "v : 0.0f;\n        acc[1] = fmaf(wv[0], a, acc[1]);"),
            std::string::npos)
      << text.substr(text.find("namespace ws_code"), 1200);
  const std::string imm = weight_sparse().render(p, to_spec(params(64, 4, true))).text;
  EXPECT_NE(imm.find("acc[1] = fmaf(0x1p-1f, a, acc[1]);"), std::string::npos);
}

TEST(WeightSparseFamily, PlanGathersValuesOnceOnlyWhenTheyAreNotImmediates) {
  const Problem p = with_weights(kLayer, pruned_random_filter(kLayer, 0.5, 1));
  const LaunchPlan packed = weight_sparse().plan(p, to_spec(params(128, 8, false)));
  ASSERT_EQ(packed.setup.size(), 1u);
  EXPECT_EQ(packed.setup[0].entry_suffix, "pack_values");
  EXPECT_EQ(packed.buffers.at(0).name, "packed_values");
  EXPECT_EQ(packed.buffers.at(0).bytes, 4 * 72 * 12);  // 50% of 16 x 9 per channel, 12 channels
  EXPECT_EQ(packed.run.size(), 1u);
  EXPECT_EQ(packed.run[0].geometry.grid, (std::array<unsigned, 3>{1, 2, 1}));  // 81 pixels, 12 channels by 8
  EXPECT_TRUE(weight_sparse().plan(p, to_spec(params(128, 8, true))).setup.empty());
}

TEST(WeightSparseFamily, IsTheDefaultForMostlyZeroFilters) {
  const Problem sparse = with_weights(kLayer, pruned_random_filter(kLayer, 0.9, 1));
  EXPECT_EQ(default_choice(sparse, h100()).family, "weight_sparse");
  const Problem dense = with_weights(kLayer, pruned_random_filter(kLayer, 0.2, 1));
  EXPECT_NE(default_choice(dense, h100()).family, "weight_sparse");
  EXPECT_NE(default_choice(kLayer, h100()).family, "weight_sparse");
  std::set<std::string> names;
  for (const KernelSpec& s : weight_sparse().enumerate(sparse, h100())) {
    EXPECT_EQ(weight_sparse().check_support(sparse, h100(), s), std::nullopt);
    EXPECT_TRUE(names.insert(kernel_name(s)).second);
  }
  EXPECT_GT(names.size(), 4u);
}

}  // namespace
}  // namespace convgen
