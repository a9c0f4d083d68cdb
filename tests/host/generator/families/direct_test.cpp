// direct_test: the direct family's search space, support checks, launch geometry and default choices.
#include <filesystem>
#include <set>

#include <gtest/gtest.h>

#include "convgen/error.hpp"
#include "direct_params.hpp"
#include "generator/family.hpp"
#include "generator/gpu_json.hpp"
#include "generator/shapes.hpp"

namespace convgen {
namespace {

const std::filesystem::path kSourceDir = CONVGEN_SOURCE_DIR;

Gpu h100() { return load_gpu(kSourceDir / "gpus/h100_sxm.json"); }

const Family& direct() { return family("direct"); }

// The typed view of a spec, and the plan's parts the tests check.
DirectParams P(const KernelSpec& s) { return params_of<DirectParams>(s); }
LaunchGeometry geometry(const Problem& p, const KernelSpec& s) { return direct().plan(p, s).main_geometry(); }
int threads_per_block(const KernelSpec& s) { return (P(s).block_m / P(s).thread_m) * (P(s).block_n / P(s).thread_n); }
bool zeroes_output_first(const Problem& p, const KernelSpec& s) { return direct().plan(p, s).zeroes_output_first(); }

KernelSpec spec(int block_m, int block_n, int block_k, int thread_m, int thread_n) {
  return to_spec(DirectParams{
      .block_m = block_m, .block_n = block_n, .block_k = block_k, .thread_m = thread_m, .thread_n = thread_n});
}

// Typical layers the family must serve: stems, depthwise, grouped, 3-D and 1-D, both layout kinds.
std::vector<Problem> typical_layers() {
  return {
      {.n = 1, .c = 3, .k = 64, .input = {1, 224, 224}, .filter = {1, 7, 7}, .stride = {1, 2, 2}, .padding = {0, 3, 3}},
      {.n = 1,
       .c = 3,
       .k = 64,
       .input = {1, 224, 224},
       .filter = {1, 7, 7},
       .stride = {1, 2, 2},
       .padding = {0, 3, 3},
       .layout = Layout::nhwc},
      {.n = 1, .c = 32, .k = 32, .input = {1, 112, 112}, .filter = {1, 3, 3}, .padding = {0, 1, 1}, .groups = 32},
      {.n = 8,
       .c = 960,
       .k = 960,
       .input = {1, 7, 7},
       .filter = {1, 5, 5},
       .padding = {0, 2, 2},
       .groups = 960,
       .layout = Layout::nhwc},
      {.n = 1, .c = 16, .k = 32, .input = {1, 56, 56}, .filter = {1, 3, 3}, .padding = {0, 1, 1}, .groups = 16},
      {.n = 2, .c = 128, .k = 128, .input = {1, 28, 28}, .filter = {1, 3, 3}, .padding = {0, 1, 1}, .groups = 4},
      {.n = 1, .c = 256, .k = 256, .input = {1, 14, 14}, .filter = {1, 3, 3}, .padding = {0, 1, 1}},
      {.n = 1,
       .c = 4,
       .k = 16,
       .input = {16, 32, 32},
       .filter = {3, 3, 3},
       .padding = {1, 1, 1},
       .layout = Layout::ncdhw},
      {.n = 2,
       .c = 16,
       .k = 16,
       .input = {8, 16, 16},
       .filter = {3, 3, 3},
       .padding = {1, 1, 1},
       .layout = Layout::ndhwc},
      {.n = 4,
       .c = 8,
       .k = 16,
       .input = {1, 1, 1000},
       .filter = {1, 1, 9},
       .padding = {0, 0, 4},
       .layout = Layout::ncw},
  };
}

TEST(DirectFamily, EnumeratesSupportedUniquelyNamedSpecsForTypicalLayers) {
  const Gpu gpu = h100();
  for (const Problem& p : typical_layers()) {
    SCOPED_TRACE(problem_key(p));
    const std::vector<KernelSpec> specs = direct().enumerate(p, gpu);
    EXPECT_GE(specs.size(), 8u);
    EXPECT_LE(specs.size(), 48u);
    std::set<std::string> names;
    for (const KernelSpec& s : specs) {
      EXPECT_EQ(direct().check_support(p, gpu, s), std::nullopt) << kernel_name(s);
      EXPECT_TRUE(names.insert(kernel_name(s)).second) << "duplicate " << kernel_name(s);
    }
  }
}

TEST(DirectFamily, EnumerateListsTheDefaultSpecFirst) {
  const Gpu gpu = h100();
  for (const Problem& p : typical_layers()) {
    SCOPED_TRACE(problem_key(p));
    const auto specs = direct().enumerate(p, gpu);
    ASSERT_FALSE(specs.empty());
    EXPECT_EQ(specs.front(), direct().default_spec(p, gpu));
  }
}

TEST(DirectFamily, DepthwiseEnumeratesOneChannelSteps) {
  const Problem p{
      .n = 1, .c = 32, .k = 32, .input = {1, 56, 56}, .filter = {1, 3, 3}, .padding = {0, 1, 1}, .groups = 32};
  for (const KernelSpec& s : direct().enumerate(p, h100())) EXPECT_EQ(P(s).block_k, 1) << kernel_name(s);
}

TEST(DirectFamily, SmallChannelStemsStageEveryChannelAtOnceByDefault) {
  const Problem stem{
      .n = 1, .c = 3, .k = 64, .input = {1, 224, 224}, .filter = {1, 7, 7}, .stride = {1, 2, 2}, .padding = {0, 3, 3}};
  const auto s = direct().default_spec(stem, h100());
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(P(*s).block_k, 3);
}

TEST(DirectFamily, DefaultSpecFillsTheGpu) {
  const Gpu gpu = h100();
  for (const Problem& p : typical_layers()) {
    SCOPED_TRACE(problem_key(p));
    const auto s = direct().default_spec(p, gpu);
    ASSERT_TRUE(s.has_value());
    const CostFeatures features = direct().cost_features(p, *s);
    // Either two blocks per SM, or the tiles are already at their smallest.
    EXPECT_TRUE(features.blocks >= 2 * gpu.sm_count || (P(*s).block_n == 32 && P(*s).block_m == 1)) << kernel_name(*s);
  }
}

TEST(DirectFamily, DefaultSpecServesEveryEdgeCaseOnEveryGpu) {
  const Suite suite = load_suite(kSourceDir / "shapes/edge_cases.csv");
  ASSERT_FALSE(suite.layers.empty());
  for (const auto& entry : std::filesystem::directory_iterator(kSourceDir / "gpus")) {
    if (entry.path().extension() != ".json") continue;
    const Gpu gpu = load_gpu(entry.path());
    for (const Layer& layer : suite.layers) {
      SCOPED_TRACE(gpu.name + " " + layer.name);
      const auto s = direct().default_spec(layer.problem, gpu);
      ASSERT_TRUE(s.has_value());
      EXPECT_EQ(direct().check_support(layer.problem, gpu, *s), std::nullopt);
      EXPECT_FALSE(direct().enumerate(layer.problem, gpu).empty());
    }
  }
}

TEST(DirectFamily, DefaultSpecServesEveryNetworkLayer) {
  const Gpu gpu = h100();
  int layers = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kSourceDir / "shapes")) {
    if (entry.path().extension() != ".csv") continue;
    const Suite suite = load_suite(entry.path());
    for (const Layer& layer : suite.layers) {
      if (layer.problem.precision != Precision::fp32) continue;
      SCOPED_TRACE(suite.name + " " + layer.name);
      const auto s = direct().default_spec(layer.problem, gpu);
      ASSERT_TRUE(s.has_value());
      EXPECT_EQ(direct().check_support(layer.problem, gpu, *s), std::nullopt);
      ++layers;
    }
  }
  EXPECT_GT(layers, 100);
}

TEST(DirectFamily, LaunchGeometryCoversEveryOutput) {
  const Gpu gpu = h100();
  for (const Problem& p : typical_layers()) {
    const Dims3 out = output_dims(p);
    const std::int64_t pixels = std::int64_t{p.n} * out.d * out.h * out.w;
    for (const KernelSpec& s : direct().enumerate(p, gpu)) {
      SCOPED_TRACE(problem_key(p) + " " + kernel_name(s));
      const LaunchGeometry g = geometry(p, s);
      EXPECT_EQ(g.block, (std::array<unsigned, 3>{static_cast<unsigned>(threads_per_block(s)), 1, 1}));
      EXPECT_EQ(g.grid[2], 1u);
      // Every pixel is in a tile, and no tile is empty.
      EXPECT_GE(std::int64_t{g.grid[0]} * P(s).block_n, pixels);
      EXPECT_LT(std::int64_t{g.grid[0] - 1} * P(s).block_n, pixels);
      // Channel tiles: inside one group when block_m fits it, else straight across K.
      const int kg = k_per_group(p);
      if (p.groups == 1 || P(s).block_m <= kg) {
        EXPECT_EQ(g.grid[1] % p.groups, 0u);
        const unsigned per_group = g.grid[1] / p.groups;
        EXPECT_GE(std::int64_t{per_group} * P(s).block_m, kg);
        EXPECT_LT(std::int64_t{per_group - 1} * P(s).block_m, kg);
      } else {
        EXPECT_GE(std::int64_t{g.grid[1]} * P(s).block_m, p.k);
        EXPECT_LT(std::int64_t{g.grid[1] - 1} * P(s).block_m, p.k);
      }
      EXPECT_FALSE(zeroes_output_first(p, s));
      EXPECT_EQ(g.dynamic_smem_bytes, 0u);
      EXPECT_EQ(direct().plan(p, s).workspace_bytes(), 0);
    }
  }
}

TEST(DirectFamily, CostFeaturesCountTheLaunch) {
  const Problem p{.n = 1, .c = 3, .k = 37, .input = {1, 28, 28}, .filter = {1, 3, 3}, .padding = {0, 1, 1}};
  const KernelSpec s = spec(16, 64, 3, 4, 4);
  const CostFeatures f = direct().cost_features(p, s);
  // 784 pixels in 13 tiles of 64; 37 channels in 3 tiles of 16.
  EXPECT_EQ(f.blocks, 13 * 3);
  EXPECT_EQ(f.threads_per_block, 64);
  EXPECT_EQ(f.smem_bytes_per_block, 16 * 3 * 9 * 4);
  EXPECT_EQ(f.flops, static_cast<double>(flops(p)));
  EXPECT_EQ(f.flops_per_block, 2.0 * 16 * 64 * 3 * 9);
  EXPECT_EQ(f.dram_bytes, static_cast<double>(min_bytes(p)));
}

TEST(DirectFamily, CostFeaturesCountTheWarpInstructionsOfAGroupTiledBlock) {
  // 3 channels x 9 taps = 27 per block; tile 16 x 64, threads 4 x 4: 4 x 16 = 64 threads = 2 warps. Per channel and
  // tap each thread reads THREAD_M = 4 filter values from shared memory and loads THREAD_N = 4 activations, each
  // serving all its channels (one group).
  const Problem p{.n = 1, .c = 3, .k = 37, .input = {1, 28, 28}, .filter = {1, 3, 3}, .padding = {0, 1, 1}};
  const CostFeatures f = direct().cost_features(p, spec(16, 64, 3, 4, 4));
  EXPECT_DOUBLE_EQ(f.fma_instructions, 2.0 * 4 * 4 * 27);      // 864
  EXPECT_DOUBLE_EQ(f.shared_load_instructions, 2.0 * 4 * 27);  // 216
  EXPECT_DOUBLE_EQ(f.global_load_instructions, 2.0 * 4 * 27);  // 216
  EXPECT_EQ(f.address_instructions, 0.0);
  EXPECT_EQ(f.main_loop_steps, 1);  // ceil(3 / 3) steps over the input channels
  EXPECT_FALSE(f.pipelined);
  EXPECT_EQ(f.atomic_outputs, 0.0);
  EXPECT_EQ(f.extra_launches, 0);
}

TEST(DirectFamily, CostFeaturesCountALoadPerChannelWhenTilingAcrossGroups) {
  // Depthwise: 32 groups of 1 channel; block_m 8 > 1 channel per group, so blocks tile K across groups and each of
  // a thread's THREAD_M = 2 channels loads its own activation. 1 channel x 9 taps; tile 8 x 64, threads 2 x 2:
  // 4 x 32 = 128 threads = 4 warps.
  const Problem p{
      .n = 1, .c = 32, .k = 32, .input = {1, 56, 56}, .filter = {1, 3, 3}, .padding = {0, 1, 1}, .groups = 32};
  const KernelSpec s = spec(8, 64, 1, 2, 2);
  ASSERT_EQ(direct().check_support(p, h100(), s), std::nullopt);
  const CostFeatures f = direct().cost_features(p, s);
  EXPECT_DOUBLE_EQ(f.fma_instructions, 4.0 * 2 * 2 * 9);          // 144
  EXPECT_DOUBLE_EQ(f.shared_load_instructions, 4.0 * 2 * 9);      // 72
  EXPECT_DOUBLE_EQ(f.global_load_instructions, 4.0 * 2 * 2 * 9);  // THREAD_N x THREAD_M loads per tap: 144
  EXPECT_EQ(f.main_loop_steps, 1);
}

TEST(DirectFamily, CostFeaturesStepThroughTheChannelsBlockKAtATime) {
  // 64 channels in steps of 8 (and 5 channels in steps of 2: the last step is partial).
  const Problem p{.n = 1, .c = 64, .k = 64, .input = {1, 14, 14}, .filter = {1, 3, 3}, .padding = {0, 1, 1}};
  EXPECT_EQ(direct().cost_features(p, spec(16, 64, 8, 4, 4)).main_loop_steps, 8);
  Problem five = p;
  five.c = 5;
  EXPECT_EQ(direct().cost_features(five, spec(16, 64, 2, 4, 4)).main_loop_steps, 3);
}

TEST(DirectFamily, RenderBakesTheShapeIntoTheTemplate) {
  const Problem p{.n = 1, .c = 3, .k = 37, .input = {1, 28, 28}, .filter = {1, 3, 3}, .padding = {0, 1, 1}};
  const KernelSource src = direct().render(p, spec(16, 64, 3, 4, 4));
  EXPECT_EQ(src.entry, "direct_m16_n64_k3_tm4_tn4");
  EXPECT_EQ(src.file_name, "direct_m16_n64_k3_tm4_tn4.cu");
  EXPECT_NE(src.text.find("#define CONVGEN_ENTRY direct_m16_n64_k3_tm4_tn4"), std::string::npos);
  EXPECT_NE(src.text.find("#line 1 \"direct.cu\""), std::string::npos);
  EXPECT_NE(src.text.find("constexpr int N = 1, C = 3, K = 37, GROUPS = 1;"), std::string::npos);
}

const Problem kStem{
    .n = 1, .c = 3, .k = 64, .input = {1, 224, 224}, .filter = {1, 7, 7}, .stride = {1, 2, 2}, .padding = {0, 3, 3}};

TEST(DirectFamily, DeclinesOtherPrecisions) {
  Problem p = kStem;
  p.precision = Precision::fp16;
  EXPECT_EQ(direct().check_support(p, h100(), spec(16, 64, 3, 4, 4)),
            "precision fp16 is not supported by direct (fp32 only)");
  EXPECT_EQ(direct().default_spec(p, h100()), std::nullopt);
  EXPECT_TRUE(direct().enumerate(p, h100()).empty());
}

TEST(DirectFamily, DeclinesSpecsOfAnotherFamily) {
  KernelSpec s = spec(16, 64, 3, 4, 4);
  s.family = "igemm";
  EXPECT_EQ(direct().check_support(kStem, h100(), s), "kernel igemm is not a direct kernel");
}

TEST(DirectFamily, AcceptsTheNamesOfEarlierVersions) {
  // Names written before the families had their own parameters carried three fields direct never used.
  const KernelSpec s = spec(16, 64, 3, 4, 4);
  EXPECT_EQ(parse_kernel_name("direct_m16_n64_k3_tm4_tn4"), s);
  EXPECT_EQ(kernel_name(s), "direct_m16_n64_k3_tm4_tn4");
  EXPECT_THROW(parse_kernel_name("direct_m16_n64_k3_tm4_tn4_st2_sk1_v1"), InputError);
}

TEST(DirectFamily, DeclinesTilesThatDoNotDivide) {
  EXPECT_EQ(direct().check_support(kStem, h100(), spec(16, 64, 3, 3, 4)),
            "block_m 16 must be a multiple of thread_m 3");
  EXPECT_EQ(direct().check_support(kStem, h100(), spec(16, 64, 3, 4, 3)),
            "block_n 64 must be a multiple of thread_n 3");
  EXPECT_EQ(direct().check_support(kStem, h100(), spec(0, 64, 3, 4, 4)), "block_m must be positive, got 0");
}

TEST(DirectFamily, DeclinesChannelStepsWiderThanAGroup) {
  EXPECT_EQ(direct().check_support(kStem, h100(), spec(16, 64, 4, 4, 4)),
            "block_k 4 exceeds the 3 input channels per group");
}

TEST(DirectFamily, DeclinesSpecsBeyondTheGpusResources) {
  // 64 channels x 3 input channels x 49 taps x 4 bytes = 37632 bytes fit; 16 input channels do not.
  const Problem wide{.n = 1, .c = 16, .k = 64, .input = {1, 56, 56}, .filter = {1, 7, 7}, .padding = {0, 3, 3}};
  EXPECT_EQ(direct().check_support(wide, h100(), spec(64, 64, 16, 4, 4)),
            "the filter stage needs 200704 bytes of shared memory (block_m 64 x block_k 16 x 49 taps x 4), more "
            "than the 49152 bytes a block may use");
  EXPECT_EQ(direct().check_support(kStem, h100(), spec(64, 256, 3, 1, 1)),
            "16384 threads per block exceed the limit of 1024");
  Gpu small = h100();
  small.regs_per_block = 8192;
  EXPECT_EQ(direct().check_support(kStem, small, spec(64, 256, 3, 4, 4)),
            "an estimated 74 registers per thread x 1024 threads exceed the 8192 registers per block");
}

TEST(DirectFamily, ServesAHugeFilterWithSmallTiles) {
  // 1-D, 8191 taps: only a stage of one output and one input channel (32764 bytes) fits.
  const Problem p{.n = 1, .c = 2, .k = 2, .input = {1, 1, 9000}, .filter = {1, 1, 8191}, .layout = Layout::ncw};
  const auto s = direct().default_spec(p, h100());
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(P(*s).block_m, 1);
  EXPECT_EQ(P(*s).block_k, 1);
  EXPECT_EQ(direct().check_support(p, h100(), *s), std::nullopt);
}

}  // namespace
}  // namespace convgen
