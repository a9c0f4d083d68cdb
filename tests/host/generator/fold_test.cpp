// fold_test: FoldedCNNs' fold of a suite, the seed's way and exactly.
#include "generator/fold.hpp"

#include <filesystem>

#include <gtest/gtest.h>

#include "convgen/error.hpp"
#include "generator/analysis.hpp"

namespace convgen {
namespace {

const std::filesystem::path kShapes = std::filesystem::path(CONVGEN_SOURCE_DIR) / "shapes";

Suite at_batch(Suite suite, int batch) {
  for (Layer& layer : suite.layers) layer.problem.n = batch;
  return suite;
}

std::string error_of(const Suite& suite, int factor, FoldKind kind) {
  try {
    fold_suite(suite, factor, kind);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// The seed's models widen as its code does: the first layer's input channels x f, the classifier's outputs x f,
// every hidden width int(width * sqrt(f)).
TEST(Fold, TheSeedsWayWidensTheFirstInputAndLastOutputByFAndTheRestBySqrtF) {
  const Suite coral = at_batch(load_suite(kShapes / "noscope_coral.csv"), 1024);
  const Suite folded = fold_suite(coral, 4, FoldKind::seed);
  EXPECT_EQ(folded.name, "noscope_coral_fold4");
  ASSERT_EQ(folded.layers.size(), coral.layers.size());
  const int c[] = {12, 32, 32, 256}, k[] = {32, 32, 256, 8};
  for (std::size_t i = 0; i < folded.layers.size(); ++i) {
    const Problem& p = folded.layers[i].problem;
    EXPECT_EQ(p.n, 256) << i;
    EXPECT_EQ(p.c, c[i]) << i;
    EXPECT_EQ(p.k, k[i]) << i;
    EXPECT_EQ(p.groups, 1) << i;
    EXPECT_EQ(p.input, coral.layers[i].problem.input) << i;
    EXPECT_EQ(p.filter, coral.layers[i].problem.filter) << i;
  }
  // f = 2: int(16 * 1.414) = 22, int(128 * 1.414) = 181; the chain of widths still joins.
  const Suite two = fold_suite(coral, 2, FoldKind::seed);
  EXPECT_EQ(two.layers[0].problem.c, 6);
  EXPECT_EQ(two.layers[0].problem.k, 22);
  EXPECT_EQ(two.layers[2].problem.k, 181);
  EXPECT_EQ(two.layers[3].problem.k, 4);
  for (std::size_t i = 0; i + 1 < two.layers.size(); ++i)
    EXPECT_EQ(two.layers[i].problem.k, two.layers[i + 1].problem.c) << i;
}

// Exactly: f groups of the unfolded layer, the same FLOPs and per image the same bytes of activations.
TEST(Fold, TheExactWayComputesTheSameFunctionInFGroups) {
  const Suite game = at_batch(load_suite(kShapes / "game_scraping.csv"), 1024);
  const Suite folded = fold_suite(game, 4, FoldKind::exact);
  EXPECT_EQ(folded.name, "game_scraping_xfold4");
  for (std::size_t i = 0; i < folded.layers.size(); ++i) {
    const Problem& p = folded.layers[i].problem;
    const Problem& q = game.layers[i].problem;
    EXPECT_EQ(p.n, 256);
    EXPECT_EQ(p.c, 4 * q.c);
    EXPECT_EQ(p.k, 4 * q.k);
    EXPECT_EQ(p.groups, 4 * q.groups);
    EXPECT_EQ(flops(p), flops(q)) << i;
  }
  Gpu gpu;
  gpu.peak_fp32_tflops = 60;
  gpu.dram_bandwidth_gbs = 3000;
  EXPECT_DOUBLE_EQ(analyze(folded, gpu).total_flops, analyze(game, gpu).total_flops);
}

// The seed's fold raises the network's arithmetic intensity (its ai.py's point): activations ÷ sqrt(f) per image.
TEST(Fold, TheSeedsFoldRaisesTheNetworksArithmeticIntensity) {
  Gpu gpu;
  gpu.peak_fp32_tflops = 60;
  gpu.dram_bandwidth_gbs = 3000;
  for (const char* stem : {"noscope_coral", "noscope_taipei", "noscope_roundabout", "game_scraping"}) {
    const Suite suite = at_batch(load_suite(kShapes / (std::string(stem) + ".csv")), 1024);
    const NetworkAnalysis before = analyze(suite, gpu);
    const NetworkAnalysis after = analyze(fold_suite(suite, 4, FoldKind::seed), gpu);
    EXPECT_GT(after.total_flops / after.total_bytes, 1.3 * before.total_flops / before.total_bytes) << stem;
  }
}

TEST(Fold, BadFoldsAreRefusedNamingTheLayer) {
  const Suite coral = load_suite(kShapes / "noscope_coral.csv");  // batch 1
  EXPECT_EQ(error_of(coral, 4, FoldKind::seed),
            "fold: layer 'conv1': batch 1 is not a multiple of the fold factor 4 (set the batch with --batch)");
  EXPECT_EQ(error_of(coral, 0, FoldKind::seed), "fold: the factor must be at least 1, got 0");
  Suite grouped = at_batch(coral, 8);
  grouped.layers[1].problem.groups = 16;
  grouped.layers[1].problem.k = 16;
  EXPECT_EQ(error_of(grouped, 2, FoldKind::seed),
            "fold: layer 'conv2' has 16 groups: the seed's fold widens ungrouped layers only (--exact folds any layer)");
  EXPECT_EQ(error_of(grouped, 2, FoldKind::exact), "");
  Suite counted = at_batch(coral, 8);
  counted.layers.back().count = 2;
  EXPECT_EQ(error_of(counted, 2, FoldKind::seed),
            "fold: layer 'fc2' is the network's last layer and counts 2 layers: the first and last rows must be one "
            "layer each");
  EXPECT_EQ(fold_suite(coral, 1, FoldKind::seed).layers, coral.layers);  // f = 1 changes nothing but the name
}

}  // namespace
}  // namespace convgen
