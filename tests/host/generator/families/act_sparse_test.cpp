// act_sparse_test: the activation-sparse family's search space, support reasons and launch plan (a filter packed once
// into a persistent buffer, the output zeroed first when blocks split the channels).
#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "act_sparse_params.hpp"
#include "generator/family.hpp"
#include "generator/shapes.hpp"
#include "igemm_params.hpp"
#include "support/corpus.hpp"

namespace convgen {
namespace {

using testing_support::h100;
using testing_support::source_dir;

const Family& act_sparse() { return family("act_sparse"); }

std::vector<Problem> cusnn_layers() {
  std::vector<Problem> problems;
  for (const Layer& layer : load_suite(source_dir() / "shapes" / "cusnn.csv").layers) problems.push_back(layer.problem);
  return problems;
}

TEST(ActSparseFamily, EnumeratesSupportedDistinctCandidatesForEveryCusnnLayer) {
  for (const Problem& p : cusnn_layers()) {
    const std::vector<KernelSpec> specs = act_sparse().enumerate(p, h100());
    ASSERT_FALSE(specs.empty()) << problem_key(p);
    std::set<std::string> names;
    for (const KernelSpec& s : specs) {
      EXPECT_EQ(act_sparse().check_support(p, h100(), s), std::nullopt) << kernel_name(s);
      EXPECT_TRUE(names.insert(kernel_name(s)).second) << kernel_name(s);
      EXPECT_EQ(parse_kernel_name(kernel_name(s)), s);
    }
    EXPECT_EQ(act_sparse().default_spec(p, h100()), specs.front());
  }
}

TEST(ActSparseFamily, PacksTheFilterOnceAndZeroesTheOutputOnlyWhenBlocksSplitTheChannels) {
  const Problem p = cusnn_layers().front();
  for (const KernelSpec& s : act_sparse().enumerate(p, h100())) {
    const LaunchPlan plan = act_sparse().plan(p, s);
    ASSERT_EQ(plan.setup.size(), 1u);
    EXPECT_EQ(plan.setup[0].entry_suffix, "pack_filter");
    const PlanBuffer* packed = plan.find("packed_filter");
    ASSERT_NE(packed, nullptr);
    EXPECT_TRUE(packed->persistent);
    EXPECT_GE(packed->bytes, filter_elements(p) * 4);
    EXPECT_EQ(plan.workspace_bytes(), 0);
    // Split channels add into a zeroed output, unless the splits of a tile are a cluster (cr1).
    const bool zeroed = params_of<ActSparseParams>(s).split_c > 1 && !params_of<ActSparseParams>(s).cluster_reduce;
    EXPECT_EQ(plan.run.front().kind == LaunchStep::Kind::zero, zeroed) << kernel_name(s);
    EXPECT_EQ(plan.run.back().kind, LaunchStep::Kind::kernel);
  }
}

TEST(ActSparseFamily, DeclinesWhatTheTemplateDoesNotServeWithAReason) {
  Problem p = cusnn_layers().front();
  const KernelSpec s = *act_sparse().default_spec(p, h100());
  Problem grouped = p;
  grouped.groups = 2;
  EXPECT_EQ(act_sparse().check_support(grouped, h100(), s), "act_sparse handles ungrouped convolutions only, got groups 2");
  Problem half = p;
  half.precision = Precision::fp16;
  EXPECT_EQ(act_sparse().check_support(half, h100(), s), "precision fp16 is not supported by act_sparse (fp32 only)");
  EXPECT_EQ(act_sparse().check_support(p, h100(), to_spec(IgemmParams{})), "kernel igemm is not an act_sparse kernel");
  ActSparseParams staged_shuffles = params_of<ActSparseParams>(s);
  staged_shuffles.block_staged = true;
  staged_shuffles.sparse_mode = 2;
  EXPECT_EQ(act_sparse().check_support(p, h100(), to_spec(staged_shuffles)),
            "block_staged reads halos from shared memory (sparse_mode 3), one channel ahead (no unroll2, load_batch 1); "
            "got sparse_mode 2, unroll2 false, load_batch 1");
}

// Blocks that split the input channels add into the output with atomics: declined with an epilogue.
TEST(ActSparseFamily, DeclinesChannelSplitsWithAnEpilogue) {
  Problem p = cusnn_layers().front();
  const std::vector<KernelSpec> dense = act_sparse().enumerate(p, h100());
  const auto split = std::find_if(dense.begin(), dense.end(), [](const KernelSpec& s) {
    return params_of<ActSparseParams>(s).split_c > 1 && !params_of<ActSparseParams>(s).cluster_reduce;
  });
  ASSERT_NE(split, dense.end()) << "no channel-splitting candidate to decline";
  p.epilogue = parse_epilogue("bias+relu");
  EXPECT_EQ(act_sparse().check_support(p, h100(), *split),
            fmt::format("split_c {} adds partial sums into the output with atomics; the epilogue bias+relu needs the "
                        "whole sum (split_c 1)",
                        params_of<ActSparseParams>(*split).split_c));
  // The same splits as one cluster a tile sum the whole in a block: served, where the GPU has clusters.
  ActSparseParams c = params_of<ActSparseParams>(*split);
  c.cluster_reduce = true;
  const KernelSpec clustered = to_spec(c);
  EXPECT_EQ(act_sparse().check_support(p, h100(), clustered), std::nullopt) << kernel_name(clustered);
  EXPECT_FALSE(act_sparse().plan(p, clustered).zeroes_output_first());
  EXPECT_EQ(act_sparse().check_support(p, load_gpu(source_dir() / "gpus" / "a100_sxm4.json"), clustered),
            "cluster_reduce needs thread-block clusters (sm_90 and later), not sm_80");
  const std::vector<KernelSpec> specs = act_sparse().enumerate(p, h100());
  ASSERT_FALSE(specs.empty());
  for (const KernelSpec& s : specs) {
    EXPECT_EQ(params_of<ActSparseParams>(s).split_c, 1) << kernel_name(s);
    EXPECT_FALSE(act_sparse().plan(p, s).zeroes_output_first()) << kernel_name(s);
  }
}

TEST(ActSparseFamily, GoesFirstOnDenseProblemsOnlyFor3x3LayersOfFewChannelsThatWinogradGemmLeaves) {
  const Problem p = cusnn_layers().front();  // 231 MFLOP at 3x3 stride 1: winograd_gemm's
  EXPECT_EQ(default_choice(p, h100()).family, "winograd_gemm");
  EXPECT_LT(act_sparse().default_rank(p), family("igemm").default_rank(p));
  Problem strided = p;  // winograd_gemm serves stride 1 only
  strided.stride = {1, 2, 2};
  EXPECT_EQ(default_choice(strided, h100()).family, "act_sparse");
  Problem wide = strided;  // more than 128 input channels: igemm's
  wide.c = 256;
  EXPECT_EQ(default_choice(wide, h100()).family, "igemm");
  Problem pointwise = strided;
  pointwise.filter = {1, 1, 1};
  pointwise.padding = {0, 0, 0};
  EXPECT_NE(default_choice(pointwise, h100()).family, "act_sparse");
  Problem five = strided;
  five.filter = {1, 5, 5};
  five.padding = {0, 2, 2};
  EXPECT_GT(act_sparse().default_rank(five), family("igemm").default_rank(five));
}

TEST(ActSparseFamily, IsTheDefaultWhereTheProblemExpectsZerosAndSkippingPays) {
  Problem p = cusnn_layers().front();
  p.act_sparsity = 0.9;
  EXPECT_EQ(default_choice(p, h100()).family, "act_sparse");
  Problem strided = p;  // winograd_gemm (first below 90% zeros where it serves) does not serve stride 2
  strided.act_sparsity = 0.7;
  strided.stride = {1, 2, 2};
  EXPECT_EQ(default_choice(strided, h100()).family, "act_sparse");
  Problem pointwise = p;  // 1x1 from batch 4 on: igemm's GEMM was faster (bench/results/h200/act_sparse)
  pointwise.filter = {1, 1, 1};
  pointwise.padding = {0, 0, 0};
  pointwise.n = 8;
  EXPECT_NE(default_choice(pointwise, h100()).family, "act_sparse");
}

TEST(ActSparseFamily, OffersTheChannelLoopUnrolledAndLoadedInBatchesAsTwinsOfTheBestGeometriesAfterTheFirstEight) {
  for (const int n : {1, 8}) {
    Problem p = cusnn_layers().front();
    p.n = n;
    p.act_sparsity = 0.7;
    SCOPED_TRACE(problem_key(p));
    const std::vector<KernelSpec> specs = act_sparse().enumerate(p, h100());
    ASSERT_EQ(specs.size(), 48u);
    const auto geometry_of = [](const KernelSpec& s) {
      ActSparseParams a = params_of<ActSparseParams>(s);
      a.unroll2 = false;
      a.load_batch = 1;
      return kernel_name(to_spec(a));
    };
    const auto plain = [](const KernelSpec& s) {
      const ActSparseParams a = params_of<ActSparseParams>(s);
      return !a.unroll2 && a.load_batch == 1;
    };
    for (const KernelSpec& s : specs)  // the block-staged loop is not offered (measured slower)
      EXPECT_FALSE(params_of<ActSparseParams>(s).block_staged) << kernel_name(s);
    for (std::size_t i = 0; i < 8; ++i) EXPECT_TRUE(plain(specs[i])) << kernel_name(specs[i]);
    const std::size_t twins = 48 / 6;
    for (std::size_t i = 0; i < twins; ++i) {
      const KernelSpec& twin = specs[8 + i];
      EXPECT_TRUE(params_of<ActSparseParams>(twin).unroll2) << kernel_name(twin);
      EXPECT_EQ(geometry_of(twin), geometry_of(specs[i])) << kernel_name(twin);
    }
    // Then the batched twins of the same geometries, in the same order (a geometry whose warps have one channel has
    // none), each batch the warp's channels rounded up to a power of 2, at most 8, or the largest that fits.
    std::size_t next = 0, batched = 0;
    for (std::size_t i = 8 + twins; i < specs.size() && !plain(specs[i]); ++i, ++batched) {
      const ActSparseParams a = params_of<ActSparseParams>(specs[i]);
      EXPECT_FALSE(a.unroll2) << kernel_name(specs[i]);
      while (next < twins && geometry_of(specs[next]) != geometry_of(specs[i])) ++next;
      ASSERT_LT(next, twins) << kernel_name(specs[i]) << " is no batched twin of the first geometries in order";
      const int channels = (p.c + a.warps * a.split_c - 1) / (a.warps * a.split_c);
      EXPECT_LE(a.load_batch, channels > 4 ? 8 : channels > 2 ? 4 : 2) << kernel_name(specs[i]);
      if (a.load_batch < 8) {  // the next larger batch was declined
        ActSparseParams larger = a;
        larger.load_batch *= 2;
        EXPECT_NE(act_sparse().check_support(p, h100(), to_spec(larger)), std::nullopt) << kernel_name(specs[i]);
      }
      ++next;
    }
    EXPECT_GT(batched, 0u);
    for (std::size_t i = 8 + twins + batched; i < specs.size(); ++i) EXPECT_TRUE(plain(specs[i])) << i;
  }
}

TEST(ActSparseFamily, RanksCandidatesForTheProblemsSparsity) {
  Problem dense = cusnn_layers().front();
  dense.n = 8;
  Problem sparse = dense;
  sparse.act_sparsity = 0.9;
  // The cost model sees the zeros: fewer FMAs expected at 90% zeros than on dense input for the same kernel.
  const KernelSpec s = *act_sparse().default_spec(sparse, h100());
  EXPECT_LT(act_sparse().cost_features(sparse, s).fma_instructions, act_sparse().cost_features(dense, s).fma_instructions);
}

}  // namespace
}  // namespace convgen
