// igemm_test: the igemm family's search space, support checks, launch geometry, costs and default choices.
#include <algorithm>
#include <filesystem>
#include <set>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "igemm_params.hpp"
#include "generator/family.hpp"
#include "generator/gpu_json.hpp"
#include "generator/render.hpp"
#include "generator/shapes.hpp"

namespace convgen {
namespace {

const std::filesystem::path kSourceDir = CONVGEN_SOURCE_DIR;

Gpu h100() { return load_gpu(kSourceDir / "gpus/h100_sxm.json"); }

const Family& igemm() { return family("igemm"); }

// The typed view of a spec, and the plan's parts the tests check.
IgemmParams P(const KernelSpec& s) { return params_of<IgemmParams>(s); }
LaunchGeometry geometry(const Problem& p, const KernelSpec& s) { return igemm().plan(p, s).main_geometry(); }
int threads_per_block(const KernelSpec& s) { return (P(s).block_m / P(s).thread_m) * (P(s).block_n / P(s).thread_n); }
bool zeroes_output_first(const Problem& p, const KernelSpec& s) { return igemm().plan(p, s).zeroes_output_first(); }

KernelSpec spec(int block_m, int block_n, int block_k, int thread_m, int thread_n, int stages = 2, int split_k = 1,
                int vector = 1) {
  return to_spec(IgemmParams{.block_m = block_m, .block_n = block_n, .block_k = block_k, .thread_m = thread_m,
                             .thread_n = thread_n, .stages = stages, .split_k = split_k, .vector = vector});
}

const Problem kResnet3x3{.n = 1, .c = 64, .k = 64, .input = {1, 56, 56}, .filter = {1, 3, 3}, .padding = {0, 1, 1}};

// Typical layers: ResNet 3x3 and 1x1 in both layouts, a stem, grouped, depthwise, 3-D, 1-D, dilated, strided.
std::vector<Problem> typical_layers() {
  return {
      kResnet3x3,
      {.n = 32, .c = 256, .k = 64, .input = {1, 56, 56}, .layout = Layout::nhwc},
      {.n = 1, .c = 3, .k = 64, .input = {1, 224, 224}, .filter = {1, 7, 7}, .stride = {1, 2, 2},
       .padding = {0, 3, 3}},
      {.n = 1, .c = 512, .k = 512, .input = {1, 7, 7}, .filter = {1, 3, 3}, .padding = {0, 1, 1}},
      {.n = 2, .c = 128, .k = 128, .input = {1, 28, 28}, .filter = {1, 3, 3}, .padding = {0, 1, 1}, .groups = 4,
       .layout = Layout::nhwc},
      {.n = 1, .c = 32, .k = 32, .input = {1, 112, 112}, .filter = {1, 3, 3}, .padding = {0, 1, 1}, .groups = 32},
      {.n = 1, .c = 4, .k = 16, .input = {16, 32, 32}, .filter = {3, 3, 3}, .padding = {1, 1, 1},
       .layout = Layout::ncdhw},
      {.n = 2, .c = 16, .k = 16, .input = {8, 16, 16}, .filter = {3, 3, 3}, .padding = {1, 1, 1},
       .layout = Layout::ndhwc},
      {.n = 4, .c = 8, .k = 16, .input = {1, 1, 1000}, .filter = {1, 1, 9}, .padding = {0, 0, 4},
       .layout = Layout::nwc},
      {.n = 2, .c = 16, .k = 24, .input = {1, 20, 21}, .filter = {1, 3, 3}, .padding = {0, 2, 2},
       .dilation = {1, 2, 2}},
      {.n = 4, .c = 64, .k = 128, .input = {1, 28, 28}, .filter = {1, 3, 3}, .stride = {1, 2, 2},
       .padding = {0, 1, 1}, .layout = Layout::nhwc},
  };
}

std::vector<Problem> edge_cases() {
  std::vector<Problem> problems;
  for (const Layer& layer : load_suite(kSourceDir / "shapes/edge_cases.csv").layers) problems.push_back(layer.problem);
  return problems;
}

// Output pixels N*O*P*Q: the GEMM's N.
std::int64_t output_pixels(const Problem& p) {
  const Dims3 out = output_dims(p);
  return std::int64_t{p.n} * out.d * out.h * out.w;
}

void expect_supported_unique(const Problem& p, const Gpu& gpu, const std::vector<KernelSpec>& specs) {
  std::set<std::string> names;
  for (const KernelSpec& s : specs) {
    EXPECT_EQ(s.family, "igemm");
    EXPECT_EQ(igemm().check_support(p, gpu, s), std::nullopt) << kernel_name(s);
    EXPECT_TRUE(names.insert(kernel_name(s)).second) << "duplicate " << kernel_name(s);
  }
}

TEST(IgemmFamily, EnumeratesSupportedUniquelyNamedSpecsForTypicalLayers) {
  const Gpu gpu = h100();
  for (const Problem& p : typical_layers()) {
    SCOPED_TRACE(problem_key(p));
    const std::vector<KernelSpec> specs = igemm().enumerate(p, gpu);
    EXPECT_GE(specs.size(), 8u);
    EXPECT_LE(specs.size(), 64u);
    expect_supported_unique(p, gpu, specs);
  }
}

TEST(IgemmFamily, EnumeratesSupportedUniquelyNamedSpecsForEveryEdgeCase) {
  const Gpu gpu = h100();
  for (const Problem& p : edge_cases()) {
    SCOPED_TRACE(problem_key(p));
    const std::vector<KernelSpec> specs = igemm().enumerate(p, gpu);
    EXPECT_FALSE(specs.empty());
    EXPECT_LE(specs.size(), 64u);
    expect_supported_unique(p, gpu, specs);
  }
}

TEST(IgemmFamily, SearchSpaceHoldsDoubleBufferingSplitKAndVectorLoadsWhereTheyApply) {
  const Gpu gpu = h100();
  // 512 channels at 7x7: the output alone fills few blocks, so split-K must be offered; channels are a multiple of 4.
  const Problem deep{.n = 1, .c = 512, .k = 512, .input = {1, 7, 7}, .filter = {1, 3, 3}, .padding = {0, 1, 1},
                     .layout = Layout::nhwc};
  bool split = false, vector = false, single_stage = false;
  for (const KernelSpec& s : igemm().enumerate(deep, gpu)) {
    split |= P(s).split_k > 1;
    vector |= P(s).vector == 4;
    single_stage |= P(s).stages == 1;
  }
  EXPECT_TRUE(split);
  EXPECT_TRUE(vector);
  EXPECT_TRUE(single_stage);
  // Three input channels in NHWC: no vector loads; a large output: no split-K.
  const Problem stem{.n = 8, .c = 3, .k = 64, .input = {1, 224, 224}, .filter = {1, 7, 7}, .stride = {1, 2, 2},
                     .padding = {0, 3, 3}, .layout = Layout::nhwc};
  for (const KernelSpec& s : igemm().enumerate(stem, gpu)) {
    EXPECT_EQ(P(s).vector, 1) << kernel_name(s);
    EXPECT_EQ(P(s).split_k, 1) << kernel_name(s);
  }
}

TEST(IgemmFamily, PrunesTilesFarLargerThanTheProblem) {
  // 5 output channels: tiles of more than 16 channels would compute mostly padding.
  const Problem few{.n = 1, .c = 1, .k = 5, .input = {1, 13, 17}, .filter = {1, 3, 3}, .padding = {0, 1, 1}};
  for (const KernelSpec& s : igemm().enumerate(few, h100())) EXPECT_EQ(P(s).block_m, 16) << kernel_name(s);
}

TEST(IgemmFamily, LaunchGeometryCoversEveryOutput) {
  const Gpu gpu = h100();
  std::vector<Problem> problems = typical_layers();
  for (const Problem& p : edge_cases()) problems.push_back(p);
  for (const Problem& p : problems) {
    SCOPED_TRACE(problem_key(p));
    for (const KernelSpec& s : igemm().enumerate(p, gpu)) {
      const LaunchGeometry g = geometry(p, s);
      EXPECT_GE(std::int64_t{g.grid[0]} * P(s).block_n, output_pixels(p)) << kernel_name(s);
      EXPECT_LT(std::int64_t{g.grid[0] - 1} * P(s).block_n, output_pixels(p)) << kernel_name(s);
      EXPECT_GE(std::int64_t{g.grid[1]} * P(s).block_m, k_per_group(p)) << kernel_name(s);
      EXPECT_LT(std::int64_t{g.grid[1] - 1} * P(s).block_m, k_per_group(p)) << kernel_name(s);
      EXPECT_EQ(g.grid[2], static_cast<unsigned>(p.groups * P(s).split_k)) << kernel_name(s);
      EXPECT_EQ(g.block, (std::array<unsigned, 3>{static_cast<unsigned>(threads_per_block(s)), 1, 1}));
      EXPECT_EQ(g.dynamic_smem_bytes, 0u);
      EXPECT_EQ(zeroes_output_first(p, s), P(s).split_k > 1) << kernel_name(s);
      EXPECT_EQ(igemm().plan(p, s).workspace_bytes(), 0);
    }
  }
}

TEST(IgemmFamily, DefaultSpecExistsAndIsSupportedForEveryEdgeCase) {
  const Gpu gpu = h100();
  for (const Problem& p : edge_cases()) {
    SCOPED_TRACE(problem_key(p));
    const std::optional<KernelSpec> s = igemm().default_spec(p, gpu);
    ASSERT_TRUE(s.has_value());
    EXPECT_EQ(igemm().check_support(p, gpu, *s), std::nullopt) << kernel_name(*s);
    EXPECT_EQ(P(*s).stages, 2);
    const std::vector<KernelSpec> specs = igemm().enumerate(p, gpu);
    EXPECT_NE(std::find(specs.begin(), specs.end(), *s), specs.end()) << "default is not in the search space";
  }
}

TEST(IgemmFamily, DefaultSpecUsesLargeTilesForLargeLayersAndSplitKForSmallOutputs) {
  const Gpu gpu = h100();
  const Problem large{.n = 32, .c = 256, .k = 256, .input = {1, 28, 28}, .filter = {1, 3, 3}, .padding = {0, 1, 1}};
  const KernelSpec big = *igemm().default_spec(large, gpu);
  EXPECT_GE(P(big).block_m * P(big).block_n, 64 * 128) << kernel_name(big);
  EXPECT_GE(P(big).thread_m * P(big).thread_n, 32) << kernel_name(big);
  EXPECT_EQ(P(big).split_k, 1);
  EXPECT_EQ(P(big).vector, 4);  // KR = 2304 is a multiple of 4
  const Problem small{.n = 1, .c = 512, .k = 512, .input = {1, 7, 7}, .filter = {1, 3, 3}, .padding = {0, 1, 1}};
  const KernelSpec split = *igemm().default_spec(small, gpu);
  EXPECT_GT(P(split).split_k, 1) << kernel_name(split);
  // The output alone makes a few blocks; split-K brings them to about one wave.
  const std::int64_t blocks = igemm().cost_features(small, split).blocks;
  EXPECT_LT(blocks / P(split).split_k, gpu.sm_count / 2) << kernel_name(split);
  EXPECT_GE(blocks, gpu.sm_count / 2) << kernel_name(split);
}

// Split-K adds partial sums into the output with atomics: with an epilogue it is declined (with the reason), and the
// search space and the default keep to split_k 1 where they would split without one.
TEST(IgemmFamily, DeclinesSplitKWithAnEpilogueAndKeepsToOneSplit) {
  const Gpu gpu = h100();
  Problem small{.n = 1, .c = 512, .k = 512, .input = {1, 7, 7}, .filter = {1, 3, 3}, .padding = {0, 1, 1}};
  ASSERT_GT(P(*igemm().default_spec(small, gpu)).split_k, 1);
  small.epilogue = parse_epilogue("bias+add+relu");
  EXPECT_EQ(igemm().check_support(small, gpu, spec(64, 64, 8, 4, 4, 2, 4)),
            "split_k 4 adds partial sums into the output with atomics; the epilogue bias+add+relu needs the whole sum "
            "(split_k 1)");
  EXPECT_EQ(igemm().check_support(small, gpu, spec(64, 64, 8, 4, 4, 2, 1)), std::nullopt);
  const std::vector<KernelSpec> specs = igemm().enumerate(small, gpu);
  ASSERT_FALSE(specs.empty());
  for (const KernelSpec& s : specs) EXPECT_EQ(P(s).split_k, 1) << kernel_name(s);
  EXPECT_EQ(P(*igemm().default_spec(small, gpu)).split_k, 1);
  EXPECT_FALSE(igemm().plan(small, *igemm().default_spec(small, gpu)).zeroes_output_first());
}

TEST(IgemmFamily, ServesEveryPrecisionAndSplitsOnlyFp32Outputs) {
  const Gpu gpu = h100();
  for (Precision precision : {Precision::tf32, Precision::fp16, Precision::bf16}) {
    Problem p = kResnet3x3;
    p.precision = precision;
    SCOPED_TRACE(to_string(precision));
    EXPECT_EQ(igemm().check_support(p, gpu, spec(64, 64, 8, 4, 4)), std::nullopt);
    ASSERT_TRUE(igemm().default_spec(p, gpu).has_value());
    const std::vector<KernelSpec> specs = igemm().enumerate(p, gpu);
    ASSERT_FALSE(specs.empty());
    // Split-K adds fp32 partial sums with atomics: tf32 (fp32 data) may split, fp16 and bf16 outputs may not.
    const bool any_split =
        std::any_of(specs.begin(), specs.end(), [](const KernelSpec& s) { return P(s).split_k > 1; });
    if (precision == Precision::tf32) continue;
    EXPECT_FALSE(any_split);
    EXPECT_EQ(igemm().check_support(p, gpu, spec(64, 64, 8, 4, 4, 2, 4)),
              fmt::format("split_k 4 adds fp32 partial sums into the output with atomics; {} outputs need split_k 1",
                          to_string(precision)));
  }
}

TEST(IgemmFamily, ServesTheSixteenBitTypesOnATuringGpuWhereNoTensorCoreFamilyDoes) {
  const Gpu turing = load_gpu(kSourceDir / "gpus/rtx2080ti.json");
  Problem p = kResnet3x3;
  p.precision = Precision::fp16;
  p.layout = Layout::nhwc;
  EXPECT_EQ(default_choice(p, turing).family, "igemm");
  EXPECT_NE(default_choice(p, h100()).family, "igemm");  // the tensor cores first where they serve
}

TEST(IgemmFamily, RendersThePrecisionIntoThePrelude) {
  Problem p = kResnet3x3;
  p.precision = Precision::bf16;
  const KernelSource source = igemm().render(p, spec(64, 64, 8, 4, 4));
  EXPECT_NE(source.text.find("constexpr int PRECISION = 3;  // bf16: 0 fp32, 1 tf32, 2 fp16, 3 bf16\n"),
            std::string::npos)
      << source.text.substr(0, 2000);
}

TEST(IgemmFamily, ChecksEveryFieldValue) {
  const Gpu gpu = h100();
  const Problem& p = kResnet3x3;
  EXPECT_EQ(igemm().check_support(p, gpu, spec(24, 64, 8, 4, 4)),
            "block_m must be a power of two from 16 to 256, got 24");
  EXPECT_EQ(igemm().check_support(p, gpu, spec(64, 8, 8, 4, 4)),
            "block_n must be a power of two from 16 to 256, got 8");
  EXPECT_EQ(igemm().check_support(p, gpu, spec(64, 64, 12, 4, 4)), "block_k must be 4, 8, 16 or 32, got 12");
  EXPECT_EQ(igemm().check_support(p, gpu, spec(64, 64, 8, 16, 4)), "thread_m must be 1, 2, 4 or 8, got 16");
  EXPECT_EQ(igemm().check_support(p, gpu, spec(64, 64, 8, 4, 3)), "thread_n must be 1, 2, 4 or 8, got 3");
  EXPECT_EQ(igemm().check_support(p, gpu, spec(64, 64, 8, 4, 4, 3)), "stages must be 1 or 2, got 3");
  EXPECT_EQ(igemm().check_support(p, gpu, spec(64, 64, 8, 4, 4, 2, 1, 2)), "vector must be 1 or 4, got 2");
  KernelSpec direct = spec(64, 64, 8, 4, 4);
  direct.family = "direct";
  EXPECT_EQ(igemm().check_support(p, gpu, direct), "kernel direct is not an igemm kernel");
}

TEST(IgemmFamily, VectorLoadsNeedAlignedRunsOfFourChannels) {
  const Gpu gpu = h100();
  const Problem rgb_nhwc{.n = 1, .c = 3, .k = 64, .input = {1, 32, 32}, .filter = {1, 3, 3}, .padding = {0, 1, 1},
                         .layout = Layout::nhwc};
  EXPECT_EQ(igemm().check_support(rgb_nhwc, gpu, spec(64, 64, 8, 4, 4, 2, 1, 4)),
            "vector 4 needs channels per group to be a multiple of 4, got 3");
  Problem rgb_nchw = rgb_nhwc;
  rgb_nchw.layout = Layout::nchw;
  EXPECT_EQ(igemm().check_support(rgb_nchw, gpu, spec(64, 64, 8, 4, 4, 2, 1, 4)),
            "vector 4 needs the reduction length C/groups*T*R*S to be a multiple of 4, got 27");
  // Channels-first needs only the reduction length: 4 channels of 3x3 give 36.
  Problem four = rgb_nchw;
  four.c = 4;
  EXPECT_EQ(igemm().check_support(four, gpu, spec(64, 64, 8, 4, 4, 2, 1, 4)), std::nullopt);
}

TEST(IgemmFamily, SplitKMustLeaveEverySplitSomeWork) {
  const Gpu gpu = h100();
  // 1x1 with 16 channels: a reduction of 16 is two slices of 8; a third split would be empty.
  const Problem p{.n = 1, .c = 16, .k = 64, .input = {1, 8, 8}};
  EXPECT_EQ(igemm().check_support(p, gpu, spec(64, 64, 8, 4, 4, 2, 2)), std::nullopt);
  EXPECT_EQ(igemm().check_support(p, gpu, spec(64, 64, 8, 4, 4, 2, 3)),
            "split_k 3 leaves splits without work: the reduction length 16 gives 2 slices of 8");
}

TEST(IgemmFamily, ChecksTheGpusLimits) {
  Gpu gpu = h100();
  const Problem& p = kResnet3x3;
  EXPECT_EQ(igemm().check_support(p, gpu, spec(256, 256, 8, 4, 4)),
            "4096 threads per block exceed the gpu's 1024");
  EXPECT_EQ(igemm().check_support(p, gpu, spec(256, 256, 32, 8, 8)),
            "133120 bytes of shared memory per block exceed the 49152 allowed without opting in");
  EXPECT_EQ(igemm().check_support(p, gpu, spec(16, 16, 8, 4, 4)), "16 threads per block are fewer than a warp");
  // A GPU with few registers per block declines the 8x8 micro tile at 256 threads.
  gpu.regs_per_block = 16384;
  EXPECT_EQ(igemm().check_support(p, gpu, spec(128, 128, 8, 8, 8)),
            "about 30720 registers per block (256 threads of 120) exceed the gpu's 16384");
}

TEST(IgemmFamily, CostFeaturesCountBlocksAndPaddedWork) {
  const Problem& p = kResnet3x3;
  const KernelSpec s = spec(64, 128, 8, 4, 8, 2, 2, 4);
  const CostFeatures f = igemm().cost_features(p, s);
  const LaunchGeometry g = geometry(p, s);
  EXPECT_EQ(f.blocks, std::int64_t{g.grid[0]} * g.grid[1] * g.grid[2]);
  EXPECT_EQ(f.threads_per_block, 256);
  EXPECT_EQ(f.smem_bytes_per_block, 2 * 8 * (68 + 132) * 4);
  EXPECT_DOUBLE_EQ(f.flops, static_cast<double>(flops(p)));
  // Reduction 576 in 2 splits of 288 = 36 slices of 8: every block multiplies a 64x128 tile over 288.
  EXPECT_DOUBLE_EQ(f.flops_per_block, 2.0 * 64 * 128 * 288);
  EXPECT_GE(f.flops_per_block * static_cast<double>(f.blocks), f.flops);
  // The output is zeroed and accumulated into: more than the tensors once.
  EXPECT_GT(f.dram_bytes, static_cast<double>(min_bytes(p)));
}

TEST(IgemmFamily, CostFeaturesCountTheWarpInstructionsOfASplitDoubleBufferedBlock) {
  // ResNet 3x3, NCHW: M = 64, N = 56 x 56 = 3136 pixels, KR = 64 x 9 = 576. Tile 64 x 128, threads 4 x 8: 16 x 16 =
  // 256 threads = 8 warps; split-K 2: each split takes ceil(ceil(576 / 2) / 8) x 8 = 288 of the reduction, 36 steps
  // of 8; double-buffered (stages 2); vector 4 for the filter only (channels-first activations load scalars).
  const KernelSpec s = spec(64, 128, 8, 4, 8, 2, 2, 4);
  const CostFeatures f = igemm().cost_features(kResnet3x3, s);
  EXPECT_EQ(f.blocks, 25 * 1 * 2);                          // ceil(3136 / 128) pixel tiles x 1 channel tile x 2 splits
  EXPECT_DOUBLE_EQ(f.fma_instructions, 8.0 * 4 * 8 * 288);  // warps x THREAD_M x THREAD_N per reduction element
  // Per reduction element each thread reads THREAD_M / 4 + THREAD_N / 4 = 1 + 2 float4 vectors of shared memory.
  EXPECT_DOUBLE_EQ(f.shared_load_instructions, 8.0 * 288 * 3);
  // Filter: 64 rows x 288 / 4 (float4) = 4608 loads; activations: 128 pixels x 288 = 36864 scalar loads; 32 per warp
  // instruction: (4608 + 36864) / 32 = 1296.
  EXPECT_DOUBLE_EQ(f.global_load_instructions, 1296.0);
  EXPECT_DOUBLE_EQ(f.address_instructions, 36864.0 / 32 * 8);  // 8 per activation load
  EXPECT_EQ(f.main_loop_steps, 36);
  EXPECT_TRUE(f.pipelined);
  EXPECT_DOUBLE_EQ(f.atomic_outputs, 64.0 * 3136 * 2);  // every split adds its partial sums to every output
  EXPECT_EQ(f.extra_launches, 1);                       // the output is zeroed first
  EXPECT_EQ(zeroes_output_first(kResnet3x3, s), f.extra_launches == 1);
}

TEST(IgemmFamily, CostFeaturesOfASingleBufferedChannelsLastBlockWithoutSplit) {
  // ResNet 3x3 in NHWC: KR = 576 in one split, 72 steps of 8; tile 64 x 64, threads 4 x 4: 16 x 16 = 256 threads
  // = 8 warps; vector 4 applies to both operands (channels-last activations are contiguous in c).
  Problem p = kResnet3x3;
  p.layout = Layout::nhwc;
  const CostFeatures f = igemm().cost_features(p, spec(64, 64, 8, 4, 4, 1, 1, 4));
  EXPECT_EQ(f.blocks, 49);                                      // ceil(3136 / 64)
  EXPECT_DOUBLE_EQ(f.fma_instructions, 8.0 * 4 * 4 * 576);      // 73728
  EXPECT_DOUBLE_EQ(f.shared_load_instructions, 8.0 * 576 * 2);  // one float4 of each operand
  // Filter 64 x 576 / 4 = 9216 loads, activations 64 x 576 / 4 = 9216 loads: 18432 / 32 = 576 warp instructions.
  EXPECT_DOUBLE_EQ(f.global_load_instructions, 576.0);
  EXPECT_DOUBLE_EQ(f.address_instructions, 9216.0 / 32 * 8);  // 2304
  EXPECT_EQ(f.main_loop_steps, 72);
  EXPECT_FALSE(f.pipelined);
  EXPECT_EQ(f.atomic_outputs, 0.0);
  EXPECT_EQ(f.extra_launches, 0);
  EXPECT_DOUBLE_EQ(f.dram_bytes, static_cast<double>(min_bytes(p)));  // no zeroing, no atomics
}

TEST(IgemmFamily, RendersTheTemplateWithItsEntryName) {
  const KernelSpec s = spec(64, 64, 8, 4, 4);
  const KernelSource src = igemm().render(kResnet3x3, s);
  EXPECT_EQ(src.entry, "igemm_m64_n64_k8_tm4_tn4_st2_sk1_v1");
  EXPECT_EQ(src.file_name, "igemm_m64_n64_k8_tm4_tn4_st2_sk1_v1.cu");
  EXPECT_NE(src.text.find("#define CONVGEN_ENTRY igemm_m64_n64_k8_tm4_tn4_st2_sk1_v1\n"), std::string::npos);
  EXPECT_NE(src.text.find("#line 1 \"igemm.cu\"\n"), std::string::npos);
  EXPECT_NE(src.text.find("#include \"common.cuh\""), std::string::npos);
}

}  // namespace
}  // namespace convgen
