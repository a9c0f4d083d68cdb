// weight_sparse_test: the weight-sparse family's support reasons, the code it generates from a pruned filter (one
// FMA per nonzero, one load per activation a channel group needs, values as immediates or gathered), the table
// variant (tb1: code independent of the nonzeros, SLOTS the fullest channel's count), the staged table (tb2:
// STAGE_CHANNELS, the output tile of its patch and the chunk starts its plan makes room for), its launch plans, the order of its
// candidates and its place in the default choice. The tables' packing runs in weight_sparse_emulation_test.
#include <algorithm>
#include <regex>
#include <set>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "convgen/weights.hpp"
#include "generator/family.hpp"
#include "reference/pruning.hpp"
#include "support/corpus.hpp"
#include "weight_sparse_params.hpp"

namespace convgen {
namespace {

using testing_support::h100;

const Family& weight_sparse() { return family("weight_sparse"); }

const Problem kLayer{.n = 1, .c = 16, .k = 12, .input = {1, 9, 9}, .filter = {1, 3, 3}, .padding = {0, 1, 1}};

WeightSparseParams params(int pixels, int k_group, bool immediates) {
  WeightSparseParams s;
  s.block_pixels = pixels;
  s.k_group = k_group;
  s.immediates = immediates;
  return s;
}

WeightSparseParams table_params(int pixels, int k_group, int pixels_per_thread, int split = 1) {
  WeightSparseParams s;
  s.block_pixels = pixels;
  s.k_group = k_group;
  s.table = true;
  s.pixels_per_thread = pixels_per_thread;
  s.split = split;
  return s;
}

std::int64_t nonzeros(const Problem& p) {
  return std::count_if(p.weights.values->begin(), p.weights.values->end(), [](float v) { return v != 0.0f; });
}

std::size_t count(const std::string& text, const std::string& pattern) {
  const std::regex re(pattern);
  return static_cast<std::size_t>(
      std::distance(std::sregex_iterator(text.begin(), text.end(), re), std::sregex_iterator()));
}

// What a library that embeds the kernel must check of a filter it is given (emit-lib): the nonzeros' positions,
// and with the values as immediates those too; every other family reads any filter.
TEST(WeightSparseFamily, DependsOnItsFiltersPatternAndWithImmediatesOnItsValues) {
  EXPECT_EQ(weight_sparse().filter_dependence(to_spec(params(128, 4, false))), FilterDependence::pattern);
  EXPECT_EQ(weight_sparse().filter_dependence(to_spec(params(128, 4, true))), FilterDependence::values);
  EXPECT_EQ(weight_sparse().filter_dependence(to_spec(table_params(128, 1, 1))), FilterDependence::pattern);
  for (const char* dense : {"igemm", "direct", "act_sparse", "winograd_gemm", "pointwise", "igemm_wgmma"})
    for (const KernelSpec& spec : family(dense).enumerate(kLayer, h100()))
      EXPECT_EQ(family(dense).filter_dependence(spec), FilterDependence::none) << kernel_name(spec);
}

TEST(WeightSparseFamily, ServesOnlyProblemsThatCarryTheirFilter) {
  const KernelSpec s = to_spec(params(128, 4, true));
  EXPECT_EQ(weight_sparse().check_support(kLayer, h100(), s),
            "weight_sparse bakes the problem's own filter, and this problem has none");
  EXPECT_TRUE(weight_sparse().enumerate(kLayer, h100()).empty());
  const Problem pruned = with_weights(kLayer, pruned_random_filter(kLayer, 0.9, 1));
  EXPECT_EQ(weight_sparse().check_support(pruned, h100(), s), std::nullopt);
  Problem pattern_only = pruned;
  pattern_only.weights.values = nullptr;
  EXPECT_NE(weight_sparse().check_support(pattern_only, h100(), s)->find("needs the values of filter pattern"),
            std::string::npos);
  Problem half = pruned;
  half.precision = Precision::fp16;
  EXPECT_EQ(weight_sparse().check_support(half, h100(), s),
            "precision fp16 is not supported by weight_sparse (fp32 only)");
  const Problem big{.n = 1, .c = 512, .k = 512, .input = {1, 7, 7}, .filter = {1, 3, 3}, .padding = {0, 1, 1}};
  const Problem big_pruned = with_weights(big, pruned_random_filter(big, 0.5, 1));
  EXPECT_EQ(weight_sparse().check_support(big_pruned, h100(), s),
            "1179648 nonzero weights exceed the 2048 baked into one kernel (NVRTC time); the table variant (tb1) "
            "serves it");
  EXPECT_EQ(weight_sparse().check_support(big_pruned, h100(), to_spec(table_params(128, 4, 2))), std::nullopt);
}

TEST(WeightSparseFamily, TableVariantDeclinesImmediatesAndBakedCodeDeclinesSeveralPixelsPerThread) {
  const Problem pruned = with_weights(kLayer, pruned_random_filter(kLayer, 0.9, 1));
  WeightSparseParams table = table_params(128, 4, 1);
  table.immediates = true;
  EXPECT_EQ(weight_sparse().check_support(pruned, h100(), to_spec(table)),
            "the table variants read their values from the packed array (iv must be 0 with tb 1 or 2)");
  WeightSparseParams baked = params(128, 4, false);
  baked.pixels_per_thread = 2;
  EXPECT_EQ(weight_sparse().check_support(pruned, h100(), to_spec(baked)),
            "baked code computes one pixel per thread, got pt 2 (pt is the table's)");
  baked.pixels_per_thread = 1;
  baked.split = 4;
  EXPECT_EQ(weight_sparse().check_support(pruned, h100(), to_spec(baked)),
            "baked code sums a channel group in one thread, got sk 4 (sk is the table's)");
  EXPECT_EQ(weight_sparse().check_support(pruned, h100(), to_spec(table_params(256, 4, 1, 8))),
            "2048 threads exceed the gpu's 1024");
  EXPECT_EQ(weight_sparse().check_support(pruned, h100(), to_spec(table_params(48, 4, 1, 2))),
            "the table's slices are whole warps: p must be a multiple of 32, got 48");
  // A table code keeps an image's activation offset in 26 bits: 256 x 512 x 512 = 2^26 activations is one too many.
  const Problem wide{.n = 1, .c = 256, .k = 4, .input = {1, 512, 512}, .filter = {1, 1, 1}};
  EXPECT_EQ(weight_sparse().check_support(with_weights(wide, pruned_random_filter(wide, 0.9, 1)), h100(),
                                          to_spec(table_params(128, 4, 1))),
            "an image of 67108864 activations exceeds the table codes' 26-bit offsets");
}

TEST(WeightSparseFamily, TableCodeIsTheSameForAnyNonzeroCountAndHoldsTheFullestChannelsCount) {
  // Two filters of 90% and 50% zeros: the table variant's ws_code differs only in SLOTS and the comment naming the
  // pattern; no FMA, load or gathered index is rendered.
  const Problem sparse = with_weights(kLayer, pruned_random_filter(kLayer, 0.9, 3));
  const Problem denser = with_weights(kLayer, pruned_random_filter(kLayer, 0.5, 3));
  const KernelSpec spec = to_spec(table_params(64, 4, 2));
  for (const Problem* p : {&sparse, &denser}) {
    std::string text = weight_sparse().render(*p, spec).text;
    text = text.substr(0, text.find("#line 1"));
    EXPECT_EQ(count(text, R"(fmaf\()"), 0u);
    EXPECT_EQ(count(text, R"(__ldg\()"), 0u);
    EXPECT_NE(text.find("constexpr int NNZ = 0;"), std::string::npos);
    EXPECT_NE(text.find("constexpr int TABLE = 1;"), std::string::npos) << text;
    EXPECT_NE(text.find("constexpr int PIXELS_PER_THREAD = 2;"), std::string::npos);
    // Per-channel magnitude pruning keeps the same count in every channel: 144 taps x (1 - zeros), rounded.
    std::int64_t most = 0;
    const std::vector<float>& v = *p->weights.values;
    for (int k = 0; k < p->k; ++k)
      most = std::max<std::int64_t>(
          most, std::count_if(v.begin() + k * 144, v.begin() + (k + 1) * 144, [](float x) { return x != 0.0f; }));
    EXPECT_NE(text.find(fmt::format("constexpr int SLOTS = {};", most)), std::string::npos);
  }
  const std::size_t sparse_bytes = weight_sparse().render(sparse, spec).text.size();
  const std::size_t denser_bytes = weight_sparse().render(denser, spec).text.size();
  EXPECT_LE(std::max(sparse_bytes, denser_bytes) - std::min(sparse_bytes, denser_bytes), 2u);
  // One channel with more nonzeros than the others sets SLOTS.
  std::vector<float> values(static_cast<std::size_t>(filter_elements(kLayer)), 0.0f);
  for (int i = 0; i < 3; ++i) values[144 * 2 + i * 7] = 1.0f;
  values[144 * 9] = -1.0f;
  EXPECT_NE(weight_sparse().render(with_weights(kLayer, values), spec).text.find("constexpr int SLOTS = 3;"),
            std::string::npos);
  // Every weight zero: a table of one slot a channel (the counts are 0).
  const std::vector<float> zeros(values.size(), 0.0f);
  EXPECT_NE(weight_sparse().render(with_weights(kLayer, zeros), spec).text.find("constexpr int SLOTS = 1;"),
            std::string::npos);
}

TEST(WeightSparseFamily, TablePlanPacksThePatternOnceAndCoversEveryPixel) {
  const Problem p = with_weights(kLayer, pruned_random_filter(kLayer, 0.5, 1));  // 72 of 144 a channel
  const LaunchPlan plan = weight_sparse().plan(p, to_spec(table_params(32, 8, 2)));
  ASSERT_EQ(plan.setup.size(), 1u);
  EXPECT_EQ(plan.setup[0].entry_suffix, "pack_pattern");
  EXPECT_EQ(plan.setup[0].geometry.grid, (std::array<unsigned, 3>{1, 1, 1}));  // a thread per channel
  EXPECT_EQ(plan.setup[0].geometry.block, (std::array<unsigned, 3>{256, 1, 1}));
  ASSERT_NE(plan.find("pattern_codes"), nullptr);
  EXPECT_TRUE(plan.find("pattern_codes")->persistent);
  EXPECT_EQ(plan.find("pattern_codes")->bytes, 4 * (12 + 12 * 72));  // the counts, then a row of codes a channel
  EXPECT_EQ(plan.find("packed_values")->bytes, 4 * 12 * 72);
  ASSERT_EQ(plan.run.size(), 1u);
  // 81 pixels by 32 threads x 2 pixels, 12 channels by 8.
  EXPECT_EQ(plan.run[0].geometry.grid, (std::array<unsigned, 3>{2, 2, 1}));
  EXPECT_EQ(plan.run[0].geometry.block, (std::array<unsigned, 3>{32, 1, 1}));
  // 4 slices of a row: 4 x 32 threads a block, the same grid.
  const LaunchPlan split = weight_sparse().plan(p, to_spec(table_params(32, 8, 2, 4)));
  EXPECT_EQ(split.run[0].geometry.grid, (std::array<unsigned, 3>{2, 2, 1}));
  EXPECT_EQ(split.run[0].geometry.block, (std::array<unsigned, 3>{128, 1, 1}));
  EXPECT_EQ(plan.workspace_bytes(), 0);
}

TEST(WeightSparseFamily, StagedTableStagesChunksOfChannelsThatFitItsSharedMemory) {
  // ResNet-50's conv2_expand shape, smaller: 64 -> 40 1x1 at 20x20, 90% zeros.
  const Problem shape{.n = 1, .c = 64, .k = 40, .input = {1, 20, 20}, .filter = {1, 1, 1}};
  const Problem p = with_weights(shape, pruned_random_filter(shape, 0.9, 2));
  WeightSparseParams staged = table_params(64, 16, 2);
  staged.table = 2;
  EXPECT_EQ(weight_sparse().check_support(p, h100(), to_spec(staged)), std::nullopt);
  EXPECT_EQ(kernel_name(to_spec(staged)), "weight_sparse_p64_kg16_iv0_tb2_pt2_sk1_lc0");
  // An earlier convgen's name (before lc) is the same kernel.
  EXPECT_EQ(parse_kernel_name("weight_sparse_p64_kg16_iv0_tb2_pt2_sk1"), to_spec(staged));
  // A tile of 128 pixels, two a thread read as one float2 (rows of 128 floats), stages 8192 / 128 = 64 channels at
  // a time: one chunk, and K rows of 2 chunk starts.
  const std::string text = weight_sparse().render(p, to_spec(staged)).text;
  EXPECT_NE(text.find("constexpr int STAGE_CHANNELS = 64;"), std::string::npos);
  // One pixel a thread: rows of 129 (odd: no bank conflicts staging channels-last), 8192 / 129 = 63 channels a chunk.
  WeightSparseParams scalar = table_params(128, 16, 1);
  scalar.table = 2;
  EXPECT_NE(weight_sparse().render(p, to_spec(scalar)).text.find("constexpr int STAGE_CHANNELS = 63;"),
            std::string::npos);
  // Channels-last with vector reads: rows of 128 + 4 (the stores down a pixel's channels), 8192 / 132 = 62.
  Problem nhwc = p;
  nhwc.layout = Layout::nhwc;
  EXPECT_NE(weight_sparse().render(nhwc, to_spec(staged)).text.find("constexpr int STAGE_CHANNELS = 62;"),
            std::string::npos);
  const int slots = 6;  // 10% of 64 weights a channel kept: 6
  EXPECT_NE(text.find(fmt::format("constexpr int SLOTS = {};", slots)), std::string::npos) << text.substr(0, 400);
  const LaunchPlan plan = weight_sparse().plan(p, to_spec(staged));
  ASSERT_NE(plan.find("pattern_codes"), nullptr);
  EXPECT_EQ(plan.find("pattern_codes")->bytes, 4 * (40 + 40 * slots + 40 * 2));
  EXPECT_EQ(plan.find("packed_values")->bytes, 8 * 40 * slots);              // (code, value) pairs
  EXPECT_EQ(plan.run[0].geometry.grid, (std::array<unsigned, 3>{4, 3, 1}));  // 400 pixels by 128, 40 channels by 16
  EXPECT_EQ(plan.run[0].geometry.block, (std::array<unsigned, 3>{64, 1, 1}));
  // The staged table takes up to 128 channels a block in up to 16 slices; the rolled table 64 and 8.
  WeightSparseParams wide = table_params(32, 128, 4, 16);
  wide.table = 2;
  EXPECT_EQ(weight_sparse().check_support(p, h100(), to_spec(wide)), std::nullopt);
  wide.table = 1;
  EXPECT_THAT(weight_sparse().check_support(p, h100(), to_spec(wide)).value_or(""),
              testing::HasSubstr("k_group must be 1 to 64 (128 with tb 2), got 128"));
  wide.k_group = 64;
  EXPECT_THAT(weight_sparse().check_support(p, h100(), to_spec(wide)).value_or(""),
              testing::HasSubstr("split must be 1 to 8 (16 with tb 2), got 16"));
  // Fewer channels than a chunk holds: one chunk of all of them.
  WeightSparseParams narrow = table_params(32, 8, 1);
  narrow.table = 2;
  const Problem small{.n = 1, .c = 12, .k = 8, .input = {1, 6, 6}, .filter = {1, 1, 1}};
  EXPECT_NE(weight_sparse()
                .render(with_weights(small, pruned_random_filter(small, 0.5, 3)), to_spec(narrow))
                .text.find("constexpr int STAGE_CHANNELS = 12;"),
            std::string::npos);
  // 1x1 filters stage consecutive pixels: no output tile.
  EXPECT_NE(text.find("constexpr int TILE_H = 1, TILE_W = 1;"), std::string::npos);
  const std::vector<KernelSpec> specs = weight_sparse().enumerate(p, h100());
  EXPECT_TRUE(std::any_of(specs.begin(), specs.end(),
                          [](const KernelSpec& s) { return params_of<WeightSparseParams>(s).table == 2; }));
  // sk slices share the block's channels: 16 channels in 2 slices of 64 threads, not in 3.
  staged.split = 2;
  EXPECT_EQ(weight_sparse().check_support(p, h100(), to_spec(staged)), std::nullopt);
  EXPECT_EQ(weight_sparse().plan(p, to_spec(staged)).run[0].geometry.block, (std::array<unsigned, 3>{128, 1, 1}));
  // The same FMAs spread over twice the threads: half as many a warp.
  WeightSparseParams one_slice = staged;
  one_slice.split = 1;
  const CostFeatures two = weight_sparse().cost_features(p, to_spec(staged));
  const CostFeatures one = weight_sparse().cost_features(p, to_spec(one_slice));
  EXPECT_EQ(two.threads_per_block, 2 * one.threads_per_block);
  EXPECT_EQ(two.fma_instructions, one.fma_instructions);
  staged.k_group = 12;
  staged.split = 8;
  EXPECT_EQ(weight_sparse().check_support(p, h100(), to_spec(staged)),
            "the staged table's 8 slices share the block's 12 channels unevenly (kg must be a multiple of sk)");
  // The default is enumerate's first, the staged table among the candidates its estimate ranks; no staged
  // configuration of 8 pixels a thread is offered (measured slower everywhere).
  const std::optional<KernelSpec> chosen = weight_sparse().default_spec(p, h100());
  ASSERT_TRUE(chosen.has_value());
  EXPECT_EQ(*chosen, weight_sparse().enumerate(p, h100()).front()) << kernel_name(*chosen);
  for (const KernelSpec& spec : weight_sparse().enumerate(p, h100())) {
    const WeightSparseParams w = params_of<WeightSparseParams>(spec);
    EXPECT_FALSE(w.table == 2 && w.pixels_per_thread == 8) << kernel_name(spec);
  }
  // Its cost features count the same FLOPs as the table's.
  EXPECT_EQ(weight_sparse().cost_features(p, to_spec(table_params(64, 16, 2))).flops,
            weight_sparse().cost_features(p, to_spec(narrow)).flops);
}

// Live channels (lc): the staged table only, a twin of each staged configuration of a filter of several taps (dense or
// sparse activations), its
// compacted rows beside the staged channels in the static shared memory (fewer channels a chunk where they would not
// fit), its estimate the twin's walk times the measured ratio.
TEST(WeightSparseFamily, LiveChannelsCompactTheStagedTablesRowsIntoSharedMemory) {
  const Problem shape{.n = 1, .c = 64, .k = 128, .input = {1, 14, 14}, .filter = {1, 3, 3}, .padding = {0, 1, 1}};
  const Problem dense_input = with_weights(shape, pruned_random_filter(shape, 0.9, 2));
  const auto live_count = [](const std::vector<KernelSpec>& specs) {
    return std::count_if(specs.begin(), specs.end(),
                         [](const KernelSpec& s) { return params_of<WeightSparseParams>(s).live_channels; });
  };
  Problem sparse_input = dense_input;
  sparse_input.act_sparsity = 0.7;
  for (const Problem& p : {dense_input, sparse_input}) {
    const std::vector<KernelSpec> specs = weight_sparse().enumerate(p, h100());
    // Each staged configuration's twin, ranked ahead of it.
    const auto staged = std::count_if(specs.begin(), specs.end(), [](const KernelSpec& s) {
      const WeightSparseParams w = params_of<WeightSparseParams>(s);
      return w.table == 2 && !w.live_channels;
    });
    EXPECT_GT(staged, 0);
    EXPECT_EQ(live_count(specs), staged);
    for (auto it = specs.begin(); it != specs.end(); ++it) {
      WeightSparseParams w = params_of<WeightSparseParams>(*it);
      if (!w.live_channels) continue;
      w.live_channels = false;
      EXPECT_NE(std::find(it, specs.end(), to_spec(w)), specs.end()) << kernel_name(*it);
    }
  }

  WeightSparseParams live = table_params(64, 128, 1, 16);
  live.table = 2;
  live.live_channels = true;
  EXPECT_EQ(kernel_name(to_spec(live)), "weight_sparse_p64_kg128_iv0_tb2_pt1_sk16_lc1");
  ASSERT_EQ(weight_sparse().check_support(sparse_input, h100(), to_spec(live)), std::nullopt);
  // The most entries of one row in one chunk, counted from the filter (the case's own, not a bound).
  const std::string text = weight_sparse().render(sparse_input, to_spec(live)).text;
  const std::smatch channels = [&] {
    std::smatch m;
    std::regex_search(text, m, std::regex("constexpr int STAGE_CHANNELS = (\\d+);"));
    return m;
  }();
  std::smatch slots_match;
  ASSERT_TRUE(std::regex_search(text, slots_match, std::regex("constexpr int CHUNK_SLOTS = (\\d+);")));
  ASSERT_FALSE(channels.empty());
  const int stage_channels = std::stoi(channels[1]);
  const int chunk_slots = std::stoi(slots_match[1]);
  int most = 0;
  const std::vector<float>& filter = *sparse_input.weights.values;
  for (int k = 0; k < shape.k; ++k)
    for (int c0 = 0; c0 < shape.c; c0 += stage_channels) {
      int entries = 0;
      for (int c = c0; c < std::min(shape.c, c0 + stage_channels); ++c)
        for (int t = 0; t < 9; ++t) entries += filter[static_cast<std::size_t>((k * shape.c + c) * 9 + t)] != 0.0f;
      most = std::max(most, entries);
    }
  EXPECT_EQ(chunk_slots, most);
  // 128 rows of that many (code, value) pairs beside the staged patches (an 8 x 8 tile: 10 x 10 patches of 101
  // floats) fit 46 KiB; the lc0 twin stages all 64 channels (64 x 101 floats) at once.
  EXPECT_LE((stage_channels * 101 + 64 + 128) * 4 + (stage_channels + 128) * 4 + 128 * chunk_slots * 8, 46 * 1024);
  EXPECT_LT(stage_channels, 64);
  WeightSparseParams twin = live;
  twin.live_channels = false;
  EXPECT_NE(weight_sparse().render(sparse_input, to_spec(twin)).text.find("constexpr int STAGE_CHANNELS = 64;"),
            std::string::npos);
  // Its features: the shared memory of the compacted rows, the same FLOPs.
  EXPECT_GT(weight_sparse().cost_features(sparse_input, to_spec(live)).smem_bytes_per_block,
            weight_sparse().cost_features(sparse_input, to_spec(twin)).smem_bytes_per_block - 64 * 101 * 4);
  EXPECT_EQ(weight_sparse().cost_features(sparse_input, to_spec(live)).flops,
            weight_sparse().cost_features(sparse_input, to_spec(twin)).flops);
  // Not for 1 x 1 filters (a chunk's rows too short for the compaction to pay).
  const Problem pointwise{.n = 1, .c = 64, .k = 128, .input = {1, 14, 14}, .filter = {1, 1, 1}};
  EXPECT_EQ(
      live_count(weight_sparse().enumerate(with_weights(pointwise, pruned_random_filter(pointwise, 0.9, 2)), h100())),
      0);
  // The staged table only.
  WeightSparseParams table = table_params(64, 8, 1);
  table.live_channels = true;
  EXPECT_EQ(weight_sparse().check_support(sparse_input, h100(), to_spec(table)),
            "lc (live channels) needs the staged table (tb 2), got tb 1");
  WeightSparseParams baked = params(64, 8, false);
  baked.live_channels = true;
  EXPECT_EQ(weight_sparse().check_support(sparse_input, h100(), to_spec(baked)),
            "lc (live channels) needs the staged table (tb 2), got tb 0");
}

TEST(WeightSparseFamily, StagedTableStagesTheInputPatchOfATileForOtherFilters) {
  // kLayer (3x3 padding 1 at 9x9): a tile of 64 pixels is 8 x 8 output pixels, whose patch is 10 x 10 (row 101):
  // 4096 / 101 = 40 channels at a time, all 16; 2 x 2 tiles.
  const Problem three = with_weights(kLayer, pruned_random_filter(kLayer, 0.9, 1));
  WeightSparseParams staged = table_params(32, 8, 2);
  staged.table = 2;
  EXPECT_EQ(weight_sparse().check_support(three, h100(), to_spec(staged)), std::nullopt);
  const std::string text = weight_sparse().render(three, to_spec(staged)).text;
  EXPECT_NE(text.find("constexpr int TILE_H = 8, TILE_W = 8;"), std::string::npos);
  EXPECT_NE(text.find("constexpr int STAGE_CHANNELS = 16;"), std::string::npos);
  const LaunchPlan plan = weight_sparse().plan(three, to_spec(staged));
  EXPECT_EQ(plan.run[0].geometry.grid, (std::array<unsigned, 3>{4, 2, 1}));  // 2 x 2 tiles, 12 channels by 8
  EXPECT_TRUE(std::ranges::any_of(weight_sparse().enumerate(three, h100()),
                                  [](const KernelSpec& s) { return params_of<WeightSparseParams>(s).table == 2; }));
  // A short, wide image: the tile as wide as the row allows (1-D: the whole row).
  const Problem row{.n = 3, .c = 8, .k = 4, .input = {1, 1, 50}, .filter = {1, 1, 5}, .padding = {0, 0, 2},
                    .layout = Layout::nwc};
  EXPECT_NE(weight_sparse()
                .render(with_weights(row, pruned_random_filter(row, 0.5, 2)), to_spec(staged))
                .text.find("constexpr int TILE_H = 1, TILE_W = 50;"),
            std::string::npos);
  // 7 x 7 output: a 7 x 7 tile of the 64 threads' pixels, one block an image.
  const Problem small{.n = 2, .c = 32, .k = 16, .input = {1, 7, 7}, .filter = {1, 3, 3}, .padding = {0, 1, 1}};
  const Problem pruned_small = with_weights(small, pruned_random_filter(small, 0.9, 3));
  EXPECT_NE(weight_sparse().render(pruned_small, to_spec(staged)).text.find("constexpr int TILE_H = 7, TILE_W = 7;"),
            std::string::npos);
  EXPECT_EQ(weight_sparse().plan(pruned_small, to_spec(staged)).run[0].geometry.grid,
            (std::array<unsigned, 3>{2, 2, 1}));
  // A patch larger than the shared memory's channel: declined with the reason.
  const Problem huge{.n = 1, .c = 4, .k = 4, .input = {1, 200, 200}, .filter = {1, 5, 5}, .padding = {0, 2, 2},
                     .dilation = {1, 30, 30}};
  EXPECT_EQ(weight_sparse().check_support(with_weights(huge, pruned_random_filter(huge, 0.5, 4)), h100(),
                                          to_spec(staged)),
            "the staged table's patch of 16385 floats a channel exceeds its shared memory's 8192");
}

TEST(WeightSparseFamily, BigFiltersAreServedByTheTableAndSmallOnesBakedFirst) {
  // ResNet-50's conv4_3x3 (256 -> 256, 3x3 at 14x14) at 90% zeros: 59K nonzeros, only the table.
  const Problem big{.n = 1, .c = 256, .k = 256, .input = {1, 14, 14}, .filter = {1, 3, 3}, .padding = {0, 1, 1}};
  const Problem big_pruned = with_weights(big, pruned_random_filter(big, 0.9, 1));
  const std::vector<KernelSpec> big_specs = weight_sparse().enumerate(big_pruned, h100());
  ASSERT_FALSE(big_specs.empty());
  for (const KernelSpec& s : big_specs) EXPECT_TRUE(params_of<WeightSparseParams>(s).table) << kernel_name(s);
  EXPECT_EQ(default_choice(big_pruned, h100()).family, "weight_sparse");
  // kLayer at 90% zeros (180 nonzeros): baked first, the table after.
  const Problem small = with_weights(kLayer, pruned_random_filter(kLayer, 0.9, 1));
  const std::vector<KernelSpec> small_specs = weight_sparse().enumerate(small, h100());
  ASSERT_LE(nonzeros(small), 512);
  EXPECT_FALSE(params_of<WeightSparseParams>(small_specs.front()).table);
  EXPECT_TRUE(params_of<WeightSparseParams>(small_specs.back()).table);
  // 64 -> 64 3x3 at 97% zeros (1.1K nonzeros, within the 2048 that may be baked: about 1 s of NVRTC): baked first
  // too (until 2026-12-02 the table came first past 512).
  const Problem mid{.n = 1, .c = 64, .k = 64, .input = {1, 14, 14}, .filter = {1, 3, 3}, .padding = {0, 1, 1}};
  const Problem mid_pruned = with_weights(mid, pruned_random_filter(mid, 0.97, 1));
  ASSERT_GT(nonzeros(mid_pruned), 512);
  ASSERT_LE(nonzeros(mid_pruned), 2048);
  const std::vector<KernelSpec> mid_specs = weight_sparse().enumerate(mid_pruned, h100());
  EXPECT_FALSE(params_of<WeightSparseParams>(mid_specs.front()).table);
  EXPECT_TRUE(params_of<WeightSparseParams>(mid_specs.back()).table);
  // The table's cost features count the same FLOPs as the baked code's.
  const CostFeatures baked = weight_sparse().cost_features(mid_pruned, mid_specs.front());
  const CostFeatures table = weight_sparse().cost_features(mid_pruned, mid_specs.back());
  EXPECT_EQ(baked.flops, table.flops);
  EXPECT_GT(table.fma_instructions, 0);
}

TEST(WeightSparseFamily, GeneratesOneFmaPerNonzeroAndOneLoadPerNeededActivation) {
  for (const Layout layout : {Layout::nchw, Layout::nhwc}) {
    Problem p = kLayer;
    p.layout = layout;
    const std::vector<float> values = pruned_random_filter(p, 0.9, 3);
    p = with_weights(p, values);
    std::size_t nnz = 0;
    for (float v : values) nnz += v != 0.0f;
    for (const bool immediates : {true, false}) {
      // The generated code: the prelude, before the template's own (default) text.
      std::string text = weight_sparse().render(p, to_spec(params(64, 4, immediates))).text;
      text = text.substr(0, text.find("#line 1"));
      EXPECT_EQ(count(text, R"(acc\[\d+\] = fmaf\()"), nnz) << to_string(layout);
      // Each group's loads are distinct activations: at most one per nonzero.
      const std::size_t loads = count(text, R"(const float v = __ldg\(x \+ tb\[)");
      EXPECT_LE(loads, nnz);
      EXPECT_GT(loads, 0u);
      EXPECT_NE(text.find(p.weights.pattern), std::string::npos);
      if (immediates) {
        EXPECT_EQ(count(text, R"(wv\[)"), 0u);
        EXPECT_NE(text.find("constexpr int NNZ = 0;"), std::string::npos);
      } else {
        EXPECT_EQ(count(text, R"(fmaf\(wv\[)"), nnz);
        EXPECT_NE(text.find(fmt::format("constexpr int NNZ = {};", nnz)), std::string::npos);
      }
    }
  }
}

TEST(WeightSparseFamily, GathersEachPackedValueFromItsFilterIndex) {
  // One nonzero, at k 5, c 3, r 2, s 0: index ((5 * 16 + 3) * 3 + 2) * 3 + 0 = 753 in K C R S.
  std::vector<float> values(static_cast<std::size_t>(filter_elements(kLayer)), 0.0f);
  values[753] = 0.5f;
  const Problem p = with_weights(kLayer, values);
  const std::string text = weight_sparse().render(p, to_spec(params(64, 4, false))).text;
  EXPECT_NE(text.find("__device__ const int kGather[NNZ] = {\n  753\n};"), std::string::npos) << text.substr(0, 3000);
  // Channel 5 is accumulator 1 of group 1; its activation is channel 3 at row offset 2 (3 * 81 + 2 * 9 + 0 = 261),
  // tap 6.
  EXPECT_NE(text.find("case 1: {\n      { const float v = __ldg(x + tb[6] + 261); const float a = (valid >> 6) & 1u ? "
                      "v : 0.0f;\n        acc[1] = fmaf(wv[0], a, acc[1]);"),
            std::string::npos)
      << text.substr(text.find("namespace ws_code"), 1200);
  const std::string imm = weight_sparse().render(p, to_spec(params(64, 4, true))).text;
  EXPECT_NE(imm.find("acc[1] = fmaf(0x1p-1f, a, acc[1]);"), std::string::npos);
}

TEST(WeightSparseFamily, PlanGathersValuesOnceOnlyWhenTheyAreNotImmediates) {
  const Problem p = with_weights(kLayer, pruned_random_filter(kLayer, 0.5, 1));
  const LaunchPlan packed = weight_sparse().plan(p, to_spec(params(128, 8, false)));
  ASSERT_EQ(packed.setup.size(), 1u);
  EXPECT_EQ(packed.setup[0].entry_suffix, "pack_values");
  EXPECT_EQ(packed.buffers.at(0).name, "packed_values");
  EXPECT_EQ(packed.buffers.at(0).bytes, 4 * 72 * 12);  // 50% of 16 x 9 per channel, 12 channels
  EXPECT_EQ(packed.find("pattern_codes")->bytes, 4);   // bound to the entry's g_pattern_codes, unused
  EXPECT_EQ(packed.run.size(), 1u);
  EXPECT_EQ(packed.run[0].geometry.grid, (std::array<unsigned, 3>{1, 2, 1}));  // 81 pixels, 12 channels by 8
  EXPECT_TRUE(weight_sparse().plan(p, to_spec(params(128, 8, true))).setup.empty());
}

TEST(WeightSparseFamily, IsTheDefaultForMostlyZeroFilters) {
  const Problem sparse = with_weights(kLayer, pruned_random_filter(kLayer, 0.9, 1));
  EXPECT_EQ(default_choice(sparse, h100()).family, "weight_sparse");
  const Problem dense = with_weights(kLayer, pruned_random_filter(kLayer, 0.2, 1));
  EXPECT_NE(default_choice(dense, h100()).family, "weight_sparse");
  // Half zeros lost to cuDNN's dense routes on the H100; 70% won.
  EXPECT_NE(default_choice(with_weights(kLayer, pruned_random_filter(kLayer, 0.5, 1)), h100()).family, "weight_sparse");
  EXPECT_EQ(default_choice(with_weights(kLayer, pruned_random_filter(kLayer, 0.7, 1)), h100()).family, "weight_sparse");
  EXPECT_NE(default_choice(kLayer, h100()).family, "weight_sparse");
  std::set<std::string> names;
  for (const KernelSpec& s : weight_sparse().enumerate(sparse, h100())) {
    EXPECT_EQ(weight_sparse().check_support(sparse, h100(), s), std::nullopt);
    EXPECT_TRUE(names.insert(kernel_name(s)).second);
  }
  EXPECT_GT(names.size(), 4u);
}

}  // namespace
}  // namespace convgen
