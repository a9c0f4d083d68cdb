// igemm_wgmma_test: the Hopper tensor-core family's search space on the network suites and the edge-case corpus, its
// support checks and their reasons, the architecture it compiles for (sm_90a), launch plan (split-K's reduce pass),
// costs, default choices, kernel names and rendering.
#include <algorithm>
#include <filesystem>
#include <functional>
#include <set>

#include <gtest/gtest.h>

#include "convgen/error.hpp"
#include "convgen/weights.hpp"
#include "generator/family.hpp"
#include "generator/gpu_json.hpp"
#include "generator/shapes.hpp"
#include "igemm_tc_params.hpp"
#include "igemm_wgmma_params.hpp"
#include "reference/pruning.hpp"
#include "support/corpus.hpp"

namespace convgen {
namespace {

const std::filesystem::path kSourceDir = CONVGEN_SOURCE_DIR;

using testing_support::channels_last_of;
using testing_support::h100;
Gpu a100() { return load_gpu(kSourceDir / "gpus/a100_sxm4.json"); }

const Family& igemm_wgmma() { return family("igemm_wgmma"); }

IgemmWgmmaParams P(const KernelSpec& s) { return params_of<IgemmWgmmaParams>(s); }

// The blocks of the kernel's main launch.
std::int64_t blocks_of_spec(const Problem& p, const KernelSpec& s) {
  const LaunchGeometry g = igemm_wgmma().plan(p, s).main_geometry();
  return std::int64_t{g.grid[0]} * g.grid[1] * g.grid[2];
}

std::string name_error(std::string_view name) {
  try {
    parse_kernel_name(name);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

// A configuration with `k_atoms` 64-element K atoms a step (64 or 128 reduction elements).
KernelSpec spec_kb(int block_m, int block_n, int k_atoms, int stages, int split_k = 1, bool warp_specialized = false) {
  return to_spec(IgemmWgmmaParams{.block_m = block_m,
                                  .block_n = block_n,
                                  .k_atoms = k_atoms,
                                  .stages = stages,
                                  .split_k = split_k,
                                  .warp_specialized = warp_specialized});
}

// A configuration with one K atom a step (64 reduction elements).
KernelSpec spec(int block_m, int block_n, int stages = 4, int split_k = 1) {
  return spec_kb(block_m, block_n, 1, stages, split_k);
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

// The GEMM's reduction length: C/groups * T*R*S.
// Channels per group as the kernel reads them: an ungrouped problem's padded to whole 16-byte loads (8 elements, tf32
// 4), a grouped one's as they are.
int padded_c_per_group(const Problem& p) {
  const int chunk = p.precision == Precision::tf32 ? 4 : 8;
  return p.groups == 1 ? (p.c + chunk - 1) / chunk * chunk : c_per_group(p);
}

// The GEMM's reduction length: C/groups (padded) * T*R*S.
int reduction_length(const Problem& p) { return padded_c_per_group(p) * p.filter.d * p.filter.h * p.filter.w; }

// A configuration's reduction length: with `fw` the filter's width folded into the channels, T*R rows of S*C padded.
int reduction_length(const Problem& p, const IgemmWgmmaParams& t) {
  if (!t.fold_width) return reduction_length(p);
  const int chunk = p.precision == Precision::tf32 ? 4 : 8;
  return (p.filter.w * p.c + chunk - 1) / chunk * chunk * p.filter.d * p.filter.h;
}

// The dynamic shared memory of a configuration: stages of (block_m + block_n) rows of 128 bytes per K atom, 1,024
// bytes to align them, warp-specialized two 8-byte mbarriers per stage and, with several tiles a block of a 16-bit
// output not split whose channels are whole 8-channel runs, block_m output rows of block_n elements and 16 bytes.
// The halo (`hl`): a stage holds the patch of (8 + R - 1) rows by 8 * block_m / 64 + S - 1 columns (rounded up to 8)
// of input pixels and every tap's block_n filter rows, 128 bytes each.
// With hl2 (filter-stationary) the stages hold the patch only, and every 128-byte chunk of channels of every tap's
// block_n rows lies after them, with one more mbarrier (16 bytes, keeping the output buffer after it 16-aligned).
int halo_stage_rows(const Problem& p, const IgemmWgmmaParams& t) {
  const int patch_w = (8 * t.block_m / 64 + p.filter.w - 1 + 7) / 8 * 8;
  return (8 + p.filter.h - 1) * patch_w + (t.halo == 2 ? 0 : p.filter.h * p.filter.w * t.block_n);
}

unsigned smem_of(const Problem& p, const IgemmWgmmaParams& t) {
  const bool output_buffer = t.warp_specialized > 1 && p.precision != Precision::tf32 && t.split_k == 1 &&
                             p.k % 8 == 0 && (p.k / p.groups) % 8 == 0;
  if (t.halo) {
    const int chunk = p.precision == Precision::tf32 ? 32 : 64;  // channels of a 128-byte row
    const int filter_rows = t.halo == 2 ? (p.c + chunk - 1) / chunk * p.filter.h * p.filter.w * t.block_n : 0;
    return static_cast<unsigned>((t.stages * halo_stage_rows(p, t) + filter_rows) * 128 + 1024 + 16 * t.stages +
                                 (t.halo == 2 ? 16 : 0) + (output_buffer ? t.block_m * (2 * t.block_n + 16) : 0));
  }
  return static_cast<unsigned>(t.stages * (t.block_m + t.block_n) * 128 * t.k_atoms + 1024 +
                               (t.warp_specialized ? 16 * t.stages : 0) +
                               (output_buffer ? t.block_m * (2 * t.block_n + 16) : 0));
}

// The threads of a block: 128 per 64 pixels (with `sw` per 64 channels), and the producer warpgroup of the
// warp-specialized pipeline.
unsigned threads_of(const IgemmWgmmaParams& t) {
  return static_cast<unsigned>(128 * (t.swap_ab ? t.block_n : t.block_m) / 64 * (t.split_n ? 2 : 1) +
                               (t.warp_specialized ? 128 : 0));
}

// What every configuration of the search space on `p` must satisfy: supported, unique, its name parsing back, one K
// atom a step or two only where the reduction is longer than 128, and a plan whose main launch covers the output with
// 128 threads per 64 pixels (and the producer's 128, warp-specialized) and the stages' shared memory (of every K
// atom); both pipelines offered.
void expect_a_sound_search_space(const Problem& p, const Gpu& gpu) {
  const std::vector<KernelSpec> specs = igemm_wgmma().enumerate(p, gpu);
  // At most 32 of each pipeline (a share for each step length and reduction order offered), not counting the twins
  // that split in a cluster (each beside a split through a workspace), load the pixel rows by TMA (each beside its
  // `tma1` twin) or split a 64-pixel tile's channels between two warpgroups (each beside its one-warpgroup twin), and
  // both offered wherever anything is.
  // Nor the wave-filling twins, whose channel tiles are narrower than the search's widths allow (each beside the
  // candidate it narrows, which has fewer blocks than the GPU has SMs), nor those that fold the width as they load
  // (`fw2`, each beside its `fw1` twin).
  const std::set<int> searched_widths = {16, 32, 64, 96, 128, 192, 256};
  const auto wave_filling = [&](const KernelSpec& s) { return !searched_widths.contains(P(s).block_n); };
  for (const KernelSpec& s : specs) {
    if (!wave_filling(s)) continue;
    EXPECT_TRUE(std::any_of(specs.begin(), specs.end(), [&](const KernelSpec& wider) {
      auto same = P(wider);
      same.block_n = P(s).block_n;
      return P(wider).block_n > P(s).block_n && same == P(s) &&
             blocks_of_spec(p, wider) < static_cast<std::int64_t>(gpu.sm_count);
    })) << kernel_name(s);
  }
  const auto count = [&](bool warp_specialized, bool cluster_reduce) {
    return std::count_if(specs.begin(), specs.end(), [&](const KernelSpec& s) {
      return (P(s).warp_specialized > 0) == warp_specialized && P(s).cluster_reduce == cluster_reduce &&
             !P(s).tma_activation && !P(s).split_n && P(s).multicast == 1 && !P(s).halo && !P(s).swap_ab &&
             !P(s).warp_copy_output && !wave_filling(s) && P(s).fold_width != 2;
    });
  };
  for (const KernelSpec& s : specs) {
    if (P(s).fold_width != 2) continue;
    IgemmWgmmaParams copying = P(s);
    copying.fold_width = 1;
    EXPECT_TRUE(std::any_of(specs.begin(), specs.end(), [&](const KernelSpec& t) { return P(t) == copying; }))
        << kernel_name(s);
  }
  const auto two_warpgroups =
      std::count_if(specs.begin(), specs.end(), [](const KernelSpec& s) { return P(s).split_n && !P(s).swap_ab; });
  // The operands swapped: twins of one-tile, unsplit candidates whose channel tiles are whole 64s, each beside its own.
  // A swapped tile of a pixel count that is not a multiple of 64 fills the last wave: it is the twin of a swapped one.
  for (const KernelSpec& s : specs) {
    if (!P(s).swap_ab) continue;
    if (P(s).block_m % 64 != 0) {
      EXPECT_TRUE(std::any_of(specs.begin(), specs.end(), [&](const KernelSpec& t) {
        IgemmWgmmaParams same = P(t);
        same.block_m = P(s).block_m;
        return P(t).swap_ab && P(t).block_m % 64 == 0 && same == P(s);
      })) << kernel_name(s);
      continue;
    }
    IgemmWgmmaParams own = P(s);
    own.swap_ab = false;
    own.split_n = false;
    EXPECT_TRUE(std::any_of(specs.begin(), specs.end(), [&](const KernelSpec& t) { return P(t) == own; }))
        << kernel_name(s);
    EXPECT_TRUE(P(s).block_n % 64 == 0 && P(s).split_k == 1 && P(s).warp_specialized <= 1) << kernel_name(s);
  }
  const auto one_warpgroup = std::count_if(specs.begin(), specs.end(), [](const KernelSpec& s) {
    return P(s).block_m == 64 && !P(s).split_n && P(s).warp_specialized <= 1;
  });
  EXPECT_LE(two_warpgroups, one_warpgroup);
  // The pixel rows by TMA: each a twin of a `tma1` candidate, and (`ta1`) its twins with the operands swapped, one
  // warpgroup and two on each 64 channels.
  const auto pixel_rows_by_tma = std::count_if(
      specs.begin(), specs.end(), [](const KernelSpec& s) { return P(s).tma_activation && !P(s).swap_ab; });
  const auto swapped_by_tma = std::count_if(specs.begin(), specs.end(),
                                            [](const KernelSpec& s) { return P(s).tma_activation && P(s).swap_ab; });
  const auto filter_by_tma = std::count_if(specs.begin(), specs.end(), [](const KernelSpec& s) {
    return P(s).tma_filter && !P(s).tma_activation;
  });
  EXPECT_LE(pixel_rows_by_tma, filter_by_tma);
  EXPECT_LE(swapped_by_tma, 2 * pixel_rows_by_tma);
  // Filter multicast: the twins in clusters of 2 and 4 of one-tile tma1 candidates, none without TMA.
  const auto multicast = std::count_if(specs.begin(), specs.end(), [](const KernelSpec& s) {
    return P(s).multicast > 1;
  });
  EXPECT_LE(multicast, 2 * filter_by_tma);
  const auto specialized = std::count_if(specs.begin(), specs.end(), [](const KernelSpec& s) {
    return P(s).warp_specialized > 0;
  });
  EXPECT_LE(count(true, false), 32);
  EXPECT_LE(count(false, false), 32);
  const auto split_count = std::count_if(specs.begin(), specs.end(), [](const KernelSpec& s) {
    return P(s).split_k > 1 && P(s).split_k <= 8 && P(s).warp_specialized <= 1 && !P(s).cluster_reduce &&
           !P(s).tma_activation && !P(s).split_n;
  });
  EXPECT_LE(count(true, true) + count(false, true), split_count);
  if (!specs.empty()) {
    EXPECT_GT(specialized, 0) << problem_key(p);
    EXPECT_LT(specialized, static_cast<std::int64_t>(specs.size())) << problem_key(p);
  }
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
    const int tiles_per_block = t.warp_specialized > 1 ? t.warp_specialized : 1;
    if (tiles_per_block > 1) {
      // A row of blocks, each computing tiles_per_block of the output's tiles (the last block fewer).
      const Dims3 out = output_dims(p);
      const int tile_w = 8 * t.block_m / 64;  // the halo's tiles: 8 output rows by 8 columns a warpgroup
      const std::int64_t pixel_tiles =
          t.halo ? std::int64_t{p.n} * ((out.h + 7) / 8) * ((out.w + tile_w - 1) / tile_w)
                 : (output_pixels(p) + t.block_m - 1) / t.block_m;
      const std::int64_t tiles =
          pixel_tiles * ((k_per_group(p) + t.block_n - 1) / t.block_n) * p.groups * t.split_k;
      EXPECT_GE(std::int64_t{g.grid[0]} * tiles_per_block, tiles) << name;
      EXPECT_LT(std::int64_t{g.grid[0] - 1} * tiles_per_block, tiles) << name;
      EXPECT_EQ(g.grid[1], 1u) << name;
      EXPECT_EQ(g.grid[2], 1u) << name;
    } else if (t.halo) {
      // Tiles of 8 output rows by 8 columns a warpgroup of each image.
      const Dims3 out = output_dims(p);
      const int tile_w = 8 * t.block_m / 64;
      EXPECT_EQ(g.grid[0], static_cast<unsigned>(p.n * ((out.h + 7) / 8) * ((out.w + tile_w - 1) / tile_w))) << name;
      EXPECT_EQ(g.grid[2], 1u) << name;
      EXPECT_TRUE(t.tma_filter && t.warp_specialized == 1 && t.k_atoms == 1 && t.split_k == 1) << name;
      EXPECT_EQ(p.c % 64, 0) << name;
    } else {
      // Whole clusters of t.multicast pixel tiles (1 without multicast), the last cluster's extra blocks empty.
      EXPECT_EQ(g.grid[0] % t.multicast, 0u) << name;
      EXPECT_GE(std::int64_t{g.grid[0]} * t.block_m, output_pixels(p)) << name;
      EXPECT_LT(std::int64_t{g.grid[0] - t.multicast} * t.block_m, output_pixels(p)) << name;
      if (t.multicast > 1) {
        EXPECT_TRUE(t.tma_filter && t.warp_specialized == 1 && !t.cluster_reduce) << name;
        EXPECT_EQ(t.block_n % (8 * t.multicast), 0) << name;
      }
      EXPECT_GE(std::int64_t{g.grid[1]} * t.block_n, k_per_group(p)) << name;
      EXPECT_LT(std::int64_t{g.grid[1] - 1} * t.block_n, k_per_group(p)) << name;
      EXPECT_EQ(g.grid[2], static_cast<unsigned>(p.groups * t.split_k)) << name;
    }
    EXPECT_EQ(g.block, (std::array<unsigned, 3>{threads_of(t), 1, 1})) << name;
    EXPECT_EQ(g.dynamic_smem_bytes, smem_of(p, t)) << name;
    EXPECT_TRUE(t.k_atoms == 1 || t.k_atoms == 2) << name;
    if (t.k_atoms == 2) {
      EXPECT_GT(reduction_length(p, t), 128) << name;
    }
    // Whole steps of 64 * k_atoms: each split's share of the reduction, rounded up.
    const int block_k = 64 * t.k_atoms;
    const int split_share = (reduction_length(p, t) + t.split_k - 1) / t.split_k;
    // With the halo a step is a chunk of 64 channels of every tap.
    EXPECT_EQ(igemm_wgmma().cost_features(p, s).main_loop_steps,
              t.halo ? p.c / 64 : tiles_per_block * ((split_share + block_k - 1) / block_k))
        << name;
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
  int with_two = 0;
  for (const std::string& suite : {std::string("resnet50.csv"), std::string("cusnn.csv")})
    for (const Layer& layer : channels_last_half_layers(suite)) {
      SCOPED_TRACE(suite + " " + layer.name + " " + problem_key(layer.problem));
      const std::vector<KernelSpec> specs = igemm_wgmma().enumerate(layer.problem, gpu);
      EXPECT_FALSE(specs.empty());
      served += !specs.empty();
      expect_a_sound_search_space(layer.problem, gpu);
      // Two K atoms a step on every reduction longer than 128, and only there.
      const bool offers_two =
          std::any_of(specs.begin(), specs.end(), [](const KernelSpec& s) { return P(s).k_atoms == 2; });
      EXPECT_EQ(offers_two, reduction_length(layer.problem) > 128);
      with_two += offers_two;
    }
  // resnet50's 24 layers (conv1's 3 channels padded to 8), cusnn's 8, each in two precisions.
  EXPECT_EQ(served, 2 * (24 + 8));
  // All but resnet50's four 1x1 layers of 64 or 128 input channels (conv2_1_reduce, conv2_expand, conv2_proj and
  // conv3_expand: reductions of 64 and 128); conv1's padded reduction is 8 x 49 = 392.
  EXPECT_EQ(with_two, 2 * (20 + 8));
}

TEST(IgemmWgmmaFamily, ServesTheEdgeCasesWhoseChannelsPerGroupAreAMultipleOfEightInBothHalfPrecisions) {
  const Gpu gpu = h100();
  int served = 0;
  int declined = 0;
  int with_two = 0;
  for (const Layer& layer : load_suite(kSourceDir / "shapes/edge_cases.csv").layers)
    for (Precision precision : {Precision::fp16, Precision::bf16}) {
      const Problem p = with(layer.problem, precision, channels_last_of(layer.problem.layout));
      SCOPED_TRACE(layer.name + " " + problem_key(p));
      const bool servable = c_per_group(p) % 8 == 0 || p.groups == 1;  // ungrouped channels are padded
      EXPECT_EQ(igemm_wgmma().enumerate(p, gpu).empty(), !servable);
      if (servable) {
        ++served;
        expect_a_sound_search_space(p, gpu);
        const std::vector<KernelSpec> specs = igemm_wgmma().enumerate(p, gpu);
        const bool offers_two =
            std::any_of(specs.begin(), specs.end(), [](const KernelSpec& s) { return P(s).k_atoms == 2; });
        EXPECT_EQ(offers_two, reduction_length(p) > 128);
        with_two += offers_two;
      } else {
        ++declined;
        EXPECT_EQ(igemm_wgmma().check_support(p, gpu, spec(64, 16)),
                  fmt::format("igemm_wgmma needs channels per group to be a multiple of 8 in {} (16-byte loads) "
                              "where there are groups (ungrouped channels are padded), got {}",
                              to_string(precision), c_per_group(p)));
      }
    }
  // 39 rows: 23 with channels per group a multiple of 8, 12 ungrouped with fewer or others (1, 3, 4 ... channels:
  // padded), 4 depthwise (declined), in two precisions.
  EXPECT_EQ(served, 2 * 35);
  EXPECT_EQ(declined, 2 * 4);
  // 14 of the 35 have a (padded) reduction longer than 128.
  EXPECT_EQ(with_two, 2 * 14);
}

TEST(IgemmWgmmaFamily, DeclinesFp32WithTheReason) {
  const Gpu gpu = h100();
  const Problem p = with(kResnet3x3, Precision::fp32, Layout::nhwc);
  EXPECT_EQ(igemm_wgmma().check_support(p, gpu, spec(128, 64)),
            "precision fp32 is not supported by igemm_wgmma (tf32, fp16 and bf16 only)");
  EXPECT_TRUE(igemm_wgmma().enumerate(p, gpu).empty());
  EXPECT_EQ(igemm_wgmma().default_spec(p, gpu), std::nullopt);
  EXPECT_NE(default_choice(p, gpu).family, "igemm_wgmma");
}

// tf32 holds fp32 elements: 16-byte loads of 4 channels, so 4 channels per group suffice where the 16-bit types need
// 8; rows of 32 elements, so two K atoms a step from a reduction longer than 64.
TEST(IgemmWgmmaFamily, ServesTf32WithFourChannelsPerGroupAndRowsOf32Elements) {
  const Gpu gpu = h100();
  Problem p = with(kResnet3x3, Precision::tf32, Layout::nhwc);
  p.c = 4;
  p.k = 16;
  EXPECT_EQ(igemm_wgmma().check_support(p, gpu, spec(64, 16)), std::nullopt);
  Problem grouped = p;  // 8 channels in 2 groups of 4: a multiple of 4, not of 8
  grouped.c = 8;
  grouped.groups = 2;
  EXPECT_EQ(igemm_wgmma().check_support(grouped, gpu, spec(64, 16)), std::nullopt);
  EXPECT_EQ(igemm_wgmma().check_support(with(grouped, Precision::fp16, Layout::nhwc), gpu, spec(64, 16)),
            "igemm_wgmma needs channels per group to be a multiple of 8 in fp16 (16-byte loads) where there are "
            "groups (ungrouped channels are padded), got 4");
  grouped.c = 12;
  EXPECT_EQ(igemm_wgmma().check_support(grouped, gpu, spec(64, 16)),
            "igemm_wgmma needs channels per group to be a multiple of 4 in tf32 (16-byte loads) where there are "
            "groups (ungrouped channels are padded), got 6");
  p.c = 8;  // a reduction of 72: two rows of 32 and a part, so two K atoms a step are offered
  bool two = false;
  for (const KernelSpec& s : igemm_wgmma().enumerate(p, gpu)) two = two || P(s).k_atoms == 2;
  EXPECT_TRUE(two);
  EXPECT_FALSE(igemm_wgmma().enumerate(with(p, Precision::fp16, Layout::nhwc), gpu).empty());
  for (const KernelSpec& s : igemm_wgmma().enumerate(with(p, Precision::fp16, Layout::nhwc), gpu))
    EXPECT_EQ(P(s).k_atoms, 1) << kernel_name(s);
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

// Channels not a whole number of 16-byte loads: an ungrouped problem's are padded (an image's 3 to 8, 12 to 16), a
// grouped one is declined with the reason; TMA reads the filter as it lies, so it is neither offered nor accepted there.
TEST(IgemmWgmmaFamily, PadsUngroupedChannelsToWholeLoadsAndDeclinesGroupedOnes) {
  const Gpu gpu = h100();
  Problem rgb = kResnet3x3;
  rgb.c = 3;
  EXPECT_EQ(igemm_wgmma().check_support(rgb, gpu, spec(128, 64)), std::nullopt);
  const std::vector<KernelSpec> specs = igemm_wgmma().enumerate(rgb, gpu);
  ASSERT_FALSE(specs.empty());
  for (const KernelSpec& s : specs) EXPECT_FALSE(P(s).tma_filter) << kernel_name(s);
  EXPECT_EQ(igemm_wgmma().check_support(rgb, gpu, to_spec(IgemmWgmmaParams{.warp_specialized = true, .tma_filter = true})),
            "tma reads the filter as it lies: not where its 3 channels are padded to 8");
  Problem twelve = kResnet3x3;
  twelve.c = 12;
  twelve.precision = Precision::bf16;
  EXPECT_EQ(igemm_wgmma().check_support(twelve, gpu, spec(128, 64)), std::nullopt);
  // 32 channels are a multiple of 8, but not in 8 groups of 4.
  Problem grouped = kResnet3x3;
  grouped.c = 32;
  grouped.k = 32;
  grouped.groups = 8;
  EXPECT_EQ(igemm_wgmma().check_support(grouped, gpu, spec(128, 16)),
            "igemm_wgmma needs channels per group to be a multiple of 8 in fp16 (16-byte loads) where there are "
            "groups (ungrouped channels are padded), got 4");
  EXPECT_TRUE(igemm_wgmma().enumerate(grouped, gpu).empty());
  grouped.groups = 4;
  EXPECT_EQ(igemm_wgmma().check_support(grouped, gpu, spec(128, 16)), std::nullopt);
}

// A padded problem's kernel is rendered for the padded channels (C 8, C_SOURCE 3); its plan pads the filter once into
// a persistent buffer and the activation first on every call into the workspace, one thread per 16 bytes; the main
// launch is the padded problem's.
TEST(IgemmWgmmaFamily, APaddedProblemsPlanPadsTheFilterOnceAndTheActivationEveryCall) {
  Problem rgb = kResnet3x3;  // fp16, n1, 56 x 56, 3 x 3, 64 output channels
  rgb.c = 3;
  const KernelSpec s = spec(128, 64, 4);
  const std::string text = igemm_wgmma().render(rgb, s).text;
  EXPECT_NE(text.find("constexpr int N = 1, C = 8, K = 64, GROUPS = 1;"), std::string::npos);
  EXPECT_NE(text.find("constexpr int C_SOURCE = 3;"), std::string::npos);
  const std::string plain = igemm_wgmma().render(kResnet3x3, s).text;
  EXPECT_NE(plain.find("constexpr int C_SOURCE = 64;"), std::string::npos);

  const LaunchPlan plan = igemm_wgmma().plan(rgb, s);
  Problem eight = rgb;
  eight.c = 8;
  const LaunchPlan unpadded = igemm_wgmma().plan(eight, s);
  ASSERT_EQ(plan.buffers.size(), 4u);
  EXPECT_EQ(plan.buffers[0], (PlanBuffer{.name = "padded_activation", .bytes = 56 * 56 * 8 * 2, .persistent = false}));
  EXPECT_EQ(plan.buffers[1], (PlanBuffer{.name = "padded_filter", .bytes = 64 * 9 * 8 * 2, .persistent = true}));
  EXPECT_EQ(plan.workspace_bytes(), 56 * 56 * 8 * 2);
  ASSERT_EQ(plan.setup.size(), 1u);
  EXPECT_EQ(plan.setup[0].entry_suffix, "pad_filter");
  EXPECT_EQ(plan.setup[0].geometry.grid[0], (64u * 9 + 255) / 256);  // one thread per 16 bytes: 8 fp16
  EXPECT_EQ(plan.setup[0].geometry.block[0], 256u);
  ASSERT_EQ(plan.run.size(), 2u);
  EXPECT_EQ(plan.run[0].entry_suffix, "pad_activation");
  EXPECT_EQ(plan.run[0].geometry.grid[0], (56u * 56 + 255) / 256);
  EXPECT_EQ(plan.run[1], unpadded.run[0]);
  // Channels that need no padding bind both names to empty buffers.
  ASSERT_EQ(unpadded.buffers.size(), 4u);
  EXPECT_EQ(unpadded.buffers[0], (PlanBuffer{.name = "padded_activation", .bytes = 0, .persistent = false}));
  EXPECT_EQ(unpadded.buffers[1], (PlanBuffer{.name = "padded_filter", .bytes = 0, .persistent = false}));
  EXPECT_TRUE(unpadded.setup.empty());
  // The cost: the padded problem's, and the pass over the activation (3 channels read, 8 written) as one more launch.
  const CostFeatures padded_cost = igemm_wgmma().cost_features(rgb, s);
  const CostFeatures eight_cost = igemm_wgmma().cost_features(eight, s);
  EXPECT_EQ(padded_cost.extra_launches, eight_cost.extra_launches + 1);
  EXPECT_DOUBLE_EQ(padded_cost.dram_bytes, eight_cost.dram_bytes + 56 * 56 * (3 + 8) * 2);
  EXPECT_DOUBLE_EQ(padded_cost.flops, eight_cost.flops);
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
            "block_n must be a multiple of 16 from 16 to 256, got 8");
  EXPECT_EQ(igemm_wgmma().check_support(p, gpu, spec(128, 40)),
            "block_n must be a multiple of 16 from 16 to 256, got 40");
  EXPECT_EQ(igemm_wgmma().check_support(p, gpu, spec(128, 272)),
            "block_n must be a multiple of 16 from 16 to 256, got 272");
  EXPECT_EQ(igemm_wgmma().check_support(p, gpu, spec(128, 512)),
            "block_n must be a multiple of 16 from 16 to 256, got 512");
  for (int n : {48, 80, 112, 144, 160, 176, 208, 224, 240})
    EXPECT_EQ(igemm_wgmma().check_support(p, gpu, spec(64, n)), std::nullopt) << n;
  EXPECT_EQ(igemm_wgmma().check_support(p, gpu, spec_kb(128, 64, 0, 4)), "k_atoms must be 1 or 2, got 0");
  EXPECT_EQ(igemm_wgmma().check_support(p, gpu, spec_kb(128, 64, 3, 4)), "k_atoms must be 1 or 2, got 3");
  EXPECT_EQ(igemm_wgmma().check_support(p, gpu, spec_kb(128, 64, 4, 3)), "k_atoms must be 1 or 2, got 4");
  // k_atoms is checked after the tile and before the stages.
  EXPECT_EQ(igemm_wgmma().check_support(p, gpu, spec_kb(128, 40, 3, 4)),
            "block_n must be a multiple of 16 from 16 to 256, got 40");
  EXPECT_EQ(igemm_wgmma().check_support(p, gpu, spec_kb(128, 64, 3, 7)), "k_atoms must be 1 or 2, got 3");
  EXPECT_EQ(igemm_wgmma().check_support(p, gpu, spec_kb(128, 64, 1, 4)), std::nullopt);
  EXPECT_EQ(igemm_wgmma().check_support(p, gpu, spec_kb(128, 64, 2, 4)), std::nullopt);
  EXPECT_EQ(igemm_wgmma().check_support(p, gpu, spec_kb(128, 64, 2, 2)),
            "stages must be 3 to 6 (2 to 6 with hl), got 2");
  EXPECT_EQ(igemm_wgmma().check_support(p, gpu, spec(128, 64, 2)), "stages must be 3 to 6 (2 to 6 with hl), got 2");
  EXPECT_EQ(igemm_wgmma().check_support(p, gpu, spec(128, 64, 7)), "stages must be 3 to 6 (2 to 6 with hl), got 7");
  EXPECT_EQ(igemm_wgmma().check_support(p, gpu, spec(128, 64, 4, 0)), "split_k must be 1 to 32, got 0");
  EXPECT_EQ(igemm_wgmma().check_support(p, gpu, spec(128, 64, 4, 33)), "split_k must be 1 to 32, got 33");
  KernelSpec tc = to_spec(IgemmTcParams{});
  EXPECT_EQ(igemm_wgmma().check_support(p, gpu, tc), "kernel igemm_tc is not an igemm_wgmma kernel");
}

// The tiles the template declares (CONVGEN_PARAM) are the ones the family accepts: with one K atom a step each runs,
// but for the two whose accumulators and addresses exceed a block's registers; with two, 3 stages hold the tiles of
// at most 301 rows (3 x 301 x 256 + 1,024 bytes are within the H100's 232448).
TEST(IgemmWgmmaFamily, AcceptsEveryTileTheTemplateDeclaresThatFitsTheRegisters) {
  const TemplateInterface& iface = igemm_wgmma().interface();
  ASSERT_EQ(iface.params.size(), 17u);
  EXPECT_EQ(iface.params[0].field, "block_m");
  EXPECT_EQ(iface.params[1].field, "block_n");
  EXPECT_EQ(iface.params[2].field, "k_atoms");
  EXPECT_EQ(iface.params[3].field, "stages");
  EXPECT_EQ(iface.params[4].field, "split_k");
  EXPECT_EQ(iface.params[5].field, "chunk_major");
  EXPECT_EQ(iface.params[6].field, "warp_specialized");
  EXPECT_EQ(iface.params[7].field, "tma_filter");
  EXPECT_EQ(iface.params[8].field, "fold_width");
  EXPECT_EQ(iface.params[9].field, "cluster_reduce");
  EXPECT_EQ(iface.params[10].field, "tma_activation");
  EXPECT_EQ(iface.params[11].field, "split_n");
  // Pixel tiles: whole warpgroups of 64, or with the operands swapped any multiple of 16 (the wgmma's N).
  EXPECT_EQ(std::vector<int>(iface.params[0].allowed.begin(), iface.params[0].allowed.end()),
            (std::vector<int>{16, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256}));
  EXPECT_EQ(igemm_wgmma().check_support(kResnet3x3, h100(), spec(96, 64, 4)),
            "block_m must be 64, 128, 192 or 256 (warpgroups of 64 pixels), got 96");
  EXPECT_EQ(std::vector<int>(iface.params[1].allowed.begin(), iface.params[1].allowed.end()),
            (std::vector<int>{16, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256}));
  EXPECT_EQ(std::vector<int>(iface.params[2].allowed.begin(), iface.params[2].allowed.end()), (std::vector<int>{1, 2}));
  EXPECT_EQ(iface.params[3].min, 2);  // 2 with the halo only (the family's reasons)
  EXPECT_EQ(iface.params[3].max, 6);
  EXPECT_EQ(iface.params[4].min, 1);
  EXPECT_EQ(iface.params[4].max, 32);
  const Gpu gpu = h100();
  const std::set<std::pair<int, int>> too_many_registers = {{256, 192}, {256, 208}, {256, 224}, {256, 240}, {256, 256}};
  int accepted = 0;
  for (int block_m : {64, 128, 192, 256})
    for (int block_n : iface.params[1].allowed)
      for (int stages : {3, 4}) {
        const KernelSpec s = spec(block_m, block_n, stages);
        const std::optional<std::string> reason = igemm_wgmma().check_support(kResnet3x3, gpu, s);
        if (too_many_registers.contains({block_m, block_n})) {
          ASSERT_TRUE(reason.has_value()) << kernel_name(s);
          if (stages == 3) {  // 256 x 208 and wider in 4 stages are past the shared memory too, checked first
            EXPECT_NE(reason->find("registers per block"), std::string::npos) << kernel_name(s) << ": " << *reason;
          }
        } else {
          EXPECT_EQ(reason, std::nullopt) << kernel_name(s);
          accepted += !reason;
        }
      }
  EXPECT_EQ(accepted, 2 * (4 * 16 - 5));
  // Two K atoms in 3 stages: 64 x 16..224, 128 x 16..160, 192 x 16..96 and 256 x 16..32 fit; the others exceed the
  // shared memory (which is checked before the registers).
  int accepted_two = 0;
  for (int block_m : {64, 128, 192, 256})
    for (int block_n : iface.params[1].allowed) {
      const KernelSpec s = spec_kb(block_m, block_n, 2, 3);
      const std::optional<std::string> reason = igemm_wgmma().check_support(kResnet3x3, gpu, s);
      const int bytes = 3 * (block_m + block_n) * 256 + 1024;
      if (block_m + block_n <= 301) {
        EXPECT_EQ(reason, std::nullopt) << kernel_name(s);
        accepted_two += !reason;
      } else {
        EXPECT_EQ(reason, fmt::format("{} bytes of shared memory per block exceed the gpu's 232448", bytes))
            << kernel_name(s);
      }
    }
  EXPECT_EQ(accepted_two, 14 + 10 + 6 + 2);
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

// With two K atoms a step covers 128 reduction elements, and the splits are counted in those steps.
TEST(IgemmWgmmaFamily, WithTwoKAtomsEverySplitMustOwnAStepOf128) {
  const Gpu gpu = h100();
  // 576 reduction elements: 5 steps of 128 (the last one half full), so at most 5 splits.
  EXPECT_EQ(igemm_wgmma().check_support(kResnet3x3, gpu, spec_kb(128, 64, 2, 3, 5)), std::nullopt);
  EXPECT_EQ(igemm_wgmma().check_support(kResnet3x3, gpu, spec_kb(128, 64, 2, 3, 6)),
            "split_k 6 leaves splits without work: the reduction length 576 gives 5 steps of 128");
  EXPECT_EQ(igemm_wgmma().check_support(kResnet3x3, gpu, spec_kb(128, 64, 2, 3, 9)),
            "split_k 9 leaves splits without work: the reduction length 576 gives 5 steps of 128");
  // ... where 9 splits of one atom each are accepted.
  EXPECT_EQ(igemm_wgmma().check_support(kResnet3x3, gpu, spec_kb(128, 64, 1, 3, 9)), std::nullopt);
  // A 1x1 reduction of 128 channels: two steps of 64, but one of 128.
  const Problem c128{
      .n = 1, .c = 128, .k = 64, .input = {1, 8, 8}, .layout = Layout::nhwc, .precision = Precision::fp16};
  EXPECT_EQ(igemm_wgmma().check_support(c128, gpu, spec_kb(64, 64, 1, 4, 2)), std::nullopt);
  EXPECT_EQ(igemm_wgmma().check_support(c128, gpu, spec_kb(64, 64, 2, 4, 2)),
            "split_k 2 leaves splits without work: the reduction length 128 gives 1 steps of 128");
  // A reduction shorter than one step of 128 is one step (check_support accepts two atoms on it, enumerate does not
  // offer them).
  const Problem thin{
      .n = 1, .c = 64, .k = 64, .input = {1, 8, 8}, .layout = Layout::nhwc, .precision = Precision::fp16};
  EXPECT_EQ(igemm_wgmma().check_support(thin, gpu, spec_kb(64, 64, 2, 4, 1)), std::nullopt);
  EXPECT_EQ(igemm_wgmma().check_support(thin, gpu, spec_kb(64, 64, 2, 4, 2)),
            "split_k 2 leaves splits without work: the reduction length 64 gives 1 steps of 128");
  // kDeep's 4608: 36 steps of 128. Splits take whole steps: 18 of 2 steps each own work, 19 of 2 would leave the last
  // empty, 36 of 1 step each own one, 32 of 2 leave the last four empty.
  EXPECT_EQ(igemm_wgmma().check_support(kDeep, gpu, spec_kb(64, 128, 2, 3, 18)), std::nullopt);
  EXPECT_EQ(igemm_wgmma().check_support(kDeep, gpu, spec_kb(64, 128, 2, 3, 19)),
            "split_k 19 leaves splits without work: the reduction length 4608 gives 36 steps of 128");
  EXPECT_EQ(igemm_wgmma().check_support(kDeep, gpu, spec_kb(64, 128, 2, 3, 32)),
            "split_k 32 leaves splits without work: the reduction length 4608 gives 36 steps of 128");
  // With one atom the 72 steps of 64 split in 32 are 3 steps each, the same overrun; in 24, 3 steps each own work.
  EXPECT_EQ(igemm_wgmma().check_support(kDeep, gpu, spec_kb(64, 128, 1, 3, 32)),
            "split_k 32 leaves splits without work: the reduction length 4608 gives 72 steps of 64");
  EXPECT_EQ(igemm_wgmma().check_support(kDeep, gpu, spec_kb(64, 128, 1, 3, 24)), std::nullopt);
}

// Two K atoms a step (128 reduction elements) are offered only where the reduction C/groups*T*R*S is longer than two
// atoms: not on 64 or 128, on 136 and on resnet50's 3x3 of 64 channels (576).
TEST(IgemmWgmmaFamily, OffersTwoKAtomsOnlyOnReductionsLongerThan128) {
  const Gpu gpu = h100();
  const auto k_atoms_offered = [&](const Problem& p) {
    std::set<int> offered;
    for (const KernelSpec& s : igemm_wgmma().enumerate(p, gpu)) offered.insert(P(s).k_atoms);
    return offered;
  };
  EXPECT_EQ(reduction_length(kResnet3x3), 576);
  EXPECT_EQ(k_atoms_offered(kResnet3x3), (std::set<int>{1, 2}));
  EXPECT_EQ(k_atoms_offered(with(kResnet3x3, Precision::bf16, Layout::nhwc)), (std::set<int>{1, 2}));
  // Every two-atom configuration offered there holds its stages of 256-byte rows.
  int two = 0;
  for (const KernelSpec& s : igemm_wgmma().enumerate(kResnet3x3, gpu)) {
    const IgemmWgmmaParams t = P(s);
    if (t.k_atoms != 2) continue;
    ++two;
    EXPECT_EQ(kernel_name(s).find(fmt::format("igemm_wgmma_m{}_n{}_kb2_st", t.block_m, t.block_n)), 0u)
        << kernel_name(s);
    EXPECT_EQ(igemm_wgmma().plan(kResnet3x3, s).main_geometry().dynamic_smem_bytes,
              static_cast<unsigned>(t.stages * (t.block_m + t.block_n) * 256 + 1024 +
                                    (t.warp_specialized ? 16 * t.stages : 0)))
        << kernel_name(s);
    EXPECT_EQ(igemm_wgmma().check_support(kResnet3x3, gpu, s), std::nullopt) << kernel_name(s);
  }
  EXPECT_GT(two, 0);

  Problem p{.n = 1, .c = 64, .k = 64, .input = {1, 8, 8}, .layout = Layout::nhwc, .precision = Precision::fp16};
  EXPECT_EQ(reduction_length(p), 64);
  EXPECT_EQ(k_atoms_offered(p), (std::set<int>{1}));
  p.c = 128;  // two atoms exactly: one step of 128 would save nothing
  EXPECT_EQ(reduction_length(p), 128);
  EXPECT_EQ(k_atoms_offered(p), (std::set<int>{1}));
  p.c = 136;
  EXPECT_EQ(reduction_length(p), 136);
  EXPECT_EQ(k_atoms_offered(p), (std::set<int>{1, 2}));
  // 16 channels x 3x3 taps = 144, longer than 128 through the filter alone.
  p.c = 16;
  p.filter = {1, 3, 3};
  p.padding = {0, 1, 1};
  EXPECT_EQ(reduction_length(p), 144);
  EXPECT_EQ(k_atoms_offered(p), (std::set<int>{1, 2}));
  // 8 channels x 3x3 = 72.
  p.c = 8;
  EXPECT_EQ(reduction_length(p), 72);
  EXPECT_EQ(k_atoms_offered(p), (std::set<int>{1}));
  // Groups: 256 channels in 2 groups of 128 are a reduction of 128 per group.
  const Problem grouped{
      .n = 1, .c = 256, .k = 64, .input = {1, 8, 8}, .groups = 2, .layout = Layout::nhwc, .precision = Precision::fp16};
  EXPECT_EQ(reduction_length(grouped), 128);
  EXPECT_EQ(k_atoms_offered(grouped), (std::set<int>{1}));
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

// Two K atoms a step double every stage: rows of 256 bytes.
TEST(IgemmWgmmaFamily, TwoKAtomsDoubleTheSharedMemoryOfEveryStage) {
  const Gpu gpu = h100();
  const Problem& p = kResnet3x3;
  // 4 stages of 128 + 64 rows of 256 bytes, and 1,024: 197632 bytes (one atom: 99328).
  EXPECT_EQ(igemm_wgmma().check_support(p, gpu, spec_kb(128, 64, 2, 4)), std::nullopt);
  EXPECT_EQ(igemm_wgmma().plan(p, spec_kb(128, 64, 2, 4)).main_geometry().dynamic_smem_bytes, 197632u);
  EXPECT_EQ(igemm_wgmma().plan(p, spec_kb(128, 64, 1, 4)).main_geometry().dynamic_smem_bytes, 99328u);
  EXPECT_EQ(igemm_wgmma().cost_features(p, spec_kb(128, 64, 2, 4)).smem_bytes_per_block, 197632);
  // 128 + 256 rows fit 4 stages of one atom (197632 bytes) but not 3 of two (295936).
  EXPECT_EQ(igemm_wgmma().check_support(p, gpu, spec_kb(128, 256, 1, 4)), std::nullopt);
  EXPECT_EQ(igemm_wgmma().check_support(p, gpu, spec_kb(128, 256, 2, 3)),
            "295936 bytes of shared memory per block exceed the gpu's 232448");
  EXPECT_EQ(igemm_wgmma().check_support(p, gpu, spec_kb(128, 128, 2, 4)),
            "263168 bytes of shared memory per block exceed the gpu's 232448");
  EXPECT_EQ(igemm_wgmma().check_support(p, gpu, spec_kb(128, 128, 2, 3)), std::nullopt);
  // 6 stages of 64 + 64 rows of 256 bytes: 197632.
  EXPECT_EQ(igemm_wgmma().check_support(p, gpu, spec_kb(64, 64, 2, 6)), std::nullopt);
  EXPECT_EQ(igemm_wgmma().check_support(p, gpu, spec_kb(64, 128, 2, 6)),
            "295936 bytes of shared memory per block exceed the gpu's 232448");
  // Within 48 KiB no tile holds 3 stages of two atoms: the smallest, 64 + 16 rows, needs 62464 bytes.
  Gpu small = gpu;
  small.smem_per_block_optin_bytes = 0;
  EXPECT_EQ(igemm_wgmma().check_support(p, small, spec_kb(64, 16, 2, 3)),
            "62464 bytes of shared memory per block exceed the gpu's 49152");
  EXPECT_EQ(igemm_wgmma().check_support(p, small, spec_kb(64, 32, 2, 3)),
            "74752 bytes of shared memory per block exceed the gpu's 49152");
  EXPECT_EQ(igemm_wgmma().check_support(p, small, spec_kb(64, 32, 1, 3)), std::nullopt);
  const std::vector<KernelSpec> small_specs = igemm_wgmma().enumerate(p, small);
  EXPECT_FALSE(small_specs.empty());
  for (const KernelSpec& s : small_specs) EXPECT_EQ(P(s).k_atoms, 1) << kernel_name(s);
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
  // The main entry's g_filter_map and g_activation_map bind zeros (only `tma` and `ta` read a tensor map), its
  // g_padded_activation and g_padded_filter an empty buffer (only padded channels read them).
  ASSERT_EQ(plan.buffers.size(), 4u);
  EXPECT_EQ(plan.buffers[0], (PlanBuffer{.name = "padded_activation", .bytes = 0, .persistent = false}));
  EXPECT_EQ(plan.tensor_maps, (std::vector<PlanTensorMap>{{.name = "filter_map"}, {.name = "activation_map"}}));
  EXPECT_EQ(plan.persistent_bytes(), 0);
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
  // Two K atoms a step: the same grid and threads, each stage's rows twice as long (256 bytes).
  EXPECT_EQ(igemm_wgmma().plan(kResnet3x3, spec_kb(128, 64, 2, 4)).main_geometry(),
            (LaunchGeometry{.grid = {25, 1, 1}, .block = {256, 1, 1}, .dynamic_smem_bytes = 4 * 192 * 256 + 1024}));
  EXPECT_EQ(igemm_wgmma().plan(kResnet3x3, spec_kb(64, 16, 2, 3)).main_geometry(),
            (LaunchGeometry{.grid = {49, 4, 1}, .block = {128, 1, 1}, .dynamic_smem_bytes = 3 * 80 * 256 + 1024}));
  // Groups run side by side in grid.z: 4 groups of 16 channels.
  Problem grouped = kResnet3x3;
  grouped.groups = 4;
  EXPECT_EQ(igemm_wgmma().plan(grouped, spec(128, 16, 4)).main_geometry().grid, (std::array<unsigned, 3>{25, 1, 4}));
}

// Split-K in a cluster (`cr`): the splits' blocks are one cluster along the grid's z, adding their partial sums in
// each other's shared memory: the main kernel alone, no workspace, one launch; 2 to 8 splits (a portable cluster), one
// tile a block, and stages that hold the fp32 partial tile (BLOCK_M rows of BLOCK_N floats and 32 bytes).
TEST(IgemmWgmmaFamily, SplitKInAClusterPlansTheMainKernelAloneAndChecksItsLimits) {
  const Gpu gpu = h100();
  const auto cluster = [](int block_m, int block_n, int stages, int split_k, int warp_specialized = 0) {
    return to_spec(IgemmWgmmaParams{.block_m = block_m,
                                    .block_n = block_n,
                                    .stages = stages,
                                    .split_k = split_k,
                                    .warp_specialized = warp_specialized,
                                    .cluster_reduce = true});
  };
  const KernelSpec s = cluster(64, 128, 4, 4);
  EXPECT_EQ(kernel_name(s), "igemm_wgmma_m64_n128_kb1_st4_sk4_co0_ws0_tma0_fw0_cr1_ta0_wn0_mc1_hl0_sw0_sp0_oc0");
  EXPECT_EQ(parse_kernel_name(kernel_name(s)), s);
  ASSERT_EQ(igemm_wgmma().check_support(kDeep, gpu, s), std::nullopt);
  const LaunchPlan plan = igemm_wgmma().plan(kDeep, s);
  ASSERT_EQ(plan.run.size(), 1u);
  EXPECT_EQ(plan.run[0].entry_suffix, "");
  EXPECT_EQ(plan.run[0].geometry,
            (LaunchGeometry{.grid = {1, 4, 4}, .block = {128, 1, 1}, .dynamic_smem_bytes = 4 * 192 * 128 + 1024}));
  EXPECT_EQ(plan.workspace_bytes(), 0);
  EXPECT_EQ(plan.find("partials"), nullptr);
  const CostFeatures f = igemm_wgmma().cost_features(kDeep, s);
  EXPECT_EQ(f.extra_launches, 0);
  EXPECT_EQ(f.dram_bytes, igemm_wgmma().cost_features(kDeep, spec(64, 128, 4, 1)).dram_bytes);
  EXPECT_EQ(igemm_wgmma().check_support(kDeep, gpu, cluster(64, 128, 4, 8, 1)), std::nullopt);
  EXPECT_EQ(igemm_wgmma().check_support(kDeep, gpu, cluster(64, 128, 4, 1)),
            "cr (split-K in a cluster) needs split_k 2 to 8 (a portable cluster), got 1");
  EXPECT_EQ(igemm_wgmma().check_support(kDeep, gpu, cluster(64, 128, 4, 9)),
            "cr (split-K in a cluster) needs split_k 2 to 8 (a portable cluster), got 9");
  EXPECT_EQ(igemm_wgmma().check_support(kDeep, gpu, cluster(64, 128, 4, 2, 2)),
            "cr (split-K in a cluster) needs one tile a block (ws0 or ws1), got ws2");
  // 256 x 256 in 3 stages: 3 x 512 x 128 = 196608 bytes of stages, the partial tile 256 x 1056 = 270336.
  EXPECT_EQ(igemm_wgmma().check_support(kDeep, gpu, cluster(256, 256, 3, 2)),
            "cr (split-K in a cluster): the fp32 partial tile's 270336 bytes exceed the 3 stages' 196608");
  // The names of earlier convgens, without `cr`, split through a workspace.
  EXPECT_FALSE(P(parse_kernel_name("igemm_wgmma_m64_n128_kb1_st4_sk4_co0_ws0_tma0_fw0")).cluster_reduce);
}

TEST(IgemmWgmmaFamily, SplitKWritesPartialSumsToTheWorkspaceAndAReducePassAddsThem) {
  const Gpu gpu = h100();
  // 4 splits of 4608: 49 pixels in one tile of 64, 512 channels in 4 of 128, 4 splits.
  const LaunchPlan plan = igemm_wgmma().plan(kDeep, spec(64, 128, 4, 4));
  EXPECT_FALSE(plan.zeroes_output_first());
  EXPECT_TRUE(plan.setup.empty());
  ASSERT_EQ(plan.buffers.size(), 5u);
  // 512 x 49 = 25088 outputs x 4 splits x 4 bytes of fp32.
  EXPECT_EQ(plan.buffers[0], (PlanBuffer{.name = "partials", .bytes = 401408}));
  EXPECT_EQ(plan.buffers[1].name, "padded_activation");
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

  // The search space offers split-K here, through a workspace and in a cluster; every split configuration through
  // a workspace plans its partial sums and reduce pass.
  // (With the pixel rows by TMA, `ta2`, the workspace holds the blocks' copies of the activation's map, 128 bytes
  // each.)
  int split = 0, cluster = 0;
  for (const KernelSpec& s : igemm_wgmma().enumerate(kDeep, gpu)) {
    const LaunchPlan p = igemm_wgmma().plan(kDeep, s);
    if (P(s).split_k == 1) {
      EXPECT_EQ(p.run.size(), 1u) << kernel_name(s);
      EXPECT_EQ(p.workspace_bytes(), 0) << kernel_name(s);
      continue;
    }
    ++split;
    if (P(s).cluster_reduce) {  // split-K in a cluster: no reduce pass
      ++cluster;
      EXPECT_EQ(p.run.size(), 1u) << kernel_name(s);
      EXPECT_EQ(p.workspace_bytes(), 0) << kernel_name(s);
      continue;
    }
    ASSERT_EQ(p.buffers.size(), 5u) << kernel_name(s);
    EXPECT_EQ(p.buffers[0], (PlanBuffer{.name = "partials", .bytes = output_elements(kDeep) * P(s).split_k * 4}));
    ASSERT_EQ(p.run.size(), 2u) << kernel_name(s);
    EXPECT_EQ(p.run[1].entry_suffix, "reduce") << kernel_name(s);
    EXPECT_EQ(p.run[1].geometry.block, (std::array<unsigned, 3>{256, 1, 1}));
    EXPECT_EQ(std::int64_t{p.run[1].geometry.grid[0]}, (output_elements(kDeep) + 255) / 256);
  }
  EXPECT_GT(split, cluster);
  EXPECT_GT(cluster, 0);
  // 49 pixels by 512 channels fill few SMs, and unsplit each block would run 36 to 72 steps, each at least the load
  // latency over the steps in flight: the estimate splits the reduction, as every one of the four fastest measured
  // configurations of this layer does (8 or 16 splits; bench/results/h200/wgmma-tf32-2026-11-29/, fp16 and tf32 on the
  // H200, fp16 on the H100), and pays for the partial sums and the second pass.
  const KernelSpec chosen = *igemm_wgmma().default_spec(kDeep, gpu);
  EXPECT_GE(P(chosen).split_k, 4) << kernel_name(chosen);
  // Split configurations with two K atoms are offered too, and plan their reduce pass.
  int split_two = 0;
  for (const KernelSpec& s : igemm_wgmma().enumerate(kDeep, gpu))
    if (P(s).split_k > 1 && P(s).k_atoms == 2) {
      ++split_two;
      EXPECT_EQ(igemm_wgmma().plan(kDeep, s).run.size(), P(s).cluster_reduce ? 1u : 2u) << kernel_name(s);
    }
  EXPECT_GT(split_two, 0);
  // 4 splits of 36 steps of 128: 9 steps each, 1152 reduction elements; 16 blocks of 64 x 32 in each split.
  const LaunchPlan two = igemm_wgmma().plan(kDeep, spec_kb(64, 32, 2, 4, 4));
  ASSERT_EQ(two.run.size(), 2u);
  EXPECT_EQ(two.run[0].geometry,
            (LaunchGeometry{.grid = {1, 16, 4}, .block = {128, 1, 1}, .dynamic_smem_bytes = 4 * 96 * 256 + 1024}));
  EXPECT_EQ(two.workspace_bytes(), 401408);
  EXPECT_EQ(igemm_wgmma().cost_features(kDeep, spec_kb(64, 32, 2, 4, 4)).main_loop_steps, 9);
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
  ASSERT_EQ(main->args.size(), 12u);
  EXPECT_EQ(main->args[0].name, "g_activation");
  EXPECT_EQ(main->args[1].name, "g_filter");
  EXPECT_EQ(main->args[2].name, "g_output");
  EXPECT_EQ(main->args[3].name, "g_workspace");
  EXPECT_EQ(main->args[4].name, "g_bias");
  EXPECT_EQ(main->args[5].name, "g_residual");
  EXPECT_EQ(main->args[6].name, "g_filter_map");
  EXPECT_EQ(main->args[6].type, "const convgen::wg::TensorMap");  // by value
  EXPECT_EQ(main->args[7].name, "g_padded_activation");
  EXPECT_EQ(main->args[8].name, "g_padded_filter");
  EXPECT_EQ(main->args[9].name, "g_activation_map");
  EXPECT_EQ(main->args[10].name, "g_packed_values");
  EXPECT_EQ(main->args[11].name, "g_packed_meta");
  const EntryDecl* pack = iface.find_entry("pack");
  ASSERT_NE(pack, nullptr);
  ASSERT_EQ(pack->args.size(), 3u);
  EXPECT_EQ(pack->args[0].name, "g_filter");
  EXPECT_EQ(pack->args[1].name, "g_packed_values");
  EXPECT_EQ(pack->args[2].name, "g_packed_meta");
  for (const char* pad : {"pad_activation", "pad_filter"}) {
    const EntryDecl* entry = iface.find_entry(pad);
    ASSERT_NE(entry, nullptr) << pad;
    ASSERT_EQ(entry->args.size(), 2u);
    EXPECT_EQ(entry->args[1].name, std::string("g_padded_") + (std::string(pad) == "pad_filter" ? "filter" : "activation"));
  }
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
  // Two K atoms: 576 elements are 5 steps of 128, the last one half padding, so a block covers 640 (40 k-slices).
  const CostFeatures two = igemm_wgmma().cost_features(kResnet3x3, spec_kb(128, 64, 2, 4));
  EXPECT_EQ(two.blocks, 25);
  EXPECT_EQ(two.threads_per_block, 256);
  EXPECT_EQ(two.smem_bytes_per_block, 4 * 192 * 256 + 1024);
  EXPECT_EQ(two.main_loop_steps, 5);
  EXPECT_DOUBLE_EQ(two.flops_per_block, 2.0 * 128 * 64 * 640);
  EXPECT_DOUBLE_EQ(two.fma_instructions, 8.0 * 40 * 2);
  // (128 + 64) rows of 640 elements, 8 per cp.async: (10240 + 5120) / 32.
  EXPECT_DOUBLE_EQ(two.global_load_instructions, 480.0);
  EXPECT_DOUBLE_EQ(two.address_instructions, 10240.0 / 32 * 8);
  // Split in 3 with two atoms: 192 elements per split are 2 steps of 128 (256 elements).
  const CostFeatures two_split = igemm_wgmma().cost_features(kResnet3x3, spec_kb(128, 64, 2, 4, 3));
  EXPECT_EQ(two_split.blocks, 75);
  EXPECT_EQ(two_split.main_loop_steps, 2);
  EXPECT_DOUBLE_EQ(two_split.flops_per_block, 2.0 * 128 * 64 * 256);
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
  for (Precision precision : {Precision::tf32, Precision::fp16, Precision::bf16}) {
    const Problem p = with(kResnet3x3, precision, Layout::nhwc);
    EXPECT_LT(igemm_wgmma().default_rank(p), family("igemm_tc").default_rank(p)) << to_string(precision);
    EXPECT_EQ(default_choice(p, gpu).family, "igemm_wgmma") << to_string(precision);
    // Where it does not serve, igemm_tc still does.
    EXPECT_EQ(default_choice(with(p, precision, Layout::nchw), gpu).family, "igemm_tc") << to_string(precision);
    EXPECT_EQ(default_choice(p, a100()).family, "igemm_tc") << to_string(precision);
  }
}

TEST(IgemmWgmmaFamily, KernelNamesCarryEveryParameterAndParseBack) {
  const KernelSpec s = spec(128, 64, 4, 1);
  EXPECT_EQ(s, (KernelSpec{.family = "igemm_wgmma", .values = {128, 64, 1, 4, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0}}));
  EXPECT_EQ(kernel_name(s), "igemm_wgmma_m128_n64_kb1_st4_sk1_co0_ws0_tma0_fw0_cr0_ta0_wn0_mc1_hl0_sw0_sp0_oc0");
  EXPECT_EQ(parse_kernel_name("igemm_wgmma_m128_n64_kb1_st4_sk1_co0_ws0"), s);
  EXPECT_EQ(spec_kb(128, 64, 2, 4, 1),
            (KernelSpec{.family = "igemm_wgmma", .values = {128, 64, 2, 4, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0}}));
  EXPECT_EQ(kernel_name(spec_kb(128, 64, 2, 4, 1)),
            "igemm_wgmma_m128_n64_kb2_st4_sk1_co0_ws0_tma0_fw0_cr0_ta0_wn0_mc1_hl0_sw0_sp0_oc0");
  EXPECT_EQ(parse_kernel_name("igemm_wgmma_m128_n64_kb2_st4_sk1_co0_ws0"), spec_kb(128, 64, 2, 4, 1));
  EXPECT_EQ(P(parse_kernel_name("igemm_wgmma_m192_n96_kb2_st3_sk4_co0_ws1")),
            (IgemmWgmmaParams{
                .block_m = 192, .block_n = 96, .k_atoms = 2, .stages = 3, .split_k = 4, .warp_specialized = true}));
  EXPECT_EQ(kernel_name(spec_kb(64, 32, 1, 5, 1, true)),
            "igemm_wgmma_m64_n32_kb1_st5_sk1_co0_ws1_tma0_fw0_cr0_ta0_wn0_mc1_hl0_sw0_sp0_oc0");
  EXPECT_EQ(kernel_name(spec(256, 16, 6, 8)),
            "igemm_wgmma_m256_n16_kb1_st6_sk8_co0_ws0_tma0_fw0_cr0_ta0_wn0_mc1_hl0_sw0_sp0_oc0");
  EXPECT_EQ(parse_kernel_name("igemm_wgmma_m64_n256_kb1_st3_sk32_co0_ws0"), spec(64, 256, 3, 32));
  EXPECT_EQ(
      kernel_name(IgemmWgmmaParams{}),
      "igemm_wgmma_m128_n64_kb1_st4_sk1_co0_ws0_tma0_fw0_cr0_ta0_wn0_mc1_hl0_sw0_sp0_oc0");  // the template's defaults
  // Not igemm_tc's: its name has more fields.
  EXPECT_NE(parse_kernel_name(kernel_name(to_spec(IgemmTcParams{}))).family, "igemm_wgmma");
  // The names from before kb are refused: kb sits between n and st.
  EXPECT_EQ(name_error("igemm_wgmma_m128_n64_st4_sk1"),
            "kernel name 'igemm_wgmma_m128_n64_st4_sk1': expected field '_kb<number>' at '_st4_sk1'");
  EXPECT_EQ(name_error("igemm_wgmma_m128_n64_kb1_st4"),
            "kernel name 'igemm_wgmma_m128_n64_kb1_st4': expected field '_sk<number>' at ''");
  // The names from before co and ws are refused.
  EXPECT_EQ(name_error("igemm_wgmma_m128_n64_kb1_st4_sk1"),
            "kernel name 'igemm_wgmma_m128_n64_kb1_st4_sk1': expected field '_co<number>' at ''");
  EXPECT_EQ(name_error("igemm_wgmma_m128_n64_kb1_st4_sk1_ws0"),
            "kernel name 'igemm_wgmma_m128_n64_kb1_st4_sk1_ws0': expected field '_co<number>' at '_ws0'");
  EXPECT_EQ(kernel_name(to_spec(IgemmWgmmaParams{.chunk_major = true})),
            "igemm_wgmma_m128_n64_kb1_st4_sk1_co1_ws0_tma0_fw0_cr0_ta0_wn0_mc1_hl0_sw0_sp0_oc0");
  EXPECT_EQ(name_error("igemm_wgmma_m128_n64_kb1_st4_sk1_co0_ws9"),
            "kernel name 'igemm_wgmma_m128_n64_kb1_st4_sk1_co0_ws9': field 'ws' (warp-specialized: a producer "
            "warpgroup loads, signalling mbarriers, while the rest multiply; 2-8: that many output tiles a block, in "
            "turn) must be from 0 to 8, got 9");
  EXPECT_EQ(name_error("igemm_wgmma_m100_n64_kb1_st4_sk1_co0_ws0"),
            "kernel name 'igemm_wgmma_m100_n64_kb1_st4_sk1_co0_ws0': field 'm' (output pixels per block: one "
            "warpgroup of 128 threads per 64 (with sw any multiple of 16: the wgmma's N)) must be one of 16, 32, 48, "
            "64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256, got 100");
  EXPECT_EQ(name_error("igemm_wgmma_m128_n64_kb3_st4_sk1_co0_ws0"),
            "kernel name 'igemm_wgmma_m128_n64_kb3_st4_sk1_co0_ws0': field 'kb' (128-byte swizzled K atoms per step: "
            "128 or "
            "256 bytes of each row a barrier) must be one of 1, 2, got 3");
  EXPECT_EQ(
      name_error("igemm_wgmma_m128_n64_kb1_st7_sk1_co0_ws0"),
      "kernel name 'igemm_wgmma_m128_n64_kb1_st7_sk1_co0_ws0': field 'st' (shared-memory stages: loads run stages - 2 "
      "(ws0) or stages (ws1) steps ahead of the multiply (2: halo only)) must be from 2 to 6, got 7");
}

TEST(IgemmWgmmaFamily, RendersTheTemplateWithThePrecisionInThePrelude) {
  const KernelSpec s = spec(128, 64, 4, 2);
  for (const auto& [precision, value] : {std::pair{Precision::fp16, 2}, std::pair{Precision::bf16, 3}}) {
    const KernelSource src = igemm_wgmma().render(with(kResnet3x3, precision, Layout::nhwc), s);
    EXPECT_EQ(src.entry, "igemm_wgmma_m128_n64_kb1_st4_sk2_co0_ws0_tma0_fw0_cr0_ta0_wn0_mc1_hl0_sw0_sp0_oc0");
    EXPECT_EQ(src.file_name, "igemm_wgmma_m128_n64_kb1_st4_sk2_co0_ws0_tma0_fw0_cr0_ta0_wn0_mc1_hl0_sw0_sp0_oc0.cu");
    EXPECT_NE(src.text.find(fmt::format("constexpr int PRECISION = {};", value)), std::string::npos)
        << to_string(precision);
    EXPECT_NE(
        src.text.find("constexpr int BLOCK_M = 128;\nconstexpr int BLOCK_N = 64;\nconstexpr int K_ATOMS = 1;\n"
                      "constexpr int STAGES = 4;\nconstexpr int SPLIT_K = 2;\nconstexpr bool CHUNK_MAJOR = false;\n"
                      "constexpr int WARP_SPECIALIZED = 0;\n"),
        std::string::npos);
    EXPECT_NE(src.text.find("constexpr bool CHANNELS_LAST = true;"), std::string::npos);
    EXPECT_NE(src.text.find("#line 1 \"igemm_wgmma.cu\"\n"), std::string::npos);
    EXPECT_NE(src.text.find("#include \"wgmma.cuh\""), std::string::npos);
    EXPECT_NE(std::find(src.headers.begin(), src.headers.end(), "wgmma.cuh"), src.headers.end());
  }
  // Two K atoms a step: K_ATOMS = 2 in the prelude and kb2 in the entry's name.
  const KernelSource two = igemm_wgmma().render(kResnet3x3, spec_kb(192, 96, 2, 3, 1));
  EXPECT_EQ(two.entry, "igemm_wgmma_m192_n96_kb2_st3_sk1_co0_ws0_tma0_fw0_cr0_ta0_wn0_mc1_hl0_sw0_sp0_oc0");
  EXPECT_EQ(two.file_name, "igemm_wgmma_m192_n96_kb2_st3_sk1_co0_ws0_tma0_fw0_cr0_ta0_wn0_mc1_hl0_sw0_sp0_oc0.cu");
  EXPECT_NE(two.text.find("constexpr int BLOCK_M = 192;\nconstexpr int BLOCK_N = 96;\nconstexpr int K_ATOMS = 2;\n"
                          "constexpr int STAGES = 3;\nconstexpr int SPLIT_K = 1;\n"),
            std::string::npos);
  // The prelude's declaration comes first, before the template's own defaults (#line 1).
  EXPECT_EQ(two.text.find("constexpr int K_ATOMS = "), two.text.find("constexpr int K_ATOMS = 2;"));
  EXPECT_LT(two.text.find("constexpr int K_ATOMS = 2;"), two.text.find("#line 1 \"igemm_wgmma.cu\"\n"));
}

// templates/igemm_wgmma.cu's `tma`: the filter tile by TMA in the warp-specialized pipeline. Names from before it
// load the filter by cp.async (tma0); the shared pipeline has no TMA.
TEST(IgemmWgmmaFamily, TmaIsAWarpSpecializedOptionWhoseNamesParseAndOlderNamesMeanCpAsync) {
  IgemmWgmmaParams tma{.warp_specialized = true, .tma_filter = true};
  EXPECT_EQ(kernel_name(to_spec(tma)),
            "igemm_wgmma_m128_n64_kb1_st4_sk1_co0_ws1_tma1_fw0_cr0_ta0_wn0_mc1_hl0_sw0_sp0_oc0");
  EXPECT_EQ(P(parse_kernel_name("igemm_wgmma_m128_n64_kb1_st4_sk1_co0_ws1_tma1")), tma);
  EXPECT_EQ(P(parse_kernel_name("igemm_wgmma_m128_n64_kb1_st4_sk1_co0_ws1")),
            (IgemmWgmmaParams{.warp_specialized = true, .tma_filter = false}));
  const Gpu gpu = h100();
  EXPECT_EQ(igemm_wgmma().check_support(kResnet3x3, gpu, to_spec(tma)), std::nullopt);
  EXPECT_EQ(igemm_wgmma().check_support(kResnet3x3, gpu, to_spec(IgemmWgmmaParams{.tma_filter = true})),
            "tma (the filter tile by TMA) needs the warp-specialized pipeline (ws1)");
  // The search space offers each warp-specialized candidate with its twin that loads the filter by TMA, and no
  // other TMA candidate: half the warp-specialized ones (the TMA twins' multicast, halo and im2col twins apart).
  for (const Problem& p : {kResnet3x3, kDeep, with(kResnet3x3, Precision::tf32, Layout::nhwc)}) {
    std::set<std::string> names;
    std::int64_t specialized = 0, by_tma = 0;
    const std::vector<KernelSpec> specs = igemm_wgmma().enumerate(p, gpu);
    for (const KernelSpec& s : specs) names.insert(kernel_name(s));
    for (const KernelSpec& s : specs) {
      if (!P(s).warp_specialized || P(s).multicast > 1 || P(s).halo || P(s).tma_activation) continue;
      ++specialized;
      by_tma += P(s).tma_filter;
      IgemmWgmmaParams twin = P(s);
      twin.tma_filter = !twin.tma_filter;
      EXPECT_TRUE(names.contains(kernel_name(to_spec(twin)))) << kernel_name(s) << " has no twin";
    }
    EXPECT_GT(by_tma, 0) << problem_key(p);
    EXPECT_EQ(2 * by_tma, specialized) << problem_key(p);
  }
}

// ResNet-50's conv3_expand at batch 32, channels-last, in `precision`: 196 x 4 tiles of 128 x 128.
Problem conv3_expand_n32(Precision precision) {
  return Problem{.n = 32,
                 .c = 128,
                 .k = 512,
                 .input = {1, 28, 28},
                 .filter = {1, 1, 1},
                 .layout = Layout::nhwc,
                 .precision = precision};
}

// `oc`: the warps of a several-tiles kernel copy their staged 16-bit rows out themselves instead of by a bulk copy a
// row. Every candidate with the output buffer comes with its oc1 twin, estimated faster (before it), no other candidate
// has one, the twin's launch is its twin's, and a kernel without the buffer is refused with the reason.
TEST(IgemmWgmmaFamily, WarpCopyOutputIsATwinOfEveryCandidateWithAnOutputBuffer) {
  const Gpu gpu = h100();
  const Problem expand = conv3_expand_n32(Precision::fp16);
  const std::vector<KernelSpec> specs = igemm_wgmma().enumerate(expand, gpu);
  std::vector<std::string> names;
  for (const KernelSpec& s : specs) names.push_back(kernel_name(s));
  int copying = 0;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const IgemmWgmmaParams t = P(specs[i]);
    if (!t.warp_copy_output) continue;
    ++copying;
    EXPECT_GE(t.warp_specialized, 2) << names[i];
    EXPECT_EQ(t.split_k, 1) << names[i];
    IgemmWgmmaParams bulk = t;
    bulk.warp_copy_output = false;
    // Its bulk-copy twin after it (estimated slower), launched the same way.
    const auto twin =
        std::find(names.begin() + static_cast<std::ptrdiff_t>(i), names.end(), kernel_name(to_spec(bulk)));
    ASSERT_NE(twin, names.end()) << names[i] << " has no bulk-copy twin after it";
    const KernelSpec& b = specs[static_cast<std::size_t>(twin - names.begin())];
    const LaunchGeometry a = igemm_wgmma().plan(expand, specs[i]).main_geometry();
    const LaunchGeometry c = igemm_wgmma().plan(expand, b).main_geometry();
    EXPECT_EQ(a.grid, c.grid) << names[i];
    EXPECT_EQ(a.dynamic_smem_bytes, c.dynamic_smem_bytes) << names[i];
  }
  int buffered = 0;
  for (const KernelSpec& s : specs) buffered += P(s).warp_specialized >= 2 && !P(s).warp_copy_output;
  EXPECT_GT(copying, 0);
  EXPECT_EQ(copying, buffered);
  // tf32 has no output buffer: no twin, and the name is refused.
  Problem tf32 = expand;
  tf32.precision = Precision::tf32;
  for (const KernelSpec& s : igemm_wgmma().enumerate(tf32, gpu)) EXPECT_FALSE(P(s).warp_copy_output) << kernel_name(s);
  const std::string reason =
      "oc (the warp copying its staged rows out) needs the output buffer: several tiles a block (ws2-ws8), a 16-bit "
      "output not split, and K and K per group multiples of 8";
  EXPECT_EQ(igemm_wgmma().check_support(tf32, gpu,
                                        to_spec(IgemmWgmmaParams{.warp_specialized = 4, .warp_copy_output = true})),
            reason);
  EXPECT_EQ(igemm_wgmma().check_support(expand, gpu,
                                        to_spec(IgemmWgmmaParams{.warp_specialized = 1, .warp_copy_output = true})),
            reason);
  EXPECT_EQ(igemm_wgmma().check_support(expand, gpu,
                                        to_spec(IgemmWgmmaParams{.warp_specialized = 4, .warp_copy_output = true})),
            std::nullopt);
  // Older names mean bulk copies.
  EXPECT_FALSE(P(parse_kernel_name("igemm_wgmma_m128_n64_kb1_st4_sk1_co0_ws4_tma0_fw0_cr0_ta0_wn0_mc1_hl0_sw0_sp0"))
                   .warp_copy_output);
}

// ws2-ws8: a warp-specialized block computes that many output tiles in turn. The search space offers each
// warp-specialized candidate's twin with enough tiles a block to fit its blocks in one wave (at most 8) where the
// output has more 128 x 128 tiles than the GPU has SMs (ResNet-50's conv3_expand at batch 32: 196 x 4), and none where
// it has fewer (kDeep at batch 1).
TEST(IgemmWgmmaFamily, SeveralTilesABlockAreAWarpSpecializedTwinWhereTheOutputHasMoreTilesThanTheGpuHasSms) {
  const Gpu gpu = h100();
  Problem expand = conv3_expand_n32(Precision::tf32);
  for (Precision precision : {Precision::tf32, Precision::fp16}) {
    expand.precision = precision;
    const std::vector<KernelSpec> specs = igemm_wgmma().enumerate(expand, gpu);
    std::set<std::string> names;
    for (const KernelSpec& s : specs) names.insert(kernel_name(s));
    int several = 0;
    for (const KernelSpec& s : specs) {
      const IgemmWgmmaParams t = P(s);
      if (t.warp_specialized < 2) continue;
      ++several;
      EXPECT_LE(t.warp_specialized, 8) << kernel_name(s);
      // Its one-tile twin is there, as deep or deeper (a 16-bit output's buffer may leave room for fewer stages).
      bool twin = false;
      for (int stages = t.stages; stages <= 6; ++stages) {
        IgemmWgmmaParams one = t;
        one.warp_specialized = 1;
        one.stages = stages;
        one.warp_copy_output = false;
        twin = twin || names.contains(kernel_name(to_spec(one)));
      }
      EXPECT_TRUE(twin) << kernel_name(s) << " has no one-tile twin";
      // Its blocks fit one wave, or it computes the most tiles a block there is.
      const LaunchGeometry g = igemm_wgmma().plan(expand, s).main_geometry();
      EXPECT_TRUE(g.grid[0] <= static_cast<unsigned>(gpu.sm_count) * 2 || t.warp_specialized == 8) << kernel_name(s);
      EXPECT_LE(g.dynamic_smem_bytes, static_cast<unsigned>(max_smem_per_block_bytes(gpu))) << kernel_name(s);
    }
    EXPECT_GT(several, 0) << to_string(precision);
  }
  for (const KernelSpec& s : igemm_wgmma().enumerate(kDeep, gpu)) EXPECT_LE(P(s).warp_specialized, 1) << kernel_name(s);
  EXPECT_EQ(igemm_wgmma().check_support(expand, gpu, to_spec(IgemmWgmmaParams{.warp_specialized = 9})),
            "ws must be 0 (shared pipeline), 1 (warp-specialized) or 2 to 8 (warp-specialized, that many tiles a "
            "block), got 9");
  EXPECT_EQ(igemm_wgmma().check_support(expand, gpu, to_spec(IgemmWgmmaParams{.warp_specialized = 3})), std::nullopt);
}

// ResNet-50's conv1 at batch 8 in fp16: 3 -> 64 channels, 7 x 7, stride 2, padding 3, 224 x 224 (the folds' problem).
Problem resnet50_conv1_n8_fp16() {
  return {.n = 8,
          .c = 3,
          .k = 64,
          .input = {1, 224, 224},
          .filter = {1, 7, 7},
          .stride = {1, 2, 2},
          .padding = {0, 3, 3},
          .layout = Layout::nhwc,
          .precision = Precision::fp16};
}

// `fw` folds the filter's width into the channels where there are fewer than one 16-byte load of them and the filter
// is wider than one tap: ResNet-50's conv1 (3 -> 64, 7 x 7, stride 2, padding 3) in fp16 becomes a 7 x 1 convolution of the
// 112-column input whose 24 channels are each output column's 7 taps x 3 channels (21, padded to 24): a reduction of
// 7 x 24 = 168 where padding alone makes it 49 x 8 = 392.
TEST(IgemmWgmmaFamily, FoldsTheFilterWidthIntoTheChannelsWhereTheyArePadded) {
  const Gpu gpu = h100();
  const Problem conv1 = resnet50_conv1_n8_fp16();
  IgemmWgmmaParams t{.block_m = 128, .block_n = 64, .stages = 4, .fold_width = true};
  EXPECT_EQ(kernel_name(to_spec(t)),
            "igemm_wgmma_m128_n64_kb1_st4_sk1_co0_ws0_tma0_fw1_cr0_ta0_wn0_mc1_hl0_sw0_sp0_oc0");
  EXPECT_EQ(P(parse_kernel_name("igemm_wgmma_m128_n64_kb1_st4_sk1_co0_ws0_tma0_fw1_cr0_ta0_wn0")), t);
  EXPECT_EQ(igemm_wgmma().check_support(conv1, gpu, to_spec(t)), std::nullopt);

  const std::string text = igemm_wgmma().render(conv1, to_spec(t)).text;
  for (const char* line : {"constexpr int N = 8, C = 24, K = 64, GROUPS = 1;", "constexpr int D = 1, H = 224, W = 112;",
                           "constexpr int T = 1, R = 7, S = 1;", "constexpr int O = 1, P = 112, Q = 112;",
                           "constexpr int STRIDE_D = 1, STRIDE_H = 2, STRIDE_W = 1;",
                           "constexpr int PAD_D = 0, PAD_H = 3, PAD_W = 0;", "constexpr int C_SOURCE = 3;",
                           "constexpr int W_SOURCE = 224;", "constexpr int FOLD_S = 7;", "constexpr int FOLD_STRIDE = 2;",
                           "constexpr int FOLD_PAD = 3;", "constexpr int FOLD_DIL = 1;"})
    EXPECT_NE(text.find(line), std::string::npos) << line;

  const LaunchPlan plan = igemm_wgmma().plan(conv1, to_spec(t));
  ASSERT_EQ(plan.buffers.size(), 4u);
  EXPECT_EQ(plan.buffers[0].bytes, std::int64_t{8} * 224 * 112 * 24 * 2);  // the folded activation
  EXPECT_EQ(plan.buffers[1].bytes, std::int64_t{64} * 7 * 24 * 2);         // the filter's rows of 7 taps, padded
  ASSERT_EQ(plan.run.size(), 2u);
  EXPECT_EQ(plan.run[0].entry_suffix, "pad_activation");
  EXPECT_EQ(igemm_wgmma().cost_features(conv1, to_spec(t)).main_loop_steps, 3);  // 168 in steps of 64
  t.fold_width = false;
  EXPECT_EQ(igemm_wgmma().cost_features(conv1, to_spec(t)).main_loop_steps, 7);  // 392

  // The search space offers both, half each (not counting the twins with two warpgroups on a 64-pixel tile's
  // channels, those with the operands swapped, those whose warps copy their output out, nor those that fold as they
  // load), and no TMA.
  const std::vector<KernelSpec> specs = igemm_wgmma().enumerate(conv1, gpu);
  const auto folded = std::count_if(specs.begin(), specs.end(), [](const KernelSpec& s) {
    return P(s).fold_width == 1 && !P(s).split_n && !P(s).swap_ab && !P(s).warp_copy_output;
  });
  EXPECT_GT(folded, 0);
  EXPECT_LT(folded, static_cast<std::int64_t>(specs.size()));
  EXPECT_LE(folded, 32);
  for (const KernelSpec& s : specs) EXPECT_FALSE(P(s).tma_filter) << kernel_name(s);
  expect_a_sound_search_space(conv1, gpu);

  // Not where the channels are whole loads, nor for a filter one tap wide, nor with groups.
  t.fold_width = true;
  EXPECT_EQ(igemm_wgmma().check_support(kResnet3x3, gpu, to_spec(t)),
            "fw (the filter's width folded into the channels) serves ungrouped problems with fewer channels than one "
            "16-byte load (8 in fp16) and a filter wider than 1; got 64 channels in 1 groups, a filter 3 wide");
  Problem twelve = conv1;  // padded to 16, but more channels than one load: folding would save few loads
  twelve.c = 12;
  EXPECT_NE(igemm_wgmma().check_support(twelve, gpu, to_spec(t)), std::nullopt);
  EXPECT_EQ(igemm_wgmma().check_support(twelve, gpu, spec(128, 64)), std::nullopt);
  Problem narrow = conv1;
  narrow.filter = {1, 7, 1};
  narrow.padding = {0, 3, 0};
  EXPECT_NE(igemm_wgmma().check_support(narrow, gpu, to_spec(t)), std::nullopt);
  for (const KernelSpec& s : igemm_wgmma().enumerate(narrow, gpu)) EXPECT_FALSE(P(s).fold_width) << kernel_name(s);
  for (const KernelSpec& s : igemm_wgmma().enumerate(kResnet3x3, gpu)) EXPECT_FALSE(P(s).fold_width) << kernel_name(s);
}

// `fw2` folds the width as the pixel rows are loaded: no copy pass and no per-call buffer, the filter folded once as
// for fw1 but after one zero tap, so that each output column's window (input columns 2q - 4 .. 2q + 3 of conv1 in
// fp16: 8 x 6 bytes) starts on 4 bytes; still 24 channels, a reduction of 168.
// Each fw1 candidate has its fw2 twin beside it; where no shift of fewer than 4 taps aligns both ends of the window,
// or the run is not contiguous (a dilation), fw2 is refused with its reason and not offered.
TEST(IgemmWgmmaFamily, FoldsTheWidthAsItLoadsWithoutACopyPassWhereEachWindowStartsOnFourBytes) {
  const Gpu gpu = h100();
  const Problem conv1 = resnet50_conv1_n8_fp16();
  const IgemmWgmmaParams t{.block_m = 128, .block_n = 64, .stages = 4, .fold_width = 2};
  EXPECT_EQ(kernel_name(to_spec(t)),
            "igemm_wgmma_m128_n64_kb1_st4_sk1_co0_ws0_tma0_fw2_cr0_ta0_wn0_mc1_hl0_sw0_sp0_oc0");
  EXPECT_EQ(igemm_wgmma().check_support(conv1, gpu, to_spec(t)), std::nullopt);
  const std::string text = igemm_wgmma().render(conv1, to_spec(t)).text;
  for (const char* line : {"constexpr int N = 8, C = 24, K = 64, GROUPS = 1;", "constexpr int D = 1, H = 224, W = 112;",
                           "constexpr int FOLD_S = 7;", "constexpr int FOLD_PAD = 3;", "constexpr int FOLD_SHIFT = 1;"})
    EXPECT_NE(text.find(line), std::string::npos) << line;

  const LaunchPlan plan = igemm_wgmma().plan(conv1, to_spec(t));
  ASSERT_EQ(plan.buffers.size(), 4u);
  EXPECT_EQ(plan.buffers[0].name, "padded_activation");
  EXPECT_EQ(plan.buffers[0].bytes, 0);                              // no folded copy
  EXPECT_EQ(plan.buffers[1].bytes, std::int64_t{64} * 7 * 24 * 2);  // the filter's rows of 1 + 7 taps
  ASSERT_EQ(plan.run.size(), 1u);                                   // the main entry alone
  EXPECT_EQ(plan.setup.size(), 1u);
  EXPECT_EQ(plan.setup[0].entry_suffix, "pad_filter");
  EXPECT_EQ(plan.tensor_alignment.activation, 4);
  EXPECT_EQ(igemm_wgmma().cost_features(conv1, to_spec(t)).main_loop_steps, 3);  // 168 in steps of 64
  EXPECT_EQ(igemm_wgmma().cost_features(conv1, to_spec(t)).extra_launches, 0);

  Problem tf32 = conv1;
  tf32.precision = Precision::tf32;
  // In tf32 a column is 12 bytes: one zero tap puts every window (input columns 2q - 4 .. 2q + 3, 96 bytes) on 8 bytes,
  // in two 8-byte copies a unit, and the folded channels stay 24.
  const std::string tf32_text = igemm_wgmma().render(tf32, to_spec(t)).text;
  for (const char* line : {"constexpr int FOLD_SHIFT = 1;", "constexpr int FOLD_COPY_BYTES = 8;",
                           "constexpr int N = 8, C = 24, K = 64, GROUPS = 1;"})
    EXPECT_NE(tf32_text.find(line), std::string::npos) << line;
  EXPECT_EQ(igemm_wgmma().plan(tf32, to_spec(t)).tensor_alignment.activation, 8);
  EXPECT_NE(text.find("constexpr int FOLD_COPY_BYTES = 4;"), std::string::npos);  // fp16: 12q - 24 is odd q's 4

  const std::vector<KernelSpec> specs = igemm_wgmma().enumerate(conv1, gpu);
  const auto on_load =
      std::count_if(specs.begin(), specs.end(), [](const KernelSpec& s) { return P(s).fold_width == 2; });
  const auto copying =
      std::count_if(specs.begin(), specs.end(), [](const KernelSpec& s) { return P(s).fold_width == 1; });
  EXPECT_EQ(on_load, copying);  // expect_a_sound_search_space checks each one's twin
  expect_a_sound_search_space(conv1, gpu);

  // Padding 2 of a 7-wide filter: a window starts on 4 bytes after an even number of taps and ends on them after an
  // odd one; a dilation: the taps are not one run. fw1 serves both.
  Problem odd = conv1;
  odd.padding = {0, 3, 2};
  const std::string reason =
      "fw2 (the width folded as the pixel rows are loaded, by 4-byte copies) needs dilation 1 "
      "along the width and each window's start, stride, end and the input row on whole 4 bytes";
  ASSERT_TRUE(igemm_wgmma().check_support(odd, gpu, to_spec(t)).has_value());
  EXPECT_TRUE(igemm_wgmma().check_support(odd, gpu, to_spec(t))->starts_with(reason));
  Problem dilated = conv1;
  dilated.dilation = {1, 1, 2};
  ASSERT_TRUE(igemm_wgmma().check_support(dilated, gpu, to_spec(t)).has_value());
  EXPECT_TRUE(igemm_wgmma().check_support(dilated, gpu, to_spec(t))->starts_with(reason));
  IgemmWgmmaParams copy = t;
  copy.fold_width = 1;
  for (const Problem& p : {odd, dilated}) {
    EXPECT_EQ(igemm_wgmma().check_support(p, gpu, to_spec(copy)), std::nullopt);
    for (const KernelSpec& s : igemm_wgmma().enumerate(p, gpu)) EXPECT_NE(P(s).fold_width, 2) << kernel_name(s);
  }
}

// The pixel rows by TMA (`ta`): on an ungrouped 1 x 1 problem of stride 1 without padding the activation is an
// NPIX x C matrix, whose map (boxes of 64 channels by BLOCK_M pixels) the launcher encodes over each call's activation
// and passes by value.
// Filter multicast (`mc`): clusters of 2 or 4 pixel tiles along the grid's x, each block's TMA copying its share of the
// filter tile's rows into every block of the cluster. ResNet-50's conv5_reduce at batch 32 (1,568 pixels, 512 channels,
// 2,048 reduction elements): 25 tiles of 64 pixels rounded up to 28 (7 clusters of 4), the filter's boxes 32 of the
// block's 128 rows; the estimate counts each filter tile read from L2 once a cluster. The search space does not offer
// them (kOfferMulticast).
TEST(IgemmWgmmaFamily, FilterMulticastPlansWholeClustersAndBoxesOfEachBlocksShare) {
  const Gpu gpu = h100();
  const Problem reduce{.n = 32,
                       .c = 2048,
                       .k = 512,
                       .input = {1, 7, 7},
                       .filter = {1, 1, 1},
                       .layout = Layout::nhwc,
                       .precision = Precision::fp16};
  IgemmWgmmaParams t{.block_m = 64, .block_n = 128, .warp_specialized = 1, .tma_filter = true, .multicast = 4};
  const KernelSpec s = to_spec(t);
  EXPECT_EQ(kernel_name(s), "igemm_wgmma_m64_n128_kb1_st4_sk1_co0_ws1_tma1_fw0_cr0_ta0_wn0_mc4_hl0_sw0_sp0_oc0");
  EXPECT_EQ(parse_kernel_name(kernel_name(s)), s);
  ASSERT_EQ(igemm_wgmma().check_support(reduce, gpu, s), std::nullopt);
  const LaunchPlan plan = igemm_wgmma().plan(reduce, s);
  EXPECT_EQ(plan.main_geometry().grid, (std::array<unsigned, 3>{28, 4, 1}));
  EXPECT_TRUE(plan.setup.empty());
  EXPECT_EQ(plan.tensor_maps.at(0).spec.box, (std::array<unsigned, 5>{64, 32, 1, 1, 1}));
  IgemmWgmmaParams alone = t;
  alone.multicast = 1;
  EXPECT_EQ(igemm_wgmma().plan(reduce, to_spec(alone)).main_geometry().grid, (std::array<unsigned, 3>{25, 4, 1}));
  EXPECT_EQ(igemm_wgmma().plan(reduce, to_spec(alone)).tensor_maps.at(0).spec.box,
            (std::array<unsigned, 5>{64, 128, 1, 1, 1}));
  // Not offered (measured slower than their one-block twins; the family's kOfferMulticast): served by name only.
  for (const KernelSpec& c : igemm_wgmma().enumerate(reduce, gpu)) EXPECT_EQ(P(c).multicast, 1) << kernel_name(c);
  // Its limits, with the reasons.
  IgemmWgmmaParams no_tma = t;
  no_tma.tma_filter = false;
  const std::string needs =
      "mc (filter multicast) needs the filter by TMA (tma1), one tile a block (ws1) and no split-K cluster (cr0)";
  EXPECT_EQ(igemm_wgmma().check_support(reduce, gpu, to_spec(no_tma)), needs);
  IgemmWgmmaParams several = t;
  several.warp_specialized = 2;
  EXPECT_EQ(igemm_wgmma().check_support(reduce, gpu, to_spec(several)), needs);
  IgemmWgmmaParams cluster = t;
  cluster.split_k = 2;
  cluster.cluster_reduce = true;
  EXPECT_EQ(igemm_wgmma().check_support(reduce, gpu, to_spec(cluster)), needs);
  IgemmWgmmaParams narrow = t;
  narrow.block_n = 16;
  EXPECT_EQ(igemm_wgmma().check_support(reduce, gpu, to_spec(narrow)),
            "mc4 (filter multicast) needs block_n to be a multiple of 32 (whole 8-row atoms a share), got 16");
  narrow.multicast = 2;
  EXPECT_EQ(igemm_wgmma().check_support(reduce, gpu, to_spec(narrow)), std::nullopt);
  IgemmWgmmaParams three = t;
  three.multicast = 3;
  EXPECT_EQ(igemm_wgmma().check_support(reduce, gpu, to_spec(three)),
            "mc (filter multicast) must be 1, 2 or 4 blocks a cluster, got 3");
}

// The pixel rows by TMA in im2col mode (`ta2`): ResNet-50's conv4_1_3x3 at batch 2 (256 -> 256, 3 x 3, stride 2,
// padding 1, 28 x 28 -> 14 x 14): the activation's map is 4-D (C, W, H, N), each copy 128 pixels of 64 channels, its
// bounding box from -1 to 1 - 2 = -1 past the end (the tap-0 pixels of a stride-2 walk), traversal strides 2; the plan
// encodes it at setup and each block retargets its copy (per-call buffer). Its limits, with the reasons.
TEST(IgemmWgmmaFamily, PixelRowsByTmaInIm2colModePlanTheActivationsBoundingBox) {
  const Gpu gpu = h100();
  Problem p{.n = 2,
            .c = 256,
            .k = 256,
            .input = {1, 28, 28},
            .filter = {1, 3, 3},
            .stride = {1, 2, 2},
            .padding = {0, 1, 1},
            .layout = Layout::nhwc,
            .precision = Precision::fp16};
  const IgemmWgmmaParams t{.block_m = 128, .block_n = 128, .stages = 4, .warp_specialized = 1, .tma_filter = true,
                           .tma_activation = 2};
  const KernelSpec s = to_spec(t);
  EXPECT_EQ(kernel_name(s), "igemm_wgmma_m128_n128_kb1_st4_sk1_co0_ws1_tma1_fw0_cr0_ta2_wn0_mc1_hl0_sw0_sp0_oc0");
  ASSERT_EQ(igemm_wgmma().check_support(p, gpu, s), std::nullopt);
  const LaunchPlan plan = igemm_wgmma().plan(p, s);
  ASSERT_EQ(plan.tensor_maps.size(), 2u);
  const TensorMapSpec& map = plan.tensor_maps[1].spec;
  EXPECT_EQ(plan.tensor_maps[1].name, "activation_map");
  EXPECT_EQ(plan.tensor_maps[1].tensor, "activation");
  EXPECT_TRUE(map.im2col);
  EXPECT_EQ(map.rank, 4);
  EXPECT_EQ(map.dims, (std::array<std::int64_t, 5>{256, 28, 28, 2, 1}));
  EXPECT_EQ(map.strides, (std::array<std::int64_t, 4>{512, 28 * 512, 28 * 28 * 512, 0}));
  EXPECT_EQ(map.lower_corner, (std::array<int, 3>{-1, -1, 0}));
  EXPECT_EQ(map.upper_corner, (std::array<int, 3>{-1, -1, 0}));
  EXPECT_EQ(map.channels, 64u);
  EXPECT_EQ(map.pixels, 128u);
  EXPECT_EQ(map.element_strides, (std::array<unsigned, 5>{1, 2, 2, 1, 1}));
  EXPECT_FALSE(plan.tensor_maps[0].spec.im2col);  // the filter's, tiled
  // Tap-major needs whole 128-byte rows of channels a tap; chunk-major does not.
  Problem narrow = p;
  narrow.c = 96;
  EXPECT_EQ(igemm_wgmma().check_support(narrow, gpu, s),
            "ta2 (im2col) reads one tap's channels an atom: chunk-major (co1), or channels per group a multiple of 64 "
            "(whole 128-byte rows), got 96");
  IgemmWgmmaParams chunked = t;
  chunked.chunk_major = true;
  EXPECT_EQ(igemm_wgmma().check_support(narrow, gpu, to_spec(chunked)), std::nullopt);
  Problem grouped = narrow;
  grouped.c = 192;
  grouped.k = 128;
  grouped.groups = 2;
  EXPECT_EQ(igemm_wgmma().check_support(grouped, gpu, to_spec(chunked)),
            "ta2 (im2col) with groups needs channels per group a multiple of 64, got 96");
  Problem three_d = p;
  three_d.input = {4, 28, 28};
  three_d.filter = {3, 3, 3};
  three_d.padding = {1, 1, 1};
  three_d.layout = Layout::ndhwc;
  EXPECT_EQ(igemm_wgmma().check_support(three_d, gpu, s), "ta2 (the pixel rows by TMA in im2col mode) serves 2-D "
                                                          "problems only");
  Problem far = p;
  far.dilation = {1, 100, 100};
  far.padding = {0, 0, 0};
  far.input = {1, 300, 300};
  EXPECT_EQ(igemm_wgmma().check_support(far, gpu, s),
            "ta2 (im2col): the bounding box's corners (padding 0 x 0, the filter's reach 200 x 200) must lie "
            "within [-128, 127]");
  IgemmWgmmaParams no_tma = t;
  no_tma.tma_filter = false;
  EXPECT_EQ(igemm_wgmma().check_support(p, gpu, to_spec(no_tma)),
            "ta (the pixel rows by TMA) needs the filter by TMA too (tma1)");
}

// The operands swapped (`sw`): ResNet-50's conv2_3x3 at batch 2 (64 -> 64, 6,272 pixels) in tiles of 256 pixels by 64
// channels: 25 blocks of one multiplying warpgroup (its wgmma 64 channels by 256 pixels) and the producer, the same
// stages as unswapped; with `wn` two multiplying warpgroups, each half the pixels. Its limits, with the reasons; the
// search space does not offer it.
TEST(IgemmWgmmaFamily, SwappedOperandsPlanAWarpgroupPerSixtyFourChannels) {
  const Gpu gpu = h100();
  Problem p = kResnet3x3;
  p.n = 2;
  p.precision = Precision::fp16;
  p.layout = Layout::nhwc;
  IgemmWgmmaParams t{.block_m = 256, .block_n = 64, .stages = 4, .warp_specialized = 1, .tma_filter = true,
                     .swap_ab = true};
  const KernelSpec s = to_spec(t);
  EXPECT_EQ(kernel_name(s), "igemm_wgmma_m256_n64_kb1_st4_sk1_co0_ws1_tma1_fw0_cr0_ta0_wn0_mc1_hl0_sw1_sp0_oc0");
  EXPECT_EQ(parse_kernel_name(kernel_name(s)), s);
  ASSERT_EQ(igemm_wgmma().check_support(p, gpu, s), std::nullopt);
  const LaunchPlan plan = igemm_wgmma().plan(p, s);
  EXPECT_EQ(plan.main_geometry().grid, (std::array<unsigned, 3>{25, 1, 1}));
  EXPECT_EQ(plan.main_geometry().block, (std::array<unsigned, 3>{256, 1, 1}));
  EXPECT_EQ(plan.main_geometry().dynamic_smem_bytes, 4u * (256 + 64) * 128 + 1024 + 16 * 4);
  IgemmWgmmaParams halves = t;
  halves.split_n = true;
  ASSERT_EQ(igemm_wgmma().check_support(p, gpu, to_spec(halves)), std::nullopt);
  EXPECT_EQ(igemm_wgmma().plan(p, to_spec(halves)).main_geometry().block, (std::array<unsigned, 3>{384, 1, 1}));
  // The same products as unswapped.
  IgemmWgmmaParams own = t;
  own.swap_ab = false;
  EXPECT_EQ(igemm_wgmma().cost_features(p, s).fma_instructions,
            igemm_wgmma().cost_features(p, to_spec(own)).fma_instructions);
  // Split, through the workspace (a reduce pass after it) or in a cluster (none).
  IgemmWgmmaParams split = t;
  split.split_k = 2;
  ASSERT_EQ(igemm_wgmma().check_support(p, gpu, to_spec(split)), std::nullopt);
  EXPECT_EQ(igemm_wgmma().plan(p, to_spec(split)).run.size(), 2u);
  EXPECT_EQ(igemm_wgmma().plan(p, to_spec(split)).main_geometry().grid, (std::array<unsigned, 3>{25, 1, 2}));
  split.cluster_reduce = true;
  ASSERT_EQ(igemm_wgmma().check_support(p, gpu, to_spec(split)), std::nullopt);
  EXPECT_EQ(igemm_wgmma().plan(p, to_spec(split)).run.size(), 1u);
  // Its limits.
  const std::string needs = "sw (the operands swapped) needs one tile a block (ws0 or ws1) and none of mc and hl";
  for (const auto& change : std::vector<std::function<void(IgemmWgmmaParams&)>>{
           [](IgemmWgmmaParams& u) { u.warp_specialized = 2; }, [](IgemmWgmmaParams& u) { u.multicast = 2; }}) {
    IgemmWgmmaParams u = t;
    change(u);
    EXPECT_EQ(igemm_wgmma().check_support(p, gpu, to_spec(u)), needs) << kernel_name(to_spec(u));
  }
  IgemmWgmmaParams narrow = t;
  narrow.block_n = 32;
  EXPECT_EQ(igemm_wgmma().check_support(p, gpu, to_spec(narrow)),
            "sw (the operands swapped) needs block_n to be a multiple of 64 (the wgmma's M), got 32");
  Problem odd = p;
  odd.k = 60;
  EXPECT_EQ(igemm_wgmma().check_support(odd, gpu, s),
            "sw (the operands swapped) stages its output in 16-byte runs of channels: K 60 and K per group 60 must be "
            "multiples of 8");
  IgemmWgmmaParams shared = t;  // the shared pipeline: 4 warpgroups load 256 rows, 64 a pass: whole passes
  shared.warp_specialized = 0;
  shared.tma_filter = false;
  shared.block_n = 192;
  shared.block_m = 64;
  EXPECT_EQ(igemm_wgmma().check_support(p, gpu, to_spec(shared)),
            "sw (the operands swapped): 64 pixel rows do not divide among 384 loading threads (8 a row)");
  // Not offered (kOfferSwap: measured slower).
  p.n = 32;
  const std::vector<KernelSpec> specs = igemm_wgmma().enumerate(p, gpu);
  EXPECT_FALSE(std::any_of(specs.begin(), specs.end(), [](const KernelSpec& u) { return P(u).swap_ab; }));
  expect_a_sound_search_space(p, gpu);
}

// The halo (`hl`): ResNet-50's conv2_3x3 at batch 2 (64 -> 64, 3 x 3 at 56 x 56) in tiles of 8 output rows by 16
// columns (two warpgroups): 2 x 7 x 4 = 56 blocks; a stage holds the 10 x 24 patch (18 columns read, rounded up to 24)
// and the 9 taps' 64 filter rows, 128 bytes each; a step is one chunk of 64 channels. Its limits, with the reasons;
// the search space does not offer it.
TEST(IgemmWgmmaFamily, TheHaloPlansSpatialTilesAndStagesOfThePatchAndEveryTap) {
  const Gpu gpu = h100();
  Problem p = kResnet3x3;
  p.n = 2;
  p.precision = Precision::fp16;
  p.layout = Layout::nhwc;
  ASSERT_EQ(p.c, 64);
  ASSERT_EQ(p.input.h, 56);
  IgemmWgmmaParams t{.block_m = 128, .block_n = 64, .stages = 2, .warp_specialized = 1, .tma_filter = true,
                     .halo = true};
  const KernelSpec s = to_spec(t);
  EXPECT_EQ(kernel_name(s), "igemm_wgmma_m128_n64_kb1_st2_sk1_co0_ws1_tma1_fw0_cr0_ta0_wn0_mc1_hl1_sw0_sp0_oc0");
  EXPECT_EQ(parse_kernel_name(kernel_name(s)), s);
  ASSERT_EQ(igemm_wgmma().check_support(p, gpu, s), std::nullopt);
  const LaunchPlan plan = igemm_wgmma().plan(p, s);
  EXPECT_EQ(plan.main_geometry().grid, (std::array<unsigned, 3>{56, 1, 1}));
  EXPECT_EQ(plan.main_geometry().dynamic_smem_bytes, 2u * (10 * 24 + 9 * 64) * 128 + 1024 + 16 * 2);
  EXPECT_EQ(igemm_wgmma().cost_features(p, s).main_loop_steps, 1);
  // Its limits.
  const std::string needs = "hl (halo) needs ws1-ws8, tma1, kb1, sk1 and none of co, cr, ta, wn and mc";
  for (const auto& change : std::vector<std::function<void(IgemmWgmmaParams&)>>{
           [](IgemmWgmmaParams& u) { u.tma_filter = false; },
           [](IgemmWgmmaParams& u) { u.k_atoms = 2; }, [](IgemmWgmmaParams& u) { u.split_k = 2; },
           [](IgemmWgmmaParams& u) { u.chunk_major = true; }, [](IgemmWgmmaParams& u) { u.multicast = 2; }}) {
    IgemmWgmmaParams u = t;
    change(u);
    EXPECT_EQ(igemm_wgmma().check_support(p, gpu, to_spec(u)), needs) << kernel_name(to_spec(u));
  }
  const std::string shape =
      "hl (halo) needs a 2-D ungrouped problem of stride and dilation 1 whose channels are a multiple of 64 (whole "
      "128-byte rows)";
  Problem strided = p;
  strided.stride = {1, 2, 2};
  EXPECT_EQ(igemm_wgmma().check_support(strided, gpu, s), shape);
  Problem narrow = p;
  narrow.c = 32;
  EXPECT_EQ(igemm_wgmma().check_support(narrow, gpu, s), shape);
  Problem grouped = p;
  grouped.groups = 2;
  grouped.k = 128;
  EXPECT_EQ(igemm_wgmma().check_support(grouped, gpu, s), shape);
  IgemmWgmmaParams wide = t;
  wide.block_n = 128;
  EXPECT_EQ(igemm_wgmma().check_support(p, gpu, to_spec(wide)),
            "357408 bytes of shared memory per block exceed the gpu's 232448");
  // Filter-stationary (hl2): the whole filter of the one channel tile after 4 stages of patches, and, 3 tiles a block,
  // the output's buffer.
  IgemmWgmmaParams stationary = t;
  stationary.halo = 2;
  stationary.stages = 4;
  stationary.warp_specialized = 3;
  ASSERT_EQ(igemm_wgmma().check_support(p, gpu, to_spec(stationary)), std::nullopt);
  EXPECT_EQ(igemm_wgmma().plan(p, to_spec(stationary)).main_geometry().dynamic_smem_bytes,
            4u * 10 * 24 * 128 + 9 * 64 * 128 + 1024 + 16 * 4 + 16 + 128 * (2 * 64 + 16));
  EXPECT_EQ(igemm_wgmma().plan(p, to_spec(stationary)).main_geometry().grid, (std::array<unsigned, 3>{19, 1, 1}));
  stationary.block_n = 32;
  EXPECT_EQ(igemm_wgmma().check_support(p, gpu, to_spec(stationary)),
            "hl2 (the filter-stationary halo) needs the output channels within one channel tile: 64 > block_n 32");
  IgemmWgmmaParams one = t;
  one.stages = 1;
  EXPECT_EQ(igemm_wgmma().check_support(p, gpu, to_spec(one)), "stages must be 3 to 6 (2 to 6 with hl), got 1");
  // Not offered (measured slower than the gathering kernels; the family's kOfferHalo): served by name only.
  for (const KernelSpec& c : igemm_wgmma().enumerate(p, gpu)) EXPECT_EQ(P(c).halo, 0) << kernel_name(c);
}

TEST(IgemmWgmmaFamily, PixelRowsByTmaPlanTheActivationsMapAndABlocksCopyEachCall) {
  const Gpu gpu = h100();
  const Problem pointwise{.n = 2,
                          .c = 256,
                          .k = 128,
                          .input = {1, 14, 14},
                          .filter = {1, 1, 1},
                          .layout = Layout::nhwc,
                          .precision = Precision::fp16};
  IgemmWgmmaParams t{.block_m = 128, .block_n = 64, .warp_specialized = 1, .tma_filter = true, .tma_activation = true};
  const KernelSpec s = to_spec(t);
  EXPECT_EQ(kernel_name(s), "igemm_wgmma_m128_n64_kb1_st4_sk1_co0_ws1_tma1_fw0_cr0_ta1_wn0_mc1_hl0_sw0_sp0_oc0");
  ASSERT_EQ(igemm_wgmma().check_support(pointwise, gpu, s), std::nullopt);
  const LaunchPlan plan = igemm_wgmma().plan(pointwise, s);
  // The activation's map, passed by value with each launch (no buffer, no setup step).
  EXPECT_EQ(plan.find("activation_map"), nullptr);
  EXPECT_TRUE(plan.setup.empty());
  EXPECT_EQ(plan.persistent_bytes(), 0);
  ASSERT_NE(plan.find_map("activation_map"), nullptr);
  EXPECT_EQ(plan.find_map("activation_map")->tensor, "activation");
  EXPECT_EQ(plan.find_map("activation_map")->spec, (TensorMapSpec{.type = TensorMapSpec::Type::float16,
                                                                  .rank = 2,
                                                                  .dims = {256, 392, 1, 1, 1},
                                                                  .strides = {512, 0, 0, 0},
                                                                  .box = {64, 128, 1, 1, 1},
                                                                  .swizzle_128b = true}));
  EXPECT_EQ(igemm_wgmma().cost_features(pointwise, s).global_load_instructions, 0);
  // Its limits, with the reasons.
  t.tma_filter = false;
  EXPECT_EQ(igemm_wgmma().check_support(pointwise, gpu, to_spec(t)),
            "ta (the pixel rows by TMA) needs the filter by TMA too (tma1)");
  t.tma_filter = true;
  EXPECT_NE(igemm_wgmma().check_support(kResnet3x3, gpu, to_spec(t)), std::nullopt);
  Problem strided = pointwise;
  strided.stride = {1, 2, 2};
  EXPECT_EQ(igemm_wgmma().check_support(strided, gpu, to_spec(t)),
            "ta (the pixel rows by TMA) needs an ungrouped 1 x 1 problem of stride 1 and no padding, whose activation "
            "is the GEMM's pixel-by-channel matrix");
  Problem grouped = pointwise;
  grouped.groups = 2;
  EXPECT_NE(igemm_wgmma().check_support(grouped, gpu, to_spec(t)), std::nullopt);
  // Offered by the search space each beside its `tma1` twin (the family's kOfferTmaActivation), and swapped beside it
  // (kOfferSwapWithTmaActivation); where the activation is not a matrix, the im2col twins (`ta2`) are, each beside its
  // `tma1` twin.
  const std::vector<KernelSpec> pointwise_offered = igemm_wgmma().enumerate(pointwise, gpu);
  int tiled = 0, swapped = 0;
  for (const KernelSpec& c : pointwise_offered) {
    EXPECT_NE(P(c).tma_activation, 2) << kernel_name(c);
    if (P(c).tma_activation != 1) continue;
    ++tiled;
    swapped += P(c).swap_ab;
    if (P(c).block_m % 64 != 0) continue;  // a swapped tile that fills the last wave (pixel_filling_twin)
    IgemmWgmmaParams twin = P(c);  // its `tma1` twin (of a swapped one: the unswapped `ta1` twin's)
    twin.tma_activation = 0;
    twin.swap_ab = false;
    twin.split_n = false;
    EXPECT_TRUE(std::find(pointwise_offered.begin(), pointwise_offered.end(), to_spec(twin)) != pointwise_offered.end())
        << kernel_name(c);
  }
  EXPECT_GT(tiled, 0);
  EXPECT_GT(swapped, 0);
  const std::vector<KernelSpec> offered = igemm_wgmma().enumerate(kResnet3x3, gpu);
  int im2col = 0;
  for (const KernelSpec& c : offered) {
    EXPECT_NE(P(c).tma_activation, 1) << kernel_name(c);
    if (P(c).tma_activation != 2) continue;
    ++im2col;
    IgemmWgmmaParams twin = P(c);
    twin.tma_activation = 0;
    EXPECT_TRUE(std::find(offered.begin(), offered.end(), to_spec(twin)) != offered.end()) << kernel_name(c);
  }
  EXPECT_GT(im2col, 0);
  // Names of earlier convgens load the pixel rows by cp.async.
  EXPECT_FALSE(P(parse_kernel_name("igemm_wgmma_m128_n64_kb1_st4_sk1_co0_ws1_tma1_fw0_cr0")).tma_activation);
}

// The plan of a `tma` kernel: the filter's tensor map, which the launcher encodes over each call's filter and passes
// by value: a K x KR matrix in boxes of 128 bytes by BLOCK_N rows, or chunk-major K x taps x CG in boxes of one tap.
// No buffer and no setup step.
TEST(IgemmWgmmaFamily, ATmaKernelsPlanPassesTheFiltersTensorMapByValue) {
  const KernelSpec tma = to_spec(IgemmWgmmaParams{.block_n = 32, .warp_specialized = true, .tma_filter = true});
  const LaunchPlan plan = igemm_wgmma().plan(kResnet3x3, tma);
  ASSERT_EQ(plan.buffers.size(), 4u);
  EXPECT_EQ(plan.find("filter_map"), nullptr);
  EXPECT_EQ(plan.persistent_bytes(), 0);
  EXPECT_EQ(plan.workspace_bytes(), 0);
  EXPECT_TRUE(plan.setup.empty());
  ASSERT_EQ(plan.tensor_maps.size(), 2u);
  EXPECT_EQ(plan.tensor_maps[0].name, "filter_map");
  EXPECT_EQ(plan.tensor_maps[0].tensor, "filter");
  EXPECT_EQ(plan.tensor_maps[1], (PlanTensorMap{.name = "activation_map"}));  // zeros: `ta` reads it
  // fp16: 64 rows of 9 x 64 = 576 elements (1,152 bytes); boxes of 64 elements by 32 rows.
  EXPECT_EQ(plan.tensor_maps[0].spec, (TensorMapSpec{.type = TensorMapSpec::Type::float16,
                                                     .rank = 2,
                                                     .dims = {576, 64, 1, 1, 1},
                                                     .strides = {1152, 0, 0, 0},
                                                     .box = {64, 32, 1, 1, 1},
                                                     .swizzle_128b = true}));
  ASSERT_EQ(plan.run.size(), 1u);
  // tf32: boxes of 32 elements (128 bytes); chunk-major: taps between channels and rows.
  const KernelSpec chunked =
      to_spec(IgemmWgmmaParams{.block_n = 64, .chunk_major = true, .warp_specialized = true, .tma_filter = true});
  const Problem tf32 = with(kResnet3x3, Precision::tf32, Layout::nhwc);
  EXPECT_EQ(igemm_wgmma().plan(tf32, chunked).tensor_maps.at(0).spec,
            (TensorMapSpec{.type = TensorMapSpec::Type::float32,
                           .rank = 3,
                           .dims = {64, 9, 64, 1, 1},
                           .strides = {256, 2304, 0, 0},
                           .box = {32, 1, 64, 1, 1},
                           .swizzle_128b = true}));
  EXPECT_EQ(igemm_wgmma().plan(with(kResnet3x3, Precision::bf16, Layout::nhwc), tma).tensor_maps.at(0).spec.type,
            TensorMapSpec::Type::bfloat16);
  // Groups: the map spans every group's rows (a block starts at its group's first row).
  Problem grouped = kResnet3x3;
  grouped.groups = 4;
  EXPECT_EQ(igemm_wgmma().plan(grouped, tma).tensor_maps.at(0).spec.dims,
            (std::array<std::int64_t, 5>{144, 64, 1, 1, 1}));
  // The filter's rows bypass the threads' loads: the cost features count the pixel rows' alone (128 rows of 576
  // elements in 8-element loads: 9,216 thread loads, 288 warp instructions; with cp.async 32 rows more, 360).
  const KernelSpec cp_async = to_spec(IgemmWgmmaParams{.block_n = 32, .warp_specialized = true});
  EXPECT_DOUBLE_EQ(igemm_wgmma().cost_features(kResnet3x3, tma).global_load_instructions, 288);
  EXPECT_DOUBLE_EQ(igemm_wgmma().cost_features(kResnet3x3, cp_async).global_load_instructions, 360);
}

}  // namespace
}  // namespace convgen

namespace convgen {
namespace {

// The 2:4 configurations (`sp`): offered only for an fp16 / bf16 problem that carries its own 2:4 filter, beside the
// dense ones; their plan compresses the filter once (the pack entry: the kept half of each row, padded to the channel
// tile and to steps of 128, and 64 bytes of metadata for 16 rows of 32) and reads the compressed copy instead of the
// filter; their stages hold two K atoms of pixel rows, one of compressed filter rows and the metadata; half the
// tensor-core work of the dense twin; and their limits.
TEST(IgemmWgmmaFamily, TwoFourFiltersPlanTheirCompressionOnceAndMultiplyByWgmmaSp) {
  const Gpu gpu = h100();
  Problem shape = kResnet3x3;  // 64 -> 64 channels, 3 x 3: a reduction of 576, 4.5 steps of 128
  shape.n = 2;
  shape.k = 200;
  shape.precision = Precision::fp16;
  shape.layout = Layout::nhwc;
  const Problem p = with_weights(shape, two_four_pruned_random_filter(shape, 7));
  ASSERT_TRUE(is_two_four_sparse(p));
  const IgemmWgmmaParams t{.block_m = 128,
                           .block_n = 128,
                           .k_atoms = 2,
                           .stages = 4,
                           .warp_specialized = 1,
                           .swap_ab = true,
                           .sparse_filter = true};
  const KernelSpec s = to_spec(t);
  EXPECT_EQ(kernel_name(s), "igemm_wgmma_m128_n128_kb2_st4_sk1_co0_ws1_tma0_fw0_cr0_ta0_wn0_mc1_hl0_sw1_sp1_oc0");
  EXPECT_EQ(parse_kernel_name(kernel_name(s)), s);
  // A name of before `sp` means a dense filter.
  EXPECT_EQ(
      P(parse_kernel_name("igemm_wgmma_m128_n128_kb2_st4_sk1_co0_ws1_tma0_fw0_cr0_ta0_wn0_mc1_hl0_sw1")).sparse_filter,
      false);
  ASSERT_EQ(igemm_wgmma().check_support(p, gpu, s), std::nullopt);
  EXPECT_EQ(igemm_wgmma().filter_dependence(s), FilterDependence::pattern);
  IgemmWgmmaParams dense_twin = t;
  dense_twin.sparse_filter = false;
  EXPECT_EQ(igemm_wgmma().filter_dependence(to_spec(dense_twin)), FilterDependence::none);
  // The default family for a 2:4 problem on a GPU with wgmma (sparse24_tc where there is none); not for a dense one.
  EXPECT_LT(igemm_wgmma().default_rank(p), family("sparse24_tc").default_rank(p));
  EXPECT_EQ(igemm_wgmma().default_rank(shape), -2);

  const LaunchPlan plan = igemm_wgmma().plan(p, s);
  const std::int64_t rows = 256, kr = 640;  // 200 channels padded to two tiles of 128; 576 to five steps of 128
  ASSERT_EQ(plan.buffers.size(), 4u);
  EXPECT_EQ(plan.buffers[2], (PlanBuffer{.name = "packed_values", .bytes = rows * kr / 2 * 2, .persistent = true}));
  EXPECT_EQ(plan.buffers[3],
            (PlanBuffer{.name = "packed_meta", .bytes = rows / 16 * (kr / 32) * 64, .persistent = true}));
  ASSERT_EQ(plan.setup.size(), 1u);
  EXPECT_EQ(plan.setup[0].entry_suffix, "pack");
  EXPECT_EQ(plan.setup[0].geometry.grid[0], static_cast<unsigned>((rows * (kr / 16) + 255) / 256));
  EXPECT_EQ(plan.setup[0].geometry.block[0], 256u);
  EXPECT_EQ(plan.main_geometry().block, (std::array<unsigned, 3>{384, 1, 1}));  // 2 warpgroups of 64 channels + 1
  EXPECT_EQ(plan.main_geometry().dynamic_smem_bytes, 4u * ((128 * 2 + 128) * 128 + 128 / 16 * 256) + 1024 + 16 * 4);
  EXPECT_EQ(plan.tensor_alignment.filter, 0);  // the pack entry reads it one element at a time
  // Half the tensor-core work of the same configuration multiplying the dense filter, and fewer filter loads.
  const CostFeatures sparse_cost = igemm_wgmma().cost_features(p, s);
  const CostFeatures dense_cost = igemm_wgmma().cost_features(p, to_spec(dense_twin));
  EXPECT_DOUBLE_EQ(sparse_cost.fma_instructions * 2, dense_cost.fma_instructions);
  EXPECT_LT(sparse_cost.global_load_instructions, dense_cost.global_load_instructions);

  // Offered for the 2:4 problem, in both pipelines; never for its dense twin, in tf32, or for a filter not 2:4.
  const auto sparse_offered = [&gpu](const Problem& q) {
    int n = 0;
    for (const KernelSpec& c : igemm_wgmma().enumerate(q, gpu)) n += P(c).sparse_filter;
    return n;
  };
  std::set<int> pipelines;
  std::set<std::pair<int, bool>> splits;  // split_k, in a cluster
  for (const KernelSpec& c : igemm_wgmma().enumerate(p, gpu))
    if (P(c).sparse_filter) {
      EXPECT_EQ(igemm_wgmma().check_support(p, gpu, c), std::nullopt) << kernel_name(c);
      pipelines.insert(P(c).warp_specialized);
      splits.emplace(P(c).split_k, P(c).cluster_reduce);
      EXPECT_EQ(igemm_wgmma().plan(p, c).run.size(), P(c).split_k > 1 && !P(c).cluster_reduce ? 2u : 1u)
          << kernel_name(c);
    }
  EXPECT_EQ(pipelines, (std::set<int>{0, 1}));
  // Split as the dense search splits: a reduction of 576 is 9 atoms of 64, 5 steps of two: 2 ways (3 steps and 2),
  // through the workspace and in a cluster; 4 ways would leave the last split without work (4 atoms a split).
  EXPECT_EQ(splits, (std::set<std::pair<int, bool>>{{1, false}, {2, false}, {2, true}}));
  EXPECT_EQ(sparse_offered(shape), 0);
  Problem tf32 = p;
  tf32.precision = Precision::tf32;
  EXPECT_EQ(sparse_offered(tf32), 0);
  const Problem unstructured = with_weights(shape, pruned_random_filter(shape, 0.5, 7));
  ASSERT_FALSE(is_two_four_sparse(unstructured));
  EXPECT_EQ(sparse_offered(unstructured), 0);
  EXPECT_EQ(igemm_wgmma().check_support(unstructured, gpu, s),
            "the problem's filter is not 2:4: some chunk of 4 consecutive values of a filter row has more than 2 "
            "nonzeros (--weight-sparsity 2:4 prunes to the pattern)");
  EXPECT_EQ(igemm_wgmma().check_support(shape, gpu, s),
            "sp compresses the problem's own 2:4 filter, and this problem has none");
  // Its limits.
  const std::string needs =
      "sp (the 2:4 filter, wgmma.sp) needs sw1 (the filter the wgmma's A) and kb2, and none of "
      "tma, co, ta and fw";
  for (const auto& change : std::vector<std::function<void(IgemmWgmmaParams&)>>{
           [](IgemmWgmmaParams& u) { u.swap_ab = false; }, [](IgemmWgmmaParams& u) { u.k_atoms = 1; },
           [](IgemmWgmmaParams& u) { u.tma_filter = true; }, [](IgemmWgmmaParams& u) { u.chunk_major = true; }}) {
    IgemmWgmmaParams u = t;
    change(u);
    EXPECT_EQ(igemm_wgmma().check_support(p, gpu, to_spec(u)), needs) << kernel_name(to_spec(u));
  }
  Problem rgb = shape;  // 3 channels: padded to 8, which the compressed copy does not do
  rgb.c = 3;
  rgb = with_weights(rgb, two_four_pruned_random_filter(rgb, 7));
  EXPECT_EQ(igemm_wgmma().check_support(rgb, gpu, s),
            "sp (the 2:4 filter) reads its compressed copy of the filter as it lies: not where its 3 channels are "
            "padded to 8");
}

}  // namespace
}  // namespace convgen
