// sparse24_tc_test: the 2:4 tensor-core family's support checks and their reasons (only fp16 / bf16 problems that
// carry a 2:4 filter of their own), its default order, launch plan (the pack setup into padded persistent buffers,
// split-K's reduce pass), entries and costs.
#include <filesystem>

#include <gtest/gtest.h>

#include "convgen/weights.hpp"
#include "generator/family.hpp"
#include "generator/gpu_json.hpp"
#include "generator/shapes.hpp"
#include "reference/pruning.hpp"
#include "sparse24_tc_params.hpp"

namespace convgen {
namespace {

const std::filesystem::path kSourceDir = CONVGEN_SOURCE_DIR;

Gpu h100() { return load_gpu(kSourceDir / "gpus/h100_sxm.json"); }

const Family& sparse24_tc() { return family("sparse24_tc"); }

// 100 -> 96 channels, 3x3 at 14x14, fp16 NHWC, with a seeded 2:4 filter (KR = 900, KG = 96).
Problem two_four_problem(Layout layout = Layout::nhwc) {
  const Problem p{.n = 2, .c = 100, .k = 96, .input = {1, 14, 14}, .filter = {1, 3, 3}, .padding = {0, 1, 1},
                  .layout = layout, .precision = Precision::fp16};
  return with_weights(p, two_four_pruned_random_filter(p, 3));
}

KernelSpec spec(int block_m, int block_n, int block_k, int split_k = 1, bool vector = false) {
  return to_spec(Sparse24TcParams{.block_m = block_m, .block_n = block_n, .block_k = block_k, .warp_m = 32,
                                  .warp_n = 32, .stages = 3, .split_k = split_k, .vector = vector});
}

TEST(Sparse24TcFamily, ServesOnlyFp16AndBf16ProblemsCarryingATwoFourFilterOnSm80AndLater) {
  const Gpu gpu = h100();
  const Problem p = two_four_problem();
  ASSERT_TRUE(is_two_four_sparse(p));
  const std::vector<KernelSpec> specs = sparse24_tc().enumerate(p, gpu);
  ASSERT_FALSE(specs.empty());
  for (const KernelSpec& s : specs) EXPECT_EQ(sparse24_tc().check_support(p, gpu, s), std::nullopt) << kernel_name(s);
  const KernelSpec s = *sparse24_tc().default_spec(p, gpu);
  // Before igemm_tc for a 2:4 problem, never chosen otherwise.
  EXPECT_LT(sparse24_tc().default_rank(p), family("igemm_tc").default_rank(p));
  // The default on a GPU without wgmma (on the H100 igemm_wgmma's, which multiplies 2:4 filters by wgmma.sp).
  EXPECT_EQ(default_choice(p, load_gpu(kSourceDir / "gpus/a100_sxm4.json")).family, "sparse24_tc");
  EXPECT_EQ(default_choice(p, gpu).family, "igemm_wgmma");
  Problem none = p;
  none.weights = {};
  EXPECT_TRUE(sparse24_tc().enumerate(none, gpu).empty());
  EXPECT_NE(sparse24_tc().check_support(none, gpu, s)->find("has none"), std::string::npos);
  // Without the 2:4 filter, igemm_wgmma's (its 100 channels padded to 104).
  EXPECT_EQ(default_choice(none, gpu).family, "igemm_wgmma");
  const Problem dense = with_weights(none, pruned_random_filter(none, 0.0, 1));
  EXPECT_TRUE(sparse24_tc().enumerate(dense, gpu).empty());
  EXPECT_NE(sparse24_tc().check_support(dense, gpu, s)->find("not 2:4"), std::string::npos);
  EXPECT_EQ(sparse24_tc().default_rank(dense), 100);
  Problem fp32 = p;
  fp32.precision = Precision::fp32;
  EXPECT_NE(sparse24_tc().check_support(fp32, gpu, s)->find("fp16 and bf16 only"), std::string::npos);
  Problem tf32 = p;
  tf32.precision = Precision::tf32;
  EXPECT_TRUE(sparse24_tc().enumerate(tf32, gpu).empty());
  const Problem parsed = parse_problem_key(problem_key(p));
  EXPECT_NE(sparse24_tc().check_support(parsed, gpu, s)->find("only its hash"), std::string::npos);
  Gpu turing = gpu;
  turing.arch = "sm_75";
  EXPECT_NE(sparse24_tc().check_support(p, turing, s)->find("sm_80 or later"), std::string::npos);
}

// Its pack keeps 2 values of 4: a library that embeds the kernel must refuse a filter with a nonzero outside the
// pattern (emit-lib).
TEST(Sparse24TcFamily, DependsOnItsFiltersPattern) {
  EXPECT_EQ(sparse24_tc().filter_dependence(spec(64, 64, 64)), FilterDependence::pattern);
}

TEST(Sparse24TcFamily, ChecksFieldValuesAndSixteenByteLoads) {
  const Gpu gpu = h100();
  const Problem p = two_four_problem();
  EXPECT_NE(sparse24_tc().check_support(p, gpu, spec(48, 64, 64))->find("block_m must be a power of two"),
            std::string::npos);
  EXPECT_NE(sparse24_tc().check_support(p, gpu, spec(64, 64, 16))->find("block_k must be 32, 64 or 128"),
            std::string::npos);
  EXPECT_NE(sparse24_tc().check_support(p, gpu, spec(16, 64, 64))->find("whole number of warp tiles"),
            std::string::npos);
  // C = 100 is not a multiple of 8 channels: no 16-byte activation loads; NCHW never has them.
  EXPECT_NE(sparse24_tc().check_support(p, gpu, spec(64, 64, 64, 1, true))->find("multiple of 8"), std::string::npos);
  EXPECT_NE(sparse24_tc().check_support(two_four_problem(Layout::nchw), gpu, spec(64, 64, 64, 1, true))
                ->find("channels-last"),
            std::string::npos);
  // 900 reduction elements: 8 splits of 128 all have work; 16 splits of 128 (whole 128-element steps) leave some none.
  EXPECT_EQ(sparse24_tc().check_support(p, gpu, spec(64, 64, 32, 8)), std::nullopt);
  EXPECT_NE(sparse24_tc().check_support(p, gpu, spec(64, 64, 128, 16))->find("leaves splits without work"),
            std::string::npos);
}

TEST(Sparse24TcFamily, PacksTheFilterOnceIntoPaddedBuffersAndReducesSplitK) {
  const Problem p = two_four_problem();
  // KG 96 -> 128 rows for a 64-row tile, KR 900 -> 960 for 64-element steps.
  const LaunchPlan plan = sparse24_tc().plan(p, spec(64, 32, 64, 4));
  ASSERT_NE(plan.find("packed_values"), nullptr);
  EXPECT_TRUE(plan.find("packed_values")->persistent);
  EXPECT_EQ(plan.find("packed_values")->bytes, 128 * 960 / 2 * 2);
  ASSERT_NE(plan.find("packed_meta"), nullptr);
  EXPECT_EQ(plan.find("packed_meta")->bytes, 128 / 16 * (960 / 32) * 64);
  ASSERT_EQ(plan.setup.size(), 1u);
  EXPECT_EQ(plan.setup[0].entry_suffix, "pack");
  EXPECT_EQ(plan.setup[0].geometry.grid[0], (128u * 960 / 16 + 255) / 256);  // a thread per 16 elements of a row
  ASSERT_EQ(plan.run.size(), 2u);
  // Pixels on x (2 x 14 x 14 = 392 in 32s), channel tiles on y, splits on z.
  EXPECT_EQ(plan.run[0].geometry.grid, (std::array<unsigned, 3>{13, 2, 4}));
  EXPECT_EQ(plan.run[0].geometry.block[0], 64u);  // (64 / 32) x (32 / 32) warps
  EXPECT_EQ(plan.run[1].entry_suffix, "reduce");
  ASSERT_NE(plan.find("partials"), nullptr);
  EXPECT_FALSE(plan.find("partials")->persistent);
  EXPECT_EQ(plan.find("partials")->bytes, output_elements(p) * 4 * 4);
  EXPECT_EQ(sparse24_tc().plan(p, spec(64, 32, 64)).run.size(), 1u);
}

TEST(Sparse24TcFamily, TemplateDeclaresThePackMainAndReduceEntries) {
  const TemplateInterface& iface = sparse24_tc().interface();
  const EntryDecl* pack = iface.find_entry("pack");
  ASSERT_NE(pack, nullptr);
  ASSERT_EQ(pack->args.size(), 3u);
  EXPECT_EQ(pack->args[0].name, "g_filter");
  EXPECT_EQ(pack->args[1].name, "g_packed_values");
  EXPECT_EQ(pack->args[2].name, "g_packed_meta");
  const EntryDecl* main = iface.find_entry("");
  ASSERT_NE(main, nullptr);
  ASSERT_EQ(main->args.size(), 7u);
  EXPECT_EQ(main->args[1].name, "g_packed_values");
  EXPECT_EQ(main->args[2].name, "g_packed_meta");
  EXPECT_EQ(main->args[4].name, "g_workspace");
  ASSERT_NE(iface.find_entry("reduce"), nullptr);
}

TEST(Sparse24TcFamily, CostsCountHalfTheFilterAndNeverZeroWeights) {
  const Problem p = two_four_problem();
  const CostFeatures f = sparse24_tc().cost_features(p, spec(64, 32, 64));
  EXPECT_EQ(f.blocks, 13 * 2);
  EXPECT_EQ(f.threads_per_block, 64);
  EXPECT_EQ(f.main_loop_steps, 15);  // 960 / 64
  // Per 32-element slice a warp issues MI x NI mma.sp: (2 x 4) x 30 slices x 2 warps.
  EXPECT_DOUBLE_EQ(f.fma_instructions, 2.0 * 30 * 2 * 4);
  const CostWeights w = sparse24_tc().default_cost_weights();
  EXPECT_TRUE(std::any_of(w.begin(), w.end(), [](double v) { return v != 0; }));
}

}  // namespace
}  // namespace convgen
