// winograd_gemm_test: the non-fused Winograd family's search space (both tile sizes, within the descriptor), its
// support reasons, and its plan (the filter transformed once; per call the input transform, the GEMM and the output
// transform through two per-call buffers, padded to whole blocks).
#include <set>

#include <gtest/gtest.h>

#include "generator/family.hpp"
#include "generator/shapes.hpp"
#include "support/corpus.hpp"
#include "winograd_gemm_params.hpp"

namespace convgen {
namespace {

using testing_support::edge_cases;
using testing_support::h100;
using testing_support::source_dir;

const Family& winograd_gemm() { return family("winograd_gemm"); }

std::vector<Problem> cusnn_layers(int batch) {
  std::vector<Problem> problems;
  for (const Layer& layer : load_suite(source_dir() / "shapes" / "cusnn.csv").layers) {
    problems.push_back(layer.problem);
    problems.back().n = batch;
  }
  return problems;
}

TEST(WinogradGemmFamily, EnumeratesSupportedDistinctCandidatesOfBothTileSizesForEveryCusnnLayer) {
  const Gpu gpu = h100();
  for (int batch : {1, 32}) {
    for (const Problem& p : cusnn_layers(batch)) {
      const std::vector<KernelSpec> specs = winograd_gemm().enumerate(p, gpu);
      ASSERT_FALSE(specs.empty()) << problem_key(p);
      // 8 blocks per tile size, each with its register pipeline, a cp.async ring and that ring's channels split.
      EXPECT_LE(specs.size(), 48u);
      std::set<std::string> names;
      std::set<int> tiles;
      for (const KernelSpec& s : specs) {
        EXPECT_EQ(winograd_gemm().check_support(p, gpu, s), std::nullopt) << kernel_name(s);
        EXPECT_TRUE(names.insert(kernel_name(s)).second) << kernel_name(s);
        EXPECT_EQ(parse_kernel_name(kernel_name(s)), s);
        tiles.insert(params_of<WinogradGemmParams>(s).tile);
        const CostFeatures f = winograd_gemm().cost_features(p, s);
        EXPECT_GE(f.threads_per_block, 32) << kernel_name(s);
        EXPECT_LE(f.threads_per_block, 512) << kernel_name(s);
        EXPECT_LE(f.smem_bytes_per_block, 48 * 1024) << kernel_name(s);
        EXPECT_EQ(f.extra_launches, 2) << kernel_name(s);
      }
      EXPECT_EQ(tiles, (std::set<int>{2, 4})) << problem_key(p);
      EXPECT_EQ(winograd_gemm().default_spec(p, gpu), specs.front());
      // On a GPU with cp.async each block's deepest ring first (the faster on the H200), then that ring with its
      // channels split where the GEMM has too few warps to fill the GPU, then its register pipeline.
      EXPECT_GT(params_of<WinogradGemmParams>(specs.front()).cp_stages, 0) << problem_key(p);
      EXPECT_EQ(params_of<WinogradGemmParams>(specs.front()).split_k, 1) << problem_key(p);
      for (std::size_t i = 0; i + 1 < specs.size(); ++i) {
        const WinogradGemmParams ring = params_of<WinogradGemmParams>(specs[i]);
        if (ring.cp_stages == 0 || ring.split_k > 1) continue;
        WinogradGemmParams registers = ring;
        registers.cp_stages = 0;
        std::size_t next = i + 1;
        if (const WinogradGemmParams twin = params_of<WinogradGemmParams>(specs[next]); twin.split_k > 1) {
          WinogradGemmParams unsplit = twin;
          unsplit.split_k = 1;
          EXPECT_EQ(unsplit, ring) << kernel_name(specs[next]);
          const CostFeatures split = winograd_gemm().cost_features(p, specs[next]);
          EXPECT_EQ(split.blocks, twin.split_k * winograd_gemm().cost_features(p, specs[i]).blocks);
          ++next;
        }
        ASSERT_LT(next, specs.size());
        EXPECT_EQ(specs[next], to_spec(registers)) << kernel_name(specs[i]);
      }
      // At batch 1 every cuSNN layer's GEMM leaves the H100 short of warps: split twins are offered.
      if (batch == 1)
        EXPECT_TRUE(std::any_of(specs.begin(), specs.end(), [](const KernelSpec& s) {
          return params_of<WinogradGemmParams>(s).split_k > 1;
        })) << problem_key(p);
    }
  }
}

TEST(WinogradGemmFamily, OffersCpAsyncRingsOnlyWhereTheGpuHasThem) {
  const Problem p = cusnn_layers(8).front();
  std::set<int> stages;
  for (const KernelSpec& s : winograd_gemm().enumerate(p, h100()))
    stages.insert(params_of<WinogradGemmParams>(s).cp_stages);
  EXPECT_GT(stages.size(), 1u);
  const Gpu volta = load_gpu(source_dir() / "gpus" / "v100_sxm2.json");
  const std::vector<KernelSpec> specs = winograd_gemm().enumerate(p, volta);
  ASSERT_FALSE(specs.empty());
  for (const KernelSpec& s : specs) EXPECT_EQ(params_of<WinogradGemmParams>(s).cp_stages, 0) << kernel_name(s);
  WinogradGemmParams ring = params_of<WinogradGemmParams>(specs.front());
  ring.cp_stages = 2;
  EXPECT_EQ(winograd_gemm().check_support(p, volta, to_spec(ring)),
            "cp_stages 2 needs cp.async (sm_80 or later), the gpu is sm_70");
  ring.cp_stages = 1;
  EXPECT_EQ(winograd_gemm().check_support(p, h100(), to_spec(ring)), "cp_stages must be 0, 2, 3 or 4, got 1");
}

// winograd's rows (3x3 stride 1 dilation 1 in 2-D, grouped where a group has 4 or more input channels) and the 3-D
// 3x3x3 stride 1 ones.
TEST(WinogradGemmFamily, ServesExactlyTheThreeByThreeStrideOneRowsOfTheEdgeCaseCorpusNotDepthwise) {
  std::set<std::string> served;
  for (const Layer& layer : edge_cases().layers)
    if (!winograd_gemm().enumerate(layer.problem, h100()).empty()) served.insert(layer.name);
  EXPECT_EQ(served,
            (std::set<std::string>{"batch2_3x3", "c16_k5_odd_7x9_nopad", "c1_k5_odd_13x17", "c32_k100_3x3",
                                   "c3_k37_3x3", "conv3d_c1_k4", "groups2", "groups4_batch2", "ndhwc_3x3x3_p1",
                                   "nhwc_c3_k37_3x3", "nhwc_groups2_batch2", "pad3_stride1",
                                   "tiny_1x1_input_3x3_pad1"}));
}

// n 2, 20 -> 70 channels at 17x19, padding 1, F(4x4) with 64 x 32 blocks and steps of 16: 2 x 5 x 5 = 50 tiles padded
// to 64, C to 32, K to 128.
TEST(WinogradGemmFamily, PlansTheTransformsAroundOneBatchedGemmWithBuffersPaddedToWholeBlocks) {
  Problem p = cusnn_layers(2).front();
  p.c = 20;
  p.k = 70;
  p.input = {1, 17, 19};
  const KernelSpec s = to_spec(
      WinogradGemmParams{.tile = 4, .block_m = 64, .block_n = 32, .block_k = 16, .thread_m = 4, .thread_n = 8});
  ASSERT_EQ(winograd_gemm().check_support(p, h100(), s), std::nullopt);
  const LaunchPlan plan = winograd_gemm().plan(p, s);
  ASSERT_EQ(plan.setup.size(), 1u);
  EXPECT_EQ(plan.setup[0].entry_suffix, "transform_filter");
  EXPECT_GE(std::int64_t{plan.setup[0].geometry.grid[0]} * plan.setup[0].geometry.block[0], 32 * 128);
  ASSERT_EQ(plan.run.size(), 3u);
  EXPECT_EQ(plan.run[0].entry_suffix, "transform_input");
  EXPECT_GE(std::int64_t{plan.run[0].geometry.grid[0]} * plan.run[0].geometry.block[0], 32 * 64);
  EXPECT_EQ(plan.run[1].entry_suffix, "");
  EXPECT_EQ(plan.run[1].geometry.grid, (std::array<unsigned, 3>{2, 2, 36}));
  EXPECT_EQ(plan.run[1].geometry.block[0], 64u);  // 64/4 x 32/8
  EXPECT_EQ(plan.main_geometry(), plan.run[1].geometry);
  EXPECT_EQ(plan.run[2].entry_suffix, "transform_output");
  EXPECT_GE(std::int64_t{plan.run[2].geometry.grid[0]} * plan.run[2].geometry.block[0], 70 * 50);
  ASSERT_NE(plan.find("transformed_filter"), nullptr);
  EXPECT_TRUE(plan.find("transformed_filter")->persistent);
  EXPECT_EQ(plan.find("transformed_filter")->bytes, 36 * 32 * 128 * 4);
  EXPECT_EQ(plan.find("transformed_input")->bytes, 36 * 32 * 64 * 4);
  EXPECT_EQ(plan.find("products")->bytes, 36 * 128 * 64 * 4);
  EXPECT_EQ(plan.workspace_bytes(), 36 * 32 * 64 * 4 + 36 * 128 * 64 * 4);
  EXPECT_EQ(winograd_gemm().cost_features(p, s).blocks, 2 * 2 * 36);
}

// 3-D: 9 -> 10 channels at 6x7x8, padding 1, F(2x4x4): depth tiles of 2 (3), 2 x 2 in the plane, batch 2: 24 tiles
// padded to 32; 4 x 36 = 144 positions.
TEST(WinogradGemmFamily, PlansA3dLayerWithFourDepthRowsOfPositions) {
  Problem p = cusnn_layers(2).front();
  p.c = 9;
  p.k = 10;
  p.input = {6, 7, 8};
  p.filter = {3, 3, 3};
  p.padding = {1, 1, 1};
  p.layout = Layout::ncdhw;
  ASSERT_EQ(validate(p), "");
  const KernelSpec s = to_spec(
      WinogradGemmParams{.tile = 4, .block_m = 32, .block_n = 32, .block_k = 8, .thread_m = 4, .thread_n = 4});
  ASSERT_EQ(winograd_gemm().check_support(p, h100(), s), std::nullopt);
  const LaunchPlan plan = winograd_gemm().plan(p, s);
  ASSERT_EQ(plan.run.size(), 3u);
  EXPECT_EQ(plan.run[1].geometry.grid, (std::array<unsigned, 3>{1, 1, 144}));
  EXPECT_EQ(plan.find("transformed_filter")->bytes, 144 * 16 * 32 * 4);
  EXPECT_EQ(plan.find("transformed_input")->bytes, 144 * 16 * 32 * 4);
  EXPECT_EQ(plan.find("products")->bytes, 144 * 32 * 32 * 4);
  EXPECT_GE(std::int64_t{plan.run[2].geometry.grid[0]} * plan.run[2].geometry.block[0], 10 * 24);
  p.filter = {1, 3, 3};
  EXPECT_EQ(winograd_gemm().check_support(p, h100(), s),
            "winograd_gemm handles 3x3x3 filters in 3-D only, got depth 1");
  p.filter = {3, 3, 3};
  p.stride = {2, 1, 1};
  EXPECT_EQ(winograd_gemm().check_support(p, h100(), s), "winograd_gemm needs stride 1, got depth stride 2");
}

// The transforms' chains (CostFeatures::extra_serial_steps): longer for F(4x4) than F(2x2) and for 3-D than 2-D,
// whatever the batch (one chain of each transform is exposed, not one per tile).
TEST(WinogradGemmFamily, CountsTheTransformsChainsOnceLongerForTheLargerTile) {
  const Problem n1 = cusnn_layers(1).front();
  const Problem n32 = cusnn_layers(32).front();
  const auto chain = [](const Problem& p, int tile) {
    return winograd_gemm()
        .cost_features(p, to_spec(WinogradGemmParams{
                              .tile = tile, .block_m = 32, .block_n = 32, .block_k = 8, .thread_m = 4, .thread_n = 4}))
        .extra_serial_steps;
  };
  EXPECT_GT(chain(n1, 2), 2.0);  // a load round each, plus arithmetic
  EXPECT_GT(chain(n1, 4), 1.5 * chain(n1, 2));
  EXPECT_EQ(chain(n1, 4), chain(n32, 4));
  Problem volume = n1;
  volume.input = {8, 56, 56};
  volume.filter = {3, 3, 3};
  volume.padding = {1, 1, 1};
  volume.layout = Layout::ncdhw;
  ASSERT_EQ(validate(volume), "");
  EXPECT_GT(chain(volume, 2), chain(n1, 2));
}

TEST(WinogradGemmFamily, DeclinesWhatTheTemplateDoesNotServeWithAReason) {
  const Gpu gpu = h100();
  const Problem p = cusnn_layers(1).front();
  const KernelSpec s = *winograd_gemm().default_spec(p, gpu);
  Problem depthwise = p;
  depthwise.groups = p.c;
  depthwise.k = p.c;
  EXPECT_EQ(winograd_gemm().check_support(depthwise, gpu, s),
            "winograd_gemm needs at least 4 input channels per group, got C/groups 1");
  Problem half = p;
  half.precision = Precision::fp16;
  EXPECT_EQ(winograd_gemm().check_support(half, gpu, s),
            "precision fp16 is not supported by winograd_gemm (fp32 only)");
  Problem strided = p;
  strided.stride = {1, 2, 2};
  EXPECT_EQ(winograd_gemm().check_support(strided, gpu, s), "winograd_gemm needs stride 1, got 2x2");
  Problem five = p;
  five.filter = {1, 5, 5};
  five.padding = {0, 2, 2};
  EXPECT_EQ(winograd_gemm().check_support(five, gpu, s), "winograd_gemm handles 3x3 filters only, got 5x5");
  WinogradGemmParams odd = params_of<WinogradGemmParams>(s);
  odd.thread_m = 2;
  EXPECT_EQ(winograd_gemm().check_support(p, gpu, to_spec(odd)), "thread_m must be 4 or 8, got 2");
  // 128 x 32 blocks of 4 x 4: 256 threads cannot copy an 8 x 32 slab of 64 float4s in equal shares.
  const WinogradGemmParams uneven{.tile = 4, .block_m = 128, .block_n = 32, .block_k = 8, .thread_m = 4, .thread_n = 4};
  EXPECT_EQ(winograd_gemm().check_support(p, gpu, to_spec(uneven)),
            "the 256 threads cannot copy a step's 8 x 128 and 8 x 32 slabs in equal float4 shares");
}

// First where its GEMM is worth three launches (16 or more input channels a group and 50 MFLOP or more), last
// otherwise; after act_sparse for a problem that expects 90% zeros or more; never for what it does not serve.
TEST(WinogradGemmFamily, IsTheDefaultChoiceForLargeEnoughThreeByThreeLayersOnly) {
  int first = 0;
  for (int batch : {1, 8, 32}) {
    for (const Problem& p : cusnn_layers(batch)) {
      const bool large = flops(p) >= 50'000'000;  // 128 -> 32 at 7x7 and 14x14 at batch 1, 7x7 at 8 are not
      EXPECT_EQ(default_choice(p, h100()).family == "winograd_gemm", large) << problem_key(p);
      first += large;
    }
  }
  EXPECT_EQ(first, 21);
  Problem small = cusnn_layers(1).back();  // 512 -> 512 at 7x7: 231 MFLOP
  small.c = small.k = 64;                  // 3.6 MFLOP
  EXPECT_NE(default_choice(small, h100()).family, "winograd_gemm");
  EXPECT_GT(winograd_gemm().default_rank(small), family("igemm").default_rank(small));
  Problem few_channels = cusnn_layers(32).front();
  few_channels.c = 8;
  EXPECT_NE(default_choice(few_channels, h100()).family, "winograd_gemm");
  Problem sparse = cusnn_layers(8).front();
  sparse.act_sparsity = 0.7;
  EXPECT_EQ(default_choice(sparse, h100()).family, "winograd_gemm");
  sparse.act_sparsity = 0.9;
  EXPECT_EQ(default_choice(sparse, h100()).family, "act_sparse");
  Problem fp16 = cusnn_layers(8).front();
  fp16.precision = Precision::fp16;
  EXPECT_EQ(winograd_gemm().default_rank(fp16), 100);
}

}  // namespace
}  // namespace convgen
