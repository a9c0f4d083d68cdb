// igemm_wgmma_test: the Hopper tensor-core family's search space on the network suites and the edge-case corpus, its
// support checks and their reasons, the architecture it compiles for (sm_90a), launch plan (split-K's reduce pass),
// costs, default choices, kernel names and rendering.
#include <algorithm>
#include <filesystem>
#include <set>

#include <gtest/gtest.h>

#include "convgen/error.hpp"
#include "generator/family.hpp"
#include "generator/gpu_json.hpp"
#include "generator/shapes.hpp"
#include "igemm_tc_params.hpp"
#include "igemm_wgmma_params.hpp"

namespace convgen {
namespace {

const std::filesystem::path kSourceDir = CONVGEN_SOURCE_DIR;

Gpu h100() { return load_gpu(kSourceDir / "gpus/h100_sxm.json"); }
Gpu a100() { return load_gpu(kSourceDir / "gpus/a100_sxm4.json"); }

const Family& igemm_wgmma() { return family("igemm_wgmma"); }

IgemmWgmmaParams P(const KernelSpec& s) { return params_of<IgemmWgmmaParams>(s); }

std::string name_error(std::string_view name) {
  try {
    parse_kernel_name(name);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

KernelSpec spec(int block_m, int block_n, int stages = 4, int split_k = 1) {
  return to_spec(IgemmWgmmaParams{.block_m = block_m, .block_n = block_n, .stages = stages, .split_k = split_k});
}

Layout channels_last_of(Layout layout) {
  switch (layout) {
    case Layout::ncw:
      return Layout::nwc;
    case Layout::nchw:
      return Layout::nhwc;
    case Layout::ncdhw:
      return Layout::ndhwc;
    default:
      return layout;
  }
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

// cusnn's res_512to512_7: 49 output pixels, 512 channels, a reduction of 4608; the output alone fills few blocks.
const Problem kDeep{.n = 1,
                    .c = 512,
                    .k = 512,
                    .input = {1, 7, 7},
                    .filter = {1, 3, 3},
                    .padding = {0, 1, 1},
                    .layout = Layout::nhwc,
                    .precision = Precision::bf16};

// The layers of a suite, channels-last in fp16 and bf16.
std::vector<Layer> channels_last_half_layers(const std::string& suite_file) {
  std::vector<Layer> layers;
  for (const Layer& layer : load_suite(kSourceDir / "shapes" / suite_file).layers)
    for (Precision precision : {Precision::fp16, Precision::bf16}) {
      Layer l = layer;
      l.problem = with(layer.problem, precision, channels_last_of(layer.problem.layout));
      layers.push_back(l);
    }
  return layers;
}

std::int64_t output_pixels(const Problem& p) {
  const Dims3 out = output_dims(p);
  return std::int64_t{p.n} * out.d * out.h * out.w;
}

// What every configuration of the search space on `p` must satisfy: supported, unique, its name parsing back, and a
// plan whose main launch covers the output with 128 threads per 64 pixels and the stages' shared memory.
void expect_a_sound_search_space(const Problem& p, const Gpu& gpu) {
  const std::vector<KernelSpec> specs = igemm_wgmma().enumerate(p, gpu);
  EXPECT_LE(specs.size(), 32u);
  std::set<std::string> names;
  for (const KernelSpec& s : specs) {
    const std::string name = kernel_name(s);
    EXPECT_EQ(s.family, "igemm_wgmma");
    EXPECT_EQ(igemm_wgmma().check_support(p, gpu, s), std::nullopt) << name;
    EXPECT_EQ(check_support(p, gpu, s), std::nullopt) << name;
    EXPECT_TRUE(names.insert(name).second) << "duplicate " << name;
    EXPECT_EQ(parse_kernel_name(name), s) << name;
    const IgemmWgmmaParams t = P(s);
    const LaunchGeometry g = igemm_wgmma().plan(p, s).main_geometry();
    EXPECT_GE(std::int64_t{g.grid[0]} * t.block_m, output_pixels(p)) << name;
    EXPECT_LT(std::int64_t{g.grid[0] - 1} * t.block_m, output_pixels(p)) << name;
    EXPECT_GE(std::int64_t{g.grid[1]} * t.block_n, k_per_group(p)) << name;
    EXPECT_LT(std::int64_t{g.grid[1] - 1} * t.block_n, k_per_group(p)) << name;
    EXPECT_EQ(g.grid[2], static_cast<unsigned>(p.groups * t.split_k)) << name;
    EXPECT_EQ(g.block, (std::array<unsigned, 3>{static_cast<unsigned>(128 * t.block_m / 64), 1, 1})) << name;
    EXPECT_EQ(g.dynamic_smem_bytes, static_cast<unsigned>(t.stages * (t.block_m + t.block_n) * 128 + 1024)) << name;
  }
  const std::optional<KernelSpec> chosen = igemm_wgmma().default_spec(p, gpu);
  if (specs.empty()) {
    EXPECT_EQ(chosen, std::nullopt);
  } else {
    ASSERT_TRUE(chosen.has_value());
    EXPECT_EQ(*chosen, specs.front());
  }
}

TEST(IgemmWgmmaFamily, ServesEveryResnet50AndCusnnLayerWithChannelsInMultiplesOfEightInFp16AndBf16) {
  const Gpu gpu = h100();
  int served = 0;
  for (const std::string& suite : {std::string("resnet50.csv"), std::string("cusnn.csv")})
    for (const Layer& layer : channels_last_half_layers(suite)) {
      SCOPED_TRACE(suite + " " + layer.name + " " + problem_key(layer.problem));
      const std::vector<KernelSpec> specs = igemm_wgmma().enumerate(layer.problem, gpu);
      if (c_per_group(layer.problem) % 8 != 0) {
        EXPECT_TRUE(specs.empty());
        continue;
      }
      EXPECT_FALSE(specs.empty());
      served += !specs.empty();
      expect_a_sound_search_space(layer.problem, gpu);
    }
  // resnet50's 24 layers but conv1 (3 channels), cusnn's 8, each in two precisions.
  EXPECT_EQ(served, 2 * (23 + 8));
}

TEST(IgemmWgmmaFamily, ServesTheEdgeCasesWhoseChannelsPerGroupAreAMultipleOfEightInBothHalfPrecisions) {
  const Gpu gpu = h100();
  int served = 0;
  int declined = 0;
  for (const Layer& layer : load_suite(kSourceDir / "shapes/edge_cases.csv").layers)
    for (Precision precision : {Precision::fp16, Precision::bf16}) {
      const Problem p = with(layer.problem, precision, channels_last_of(layer.problem.layout));
      SCOPED_TRACE(layer.name + " " + problem_key(p));
      const bool servable = c_per_group(p) % 8 == 0;
      EXPECT_EQ(igemm_wgmma().enumerate(p, gpu).empty(), !servable);
      if (servable) {
        ++served;
        expect_a_sound_search_space(p, gpu);
      } else {
        ++declined;
        EXPECT_EQ(igemm_wgmma().check_support(p, gpu, spec(64, 16)),
                  fmt::format("igemm_wgmma needs channels per group to be a multiple of 8 (16-byte loads), got {}",
                              c_per_group(p)));
      }
    }
  // 39 rows: 16 with 1, 3 or 4 channels per group (the depthwise ones among them), in two precisions.
  EXPECT_EQ(served, 2 * 23);
  EXPECT_EQ(declined, 2 * 16);
}

TEST(IgemmWgmmaFamily, DeclinesFp32AndTf32WithTheReason) {
  const Gpu gpu = h100();
  for (Precision precision : {Precision::fp32, Precision::tf32}) {
    const Problem p = with(kResnet3x3, precision, Layout::nhwc);
    EXPECT_EQ(igemm_wgmma().check_support(p, gpu, spec(128, 64)),
              fmt::format("precision {} is not supported by igemm_wgmma (fp16 and bf16 only)", to_string(precision)));
    EXPECT_TRUE(igemm_wgmma().enumerate(p, gpu).empty()) << to_string(precision);
    EXPECT_EQ(igemm_wgmma().default_spec(p, gpu), std::nullopt) << to_string(precision);
    EXPECT_NE(default_choice(p, gpu).family, "igemm_wgmma") << to_string(precision);
  }
}

TEST(IgemmWgmmaFamily, DeclinesChannelsFirstLayoutsAndNamesTheFamilyThatServesThem) {
  const Gpu gpu = h100();
  for (Layout layout : {Layout::nchw, Layout::ncw, Layout::ncdhw}) {
    Problem p = with(kResnet3x3, Precision::fp16, layout);
    if (layout == Layout::ncw) {
      p.input = {1, 1, 56};
      p.filter = {1, 1, 3};
      p.padding = {0, 0, 1};
    } else if (layout == Layout::ncdhw) {
      p.input = {8, 14, 14};
      p.filter = {3, 3, 3};
      p.padding = {1, 1, 1};
    }
    EXPECT_EQ(
        igemm_wgmma().check_support(p, gpu, spec(128, 64)),
        fmt::format("igemm_wgmma serves channels-last layouts only, got {} (igemm_tc serves it)", to_string(layout)));
    EXPECT_TRUE(igemm_wgmma().enumerate(p, gpu).empty()) << to_string(layout);
    EXPECT_EQ(igemm_wgmma().default_spec(p, gpu), std::nullopt) << to_string(layout);
    // Its channels-last twin is served.
    EXPECT_FALSE(igemm_wgmma().enumerate(with(p, Precision::fp16, channels_last_of(layout)), gpu).empty())
        << to_string(layout);
  }
}

TEST(IgemmWgmmaFamily, NeedsChannelsPerGroupInMultiplesOfEight) {
  const Gpu gpu = h100();
  Problem rgb = kResnet3x3;
  rgb.c = 3;
  EXPECT_EQ(igemm_wgmma().check_support(rgb, gpu, spec(128, 64)),
            "igemm_wgmma needs channels per group to be a multiple of 8 (16-byte loads), got 3");
  EXPECT_TRUE(igemm_wgmma().enumerate(rgb, gpu).empty());
  Problem twelve = kResnet3x3;
  twelve.c = 12;
  twelve.precision = Precision::bf16;
  EXPECT_EQ(igemm_wgmma().check_support(twelve, gpu, spec(128, 64)),
            "igemm_wgmma needs channels per group to be a multiple of 8 (16-byte loads), got 12");
  // 32 channels are a multiple of 8, but not in 8 groups of 4.
  Problem grouped = kResnet3x3;
  grouped.c = 32;
  grouped.k = 32;
  grouped.groups = 8;
  EXPECT_EQ(igemm_wgmma().check_support(grouped, gpu, spec(128, 16)),
            "igemm_wgmma needs channels per group to be a multiple of 8 (16-byte loads), got 4");
  grouped.groups = 4;
  EXPECT_EQ(igemm_wgmma().check_support(grouped, gpu, spec(128, 16)), std::nullopt);
}

TEST(IgemmWgmmaFamily, DeclinesGpusWithoutWgmma) {
  const Gpu a100_gpu = a100();
  EXPECT_EQ(igemm_wgmma().check_support(kResnet3x3, a100_gpu, spec(128, 64)),
            "igemm_wgmma needs wgmma (compute capability 9.0, compiled for sm_90a), the gpu is sm_80");
  EXPECT_TRUE(igemm_wgmma().enumerate(kResnet3x3, a100_gpu).empty());
  EXPECT_EQ(igemm_wgmma().default_spec(kResnet3x3, a100_gpu), std::nullopt);
  EXPECT_EQ(default_choice(kResnet3x3, a100_gpu).family, "igemm_tc");
  // Nor a later architecture: wgmma is a feature of 9.0 alone.
  Gpu later = h100();
  later.arch = "sm_100";
  EXPECT_EQ(igemm_wgmma().check_support(kResnet3x3, later, spec(128, 64)),
            "igemm_wgmma needs wgmma (compute capability 9.0, compiled for sm_90a), the gpu is sm_100");
  // A descriptor naming the arch-specific variant is 9.0 all the same.
  Gpu sm90a = h100();
  sm90a.arch = "sm_90a";
  EXPECT_EQ(igemm_wgmma().check_support(kResnet3x3, sm90a, spec(128, 64)), std::nullopt);
  EXPECT_FALSE(igemm_wgmma().enumerate(kResnet3x3, sm90a).empty());
}

TEST(IgemmWgmmaFamily, ChecksEveryFieldValue) {
  const Gpu gpu = h100();
  const Problem& p = kResnet3x3;
  EXPECT_EQ(igemm_wgmma().check_support(p, gpu, spec(32, 64)),
            "block_m must be 64, 128, 192 or 256 (warpgroups of 64 pixels), got 32");
  EXPECT_EQ(igemm_wgmma().check_support(p, gpu, spec(96, 64)),
            "block_m must be 64, 128, 192 or 256 (warpgroups of 64 pixels), got 96");
  EXPECT_EQ(igemm_wgmma().check_support(p, gpu, spec(320, 64)),
            "block_m must be 64, 128, 192 or 256 (warpgroups of 64 pixels), got 320");
  EXPECT_EQ(igemm_wgmma().check_support(p, gpu, spec(128, 8)),
            "block_n must be 16, 32, 64, 96, 128, 192 or 256, got 8");
  EXPECT_EQ(igemm_wgmma().check_support(p, gpu, spec(128, 48)),
            "block_n must be 16, 32, 64, 96, 128, 192 or 256, got 48");
  EXPECT_EQ(igemm_wgmma().check_support(p, gpu, spec(128, 512)),
            "block_n must be 16, 32, 64, 96, 128, 192 or 256, got 512");
  EXPECT_EQ(igemm_wgmma().check_support(p, gpu, spec(128, 64, 2)), "stages must be 3 to 6, got 2");
  EXPECT_EQ(igemm_wgmma().check_support(p, gpu, spec(128, 64, 7)), "stages must be 3 to 6, got 7");
  EXPECT_EQ(igemm_wgmma().check_support(p, gpu, spec(128, 64, 4, 0)), "split_k must be 1 to 32, got 0");
  EXPECT_EQ(igemm_wgmma().check_support(p, gpu, spec(128, 64, 4, 33)), "split_k must be 1 to 32, got 33");
  KernelSpec tc = to_spec(IgemmTcParams{});
  EXPECT_EQ(igemm_wgmma().check_support(p, gpu, tc), "kernel igemm_tc is not an igemm_wgmma kernel");
}

// The tiles the template declares (CONVGEN_PARAM) are the ones the family accepts: each runs, but for the four whose
// accumulators and addresses exceed a block's registers.
TEST(IgemmWgmmaFamily, AcceptsEveryTileTheTemplateDeclaresThatFitsTheRegisters) {
  const TemplateInterface& iface = igemm_wgmma().interface();
  ASSERT_EQ(iface.params.size(), 4u);
  EXPECT_EQ(iface.params[0].field, "block_m");
  EXPECT_EQ(iface.params[1].field, "block_n");
  EXPECT_EQ(std::vector<int>(iface.params[0].allowed.begin(), iface.params[0].allowed.end()),
            (std::vector<int>{64, 128, 192, 256}));
  EXPECT_EQ(std::vector<int>(iface.params[1].allowed.begin(), iface.params[1].allowed.end()),
            (std::vector<int>{16, 32, 64, 96, 128, 192, 256}));
  EXPECT_EQ(iface.params[2].min, 3);
  EXPECT_EQ(iface.params[2].max, 6);
  EXPECT_EQ(iface.params[3].min, 1);
  EXPECT_EQ(iface.params[3].max, 32);
  const Gpu gpu = h100();
  const std::set<std::pair<int, int>> too_many_registers = {{256, 192}, {256, 256}};
  int accepted = 0;
  for (int block_m : iface.params[0].allowed)
    for (int block_n : iface.params[1].allowed)
      for (int stages : {3, 4}) {
        const KernelSpec s = spec(block_m, block_n, stages);
        const std::optional<std::string> reason = igemm_wgmma().check_support(kResnet3x3, gpu, s);
        if (too_many_registers.contains({block_m, block_n})) {
          ASSERT_TRUE(reason.has_value()) << kernel_name(s);
          if (stages == 3) {  // 256 x 256 in 4 stages is also past the shared memory, which is checked first
            EXPECT_NE(reason->find("registers per block"), std::string::npos) << kernel_name(s) << ": " << *reason;
          }
        } else {
          EXPECT_EQ(reason, std::nullopt) << kernel_name(s);
          accepted += !reason;
        }
      }
  EXPECT_EQ(accepted, 2 * (4 * 7 - 2));
}

TEST(IgemmWgmmaFamily, EverySplitMustOwnPartOfTheReduction) {
  const Gpu gpu = h100();
  // 64 channels x 9 taps = 576 reduction elements: 9 steps of 64, so at most 9 splits of one step.
  EXPECT_EQ(igemm_wgmma().check_support(kResnet3x3, gpu, spec(128, 64, 4, 9)), std::nullopt);
  EXPECT_EQ(igemm_wgmma().check_support(kResnet3x3, gpu, spec(128, 64, 4, 10)),
            "split_k 10 leaves splits without work: the reduction length 576 gives 9 steps of 64");
  EXPECT_EQ(igemm_wgmma().check_support(kResnet3x3, gpu, spec(128, 64, 4, 16)),
            "split_k 16 leaves splits without work: the reduction length 576 gives 9 steps of 64");
  // 1x1 with 64 channels: one step, no split at all.
  const Problem thin{
      .n = 1, .c = 64, .k = 64, .input = {1, 8, 8}, .layout = Layout::nhwc, .precision = Precision::fp16};
  EXPECT_EQ(igemm_wgmma().check_support(thin, gpu, spec(64, 64, 4, 2)),
            "split_k 2 leaves splits without work: the reduction length 64 gives 1 steps of 64");
  for (const KernelSpec& s : igemm_wgmma().enumerate(thin, gpu)) EXPECT_EQ(P(s).split_k, 1) << kernel_name(s);
}

TEST(IgemmWgmmaFamily, ChecksTheGpusSharedMemoryThreadsAndRegisters) {
  Gpu gpu = h100();
  const Problem& p = kResnet3x3;
  // 6 stages of 256 + 256 rows of 128 bytes, and 1,024 to align them: 394240 bytes, past the H100's opt-in 232448.
  EXPECT_EQ(igemm_wgmma().check_support(p, gpu, spec(256, 256, 6)),
            "394240 bytes of shared memory per block exceed the gpu's 232448");
  EXPECT_EQ(igemm_wgmma().check_support(p, gpu, spec(128, 256, 6)),
            "295936 bytes of shared memory per block exceed the gpu's 232448");
  // 4 stages of 128 + 256 rows: 197632 bytes, past the 48 KiB default but within the opt-in: the plan's launch opts in.
  EXPECT_EQ(igemm_wgmma().check_support(p, gpu, spec(128, 256, 4)), std::nullopt);
  // 256 x 256 in 3 stages fits the shared memory, not the registers: 128 accumulators in each of 512 threads.
  EXPECT_EQ(igemm_wgmma().check_support(p, gpu, spec(256, 256, 3)),
            "about 84992 registers per block (512 threads of 166) exceed the gpu's 65536");
  // 256 x 192: 96 accumulators, and 512 threads of the estimate's 132 registers are more than the 65536 of a block.
  EXPECT_EQ(igemm_wgmma().check_support(p, gpu, spec(256, 192, 3)),
            "about 67584 registers per block (512 threads of 132) exceed the gpu's 65536");
  // 192 x 256 fits (ptxas used 164 of the 170 a block of 384 threads may have).
  EXPECT_EQ(igemm_wgmma().check_support(p, gpu, spec(192, 256, 3)), std::nullopt);
  Gpu few_regs = gpu;
  few_regs.max_regs_per_thread = 128;
  EXPECT_EQ(igemm_wgmma().check_support(p, few_regs, spec(64, 256, 3)),
            "about 190 registers per thread exceed the gpu's 128");
  Gpu few_threads = gpu;
  few_threads.max_threads_per_block = 256;
  EXPECT_EQ(igemm_wgmma().check_support(p, few_threads, spec(256, 64, 3)),
            "512 threads per block exceed the gpu's 256");
  Gpu small = gpu;
  small.smem_per_block_optin_bytes = 0;  // 48 KiB, the default
  EXPECT_EQ(igemm_wgmma().check_support(p, small, spec(128, 64, 3)),
            "74752 bytes of shared memory per block exceed the gpu's 49152");
  // 3 stages of 64 + 64 rows: 49152 bytes, and the 1,024 of alignment take them past.
  EXPECT_EQ(igemm_wgmma().check_support(p, small, spec(64, 64, 3)),
            "50176 bytes of shared memory per block exceed the gpu's 49152");
  EXPECT_EQ(igemm_wgmma().check_support(p, small, spec(64, 32, 3)), std::nullopt);
}

TEST(IgemmWgmmaFamily, CompilesForTheArchSpecificVariantOfItsGpuWhileIgemmTcKeepsTheGpusOwn) {
  const Gpu gpu = h100();
  const KernelSpec wgmma = spec(128, 64);
  const KernelSpec tc = to_spec(IgemmTcParams{});
  EXPECT_EQ(compile_arch(wgmma, gpu), "sm_90a");
  EXPECT_EQ(compile_arch(tc, gpu), "sm_90");
  EXPECT_EQ(igemm_wgmma().compile_arch(gpu), "sm_90a");
  EXPECT_EQ(family("igemm_tc").compile_arch(gpu), "sm_90");
  // A descriptor that names sm_90a already keeps it (no sm_90aa).
  Gpu sm90a = gpu;
  sm90a.arch = "sm_90a";
  EXPECT_EQ(compile_arch(wgmma, sm90a), "sm_90a");
  EXPECT_EQ(compile_arch(wgmma, load_gpu(kSourceDir / "gpus/h200.json")), "sm_90a");
  // Every other family compiles for the gpu's own architecture.
  for (const Family* f : all_families())
    if (f != &igemm_wgmma()) {
      EXPECT_EQ(f->compile_arch(gpu), "sm_90") << f->name();
      EXPECT_EQ(f->compile_arch(a100()), "sm_80") << f->name();
    }
}

TEST(IgemmWgmmaFamily, PlansOneLaunchOf128ThreadsPerWarpgroupWithTheDynamicSharedMemoryOfItsStages) {
  // 56 x 56 = 3136 pixels in tiles of 128: 25 blocks; 64 channels in one tile of 64; 2 warpgroups.
  const LaunchPlan plan = igemm_wgmma().plan(kResnet3x3, spec(128, 64, 4));
  EXPECT_TRUE(plan.buffers.empty());
  EXPECT_TRUE(plan.setup.empty());
  EXPECT_FALSE(plan.zeroes_output_first());
  EXPECT_EQ(plan.workspace_bytes(), 0);
  ASSERT_EQ(plan.run.size(), 1u);
  EXPECT_EQ(plan.run[0].kind, LaunchStep::Kind::kernel);
  EXPECT_EQ(plan.run[0].entry_suffix, "");
  // 4 stages x (128 + 64) rows x 128 bytes + 1024: 99328 bytes.
  EXPECT_EQ(plan.run[0].geometry,
            (LaunchGeometry{.grid = {25, 1, 1}, .block = {256, 1, 1}, .dynamic_smem_bytes = 99328}));
  // 64 pixels: one warpgroup; 16 channels of 64 in 4 tiles; 3 stages of 80 rows.
  EXPECT_EQ(igemm_wgmma().plan(kResnet3x3, spec(64, 16, 3)).main_geometry(),
            (LaunchGeometry{.grid = {49, 4, 1}, .block = {128, 1, 1}, .dynamic_smem_bytes = 3 * 80 * 128 + 1024}));
  // 256 pixels: four warpgroups, 512 threads; 13 tiles cover 3136 pixels (12 would leave 64).
  EXPECT_EQ(igemm_wgmma().plan(kResnet3x3, spec(256, 128, 5)).main_geometry(),
            (LaunchGeometry{.grid = {13, 1, 1}, .block = {512, 1, 1}, .dynamic_smem_bytes = 5 * 384 * 128 + 1024}));
  // 192 pixels: three warpgroups, 384 threads; 17 tiles cover 3136 pixels; 96 channels: one tile, partly empty.
  EXPECT_EQ(igemm_wgmma().plan(kResnet3x3, spec(192, 96, 4)).main_geometry(),
            (LaunchGeometry{.grid = {17, 1, 1}, .block = {384, 1, 1}, .dynamic_smem_bytes = 4 * 288 * 128 + 1024}));
  // Groups run side by side in grid.z: 4 groups of 16 channels.
  Problem grouped = kResnet3x3;
  grouped.groups = 4;
  EXPECT_EQ(igemm_wgmma().plan(grouped, spec(128, 16, 4)).main_geometry().grid, (std::array<unsigned, 3>{25, 1, 4}));
}

TEST(IgemmWgmmaFamily, SplitKWritesPartialSumsToTheWorkspaceAndAReducePassAddsThem) {
  const Gpu gpu = h100();
  // 4 splits of 4608: 49 pixels in one tile of 64, 512 channels in 4 of 128, 4 splits.
  const LaunchPlan plan = igemm_wgmma().plan(kDeep, spec(64, 128, 4, 4));
  EXPECT_FALSE(plan.zeroes_output_first());
  EXPECT_TRUE(plan.setup.empty());
  ASSERT_EQ(plan.buffers.size(), 1u);
  // 512 x 49 = 25088 outputs x 4 splits x 4 bytes of fp32.
  EXPECT_EQ(plan.buffers[0], (PlanBuffer{.name = "partials", .bytes = 401408}));
  EXPECT_EQ(plan.offset_of("partials"), 0);  // the whole workspace, which both entries take as g_workspace
  EXPECT_EQ(plan.workspace_bytes(), 401408);
  ASSERT_EQ(plan.run.size(), 2u);
  EXPECT_EQ(plan.run[0].entry_suffix, "");
  EXPECT_EQ(plan.run[0].geometry,
            (LaunchGeometry{.grid = {1, 4, 4}, .block = {128, 1, 1}, .dynamic_smem_bytes = 4 * 192 * 128 + 1024}));
  EXPECT_EQ(plan.run[1].kind, LaunchStep::Kind::kernel);
  EXPECT_EQ(plan.run[1].entry_suffix, "reduce");
  // 25088 outputs, 256 a block: 98 blocks.
  EXPECT_EQ(plan.run[1].geometry, (LaunchGeometry{.grid = {98, 1, 1}, .block = {256, 1, 1}}));
  EXPECT_EQ(igemm_wgmma().cost_features(kDeep, spec(64, 128, 4, 4)).extra_launches, 1);
  EXPECT_EQ(igemm_wgmma().cost_features(kDeep, spec(64, 128, 4, 1)).extra_launches, 0);

  // The search space offers split-K here, and every split configuration plans its partial sums and reduce pass.
  int split = 0;
  for (const KernelSpec& s : igemm_wgmma().enumerate(kDeep, gpu)) {
    const LaunchPlan p = igemm_wgmma().plan(kDeep, s);
    if (P(s).split_k == 1) {
      EXPECT_EQ(p.run.size(), 1u) << kernel_name(s);
      EXPECT_EQ(p.workspace_bytes(), 0) << kernel_name(s);
      continue;
    }
    ++split;
    ASSERT_EQ(p.buffers.size(), 1u) << kernel_name(s);
    EXPECT_EQ(p.buffers[0], (PlanBuffer{.name = "partials", .bytes = output_elements(kDeep) * P(s).split_k * 4}));
    ASSERT_EQ(p.run.size(), 2u) << kernel_name(s);
    EXPECT_EQ(p.run[1].entry_suffix, "reduce") << kernel_name(s);
    EXPECT_EQ(p.run[1].geometry.block, (std::array<unsigned, 3>{256, 1, 1}));
    EXPECT_EQ(std::int64_t{p.run[1].geometry.grid[0]}, (output_elements(kDeep) + 255) / 256);
  }
  EXPECT_GT(split, 0);
  const KernelSpec chosen = *igemm_wgmma().default_spec(kDeep, gpu);
  EXPECT_GT(P(chosen).split_k, 1) << kernel_name(chosen);
  // A layer that fills the GPU many times over is never split.
  const Problem wide{
      .n = 8, .c = 64, .k = 256, .input = {1, 56, 56}, .layout = Layout::nhwc, .precision = Precision::fp16};
  for (const KernelSpec& s : igemm_wgmma().enumerate(wide, gpu)) EXPECT_EQ(P(s).split_k, 1) << kernel_name(s);
}

TEST(IgemmWgmmaFamily, TemplateDeclaresTheMainAndReduceEntries) {
  const TemplateInterface& iface = igemm_wgmma().interface();
  EXPECT_EQ(iface.family, "igemm_wgmma");
  EXPECT_EQ(iface.template_file, "igemm_wgmma.cu");
  const EntryDecl* main = iface.find_entry("");
  ASSERT_NE(main, nullptr);
  ASSERT_EQ(main->args.size(), 6u);
  EXPECT_EQ(main->args[0].name, "g_activation");
  EXPECT_EQ(main->args[1].name, "g_filter");
  EXPECT_EQ(main->args[2].name, "g_output");
  EXPECT_EQ(main->args[3].name, "g_workspace");
  EXPECT_EQ(main->args[4].name, "g_bias");
  EXPECT_EQ(main->args[5].name, "g_residual");
  const EntryDecl* reduce = iface.find_entry("reduce");
  ASSERT_NE(reduce, nullptr);
  ASSERT_EQ(reduce->args.size(), 4u);
  EXPECT_EQ(reduce->args[0].name, "g_workspace");
  EXPECT_EQ(reduce->args[1].name, "g_output");
  EXPECT_EQ(reduce->args[2].name, "g_bias");
  EXPECT_EQ(reduce->args[3].name, "g_residual");
}

TEST(IgemmWgmmaFamily, CostFeaturesCountTheWgmmaAndCpAsyncOfABlock) {
  // ResNet 3x3 fp16 NHWC: M = 3136 pixels, N = 64, KR = 576. Tile 128 x 64: 2 warpgroups, 8 warps; 576 / 16 = 36
  // wgmma k-slices, each counted per warp as 64 / 32 = 2 fma-like instructions; 9 steps of 64.
  const CostFeatures f = igemm_wgmma().cost_features(kResnet3x3, spec(128, 64, 4));
  EXPECT_EQ(f.blocks, 25);
  EXPECT_EQ(f.threads_per_block, 256);
  EXPECT_EQ(f.smem_bytes_per_block, 99328);
  EXPECT_DOUBLE_EQ(f.flops, static_cast<double>(flops(kResnet3x3)));
  EXPECT_DOUBLE_EQ(f.flops_per_block, 2.0 * 128 * 64 * 576);
  EXPECT_DOUBLE_EQ(f.fma_instructions, 8.0 * 36 * 2);
  EXPECT_DOUBLE_EQ(f.shared_load_instructions, 0.0);  // the operands reach the tensor cores through descriptors
  // 128 pixel rows and 64 filter rows of 576 elements, 8 per cp.async: (9216 + 4608) / 32.
  EXPECT_DOUBLE_EQ(f.global_load_instructions, 432.0);
  EXPECT_DOUBLE_EQ(f.address_instructions, 9216.0 / 32 * 8);
  EXPECT_EQ(f.main_loop_steps, 9);
  EXPECT_TRUE(f.pipelined);
  EXPECT_EQ(f.atomic_outputs, 0.0);
  EXPECT_EQ(f.extra_launches, 0);
  EXPECT_DOUBLE_EQ(f.dram_bytes, static_cast<double>(min_bytes(kResnet3x3)));
  // Split in 3, each block covers 192 elements (3 steps) and the partial sums go to DRAM and back.
  const CostFeatures s = igemm_wgmma().cost_features(kResnet3x3, spec(128, 64, 4, 3));
  EXPECT_EQ(s.blocks, 75);
  EXPECT_EQ(s.main_loop_steps, 3);
  EXPECT_DOUBLE_EQ(s.flops_per_block, 2.0 * 128 * 64 * 192);
  EXPECT_DOUBLE_EQ(s.dram_bytes, static_cast<double>(min_bytes(kResnet3x3)) + 2.0 * 64 * 3136 * 3 * 4);
  EXPECT_EQ(s.extra_launches, 1);
}

TEST(IgemmWgmmaFamily, DefaultWeightsAreNeverAllZero) {
  const CostWeights w = igemm_wgmma().default_cost_weights();
  EXPECT_TRUE(std::any_of(w.begin(), w.end(), [](double v) { return v > 0; }));
  EXPECT_TRUE(std::none_of(w.begin(), w.end(), [](double v) { return v < 0; }));
}

TEST(IgemmWgmmaFamily, HasADefaultSpecWhereverItEnumeratesAndNoneElsewhere) {
  const Gpu gpu = h100();
  for (Precision precision : {Precision::fp16, Precision::bf16}) {
    const Problem p = with(kResnet3x3, precision, Layout::nhwc);
    const std::vector<KernelSpec> specs = igemm_wgmma().enumerate(p, gpu);
    ASSERT_FALSE(specs.empty()) << to_string(precision);
    const std::optional<KernelSpec> chosen = igemm_wgmma().default_spec(p, gpu);
    ASSERT_TRUE(chosen.has_value()) << to_string(precision);
    EXPECT_EQ(*chosen, specs.front());
    EXPECT_EQ(igemm_wgmma().check_support(p, gpu, *chosen), std::nullopt);
  }
  EXPECT_EQ(igemm_wgmma().default_spec(with(kResnet3x3, Precision::fp16, Layout::nchw), gpu), std::nullopt);
  EXPECT_EQ(igemm_wgmma().default_spec(kResnet3x3, a100()), std::nullopt);
}

// generator/families/igemm_wgmma.cpp: "Before igemm_tc (-1) where it serves: on an sm_90 GPU wgmma reaches the tensor
// cores' full rate, mma.sync not."
TEST(IgemmWgmmaFamily, IsTheDefaultChoiceBeforeIgemmTcWhereItServes) {
  const Gpu gpu = h100();
  for (Precision precision : {Precision::fp16, Precision::bf16}) {
    const Problem p = with(kResnet3x3, precision, Layout::nhwc);
    EXPECT_LT(igemm_wgmma().default_rank(p), family("igemm_tc").default_rank(p)) << to_string(precision);
    EXPECT_EQ(default_choice(p, gpu).family, "igemm_wgmma") << to_string(precision);
    // Where it does not serve, igemm_tc still does.
    EXPECT_EQ(default_choice(with(p, precision, Layout::nchw), gpu).family, "igemm_tc") << to_string(precision);
    EXPECT_EQ(default_choice(p, a100()).family, "igemm_tc") << to_string(precision);
  }
  EXPECT_EQ(default_choice(with(kResnet3x3, Precision::tf32, Layout::nhwc), gpu).family, "igemm_tc");
}

TEST(IgemmWgmmaFamily, KernelNamesCarryEveryParameterAndParseBack) {
  const KernelSpec s = spec(128, 64, 4, 1);
  EXPECT_EQ(s, (KernelSpec{.family = "igemm_wgmma", .values = {128, 64, 4, 1}}));
  EXPECT_EQ(kernel_name(s), "igemm_wgmma_m128_n64_st4_sk1");
  EXPECT_EQ(parse_kernel_name("igemm_wgmma_m128_n64_st4_sk1"), s);
  EXPECT_EQ(kernel_name(spec(256, 16, 6, 8)), "igemm_wgmma_m256_n16_st6_sk8");
  EXPECT_EQ(parse_kernel_name("igemm_wgmma_m64_n256_st3_sk32"), spec(64, 256, 3, 32));
  EXPECT_EQ(kernel_name(IgemmWgmmaParams{}), "igemm_wgmma_m128_n64_st4_sk1");  // the template's defaults
  // Not igemm_tc's: its name has more fields.
  EXPECT_NE(parse_kernel_name(kernel_name(to_spec(IgemmTcParams{}))).family, "igemm_wgmma");
  EXPECT_EQ(name_error("igemm_wgmma_m128_n64_st4"),
            "kernel name 'igemm_wgmma_m128_n64_st4': expected field '_sk<number>' at ''");
  EXPECT_EQ(name_error("igemm_wgmma_m96_n64_st4_sk1"),
            "kernel name 'igemm_wgmma_m96_n64_st4_sk1': field 'm' (output pixels per block: one warpgroup of 128 "
            "threads per 64) must be one of 64, 128, 192, 256, got 96");
  EXPECT_EQ(name_error("igemm_wgmma_m128_n64_st7_sk1"),
            "kernel name 'igemm_wgmma_m128_n64_st7_sk1': field 'st' (shared-memory stages: loads run stages - 2 steps "
            "ahead of the multiply) must be from 3 to 6, got 7");
}

TEST(IgemmWgmmaFamily, RendersTheTemplateWithThePrecisionInThePrelude) {
  const KernelSpec s = spec(128, 64, 4, 2);
  for (const auto& [precision, value] : {std::pair{Precision::fp16, 2}, std::pair{Precision::bf16, 3}}) {
    const KernelSource src = igemm_wgmma().render(with(kResnet3x3, precision, Layout::nhwc), s);
    EXPECT_EQ(src.entry, "igemm_wgmma_m128_n64_st4_sk2");
    EXPECT_EQ(src.file_name, "igemm_wgmma_m128_n64_st4_sk2.cu");
    EXPECT_NE(src.text.find(fmt::format("constexpr int PRECISION = {};", value)), std::string::npos)
        << to_string(precision);
    EXPECT_NE(src.text.find("constexpr int BLOCK_M = 128;\nconstexpr int BLOCK_N = 64;\nconstexpr int STAGES = 4;\n"
                            "constexpr int SPLIT_K = 2;\n"),
              std::string::npos);
    EXPECT_NE(src.text.find("constexpr bool CHANNELS_LAST = true;"), std::string::npos);
    EXPECT_NE(src.text.find("#line 1 \"igemm_wgmma.cu\"\n"), std::string::npos);
    EXPECT_NE(src.text.find("#include \"wgmma.cuh\""), std::string::npos);
    EXPECT_NE(std::find(src.headers.begin(), src.headers.end(), "wgmma.cuh"), src.headers.end());
  }
}

}  // namespace
}  // namespace convgen
