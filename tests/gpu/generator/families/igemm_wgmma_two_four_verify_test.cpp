// igemm_wgmma_two_four_verify_test: igemm_wgmma's 2:4 configurations (`sp`: the filter compressed by the pack entry,
// wgmma.mma_async.sp) verified on the GPU against the float64 reference with the same filter (outputs poisoned,
// activations random, the precision's limit), on a GPU with wgmma (skipped elsewhere): the edge-case corpus
// channels-last in fp16 and bf16 with filters pruned to 2:4, with every odd output channel zero as well, and all
// zero; every 2:4 configuration the search space offers on the cusnn layers; every block tile in both pipelines on
// problems whose pixels and output channels end inside the tile, with groups, a long reduction and the fused
// epilogue; split-K through the workspace and in a cluster. Prints, and appends to $CONVGEN_VERIFY_REPORT, the cases,
// failures and worst error per precision.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "convgen/weights.hpp"
#include "igemm_wgmma_params.hpp"
#include "measure/verify.hpp"
#include "reference/inputs.hpp"
#include "reference/pruning.hpp"
#include "runtime/device.hpp"
#include "runtime/driver.hpp"
#include "support/corpus.hpp"
#include "support/two_four_filters.hpp"
#include "support/verify_cases.hpp"

namespace convgen {
namespace {

using namespace testing_support;

const std::string kTallyTable = "igemm_wgmma 2:4 verified cases per precision and layout (configuration, shape)";

class IgemmWgmmaTwoFourGpu : public testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_available()) GTEST_SKIP() << "no CUDA device: " << no_device_reason();
    context_ = std::make_unique<Context>(0);
    gpu_ = query_device(0);
    if (!has_wgmma(gpu_)) GTEST_SKIP() << "igemm_wgmma needs compute capability 9.0; this GPU is " << gpu_.arch;
  }

  // The filter each problem carries (its own 2:4 values), on dense random activations.
  int verify_all(const std::vector<Case>& cases, std::uint64_t seed) {
    return verify_cases(cases, gpu_, cache_, seed, kTallyTable, own_filter_inputs);
  }

  // The 2:4 configurations enumerate() offers for `p`.
  std::vector<KernelSpec> sparse_specs(const Problem& p) const {
    std::vector<KernelSpec> specs;
    for (const KernelSpec& s : wgmma_.enumerate(p, gpu_))
      if (params_of<IgemmWgmmaParams>(s).sparse_filter) specs.push_back(s);
    return specs;
  }

  const Family& wgmma_ = family("igemm_wgmma");
  std::unique_ptr<Context> context_;
  Gpu gpu_;
  JitCache cache_{std::nullopt};
};

// 429 pixels and 200 output channels, a reduction of 576 (4.5 steps of 128): partial tiles everywhere.
Problem partial_tiles() {
  return {.n = 3,
          .c = 64,
          .k = 200,
          .input = {1, 13, 11},
          .filter = {1, 3, 3},
          .padding = {0, 1, 1},
          .layout = Layout::nhwc};
}

// The same pixels in two groups of 64 -> 128 channels.
Problem grouped_partial_tiles() {
  Problem grouped = partial_tiles();
  grouped.c = 128;
  grouped.k = 256;
  grouped.groups = 2;
  return grouped;
}

// Every corpus layer the 2:4 configurations serve (channels a whole number of 16-byte loads), each filter kind: the
// first two of each pipeline in the search's order (a 2:4 filter), the first of each for the other kinds.
TEST_F(IgemmWgmmaTwoFourGpu, TheCompressedFilterIsCorrectOnTheEdgeCaseCorpusWithEveryKindOfTwoFourFilter) {
  std::vector<Case> cases;
  std::uint64_t seed = 1;
  int served = 0;
  for (const Layer& layer : edge_cases().layers)
    for (Precision precision : {Precision::fp16, Precision::bf16})
      for (FilterKind kind : {FilterKind::two_four, FilterKind::odd_channels_zero, FilterKind::all_zero}) {
        const Problem p =
            with_two_four_filter(layer.problem, precision, channels_last_of(layer.problem.layout), kind, seed++);
        ASSERT_TRUE(is_two_four_sparse(p)) << layer.name;
        const std::vector<KernelSpec> specs = sparse_specs(p);
        if (!specs.empty()) ++served;
        const int each = kind == FilterKind::two_four ? 2 : 1;
        for (int pipeline : {0, 1}) {
          int taken = 0;
          for (const KernelSpec& s : specs)
            if (params_of<IgemmWgmmaParams>(s).warp_specialized == pipeline && taken++ < each)
              cases.push_back({fmt::format("{} {} ({})", layer.name, precision, name_of(kind)), p, s});
        }
      }
  EXPECT_GT(served, 30) << "the 2:4 configurations served too few corpus layers";
  EXPECT_EQ(verify_all(cases, 1), static_cast<int>(cases.size()));
}

// Every 2:4 configuration enumerate() offers, that is every one the tuner can pick, on the cusnn layers in fp16 at
// batch 8, and on two of them in bf16 at batch 1.
TEST_F(IgemmWgmmaTwoFourGpu, EveryEnumeratedTwoFourConfigurationIsCorrectOnNetworkLayers) {
  std::vector<Case> cases;
  for (const Problem& p : two_four_network_problems(Layout::nhwc)) {
    const std::vector<KernelSpec> specs = sparse_specs(p);
    EXPECT_FALSE(specs.empty()) << problem_key(p);
    for (const KernelSpec& s : specs) cases.push_back({problem_key(p), p, s});
  }
  EXPECT_EQ(verify_all(cases, 200), static_cast<int>(cases.size()));
}

// Every tile of 64 to 256 pixels by 64 to 256 channels in both pipelines on a problem whose pixels and output channels
// end inside the tile (429 pixels, 200 channels: the packed rows past 200 are zeros; a reduction of 576, whose last
// step has one K atom of pixels and a packed filter zero past it) and on a grouped one; a reduction of 36 steps with
// 3 to 6 stages; and the fused epilogue.
TEST_F(IgemmWgmmaTwoFourGpu, EveryBlockTileIsCorrectOnPartialTilesGroupsALongReductionAndTheEpilogue) {
  const Problem partial = partial_tiles();
  const Problem grouped = grouped_partial_tiles();
  std::vector<Case> cases;
  std::uint64_t seed = 300;
  for (Precision precision : {Precision::fp16, Precision::bf16}) {
    for (const Problem& shape : {partial, grouped}) {
      const Problem p = with_two_four_filter(shape, precision, Layout::nhwc, FilterKind::two_four, seed++);
      for (int block_m : {64, 128, 192, 256})
        for (int block_n : {64, 128, 192, 256})
          for (int pipeline : {0, 1}) {
            const KernelSpec s = to_spec(IgemmWgmmaParams{.block_m = block_m,
                                                          .block_n = block_n,
                                                          .k_atoms = 2,
                                                          .stages = 4,
                                                          .warp_specialized = pipeline,
                                                          .swap_ab = true,
                                                          .sparse_filter = true});
            if (wgmma_.check_support(p, gpu_, s)) continue;  // threads, registers, rows among the loaders
            cases.push_back({fmt::format("sp partial{} {}", shape.groups > 1 ? " grouped" : "", precision), p, s});
          }
    }
    Problem deep = long_reduction(precision);
    const Problem deep_sparse = with_two_four_filter(deep, precision, Layout::nhwc, FilterKind::two_four, seed++);
    for (int stages : {3, 4, 5, 6})
      for (int pipeline : {0, 1}) {
        const KernelSpec s = to_spec(IgemmWgmmaParams{.block_m = 64,
                                                      .block_n = 64,
                                                      .k_atoms = 2,
                                                      .stages = stages,
                                                      .warp_specialized = pipeline,
                                                      .swap_ab = true,
                                                      .sparse_filter = true});
        ASSERT_EQ(wgmma_.check_support(deep_sparse, gpu_, s), std::nullopt) << kernel_name(s);
        cases.push_back({fmt::format("sp deep {}", precision), deep_sparse, s});
      }
    deep.epilogue = parse_epilogue("alpha:1.5+bias+add:0.5+relu6");
    const Problem fused = with_two_four_filter(deep, precision, Layout::nhwc, FilterKind::two_four, seed++);
    for (int pipeline : {0, 1})
      cases.push_back({fmt::format("sp epilogue {}", precision), fused,
                       to_spec(IgemmWgmmaParams{.block_m = 128,
                                                .block_n = 64,
                                                .k_atoms = 2,
                                                .stages = 4,
                                                .warp_specialized = pipeline,
                                                .swap_ab = true,
                                                .sparse_filter = true})});
  }
  EXPECT_GT(cases.size(), 60u);
  EXPECT_EQ(verify_all(cases, 3000), static_cast<int>(cases.size()));
}

// Split-K (`sk` 2 to 16) through the workspace and in a cluster (`cr`): each split's partial sums written transposed
// from the swapped accumulators. On the long reduction (36 steps, 96 output channels: a partial 128-channel tile) in
// both pipelines and tiles of 64 and 128 pixels by 64 and 128 channels, on the partial-tile problem (4.5 steps: the
// second split ends half a step early) and its grouped twin, and with the fused epilogue (applied by the reduce pass,
// or by the cluster's blocks as they add).
TEST_F(IgemmWgmmaTwoFourGpu, SplitReductionsAreCorrectThroughTheWorkspaceAndInACluster) {
  const Problem partial = partial_tiles();
  const Problem grouped = grouped_partial_tiles();
  std::vector<Case> cases;
  std::uint64_t seed = 700;
  const auto sp = [](int block_m, int block_n, int pipeline, int split_k, bool cluster) {
    return to_spec(IgemmWgmmaParams{.block_m = block_m,
                                    .block_n = block_n,
                                    .k_atoms = 2,
                                    .stages = 4,
                                    .split_k = split_k,
                                    .warp_specialized = pipeline,
                                    .cluster_reduce = cluster,
                                    .swap_ab = true,
                                    .sparse_filter = true});
  };
  for (Precision precision : {Precision::fp16, Precision::bf16}) {
    Problem deep = long_reduction(precision);
    const Problem deep_sparse = with_two_four_filter(deep, precision, Layout::nhwc, FilterKind::two_four, seed++);
    for (int split_k : {2, 3, 4, 8, 16})
      for (bool cluster : {false, true})
        for (int block_m : {64, 128})
          for (int block_n : {64, 128})
            for (int pipeline : {0, 1}) {
              const KernelSpec s = sp(block_m, block_n, pipeline, split_k, cluster);
              if (wgmma_.check_support(deep_sparse, gpu_, s)) continue;  // a cluster of at most 8
              cases.push_back({fmt::format("sp split deep {}", precision), deep_sparse, s});
            }
    for (const Problem& shape : {partial, grouped}) {
      const Problem p = with_two_four_filter(shape, precision, Layout::nhwc, FilterKind::two_four, seed++);
      for (bool cluster : {false, true})
        for (int pipeline : {0, 1}) {
          const KernelSpec s = sp(128, 128, pipeline, 2, cluster);
          ASSERT_EQ(wgmma_.check_support(p, gpu_, s), std::nullopt) << kernel_name(s);
          cases.push_back({fmt::format("sp split partial{} {}", shape.groups > 1 ? " grouped" : "", precision), p, s});
        }
    }
    deep.epilogue = parse_epilogue("alpha:1.5+bias+add:0.5+relu6");
    const Problem fused = with_two_four_filter(deep, precision, Layout::nhwc, FilterKind::two_four, seed++);
    for (bool cluster : {false, true})
      for (int pipeline : {0, 1})
        cases.push_back({fmt::format("sp split epilogue {}", precision), fused, sp(64, 64, pipeline, 4, cluster)});
  }
  EXPECT_GT(cases.size(), 100u);
  EXPECT_EQ(verify_all(cases, 3000), static_cast<int>(cases.size()));
}

}  // namespace
}  // namespace convgen
