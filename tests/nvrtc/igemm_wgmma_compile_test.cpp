// igemm_wgmma_compile_test: the Hopper tensor-core template compiles alone for sm_90a (and refuses sm_90), and through
// build_kernel (which compiles it for the family's compile_arch, sm_90a on an H100) every configuration its search
// space offers on a handful of corpus problems (tf32, fp16 and bf16, groups, 1-D and 3-D, split-K, one and two K atoms
// a step), every block tile with one and with two K atoms in each precision, split-K's reduce entry, and an image's 3
// channels padded or folded with their copy entries, the width folded as loaded (fw2) on stems no suite names; the
// default configurations without register spills. In CI the
// sweeps compile every configuration of the small fp16 problems and of the first pipeline's tiles in fp16, and a third
// of the others (support/compile_sweep.hpp).
#include <set>
#include <tuple>
#include <utility>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "conv/conv_kernel.hpp"
#include "convgen/error.hpp"
#include "convgen/weights.hpp"
#include "generator/render.hpp"
#include "igemm_wgmma_params.hpp"
#include "reference/pruning.hpp"
#include "support/compile_sweep.hpp"
#include "support/corpus.hpp"

namespace convgen {
namespace {

using namespace testing_support;

const Family& igemm_wgmma() { return family("igemm_wgmma"); }

KernelSpec spec(int block_m, int block_n, int k_atoms, int stages, int split_k = 1, bool warp_specialized = false,
                bool chunk_major = false, bool tma_filter = false) {
  return to_spec(IgemmWgmmaParams{.block_m = block_m,
                                  .block_n = block_n,
                                  .k_atoms = k_atoms,
                                  .stages = stages,
                                  .split_k = split_k,
                                  .chunk_major = chunk_major,
                                  .warp_specialized = warp_specialized,
                                  .tma_filter = tma_filter});
}

// The GEMM's reduction length: C/groups * T*R*S.
int reduction_length(const Problem& p) { return c_per_group(p) * p.filter.d * p.filter.h * p.filter.w; }

struct Case {
  std::string label;
  Problem problem;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.label; }

Problem edge_case(const std::string& name, Precision precision, Layout layout) {
  for (const Layer& layer : edge_cases().layers)
    if (layer.name == name) {
      Problem p = layer.problem;
      p.precision = precision;
      p.layout = layout;
      return p;
    }
  throw InputError("no edge case named " + name);
}

Problem suite_layer(const std::string& suite, const std::string& name, Precision precision) {
  for (const Layer& layer : load_suite(source_dir() / "shapes" / suite).layers)
    if (layer.name == name) {
      Problem p = layer.problem;
      p.precision = precision;
      p.layout = Layout::nhwc;
      return p;
    }
  throw InputError("no layer named " + name + " in " + suite);
}

// 286 output pixels (2 x 13 x 11) and 200 channels: a partial tile in M and N for every block tile; a reduction of 216
// (24 channels x 9 taps): 3 full steps of 64 and a partial one, or with two K atoms one full step of 128 and a
// partial one.
Problem partial_tiles(Precision precision) {
  return {.n = 2,
          .c = 24,
          .k = 200,
          .input = {1, 13, 11},
          .filter = {1, 3, 3},
          .padding = {0, 1, 1},
          .layout = Layout::nhwc,
          .precision = precision};
}

std::vector<Case> cases() {
  return {
      {"c32_k100_3x3_fp16", edge_case("c32_k100_3x3", Precision::fp16, Layout::nhwc)},
      {"dilation2_stride2_bf16", edge_case("dilation2_stride2", Precision::bf16, Layout::nhwc)},
      {"nhwc_groups2_batch2_bf16", edge_case("nhwc_groups2_batch2", Precision::bf16, Layout::nhwc)},
      {"ndhwc_3x3x3_p1_fp16", edge_case("ndhwc_3x3x3_p1", Precision::fp16, Layout::ndhwc)},
      {"conv1d_nwc_k5_bf16", edge_case("conv1d_ncw_k5", Precision::bf16, Layout::nwc)},
      {"resnet50_conv4_1_3x3_fp16", suite_layer("resnet50.csv", "conv4_1_3x3", Precision::fp16)},
      {"cusnn_res_512to512_7_bf16", suite_layer("cusnn.csv", "res_512to512_7", Precision::bf16)},
      {"c32_k100_3x3_tf32", edge_case("c32_k100_3x3", Precision::tf32, Layout::nhwc)},
      {"nhwc_groups2_batch2_tf32", edge_case("nhwc_groups2_batch2", Precision::tf32, Layout::nhwc)},
      {"resnet50_conv4_1_3x3_tf32", suite_layer("resnet50.csv", "conv4_1_3x3", Precision::tf32)},
  };
}

// Builds `spec` through build_kernel for the H100 and checks what every igemm_wgmma cubin must be: compiled for
// sm_90a, with a ptxas report of the main entry and of the reduce entry. Returns the built kernel.
BuiltKernel build_and_check(const Problem& problem, const KernelSpec& spec, JitCache& cache) {
  const std::string name = kernel_name(spec);
  BuiltKernel built;
  EXPECT_NO_THROW(built = build_kernel(problem, spec, h100(), cache)) << name;
  EXPECT_EQ(built.cubin.arch, "sm_90a") << name;
  EXPECT_FALSE(built.cubin.image.empty()) << name;
  const auto main = built.cubin.entry_reports.find(name);
  EXPECT_NE(main, built.cubin.entry_reports.end()) << name << "\n" << built.cubin.log;
  if (main != built.cubin.entry_reports.end()) {
    EXPECT_GT(main->second.registers, 0) << name;
  }
  // The template always defines the reduce and the copy entries; the plan launches reduce only after split-K's main
  // kernel (through a workspace), and pad_activation first only where the channels are padded (ungrouped, not whole
  // 16-byte loads) or the filter's width folded by the copy (fw1; fw2 folds as it loads).
  EXPECT_TRUE(built.cubin.entry_reports.contains(name + "_reduce")) << name << "\n" << built.cubin.log;
  const IgemmWgmmaParams t = params_of<IgemmWgmmaParams>(spec);
  const int chunk = problem.precision == Precision::tf32 ? 4 : 8;
  const bool copies = t.fold_width == 1 || (t.fold_width == 0 && problem.groups == 1 && problem.c % chunk != 0);
  // Split-K in a cluster adds the partial sums in the main kernel: no reduce pass.
  EXPECT_EQ(built.plan.run.size(), (t.split_k > 1 && !t.cluster_reduce ? 2u : 1u) + (copies ? 1u : 0u)) << name;
  return built;
}

class IgemmWgmmaEveryConfiguration : public testing::TestWithParam<Case> {};

TEST_P(IgemmWgmmaEveryConfiguration, CompilesForSm90aAndTheDefaultHasNoSpills) {
  const Case& c = GetParam();
  const Gpu gpu = h100();
  const std::vector<KernelSpec> specs = igemm_wgmma().enumerate(c.problem, gpu);
  ASSERT_FALSE(specs.empty()) << problem_key(c.problem);
  const KernelSpec chosen = *igemm_wgmma().default_spec(c.problem, gpu);
  JitCache cache(std::nullopt);
  int with_two = 0;
  int warp_specialized = 0;
  int chunk_major = 0;
  int in_cluster = 0;
  std::set<std::string> names;
  for (const KernelSpec& spec : specs) names.insert(kernel_name(spec));
  // The small fp16 problems compile every configuration; ResNet-50's deep layer, bf16 and tf32 (the same tiles and
  // pipelines) a third and the default in CI.
  const bool primary = c.problem.precision == Precision::fp16 && c.label.rfind("resnet50", 0) != 0;
  int index = 0;
  for (const KernelSpec& spec : specs) {
    const IgemmWgmmaParams t = params_of<IgemmWgmmaParams>(spec);
    // Filter multicast twins: beside their one-block twins (offered, so compiled here), and compiled by
    // IgemmWgmmaFilterMulticast in every precision and order (CI's compile time: a third more kernels here).
    if (t.multicast > 1) {
      IgemmWgmmaParams alone = t;
      alone.multicast = 1;
      EXPECT_TRUE(names.contains(kernel_name(to_spec(alone)))) << kernel_name(spec);
      continue;
    }
    with_two += t.k_atoms == 2;
    warp_specialized += t.warp_specialized;
    chunk_major += t.chunk_major;
    in_cluster += t.cluster_reduce;
    if (!compile_in_sweep(index++, primary, spec == chosen)) continue;
    const BuiltKernel built = build_and_check(c.problem, spec, cache);
    // The plan's shared memory holds the stages: (block_m + block_n) rows of 128 bytes per K atom, and 1,024 to align;
    // warp-specialized, two 8-byte mbarriers per stage after them. The producer is one more warpgroup.
    const int halo_rows = (8 + c.problem.filter.h - 1) * ((8 * t.block_m / 64 + c.problem.filter.w - 1 + 7) / 8 * 8) +
                          c.problem.filter.h * c.problem.filter.w * t.block_n;
    EXPECT_EQ(built.plan.main_geometry().dynamic_smem_bytes,
              static_cast<unsigned>(t.halo ? t.stages * halo_rows * 128 + 1024 + 16 * t.stages
                                           : t.stages * (t.block_m + t.block_n) * 128 * t.k_atoms + 1024 +
                                                 (t.warp_specialized ? 16 * t.stages : 0)))
        << kernel_name(spec);
    EXPECT_EQ(built.plan.main_geometry().block[0],
              static_cast<unsigned>(2 * t.block_m * (t.split_n ? 2 : 1) + (t.warp_specialized ? 128 : 0)))
        << kernel_name(spec);
    // Two warpgroups on a 64-pixel tile's channels: each holds half the accumulators, no spills.
    if (t.split_n) {
      EXPECT_EQ(built.cubin.entry_reports.at(kernel_name(spec)).spill_store_bytes, 0) << kernel_name(spec);
    }
    // Split in a cluster: the partial sums of up to 8 blocks, 16 bytes each a thread, added without spilling.
    if (t.cluster_reduce) {
      EXPECT_EQ(built.cubin.entry_reports.at(kernel_name(spec)).spill_store_bytes, 0) << kernel_name(spec);
    }
    if (spec == chosen) {
      for (const auto& [entry, report] : built.cubin.entry_reports)
        EXPECT_EQ(report.spill_store_bytes, 0) << entry << "\n" << built.cubin.log;
    }
  }
  // Chunk-major order where there is more than one tap and chunks of a row's channels (64, tf32 32) pad the channels
  // by at most an eighth.
  const int channels = c_per_group(c.problem);
  const int row = c.problem.precision == Precision::tf32 ? 32 : 64;
  const bool taps = c.problem.filter.d * c.problem.filter.h * c.problem.filter.w > 1;
  EXPECT_EQ(chunk_major > 0, taps && (channels + row - 1) / row * row * 8 <= channels * 9) << problem_key(c.problem);
  // Each split through a workspace of 2 to 8 splits, one tile a block and at most 512 threads has its twin split in a
  // cluster (where the stages hold the partial tile).
  const auto splits = std::count_if(specs.begin(), specs.end(), [](const KernelSpec& s) {
    const IgemmWgmmaParams t = params_of<IgemmWgmmaParams>(s);
    return t.split_k > 1 && t.split_k <= 8 && t.warp_specialized <= 1 && !t.cluster_reduce && !t.split_n &&
           2 * t.block_m + (t.warp_specialized ? 128 : 0) <= 512;
  });
  EXPECT_LE(in_cluster, splits) << problem_key(c.problem);
  if (splits > 0) {
    EXPECT_GT(in_cluster, 0) << problem_key(c.problem);
  }
  // Both pipelines are offered, half the candidates each where the search space has that many.
  EXPECT_GT(warp_specialized, 0) << problem_key(c.problem);
  EXPECT_LT(warp_specialized, static_cast<int>(specs.size())) << problem_key(c.problem);
  // Two K atoms a step are offered (and so compiled) exactly where the reduction is longer than two rows (128, tf32
  // 64).
  if (reduction_length(c.problem) > 2 * row) {
    EXPECT_GT(with_two, 0) << problem_key(c.problem);
  } else {
    EXPECT_EQ(with_two, 0) << problem_key(c.problem);
  }
}

INSTANTIATE_TEST_SUITE_P(CorpusProblems, IgemmWgmmaEveryConfiguration, testing::ValuesIn(cases()),
                         [](const testing::TestParamInfo<Case>& case_info) {
                           return test_name(case_info.param.label);
                         });

class IgemmWgmmaEveryTile : public testing::TestWithParam<Precision> {};

// Every block tile the template declares (4 x 16) on a problem with partial tiles everywhere. Shared pipeline: with one
// K atom a step in 4 stages, all but the five that exceed the registers (256 x 192 and wider); the other pipelines
// with the search's 7 channel widths only (4 x 7 tiles). With two in 3
// stages, the 17 whose stages fit the shared memory (at most 301 rows: 3 x 301 x 256 + 1,024 bytes are within the
// H100's 232448). Warp-specialized, one K atom in 4 stages: all but those whose producer or consumers exceed the
// registers of one more warpgroup (all of 256 pixels but 256 x 16, and 192 x 256): 21. Chunk-major (its 24 channels
// padded to a chunk of 64, tf32 32), one K atom in 4 stages: the shared pipeline's 26. With the filter by TMA
// (warp-specialized, tap-major and chunk-major, one K atom and two): the warp-specialized counts. The same counts in
// every precision: a tile's bytes and registers do not depend on it.
TEST_P(IgemmWgmmaEveryTile, CompilesForSm90aWithAPartialTileInEveryDimension) {
  const Problem p = partial_tiles(GetParam());
  const Gpu gpu = h100();
  const TemplateInterface& iface = igemm_wgmma().interface();
  ASSERT_EQ(iface.params.size(), 17u);
  ASSERT_EQ(iface.params[2].field, "k_atoms");
  ASSERT_EQ(iface.params[6].field, "warp_specialized");
  ASSERT_EQ(iface.params[7].field, "tma_filter");
  ASSERT_EQ(iface.params[8].field, "fold_width");  // not where the channels are whole loads, as here
  ASSERT_EQ(iface.params[9].field, "cluster_reduce");  // split-K only
  ASSERT_EQ(iface.params[10].field, "tma_activation");  // off: the tiles are what is tested here
  ASSERT_EQ(iface.params[11].field, "split_n");  // one tile a block only
  ASSERT_EQ(iface.params[12].field, "multicast");  // tma1 one tile a block only
  ASSERT_EQ(iface.params[14].field, "swap_ab");    // off: measured slower, not offered
  ASSERT_EQ(iface.params[15].field, "sparse_filter");  // off: 2:4 filters only
  ASSERT_EQ(iface.params[16].field, "warp_copy_output");  // off: several tiles a block only
  JitCache cache(std::nullopt);
  // The widths between the search's own (wave-filling twins only) in the first pipeline alone: CI's compile time.
  const std::set<int> searched_widths = {16, 32, 64, 96, 128, 192, 256};
  for (const auto& [k_atoms, stages, ws, co, tma, expected_tiles] :
       {std::tuple{1, 4, false, false, false, 59}, std::tuple{2, 3, false, false, false, 17},
        std::tuple{1, 4, true, false, false, 21}, std::tuple{1, 4, false, true, false, 26},
        std::tuple{1, 4, true, false, true, 21}, std::tuple{1, 4, true, true, true, 21}}) {
    const bool every_width = k_atoms == 1 && stages == 4 && !ws && !co && !tma;
    int tiles = 0;
    for (int block_m : iface.params[0].allowed)
      for (int block_n : iface.params[1].allowed) {
        if (!every_width && !searched_widths.contains(block_n)) continue;
        const KernelSpec s = spec(block_m, block_n, k_atoms, stages, 1, ws, co, tma);
        if (check_support(p, gpu, s)) continue;
        // In CI the first pipeline compiles every tile in fp16, the others and bf16 and tf32 a third of them.
        if (!compile_in_sweep(tiles++, GetParam() == Precision::fp16 && every_width, false)) continue;
        const BuiltKernel built = build_and_check(p, s, cache);
        EXPECT_EQ(built.plan.main_geometry().block[0], static_cast<unsigned>(2 * block_m + (ws ? 128 : 0)))
            << kernel_name(s);
        EXPECT_NE(kernel_name(s).find(fmt::format("_kb{}_st{}_", k_atoms, stages)), std::string::npos)
            << kernel_name(s);
        EXPECT_EQ(built.cubin.entry_reports.at(kernel_name(s)).spill_store_bytes, 0) << kernel_name(s);
      }
    EXPECT_EQ(tiles, expected_tiles) << "k_atoms " << k_atoms << " ws " << ws << " co " << co << " tma " << tma;
  }
}

INSTANTIATE_TEST_SUITE_P(Precisions, IgemmWgmmaEveryTile,
                         testing::Values(Precision::fp16, Precision::bf16, Precision::tf32),
                         [](const testing::TestParamInfo<Precision>& case_info) {
                           return std::string(to_string(case_info.param));
                         });

// An image's 3 channels (ResNet-50's conv1 at batch 1) in tf32 and fp16: the first three configurations of each kind
// the search space offers, padded (fw0), with the filter's width folded into the channels by a copy pass (fw1) and as
// the pixel rows are loaded (fw2: its 4-byte copies), each compiled with its copy entries and no spills in the main
// one.
TEST(IgemmWgmmaPaddedChannels, ThePaddedAndFoldedConfigurationsCompileWithTheirCopyEntriesWithoutSpills) {
  JitCache cache(std::nullopt);
  for (Precision precision : {Precision::tf32, Precision::fp16}) {
    const Problem p = suite_layer("resnet50.csv", "conv1", precision);
    int padded = 0;
    int folded = 0;
    int on_load = 0;
    for (const KernelSpec& s : igemm_wgmma().enumerate(p, h100())) {
      const int fold = params_of<IgemmWgmmaParams>(s).fold_width;
      int& kind = fold == 2 ? on_load : fold == 1 ? folded : padded;
      if (kind == 3) continue;
      ++kind;
      const std::string name = kernel_name(s);
      const BuiltKernel built = build_and_check(p, s, cache);
      for (const char* entry : {"_pad_activation", "_pad_filter"})
        EXPECT_TRUE(built.cubin.entry_reports.contains(name + entry)) << name << entry;
      if (const auto main = built.cubin.entry_reports.find(name); main != built.cubin.entry_reports.end()) {
        EXPECT_EQ(main->second.spill_store_bytes, 0) << name;
      }
    }
    EXPECT_EQ(padded, 3) << to_string(precision);
    EXPECT_EQ(folded, 3) << to_string(precision);
    EXPECT_EQ(on_load, 3) << to_string(precision);
  }
}

// fw2 (the width folded as loaded) on stems no suite names: the host's choice of shift and copy width (fold_copies)
// must be one the template's static_asserts accept, and it must refuse where they would not. Each served problem's
// first fw2 candidate is compiled (and so checked by the template) without spills; the refused ones are not offered.
TEST(IgemmWgmmaFoldOnLoad, TheHostsShiftAndCopyWidthAreTheTemplatesOnStemsNoSuiteNames) {
  JitCache cache(std::nullopt);
  struct Stem {
    int c, filter, stride, pad, dilation, width;
    Precision precision;
    int shift, bytes;  // 0 bytes: fw2 refused
  };
  const Stem stems[] = {
      {3, 3, 2, 1, 1, 32, Precision::fp16, 1, 4},  // 6-byte columns: a 12-byte stride, one zero tap
      {4, 5, 1, 2, 1, 17, Precision::fp16, 0, 8},  // 8-byte columns: whole 8-byte copies, odd width
      {2, 7, 2, 3, 1, 30, Precision::bf16, 1,
       8},  // 4-byte columns, a stride of 8: one zero tap, 16 channels either way
      {3, 3, 1, 1, 1, 15, Precision::tf32, 0, 4},  // 12-byte columns, stride 1: 4 bytes
      {3, 7, 2, 3, 1, 64, Precision::tf32, 1, 8},  // conv1's in tf32
      {1, 5, 1, 2, 1, 28, Precision::fp16, 0, 0},  // 2-byte columns: no 4-byte stride
      {3, 7, 2, 2, 1, 64, Precision::fp16, 0, 0},  // padding 2 of 7 taps: no shift aligns both ends
      {3, 3, 2, 1, 2, 32, Precision::fp16, 0, 0},  // dilated: the taps are not one run
  };
  for (const Stem& stem : stems) {
    const Problem p{.n = 2,
                    .c = stem.c,
                    .k = 24,
                    .input = {1, 19, stem.width},
                    .filter = {1, 3, stem.filter},
                    .stride = {1, 2, stem.stride},
                    .padding = {0, 1, stem.pad},
                    .dilation = {1, 1, stem.dilation},
                    .layout = Layout::nhwc,
                    .precision = stem.precision};
    const std::string where = problem_key(p);
    std::optional<KernelSpec> fw2;
    for (const KernelSpec& s : igemm_wgmma().enumerate(p, h100()))
      if (params_of<IgemmWgmmaParams>(s).fold_width == 2) {
        fw2 = s;
        break;
      }
    if (stem.bytes == 0) {
      EXPECT_FALSE(fw2.has_value()) << where;
      IgemmWgmmaParams t{.block_m = 128, .block_n = 32, .stages = 4, .fold_width = 2};
      EXPECT_TRUE(check_support(p, h100(), to_spec(t)).has_value()) << where;
      continue;
    }
    ASSERT_TRUE(fw2.has_value()) << where;
    const std::string text = igemm_wgmma().render(p, *fw2).text;
    EXPECT_NE(text.find(fmt::format("constexpr int FOLD_SHIFT = {};", stem.shift)), std::string::npos) << where;
    EXPECT_NE(text.find(fmt::format("constexpr int FOLD_COPY_BYTES = {};", stem.bytes)), std::string::npos) << where;
    const BuiltKernel built = build_and_check(p, *fw2, cache);
    const std::string name = kernel_name(*fw2);
    ASSERT_TRUE(built.cubin.entry_reports.contains(name)) << where << "\n" << built.cubin.log;
    EXPECT_EQ(built.cubin.entry_reports.at(name).spill_store_bytes, 0) << name;
  }
}

TEST(IgemmWgmmaSplitK, TheReduceEntryIsCompiledBesideTheMainOneWithoutSpillsInEveryPrecision) {
  JitCache cache(std::nullopt);
  for (Precision precision : {Precision::fp16, Precision::bf16, Precision::tf32}) {
    const Problem deep = suite_layer("cusnn.csv", "res_512to512_7", precision);
    // 4608 reduction elements: 72 steps of 64 or 36 of 128 (tf32: 144 of 32, 72 of 64).
    for (const auto& [k_atoms, split_k] :
         {std::pair{1, 2}, std::pair{1, 4}, std::pair{1, 9}, std::pair{2, 2}, std::pair{2, 4}, std::pair{2, 9}}) {
      const KernelSpec s = spec(64, 128, k_atoms, 4, split_k);
      ASSERT_EQ(check_support(deep, h100(), s), std::nullopt) << kernel_name(s);
      const BuiltKernel built = build_and_check(deep, s, cache);
      ASSERT_EQ(built.plan.run.size(), 2u);
      const std::string reduce = entry_symbol(built, built.plan.run[1].entry_suffix);
      EXPECT_EQ(reduce, kernel_name(s) + "_reduce");
      ASSERT_TRUE(built.cubin.entry_reports.contains(reduce)) << built.cubin.log;
      EXPECT_EQ(built.cubin.entry_reports.at(reduce).spill_store_bytes, 0) << reduce << "\n" << built.cubin.log;
      EXPECT_EQ(built.cubin.entry_reports.at(kernel_name(s)).spill_store_bytes, 0) << kernel_name(s) << "\n"
                                                                                   << built.cubin.log;
    }
  }
}

// Split-K in a cluster and the pixel rows by TMA compile without spills in every precision, on ResNet-50's conv5_reduce
// (2048 -> 512, 1 x 1 at 7 x 7, batch 32): the main kernel alone in its plan (no reduce pass), the activation's map in
// the setup beside the filter's.
TEST(IgemmWgmmaClusterAndPixelRowsByTma, CompileWithoutSpillsInEveryPrecision) {
  JitCache cache(std::nullopt);
  for (Precision precision : {Precision::fp16, Precision::bf16, Precision::tf32}) {
    Problem p = suite_layer("resnet50.csv", "conv5_reduce", precision);
    p.n = 32;
    for (const auto& [block_m, split_k, cluster] :
         {std::tuple{128, 2, true}, std::tuple{64, 1, false}, std::tuple{128, 4, true}, std::tuple{192, 2, false}}) {
      const KernelSpec s = to_spec(IgemmWgmmaParams{.block_m = block_m,
                                                    .block_n = 128,
                                                    .stages = 4,
                                                    .split_k = split_k,
                                                    .warp_specialized = 1,
                                                    .tma_filter = true,
                                                    .cluster_reduce = cluster,
                                                    .tma_activation = true});
      ASSERT_EQ(check_support(p, h100(), s), std::nullopt) << kernel_name(s);
      const BuiltKernel built = build_and_check(p, s, cache);
      EXPECT_TRUE(built.plan.setup.empty()) << kernel_name(s);  // both tensor maps passed by value
      ASSERT_NE(built.plan.find_map("activation_map"), nullptr) << kernel_name(s);
      EXPECT_EQ(built.plan.find_map("activation_map")->tensor, "activation") << kernel_name(s);
      EXPECT_EQ(built.cubin.entry_reports.at(kernel_name(s)).spill_store_bytes, 0) << kernel_name(s) << "\n"
                                                                                   << built.cubin.log;
    }
    // With the operands swapped (the pixel rows the wgmma's B), one warpgroup and two on each 64 channels, in tiles
    // of whole warpgroups and of any wgmma N (112, 96, 48, 32 and 16 pixels: tiles under 64 pixels too).
    for (auto [block_m, halves] :
         {std::pair{128, false}, std::pair{128, true}, std::pair{112, false}, std::pair{96, true}, std::pair{48, false},
          std::pair{32, true}, std::pair{16, false}}) {
      const KernelSpec s = to_spec(IgemmWgmmaParams{.block_m = block_m,
                                                    .block_n = 128,
                                                    .stages = 4,
                                                    .warp_specialized = 1,
                                                    .tma_filter = true,
                                                    .tma_activation = true,
                                                    .split_n = halves,
                                                    .swap_ab = true});
      ASSERT_EQ(check_support(p, h100(), s), std::nullopt) << kernel_name(s);
      const BuiltKernel built = build_and_check(p, s, cache);
      EXPECT_EQ(built.cubin.entry_reports.at(kernel_name(s)).spill_store_bytes, 0) << kernel_name(s) << "\n"
                                                                                   << built.cubin.log;
    }
  }
}

// The warps copying their staged output rows out (`oc`) compile without spills in fp16 and bf16, several tiles a
// block, the filter by cp.async and by TMA, on ResNet-50's conv3_expand at batch 32 (a channel tile of 208, not a power
// of two, leaves a partial tile of 96 channels: its rows' units are predicated).
TEST(IgemmWgmmaWarpCopyOutput, CompilesWithoutSpillsInBothSixteenBitPrecisions) {
  JitCache cache(std::nullopt);
  for (Precision precision : {Precision::fp16, Precision::bf16}) {
    Problem p = suite_layer("resnet50.csv", "conv3_expand", precision);
    p.n = 32;
    for (const auto& [block_m, block_n, tiles, tma] : {std::tuple{192, 128, 4, false}, std::tuple{128, 208, 3, true}}) {
      const KernelSpec s = to_spec(IgemmWgmmaParams{.block_m = block_m,
                                                    .block_n = block_n,
                                                    .stages = 3,
                                                    .warp_specialized = tiles,
                                                    .tma_filter = tma,
                                                    .warp_copy_output = true});
      ASSERT_EQ(check_support(p, h100(), s), std::nullopt) << kernel_name(s);
      const BuiltKernel built = build_and_check(p, s, cache);
      EXPECT_EQ(built.cubin.entry_reports.at(kernel_name(s)).spill_store_bytes, 0) << kernel_name(s) << "\n"
                                                                                   << built.cubin.log;
    }
  }
}

// Filter multicast (`mc`) compiles without spills in every precision, in clusters of 2 and 4 along the grid's x (the
// pixel tiles rounded up to whole clusters), tap-major and chunk-major, split through a workspace or not, on
// ResNet-50's conv5_reduce and conv4_1_3x3 at batch 32; the filter's map boxes are each block's share of its rows.
TEST(IgemmWgmmaFilterMulticast, CompilesWithoutSpillsInClustersOfTwoAndFourInEveryPrecision) {
  JitCache cache(std::nullopt);
  for (Precision precision : {Precision::fp16, Precision::bf16, Precision::tf32}) {
    for (const char* layer : {"conv5_reduce", "conv4_1_3x3"}) {
      Problem p = suite_layer("resnet50.csv", layer, precision);
      p.n = 32;
      for (const auto& [block_m, block_n, multicast, split_k, chunk_major] :
           {std::tuple{64, 128, 2, 1, false}, std::tuple{128, 64, 4, 1, false}, std::tuple{64, 256, 4, 2, false},
            std::tuple{128, 128, 2, 1, true}}) {
        if (chunk_major && p.filter.h == 1) continue;  // one tap: chunk-major is the tap-major order
        const KernelSpec s = to_spec(IgemmWgmmaParams{.block_m = block_m,
                                                      .block_n = block_n,
                                                      .stages = 4,
                                                      .split_k = split_k,
                                                      .chunk_major = chunk_major,
                                                      .warp_specialized = 1,
                                                      .tma_filter = true,
                                                      .multicast = multicast});
        ASSERT_EQ(check_support(p, h100(), s), std::nullopt) << kernel_name(s);
        const BuiltKernel built = build_and_check(p, s, cache);
        EXPECT_EQ(built.plan.main_geometry().grid[0] % multicast, 0u) << kernel_name(s);
        ASSERT_NE(built.plan.find_map("filter_map"), nullptr) << kernel_name(s);
        const TensorMapSpec& map = built.plan.find_map("filter_map")->spec;
        EXPECT_EQ(map.box[chunk_major ? 2 : 1], static_cast<unsigned>(block_n / multicast)) << kernel_name(s);
        EXPECT_EQ(built.cubin.entry_reports.at(kernel_name(s)).spill_store_bytes, 0) << kernel_name(s) << "\n"
                                                                                     << built.cubin.log;
      }
    }
  }
}

// The halo (`hl`) compiles without spills in every precision for 1 to 4 multiplying warpgroups, 3 x 3 and 5 x 5
// filters, 2 to 6 stages, 1 to 6 tiles a block, the filter in the stages (hl1) or loaded once (hl2): ResNet-50's
// conv2_3x3 and conv5_3x3 at batch 32 and conv2_3x3 with a 5 x 5 filter; its grid is the output's tiles of 8 rows by
// 8 columns a warpgroup (a block's share of them), and its stages hold the patch and (hl1) every tap's rows.
TEST(IgemmWgmmaHalo, CompilesWithoutSpillsInEveryPrecision) {
  JitCache cache(std::nullopt);
  for (Precision precision : {Precision::fp16, Precision::bf16, Precision::tf32}) {
    Problem wide = suite_layer("resnet50.csv", "conv2_3x3", precision);
    Problem deep = suite_layer("resnet50.csv", "conv5_3x3", precision);
    Problem five = wide;
    five.filter = {1, 5, 5};
    five.padding = {0, 2, 2};
    for (Problem* p : {&wide, &deep, &five}) p->n = 32;
    for (const auto& [p, block_m, block_n, stages, tiles, halo] :
         {std::tuple{wide, 64, 32, 3, 1, 1}, std::tuple{wide, 128, 64, 2, 1, 1}, std::tuple{deep, 256, 32, 2, 1, 1},
          std::tuple{deep, 192, 16, 3, 1, 1}, std::tuple{five, 128, 16, 2, 1, 1}, std::tuple{wide, 128, 64, 2, 4, 1},
          std::tuple{wide, 128, 64, 2, 6, 2}, std::tuple{wide, 64, 64, 4, 1, 2}}) {
      const KernelSpec s = to_spec(IgemmWgmmaParams{.block_m = block_m,
                                                    .block_n = block_n,
                                                    .stages = stages,
                                                    .warp_specialized = tiles,
                                                    .tma_filter = true,
                                                    .halo = halo});
      ASSERT_EQ(check_support(p, h100(), s), std::nullopt) << kernel_name(s);
      const BuiltKernel built = build_and_check(p, s, cache);
      const Dims3 out = output_dims(p);
      const int tile_w = 8 * block_m / 64;
      const unsigned tiles_total =
          static_cast<unsigned>(p.n * ((out.h + 7) / 8) * ((out.w + tile_w - 1) / tile_w));
      EXPECT_EQ(built.plan.main_geometry().grid[0], (tiles_total + tiles - 1) / tiles) << kernel_name(s);
      const int patch = (8 + p.filter.h - 1) * ((tile_w + p.filter.w - 1 + 7) / 8 * 8);
      const int taps_rows = p.filter.h * p.filter.w * block_n;  // a chunk's filter rows of every tap
      const int chunk = precision == Precision::tf32 ? 32 : 64;  // channels of a 128-byte row
      const bool output_buffer = tiles > 1 && precision != Precision::tf32;  // bulk output, several tiles a block
      EXPECT_EQ(built.plan.main_geometry().dynamic_smem_bytes,
                static_cast<unsigned>(
                    (halo == 2 ? (stages * patch + p.c / chunk * taps_rows) * 128 + 1024 + 16 * stages + 16
                               : stages * (patch + taps_rows) * 128 + 1024 + 16 * stages) +
                    (output_buffer ? block_m * (2 * block_n + 16) : 0)))
          << kernel_name(s);
      EXPECT_EQ(built.cubin.entry_reports.at(kernel_name(s)).spill_store_bytes, 0) << kernel_name(s) << "\n"
                                                                                   << built.cubin.log;
    }
  }
}

// The operands swapped (`sw`) compile without spills in every precision for ResNet-50's 64-channel layers at batch
// 32 (conv2_3x3, conv2_reduce) and the 128-channel conv3_1_reduce: 128 to 256 pixels by 64 or 128 channels, one
// warpgroup a 64 channels or two (`wn`), shared and warp-specialized (the filter by TMA); a block has a warpgroup a 64
// channels (two with `wn`), a producer warp-specialized, and its stages hold the transposed output.
TEST(IgemmWgmmaSwapped, CompilesWithoutSpillsInEveryPrecision) {
  JitCache cache(std::nullopt);
  for (Precision precision : {Precision::fp16, Precision::bf16, Precision::tf32}) {
    Problem wide = suite_layer("resnet50.csv", "conv2_3x3", precision);
    Problem reduce = suite_layer("resnet50.csv", "conv2_reduce", precision);
    Problem deep = suite_layer("resnet50.csv", "conv3_1_reduce", precision);
    for (Problem* p : {&wide, &reduce, &deep}) p->n = 32;
    for (const auto& [p, block_m, block_n, warp_specialized, halves] :
         {std::tuple{wide, 256, 64, 1, false}, std::tuple{wide, 128, 64, 0, false}, std::tuple{wide, 256, 64, 1, true},
          std::tuple{reduce, 256, 64, 0, false}, std::tuple{reduce, 192, 64, 1, true},
          std::tuple{deep, 128, 128, 1, false}, std::tuple{deep, 192, 128, 1, false}}) {
      const IgemmWgmmaParams t{.block_m = block_m,
                               .block_n = block_n,
                               .stages = 4,
                               .warp_specialized = warp_specialized,
                               .tma_filter = warp_specialized > 0,
                               .split_n = halves,
                               .swap_ab = true};
      const KernelSpec s = to_spec(t);
      if (const auto reason = check_support(p, h100(), s)) {
        ADD_FAILURE() << kernel_name(s) << ": " << *reason;
        continue;
      }
      const BuiltKernel built = build_and_check(p, s, cache);
      const int warpgroups = block_n / 64 * (halves ? 2 : 1) + warp_specialized;
      EXPECT_EQ(built.plan.main_geometry().block[0], static_cast<unsigned>(128 * warpgroups)) << kernel_name(s);
      EXPECT_EQ(built.cubin.entry_reports.at(kernel_name(s)).spill_store_bytes, 0) << kernel_name(s) << "\n"
                                                                                   << built.cubin.log;
    }
  }
}

// The 2:4 configurations (`sp`: the compressed filter by wgmma.mma_async.sp) compile without spills, with their pack
// entry: every unsplit one the search offers ResNet-50's conv3_3x3 at batch 8 with a 2:4 filter in fp16 (both
// pipelines, 64 to 256 pixels by 64 to 256 channels) and a third of the split ones (support/compile_sweep.hpp; through
// the workspace and in a cluster), and the first of each pipeline in bf16; the plan's setup is the pack.
TEST(IgemmWgmmaTwoFour, EveryOfferedConfigurationCompilesWithoutSpillsWithItsPackEntry) {
  JitCache cache(std::nullopt);
  for (Precision precision : {Precision::fp16, Precision::bf16}) {
    Problem p = suite_layer("resnet50.csv", "conv3_3x3", precision);
    p.n = 8;
    p = with_weights(p, two_four_pruned_random_filter(p, 5));
    std::set<int> pipelines;
    std::set<std::pair<bool, bool>> split_kinds;  // split, in a cluster
    int built_count = 0;
    int split_index = 0;
    for (const KernelSpec& s : igemm_wgmma().enumerate(p, h100())) {
      const IgemmWgmmaParams t = params_of<IgemmWgmmaParams>(s);
      if (!t.sparse_filter) continue;
      if (precision == Precision::bf16 && pipelines.contains(t.warp_specialized)) continue;
      if (t.split_k > 1 && !compile_in_sweep(split_index++, false, false)) continue;
      pipelines.insert(t.warp_specialized);
      split_kinds.emplace(t.split_k > 1, t.cluster_reduce);
      const BuiltKernel built = build_and_check(p, s, cache);
      ++built_count;
      EXPECT_TRUE(built.cubin.entry_reports.contains(kernel_name(s) + "_pack")) << kernel_name(s);
      ASSERT_EQ(built.plan.setup.size(), 1u) << kernel_name(s);
      EXPECT_EQ(built.plan.setup[0].entry_suffix, "pack") << kernel_name(s);
      EXPECT_EQ(built.cubin.entry_reports.at(kernel_name(s)).spill_store_bytes, 0) << kernel_name(s) << "\n"
                                                                                   << built.cubin.log;
    }
    EXPECT_EQ(pipelines, (std::set<int>{0, 1})) << fmt::format("{}", precision);
    EXPECT_GE(built_count, precision == Precision::fp16 ? 8 : 2) << fmt::format("{}", precision);
    if (precision == Precision::fp16) {
      EXPECT_EQ(split_kinds, (std::set<std::pair<bool, bool>>{{false, false}, {true, false}, {true, true}}));
    }
  }
}

// The pixel rows by TMA in im2col mode (`ta2`) compile without spills in every precision, one tile a block and
// several, tap-major and chunk-major, on ResNet-50's conv2_3x3 and its strided conv4_1_3x3 at batch 32; the plan
// encodes the activation's im2col map beside the filter's.
TEST(IgemmWgmmaIm2col, CompilesWithoutSpillsInEveryPrecision) {
  JitCache cache(std::nullopt);
  for (Precision precision : {Precision::fp16, Precision::bf16, Precision::tf32}) {
    Problem wide = suite_layer("resnet50.csv", "conv2_3x3", precision);
    Problem strided = suite_layer("resnet50.csv", "conv4_1_3x3", precision);
    for (Problem* p : {&wide, &strided}) p->n = 32;
    for (const auto& [p, block_m, block_n, tiles, chunk_major] :
         {std::tuple{wide, 192, 64, 1, false}, std::tuple{wide, 128, 64, 4, true},
          std::tuple{strided, 128, 128, 1, true}, std::tuple{strided, 64, 128, 3, false}}) {
      const KernelSpec s = to_spec(IgemmWgmmaParams{.block_m = block_m,
                                                    .block_n = block_n,
                                                    .stages = 4,
                                                    .chunk_major = chunk_major,
                                                    .warp_specialized = tiles,
                                                    .tma_filter = true,
                                                    .tma_activation = 2});
      ASSERT_EQ(check_support(p, h100(), s), std::nullopt) << kernel_name(s);
      const BuiltKernel built = build_and_check(p, s, cache);
      ASSERT_NE(built.plan.find_map("activation_map"), nullptr) << kernel_name(s);
      EXPECT_TRUE(built.plan.find_map("activation_map")->spec.im2col) << kernel_name(s);
      EXPECT_EQ(built.cubin.entry_reports.at(kernel_name(s)).spill_store_bytes, 0) << kernel_name(s) << "\n"
                                                                                   << built.cubin.log;
    }
  }
}

Program template_alone() {
  Program program{.name = "igemm_wgmma.cu", .source = template_text("igemm_wgmma.cu")};
  for (const std::string& header : template_header_names()) program.headers.emplace_back(header, template_text(header));
  return program;
}

TEST(IgemmWgmmaTemplate, CompilesAloneWithItsDefaultsForSm90a) {
  Cubin cubin;
  ASSERT_NO_THROW(cubin = compile(template_alone(), {.arch = "sm_90a"}));
  EXPECT_FALSE(cubin.image.empty());
  const std::map<std::string, PtxasReport> reports = parse_ptxas_reports(cubin.log);
  ASSERT_TRUE(reports.contains("convgen_igemm_wgmma_default")) << cubin.log;
  ASSERT_TRUE(reports.contains("convgen_igemm_wgmma_default_reduce")) << cubin.log;
  EXPECT_EQ(reports.at("convgen_igemm_wgmma_default").spill_store_bytes, 0) << cubin.log;
  EXPECT_EQ(reports.at("convgen_igemm_wgmma_default_reduce").spill_store_bytes, 0) << cubin.log;
}

TEST(IgemmWgmmaTemplate, RefusesSm90WithoutTheArchSpecificFeaturesAtCompileTime) {
  for (const char* arch : {"sm_90", "sm_80"}) {
    try {
      compile(template_alone(), {.arch = arch});
      ADD_FAILURE() << "compiled for " << arch;
    } catch (const CompileError& e) {
      EXPECT_NE(std::string(e.what()).find("wgmma.cuh needs sm_90a (wgmma.mma_async is an arch-specific feature of "
                                           "compute capability 9.0)"),
                std::string::npos)
          << arch << ": " << e.what();
    }
  }
}

}  // namespace
}  // namespace convgen
