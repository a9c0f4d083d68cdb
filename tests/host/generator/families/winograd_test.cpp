// winograd_test: the Winograd family's search space (both tile sizes, within the descriptor's shared memory and
// registers), its support reasons, and its plan (the filter transformed once into a persistent buffer, one launch per
// call).
#include <set>

#include <gtest/gtest.h>

#include "generator/family.hpp"
#include "generator/shapes.hpp"
#include "igemm_params.hpp"
#include "support/corpus.hpp"
#include "winograd_params.hpp"

namespace convgen {
namespace {

using testing_support::edge_cases;
using testing_support::h100;
using testing_support::source_dir;

const Family& winograd() { return family("winograd"); }

std::vector<Problem> cusnn_layers() {
  std::vector<Problem> problems;
  for (const Layer& layer : load_suite(source_dir() / "shapes" / "cusnn.csv").layers) problems.push_back(layer.problem);
  return problems;
}

WinogradParams spec_of(int tile, int block_k, int block_t, int block_c, int thread_k, int thread_t, int pp) {
  return {.tile = tile,
          .block_k = block_k,
          .block_t = block_t,
          .block_c = block_c,
          .thread_k = thread_k,
          .thread_t = thread_t,
          .pos_per_thread = pp};
}

TEST(WinogradFamily, EnumeratesSupportedDistinctCandidatesOfBothTileSizesForEveryCusnnLayer) {
  const Gpu gpu = h100();
  for (const Problem& p : cusnn_layers()) {
    const std::vector<KernelSpec> specs = winograd().enumerate(p, gpu);
    ASSERT_FALSE(specs.empty()) << problem_key(p);
    std::set<std::string> names;
    std::set<int> tiles;
    for (const KernelSpec& s : specs) {
      EXPECT_EQ(winograd().check_support(p, gpu, s), std::nullopt) << kernel_name(s);
      EXPECT_TRUE(names.insert(kernel_name(s)).second) << kernel_name(s);
      EXPECT_EQ(parse_kernel_name(kernel_name(s)), s);
      tiles.insert(params_of<WinogradParams>(s).tile);
      // Within the descriptor: threads, static shared memory (no opt-in), and the register file.
      const CostFeatures f = winograd().cost_features(p, s);
      EXPECT_LE(f.threads_per_block, gpu.max_threads_per_block) << kernel_name(s);
      EXPECT_LE(f.smem_bytes_per_block, gpu.smem_per_block_optin_bytes) << kernel_name(s);
      const WinogradParams w = params_of<WinogradParams>(s);
      EXPECT_LE(w.pos_per_thread * w.thread_k * w.thread_t, 64) << kernel_name(s);
    }
    EXPECT_EQ(tiles, (std::set<int>{2, 4})) << problem_key(p);
    EXPECT_EQ(winograd().default_spec(p, gpu), specs.front());
  }
}

// Grouped rows too, where a group has 4 or more input channels (groups2, groups4_batch2, nhwc_groups2_batch2); not
// the depthwise ones.
TEST(WinogradFamily, ServesExactlyTheThreeByThreeStrideOneRowsOfTheEdgeCaseCorpusNotDepthwise) {
  std::set<std::string> served;
  for (const Layer& layer : edge_cases().layers)
    if (!winograd().enumerate(layer.problem, h100()).empty()) served.insert(layer.name);
  EXPECT_EQ(served,
            (std::set<std::string>{"batch2_3x3", "c16_k5_odd_7x9_nopad", "c1_k5_odd_13x17", "c32_k100_3x3",
                                   "c3_k37_3x3", "groups2", "groups4_batch2", "nhwc_c3_k37_3x3",
                                   "nhwc_groups2_batch2", "pad3_stride1", "tiny_1x1_input_3x3_pad1"}));
}

TEST(WinogradFamily, TransformsTheFilterOnceIntoAPersistentBufferAndLaunchesOncePerCall) {
  const Problem p = cusnn_layers().front();
  for (const KernelSpec& s : winograd().enumerate(p, h100())) {
    const WinogradParams w = params_of<WinogradParams>(s);
    const LaunchPlan plan = winograd().plan(p, s);
    ASSERT_EQ(plan.setup.size(), 1u);
    EXPECT_EQ(plan.setup[0].kind, LaunchStep::Kind::kernel);
    EXPECT_EQ(plan.setup[0].entry_suffix, "transform_filter");
    EXPECT_GE(std::int64_t{plan.setup[0].geometry.grid[0]} * plan.setup[0].geometry.block[0], std::int64_t{p.c} * p.k);
    const PlanBuffer* transformed = plan.find("transformed_filter");
    ASSERT_NE(transformed, nullptr);
    EXPECT_TRUE(transformed->persistent);
    const int positions = (w.tile + 2) * (w.tile + 2);
    EXPECT_EQ(transformed->bytes, std::int64_t{positions} * p.c * p.k * 4) << kernel_name(s);
    EXPECT_EQ(plan.workspace_bytes(), 0);
    ASSERT_EQ(plan.run.size(), 1u);
    EXPECT_EQ(plan.run[0].kind, LaunchStep::Kind::kernel);
    EXPECT_EQ(plan.run[0].entry_suffix, "");
    // One block per BLOCK_T output tiles x BLOCK_K output channels.
    const Dims3 out = output_dims(p);
    const std::int64_t tiles = std::int64_t{p.n} * ((out.h + w.tile - 1) / w.tile) * ((out.w + w.tile - 1) / w.tile);
    const LaunchGeometry& g = plan.main_geometry();
    EXPECT_EQ(g.grid[0], (tiles + w.block_t - 1) / w.block_t) << kernel_name(s);
    EXPECT_EQ(g.grid[1], static_cast<unsigned>((p.k + w.block_k - 1) / w.block_k)) << kernel_name(s);
    EXPECT_EQ(std::int64_t{g.grid[0]} * g.grid[1], winograd().cost_features(p, s).blocks);
  }
}

// Grouped: the filter transformed per group ([position][group][C/groups][K/groups]), one row of channel blocks per
// group.
TEST(WinogradFamily, AGroupedLayerHasItsGroupsChannelBlocksAndAPerGroupTransformedFilter) {
  Problem p = cusnn_layers().front();
  p.groups = 4;
  const int cg = p.c / 4, kg = p.k / 4;
  const std::vector<KernelSpec> specs = winograd().enumerate(p, h100());
  ASSERT_FALSE(specs.empty());
  for (const KernelSpec& s : specs) {
    const WinogradParams w = params_of<WinogradParams>(s);
    EXPECT_LE(w.block_k, std::max(16, kg)) << kernel_name(s);
    const LaunchPlan plan = winograd().plan(p, s);
    const int positions = (w.tile + 2) * (w.tile + 2);
    EXPECT_EQ(plan.find("transformed_filter")->bytes, std::int64_t{positions} * cg * p.k * 4) << kernel_name(s);
    EXPECT_GE(std::int64_t{plan.setup[0].geometry.grid[0]} * plan.setup[0].geometry.block[0], std::int64_t{cg} * p.k);
    EXPECT_EQ(plan.main_geometry().grid[1], static_cast<unsigned>(4 * ((kg + w.block_k - 1) / w.block_k)))
        << kernel_name(s);
    EXPECT_EQ(std::int64_t{plan.main_geometry().grid[0]} * plan.main_geometry().grid[1],
              winograd().cost_features(p, s).blocks);
  }
}

TEST(WinogradFamily, DeclinesWhatTheTemplateDoesNotServeWithAReason) {
  const Gpu gpu = h100();
  const Problem p = cusnn_layers().front();
  const KernelSpec s = *winograd().default_spec(p, gpu);
  Problem grouped = p;
  grouped.groups = p.c / 2;
  grouped.k = grouped.groups * 2;
  EXPECT_EQ(winograd().check_support(grouped, gpu, s),
            "winograd needs at least 4 input channels per group (its channel step is 4 to 16), got C/groups 2");
  Problem half = p;
  half.precision = Precision::fp16;
  EXPECT_EQ(winograd().check_support(half, gpu, s), "precision fp16 is not supported by winograd (fp32 only)");
  Problem five = p;
  five.filter = {1, 5, 5};
  five.padding = {0, 2, 2};
  EXPECT_EQ(winograd().check_support(five, gpu, s), "winograd handles 3x3 filters only, got 5x5");
  Problem strided = p;
  strided.stride = {1, 2, 2};
  EXPECT_EQ(winograd().check_support(strided, gpu, s), "winograd needs stride 1, got 2x2");
  Problem dilated = p;
  dilated.dilation = {1, 2, 2};
  dilated.padding = {0, 2, 2};
  EXPECT_EQ(winograd().check_support(dilated, gpu, s), "winograd needs dilation 1, got 2x2");
  Problem volume = p;
  volume.layout = Layout::ncdhw;
  volume.input = {4, p.input.h, p.input.w};
  volume.filter = {3, 3, 3};
  volume.padding = {1, 1, 1};
  EXPECT_EQ(winograd().check_support(volume, gpu, s), "winograd handles 2-D convolutions only, got layout ncdhw");
  EXPECT_EQ(winograd().check_support(p, gpu, to_spec(IgemmParams{})), "kernel igemm is not a winograd kernel");
  EXPECT_EQ(winograd().check_support(p, gpu, to_spec(spec_of(4, 32, 32, 4, 4, 4, 8))),
            "pos_per_thread 8 does not divide the 36 positions of F(4x4, 3x3)");
  EXPECT_EQ(winograd().check_support(p, gpu, to_spec(spec_of(2, 8, 8, 4, 4, 4, 16))),
            "4 threads per block are fewer than a warp");
  EXPECT_EQ(winograd().check_support(p, gpu, to_spec(spec_of(4, 64, 64, 16, 4, 4, 36))),
            "294912 bytes of shared memory per block exceed the gpu's 232448");
  EXPECT_EQ(winograd().check_support(p, gpu, to_spec(spec_of(2, 64, 64, 4, 1, 1, 1))),
            "65536 threads per block exceed the gpu's 1024");
}

TEST(WinogradFamily, IsNotTheDefaultChoiceYetButCompetesInTuning) {
  const Problem p = cusnn_layers().front();
  EXPECT_NE(default_choice(p, h100()).family, "winograd");
  EXPECT_GT(winograd().default_rank(p), family("igemm").default_rank(p));
  EXPECT_FALSE(winograd().enumerate(p, h100()).empty());
}

TEST(WinogradFamily, CostsEveryCandidateAboveZero) {
  const Problem p = cusnn_layers().back();
  for (const KernelSpec& s : winograd().enumerate(p, h100())) {
    const CostFeatures f = winograd().cost_features(p, s);
    EXPECT_GT(f.fma_instructions, 0) << kernel_name(s);
    EXPECT_GT(f.global_load_instructions, 0) << kernel_name(s);
    EXPECT_GT(f.main_loop_steps, 0) << kernel_name(s);
    EXPECT_EQ(f.flops, static_cast<double>(flops(p)));
  }
  const CostWeights weights = winograd().default_cost_weights();
  EXPECT_GT(*std::max_element(weights.begin(), weights.end()), 0);
}

}  // namespace
}  // namespace convgen
