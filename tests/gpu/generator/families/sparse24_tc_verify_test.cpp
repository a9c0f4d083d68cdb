// sparse24_tc_verify_test: the 2:4 tensor-core family verified on the GPU against the float64 reference with the
// same filter (outputs poisoned, activations random, the precision's limit): the edge-case corpus in fp16 and bf16,
// each row in its own layout and channels-last, with filters pruned to 2:4, with every odd output channel zero as
// well, and all zero; every configuration the search space offers on network layers; split-K of every count.
// Prints, and appends to $CONVGEN_VERIFY_REPORT, the cases, failures and worst error per precision and layout.
#include <gtest/gtest.h>

#include "convgen/weights.hpp"
#include "measure/verify.hpp"
#include "reference/inputs.hpp"
#include "reference/pruning.hpp"
#include "runtime/device.hpp"
#include "runtime/driver.hpp"
#include "runtime/module.hpp"
#include "runtime/thread_pool.hpp"
#include "sparse24_tc_params.hpp"
#include "support/corpus.hpp"
#include "support/two_four_filters.hpp"
#include "support/verify_cases.hpp"
#include "support/verify_tally.hpp"

namespace convgen {
namespace {

using namespace testing_support;

const std::string kTallyTable = "sparse24_tc verified cases per precision and layout (configuration, shape)";

class Sparse24TcGpu : public testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_available()) GTEST_SKIP() << "no CUDA device: " << no_device_reason();
    context_ = std::make_unique<Context>(0);
    gpu_ = query_device(0);
  }

  // The filter each problem expects (its own 2:4 values), on dense random activations.
  int verify_all(const std::vector<Case>& cases, std::uint64_t seed) {
    return verify_cases(cases, gpu_, cache_, seed, kTallyTable, own_filter_inputs);
  }

  std::unique_ptr<Context> context_;
  Gpu gpu_;
  JitCache cache_{std::nullopt};
};

TEST_F(Sparse24TcGpu, RepresentativeConfigurationsAreCorrectOnTheEdgeCaseCorpusWithEveryKindOfTwoFourFilter) {
  std::vector<Case> cases;
  std::uint64_t seed = 1;
  for (const Layer& layer : edge_cases().layers)
    for (Precision precision : {Precision::fp16, Precision::bf16}) {
      std::vector<Layout> layouts = {layer.problem.layout};
      if (!channels_last(layer.problem.layout)) layouts.push_back(channels_last_of(layer.problem.layout));
      for (Layout layout : layouts)
        for (FilterKind kind : {FilterKind::two_four, FilterKind::odd_channels_zero, FilterKind::all_zero}) {
          const Problem p = with_two_four_filter(layer.problem, precision, layout, kind, seed++);
          ASSERT_TRUE(is_two_four_sparse(p)) << layer.name;
          // Two configurations for the extra filter kinds, four for the plain 2:4 filter.
          const std::vector<KernelSpec> specs =
              representative_specs(family("sparse24_tc"), p, gpu_, kind == FilterKind::two_four ? 3 : 1);
          EXPECT_FALSE(specs.empty()) << layer.name << " " << problem_key(p);
          for (const KernelSpec& s : specs)
            cases.push_back({fmt::format("{} {} {} ({})", layer.name, precision, layout, name_of(kind)), p, s});
        }
    }
  EXPECT_GT(verify_all(cases, 1), 0);
}

// Every configuration enumerate() offers, that is every one the tuner can pick, on the cusnn layers in fp16 NHWC at
// batch 8 and on two layers in bf16 NCHW.
TEST_F(Sparse24TcGpu, EveryEnumeratedConfigurationIsCorrectOnNetworkLayers) {
  std::vector<Case> cases;
  for (const Problem& p : two_four_network_problems(Layout::nchw)) {
    const std::vector<KernelSpec> specs = family("sparse24_tc").enumerate(p, gpu_);
    EXPECT_FALSE(specs.empty()) << problem_key(p);
    for (const KernelSpec& s : specs) cases.push_back({problem_key(p), p, s});
  }
  EXPECT_GT(verify_all(cases, 200), 0);
}

// The epilogue at the store: bias, residual and ReLU, in both layouts (channels-last through the staged tile, with
// and without 16-byte stores), without and with split-K (where the reduce pass applies it).
TEST_F(Sparse24TcGpu, AppliesTheEpilogueInBothLayoutsWithAndWithoutSplitK) {
  std::vector<Case> cases;
  std::uint64_t seed = 400;
  const Epilogue epilogue = parse_epilogue("bias+add+relu");
  for (const char* name : {"c32_k100_3x3", "c16_k5_odd_7x9_nopad"})
    for (const Layer& layer : edge_cases().layers) {
      if (layer.name != name) continue;
      for (Layout layout : {layer.problem.layout, channels_last_of(layer.problem.layout)}) {
        Problem p = with_two_four_filter(layer.problem, Precision::fp16, layout, FilterKind::two_four, seed++);
        p.epilogue = epilogue;
        std::vector<KernelSpec> specs = representative_specs(family("sparse24_tc"), p, gpu_, 1);
        for (const KernelSpec& s : family("sparse24_tc").enumerate(p, gpu_))
          if (params_of<Sparse24TcParams>(s).split_k > 1) {
            specs.push_back(s);
            break;
          }
        for (const KernelSpec& s : specs) cases.push_back({fmt::format("{} {} bias+add+relu", name, layout), p, s});
      }
    }
  EXPECT_GT(verify_all(cases, 450), 0);
}

TEST_F(Sparse24TcGpu, SplitKOfEveryCountAddsThePartialSumsCorrectly) {
  // A long reduction on few output pixels: the case split-K exists for; K = 96 is a partial 64-channel tile.
  std::vector<Case> cases;
  std::uint64_t seed = 300;
  for (Precision precision : {Precision::fp16, Precision::bf16})
    for (Layout layout : {Layout::nhwc, Layout::nchw}) {
      const Problem shape{.n = 1, .c = 512, .k = 96, .input = {1, 7, 7}, .filter = {1, 3, 3}, .padding = {0, 1, 1}};
      const Problem p = with_two_four_filter(shape, precision, layout, FilterKind::two_four, seed++);
      for (int split_k : {2, 3, 5, 8, 16, 24}) {
        const KernelSpec s = to_spec(Sparse24TcParams{.block_m = 64,
                                                      .block_n = 32,
                                                      .block_k = 32,
                                                      .warp_m = 32,
                                                      .warp_n = 32,
                                                      .stages = 3,
                                                      .split_k = split_k,
                                                      .vector = channels_last(layout)});
        ASSERT_EQ(family("sparse24_tc").check_support(p, gpu_, s), std::nullopt) << kernel_name(s);
        cases.push_back({fmt::format("split_k {} {} {}", split_k, precision, layout), p, s});
      }
    }
  EXPECT_EQ(verify_all(cases, 500), static_cast<int>(cases.size()));
}

}  // namespace
}  // namespace convgen
