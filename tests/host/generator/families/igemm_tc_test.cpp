// igemm_tc_test: the tensor-core family's search space, support checks and their reasons, launch plan (split-K's
// reduce pass), costs, default choices and rendering.
#include <algorithm>
#include <filesystem>
#include <set>

#include <gtest/gtest.h>

#include "generator/family.hpp"
#include "generator/gpu_json.hpp"
#include "generator/shapes.hpp"
#include "igemm_tc_params.hpp"
#include "support/corpus.hpp"

namespace convgen {
namespace {

const std::filesystem::path kSourceDir = CONVGEN_SOURCE_DIR;

using testing_support::channels_last_of;
using testing_support::h100;

const Family& igemm_tc() { return family("igemm_tc"); }

IgemmTcParams P(const KernelSpec& s) { return params_of<IgemmTcParams>(s); }

KernelSpec spec(int block_m, int block_n, int block_k, int warp_m, int warp_n, int stages = 3, int split_k = 1,
                bool vector = true) {
  return to_spec(IgemmTcParams{.block_m = block_m,
                               .block_n = block_n,
                               .block_k = block_k,
                               .warp_m = warp_m,
                               .warp_n = warp_n,
                               .stages = stages,
                               .split_k = split_k,
                               .vector = vector});
}

Problem with(Problem p, Precision precision, Layout layout) {
  p.precision = precision;
  p.layout = layout;
  return p;
}

const Problem kResnet3x3{.n = 1,
                         .c = 64,
                         .k = 64,
                         .input = {1, 56, 56},
                         .filter = {1, 3, 3},
                         .padding = {0, 1, 1},
                         .layout = Layout::nhwc,
                         .precision = Precision::fp16};

// The edge-case corpus in every precision the family serves, in its own layout and channels-last.
std::vector<Problem> edge_cases_in_every_precision() {
  std::vector<Problem> problems;
  for (const Layer& layer : load_suite(kSourceDir / "shapes/edge_cases.csv").layers)
    for (Precision precision : {Precision::tf32, Precision::fp16, Precision::bf16}) {
      problems.push_back(with(layer.problem, precision, layer.problem.layout));
      if (!channels_last(layer.problem.layout))
        problems.push_back(with(layer.problem, precision, channels_last_of(layer.problem.layout)));
    }
  return problems;
}

std::int64_t output_pixels(const Problem& p) {
  const Dims3 out = output_dims(p);
  return std::int64_t{p.n} * out.d * out.h * out.w;
}

TEST(IgemmTcFamily, ServesEveryEdgeCaseInEveryTensorCorePrecisionAndLayoutWithSupportedUniqueSpecs) {
  const Gpu gpu = h100();
  for (const Problem& p : edge_cases_in_every_precision()) {
    SCOPED_TRACE(problem_key(p));
    const std::vector<KernelSpec> specs = igemm_tc().enumerate(p, gpu);
    EXPECT_FALSE(specs.empty());
    EXPECT_LE(specs.size(), 24u);
    std::set<std::string> names;
    for (const KernelSpec& s : specs) {
      EXPECT_EQ(s.family, "igemm_tc");
      EXPECT_EQ(igemm_tc().check_support(p, gpu, s), std::nullopt) << kernel_name(s);
      EXPECT_TRUE(names.insert(kernel_name(s)).second) << "duplicate " << kernel_name(s);
    }
    const std::optional<KernelSpec> chosen = igemm_tc().default_spec(p, gpu);
    ASSERT_TRUE(chosen.has_value());
    EXPECT_EQ(*chosen, specs.front());
  }
}

// igemm_wgmma comes first where it serves (channels-last tf32 / fp16 / bf16 on sm_90); igemm_tc is the default
// everywhere else a tensor-core precision is asked for: channels-first, and GPUs without wgmma.
TEST(IgemmTcFamily, IsTheDefaultChoiceForTf32Fp16AndBf16WhereIgemmWgmmaDoesNotServeAndNeverServesFp32) {
  const Gpu gpu = h100();
  const Gpu a100 = load_gpu(kSourceDir / "gpus/a100_sxm4.json");
  for (Precision precision : {Precision::tf32, Precision::fp16, Precision::bf16}) {
    const Problem p = with(kResnet3x3, precision, Layout::nchw);
    EXPECT_EQ(default_choice(p, gpu).family, "igemm_tc") << to_string(precision);
    EXPECT_EQ(default_choice(with(kResnet3x3, precision, Layout::nhwc), a100).family, "igemm_tc")
        << to_string(precision);
    for (const Family* f : all_families())
      if (f != &igemm_tc() && f->name() != "igemm_wgmma") {
        EXPECT_LT(igemm_tc().default_rank(p), f->default_rank(p)) << f->name();
      }
  }
  EXPECT_EQ(default_choice(with(kResnet3x3, Precision::fp16, Layout::nhwc), gpu).family, "igemm_wgmma");
  EXPECT_EQ(default_choice(with(kResnet3x3, Precision::tf32, Layout::nhwc), gpu).family, "igemm_wgmma");
  const Problem fp32 = with(kResnet3x3, Precision::fp32, Layout::nhwc);
  EXPECT_EQ(igemm_tc().check_support(fp32, gpu, spec(64, 64, 32, 32, 32)),
            "precision fp32 is not supported by igemm_tc (tf32, fp16 and bf16 only: fp32 problems need strict fp32 "
            "math)");
  EXPECT_TRUE(igemm_tc().enumerate(fp32, gpu).empty());
  EXPECT_EQ(igemm_tc().default_spec(fp32, gpu), std::nullopt);
  EXPECT_NE(default_choice(fp32, gpu).family, "igemm_tc");
}

TEST(IgemmTcFamily, DeclinesGpusWithoutCpAsyncLdmatrixAndTf32Mma) {
  const Gpu v100 = load_gpu(kSourceDir / "gpus/v100_sxm2.json");
  EXPECT_EQ(igemm_tc().check_support(kResnet3x3, v100, spec(64, 64, 32, 32, 32)),
            "igemm_tc needs cp.async, ldmatrix and mma.sync for tf32 / bf16 (sm_80 or later), the gpu is sm_70");
  EXPECT_TRUE(igemm_tc().enumerate(kResnet3x3, v100).empty());
  const Gpu a100 = load_gpu(kSourceDir / "gpus/a100_sxm4.json");
  EXPECT_FALSE(igemm_tc().enumerate(kResnet3x3, a100).empty());
}

TEST(IgemmTcFamily, ChecksEveryFieldValue) {
  const Gpu gpu = h100();
  const Problem& p = kResnet3x3;
  EXPECT_EQ(igemm_tc().check_support(p, gpu, spec(48, 64, 32, 16, 32)),
            "block_m must be a power of two from 16 to 256, got 48");
  EXPECT_EQ(igemm_tc().check_support(p, gpu, spec(64, 512, 32, 32, 32)),
            "block_n must be a power of two from 16 to 256, got 512");
  EXPECT_EQ(igemm_tc().check_support(p, gpu, spec(64, 64, 32, 8, 32)), "warp_m must be 16, 32 or 64, got 8");
  EXPECT_EQ(igemm_tc().check_support(p, gpu, spec(64, 64, 32, 32, 128)), "warp_n must be 16, 32 or 64, got 128");
  EXPECT_EQ(igemm_tc().check_support(p, gpu, spec(32, 64, 32, 64, 32)),
            "the block tile 32x64 must be a whole number of warp tiles 64x32");
  EXPECT_EQ(igemm_tc().check_support(p, gpu, spec(64, 64, 8, 32, 32)),
            "block_k must cover 32, 64 or 128 bytes of fp16 elements (16 to 64), got 8");
  EXPECT_EQ(igemm_tc().check_support(with(p, Precision::tf32, Layout::nhwc), gpu, spec(64, 64, 64, 32, 32)),
            "block_k must cover 32, 64 or 128 bytes of tf32 elements (8 to 32), got 64");
  EXPECT_EQ(igemm_tc().check_support(p, gpu, spec(64, 64, 32, 32, 32, 1)), "stages must be 2 to 5, got 1");
  EXPECT_EQ(igemm_tc().check_support(p, gpu, spec(64, 64, 32, 32, 32, 3, 33)), "split_k must be 1 to 32, got 33");
  KernelSpec igemm = spec(64, 64, 32, 32, 32);
  igemm.family = "igemm";
  EXPECT_EQ(igemm_tc().check_support(p, gpu, igemm), "kernel igemm is not an igemm_tc kernel");
}

TEST(IgemmTcFamily, SixteenByteLoadsNeedAlignedRunsOfChannelsOrOfTheReduction) {
  const Gpu gpu = h100();
  const Problem rgb{.n = 1,
                    .c = 3,
                    .k = 64,
                    .input = {1, 32, 32},
                    .filter = {1, 3, 3},
                    .padding = {0, 1, 1},
                    .layout = Layout::nhwc,
                    .precision = Precision::fp16};
  EXPECT_EQ(igemm_tc().check_support(rgb, gpu, spec(64, 64, 32, 32, 32)),
            "16-byte loads need channels per group to be a multiple of 8 (fp16, nhwc), got 3");
  EXPECT_EQ(igemm_tc().check_support(rgb, gpu, spec(64, 64, 32, 32, 32, 3, 1, false)), std::nullopt);
  // tf32 holds 4 elements in 16 bytes: 12 channels are enough.
  const Problem tf32{.n = 1,
                     .c = 12,
                     .k = 64,
                     .input = {1, 32, 32},
                     .filter = {1, 3, 3},
                     .padding = {0, 1, 1},
                     .layout = Layout::nhwc,
                     .precision = Precision::tf32};
  EXPECT_EQ(igemm_tc().check_support(tf32, gpu, spec(64, 64, 16, 32, 32)), std::nullopt);
  // Channels-first: only the filter is vector-loaded, so only the reduction length C*R*S counts: 5 * 9 = 45.
  Problem nchw = rgb;
  nchw.layout = Layout::nchw;
  nchw.c = 5;
  EXPECT_EQ(igemm_tc().check_support(nchw, gpu, spec(64, 64, 32, 32, 32)),
            "16-byte filter loads need the reduction length C/groups*T*R*S to be a multiple of 8 (fp16), got 45");
  nchw.c = 8;
  EXPECT_EQ(igemm_tc().check_support(nchw, gpu, spec(64, 64, 32, 32, 32)), std::nullopt);
  // The search space takes 16-byte loads wherever they apply, element loads elsewhere.
  for (const KernelSpec& s : igemm_tc().enumerate(rgb, gpu)) EXPECT_FALSE(P(s).vector) << kernel_name(s);
  for (const KernelSpec& s : igemm_tc().enumerate(kResnet3x3, gpu)) EXPECT_TRUE(P(s).vector) << kernel_name(s);
}

TEST(IgemmTcFamily, ElementLoadsNeedNoMoreThreadsAlongTheReductionThanBlockK) {
  const Gpu gpu = h100();
  const Problem rgb{.n = 1,
                    .c = 3,
                    .k = 256,
                    .input = {1, 32, 32},
                    .filter = {1, 3, 3},
                    .padding = {0, 1, 1},
                    .layout = Layout::nhwc,
                    .precision = Precision::fp16};
  // 16 pixels x 256 channels in warps of 16 x 16: 16 warps, 512 threads; 16 rows leave 32 threads per row.
  EXPECT_EQ(igemm_tc().check_support(rgb, gpu, spec(16, 256, 16, 16, 16, 3, 1, false)),
            "element-wise activation loads of 512 threads need block_k >= 32, got 16");
}

TEST(IgemmTcFamily, SplitKWritesPartialSumsToTheWorkspaceAndAReducePassAddsThem) {
  const Gpu gpu = h100();
  // 512 channels at 7x7: the output alone fills few blocks, so split-K must be offered.
  const Problem deep{.n = 1,
                     .c = 512,
                     .k = 512,
                     .input = {1, 7, 7},
                     .filter = {1, 3, 3},
                     .padding = {0, 1, 1},
                     .layout = Layout::nhwc,
                     .precision = Precision::bf16};
  int split = 0;
  for (const KernelSpec& s : igemm_tc().enumerate(deep, gpu)) {
    const LaunchPlan plan = igemm_tc().plan(deep, s);
    EXPECT_FALSE(plan.zeroes_output_first()) << kernel_name(s);
    EXPECT_TRUE(plan.setup.empty());
    if (P(s).split_k == 1) {
      EXPECT_EQ(plan.run.size(), 1u);
      EXPECT_EQ(plan.workspace_bytes(), 0);
      continue;
    }
    ++split;
    ASSERT_EQ(plan.buffers.size(), 1u);
    EXPECT_EQ(plan.buffers[0], (PlanBuffer{.name = "partials", .bytes = output_elements(deep) * P(s).split_k * 4}));
    EXPECT_EQ(plan.offset_of("partials"), 0);  // the whole workspace, which both entries take as g_workspace
    ASSERT_EQ(plan.run.size(), 2u);
    EXPECT_EQ(plan.run[1].entry_suffix, "reduce");
    EXPECT_EQ(plan.run[1].geometry.block, (std::array<unsigned, 3>{256, 1, 1}));
    EXPECT_EQ(std::int64_t{plan.run[1].geometry.grid[0]}, (output_elements(deep) + 255) / 256);
    EXPECT_EQ(igemm_tc().cost_features(deep, s).extra_launches, 1);
  }
  EXPECT_GT(split, 0);
  const KernelSpec chosen = *igemm_tc().default_spec(deep, gpu);
  EXPECT_GT(P(chosen).split_k, 1) << kernel_name(chosen);
  // 1x1 with 16 channels in slices of 16 (32 bytes of fp16): a second split would be empty.
  const Problem thin{
      .n = 1, .c = 16, .k = 64, .input = {1, 8, 8}, .layout = Layout::nhwc, .precision = Precision::fp16};
  EXPECT_EQ(igemm_tc().check_support(thin, gpu, spec(64, 64, 16, 32, 32, 3, 2)),
            "split_k 2 leaves splits without work: the reduction length 16 gives 1 slices of 16");
}

TEST(IgemmTcFamily, TemplateDeclaresTheMainAndReduceEntries) {
  const TemplateInterface& iface = igemm_tc().interface();
  const EntryDecl* main = iface.find_entry("");
  ASSERT_NE(main, nullptr);
  ASSERT_EQ(main->args.size(), 6u);
  EXPECT_EQ(main->args[0].name, "g_activation");
  EXPECT_EQ(main->args[3].name, "g_workspace");
  EXPECT_EQ(main->args[4].name, "g_bias");
  EXPECT_EQ(main->args[5].name, "g_residual");
  // The reduce entry applies the epilogue to split-K's whole sum: it takes the bias and the residual too.
  const EntryDecl* reduce = iface.find_entry("reduce");
  ASSERT_NE(reduce, nullptr);
  ASSERT_EQ(reduce->args.size(), 4u);
  EXPECT_EQ(reduce->args[0].name, "g_workspace");
  EXPECT_EQ(reduce->args[1].name, "g_output");
  EXPECT_EQ(reduce->args[2].name, "g_bias");
  EXPECT_EQ(reduce->args[3].name, "g_residual");
}

TEST(IgemmTcFamily, LaunchGeometryCoversEveryOutputWithTheDynamicSharedMemoryOfItsStages) {
  const Gpu gpu = h100();
  for (const Problem& p : edge_cases_in_every_precision()) {
    SCOPED_TRACE(problem_key(p));
    for (const KernelSpec& s : igemm_tc().enumerate(p, gpu)) {
      const LaunchGeometry g = igemm_tc().plan(p, s).main_geometry();
      const IgemmTcParams t = P(s);
      EXPECT_GE(std::int64_t{g.grid[0]} * t.block_m, output_pixels(p)) << kernel_name(s);
      EXPECT_LT(std::int64_t{g.grid[0] - 1} * t.block_m, output_pixels(p)) << kernel_name(s);
      EXPECT_GE(std::int64_t{g.grid[1]} * t.block_n, k_per_group(p)) << kernel_name(s);
      EXPECT_LT(std::int64_t{g.grid[1] - 1} * t.block_n, k_per_group(p)) << kernel_name(s);
      EXPECT_EQ(g.grid[2], static_cast<unsigned>(p.groups * t.split_k)) << kernel_name(s);
      EXPECT_EQ(g.block[0], 32u * (t.block_m / t.warp_m) * (t.block_n / t.warp_n));
      const int row_bytes = t.block_k * element_bytes(p.precision) + 16;
      EXPECT_EQ(g.dynamic_smem_bytes, static_cast<unsigned>(t.stages * (t.block_m + t.block_n) * row_bytes));
    }
  }
}

TEST(IgemmTcFamily, ChecksTheGpusSharedMemoryAndRegisters) {
  Gpu gpu = h100();
  const Problem large{.n = 8,
                      .c = 256,
                      .k = 256,
                      .input = {1, 28, 28},
                      .filter = {1, 3, 3},
                      .padding = {0, 1, 1},
                      .layout = Layout::nhwc,
                      .precision = Precision::fp16};
  // 256 + 128 rows of 144 bytes in 5 stages: 276480 bytes, past the H100's opt-in 232448.
  EXPECT_EQ(igemm_tc().check_support(large, gpu, spec(256, 128, 64, 64, 64, 5)),
            "276480 bytes of shared memory per block exceed the gpu's 232448");
  // More than the 48 KiB default is fine: the plan's launch opts in.
  EXPECT_EQ(igemm_tc().check_support(large, gpu, spec(128, 128, 64, 64, 64, 4)), std::nullopt);
  gpu.regs_per_block = 16384;
  EXPECT_EQ(igemm_tc().check_support(large, gpu, spec(128, 128, 64, 64, 64, 4)),
            "about 29696 registers per block (128 threads of 232) exceed the gpu's 16384");
}

TEST(IgemmTcFamily, CostFeaturesCountTheMmaLdmatrixAndCpAsyncOfABlock) {
  // ResNet 3x3 fp16 NHWC: M = 56 x 56 = 3136 pixels, N = 64, KR = 576. Tile 128 x 64 of 64 x 32 warp tiles: 2 x 2 =
  // 4 warps, each 4 x 4 mma tiles; 576 / 16 = 36 mma slices, 18 steps of 32.
  const CostFeatures f = igemm_tc().cost_features(kResnet3x3, spec(128, 64, 32, 64, 32));
  EXPECT_EQ(f.blocks, 25);  // ceil(3136 / 128)
  EXPECT_EQ(f.threads_per_block, 128);
  EXPECT_EQ(f.smem_bytes_per_block, 3 * (128 + 64) * (64 + 16));
  EXPECT_DOUBLE_EQ(f.flops_per_block, 2.0 * 128 * 64 * 576);
  EXPECT_DOUBLE_EQ(f.fma_instructions, 4.0 * 36 * 16);         // warps x slices x mma tiles
  EXPECT_DOUBLE_EQ(f.shared_load_instructions, 4.0 * 36 * 6);  // 4 ldmatrix.x4 of A and 2 of B per slice
  // 128 pixel rows and 64 filter rows of 576 elements, 8 per cp.async: (9216 + 4608) / 32.
  EXPECT_DOUBLE_EQ(f.global_load_instructions, 432.0);
  EXPECT_DOUBLE_EQ(f.address_instructions, 9216.0 / 32 * 8);
  EXPECT_EQ(f.main_loop_steps, 18);
  EXPECT_TRUE(f.pipelined);
  EXPECT_EQ(f.atomic_outputs, 0.0);
  EXPECT_EQ(f.extra_launches, 0);
  EXPECT_DOUBLE_EQ(f.dram_bytes, static_cast<double>(min_bytes(kResnet3x3)));
}

TEST(IgemmTcFamily, DefaultWeightsAreNeverAllZero) {
  const CostWeights w = igemm_tc().default_cost_weights();
  EXPECT_TRUE(std::any_of(w.begin(), w.end(), [](double v) { return v > 0; }));
}

TEST(IgemmTcFamily, RendersTheTemplateWithThePrecisionInThePrelude) {
  const KernelSpec s = spec(128, 64, 32, 64, 32);
  EXPECT_EQ(kernel_name(s), "igemm_tc_m128_n64_k32_wm64_wn32_st3_sk1_v1");
  EXPECT_EQ(parse_kernel_name("igemm_tc_m128_n64_k32_wm64_wn32_st3_sk1_v1"), s);
  for (const auto& [precision, value] :
       {std::pair{Precision::tf32, 1}, std::pair{Precision::fp16, 2}, std::pair{Precision::bf16, 3}}) {
    const KernelSource src = igemm_tc().render(with(kResnet3x3, precision, Layout::nhwc), s);
    EXPECT_EQ(src.entry, "igemm_tc_m128_n64_k32_wm64_wn32_st3_sk1_v1");
    EXPECT_NE(src.text.find(fmt::format("constexpr int PRECISION = {};", value)), std::string::npos)
        << to_string(precision);
    EXPECT_NE(src.text.find("#line 1 \"igemm_tc.cu\"\n"), std::string::npos);
    EXPECT_NE(src.text.find("#include \"tensor_core.cuh\""), std::string::npos);
  }
}

}  // namespace
}  // namespace convgen
