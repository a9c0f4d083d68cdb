// suites_test: every checked-in shapes/*.csv loads and validates, and the network suites add up to the known totals.
#include <algorithm>
#include <filesystem>
#include <set>

#include <gtest/gtest.h>

#include "generator/shapes.hpp"

namespace convgen {
namespace {

const std::filesystem::path kShapes = std::filesystem::path(CONVGEN_SOURCE_DIR) / "shapes";

Suite load(std::string_view stem) { return load_suite(kShapes / (std::string(stem) + ".csv")); }

TEST(Suites, EveryShapesFileLoadsValidatesAndRoundTrips) {
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kShapes)) {
    if (entry.path().extension() != ".csv") continue;
    ++files;
    SCOPED_TRACE(entry.path().string());
    const Suite suite = load_suite(entry.path());
    EXPECT_EQ(suite.name, entry.path().stem().string());
    std::set<std::string> names;
    for (const Layer& layer : suite.layers) {
      EXPECT_EQ(validate(layer.problem), "") << layer.name;
      EXPECT_TRUE(names.insert(layer.name).second) << "duplicate layer name " << layer.name;
    }
    EXPECT_EQ(parse_suite(write_suite_csv(suite), entry.path().string()), suite);
  }
  EXPECT_GE(files, 10);
}

// The FoldedCNNs seed's models: each layer's outputs are the next one's inputs, and the classifier ends at 1x1.
TEST(Suites, TheFoldedCnnModelsChainTheirWidthsAndEndAtOnePixel) {
  for (const char* stem : {"noscope_coral", "noscope_taipei", "noscope_roundabout", "game_scraping"}) {
    const Suite suite = load(stem);
    for (std::size_t i = 0; i + 1 < suite.layers.size(); ++i)
      EXPECT_EQ(suite.layers[i].problem.k, suite.layers[i + 1].problem.c) << stem << " " << suite.layers[i].name;
    const Dims3 out = output_dims(suite.layers.back().problem);
    EXPECT_EQ(out.h * out.w, 1) << stem;
  }
}

TEST(Suites, NetworkSuitesAreBatchOneNchwFp32) {
  for (const auto* stem :
       {"resnet50", "resnet101", "resnet152", "densenet121", "densenet169", "densenet201", "resnet20_cifar", "cusnn"}) {
    for (const Layer& layer : load(stem).layers) {
      EXPECT_EQ(layer.problem.n, 1) << stem << " " << layer.name;
      EXPECT_EQ(layer.problem.layout, Layout::nchw) << stem << " " << layer.name;
      EXPECT_EQ(layer.problem.precision, Precision::fp32) << stem << " " << layer.name;
    }
  }
}

TEST(Suites, ResNetsCountEveryConvIncludingTheFourProjections) {
  // Stem + 3 convs per bottleneck block + one projection per stage.
  EXPECT_EQ(suite_conv_count(load("resnet50")), 1 + 3 * (3 + 4 + 6 + 3) + 4);
  EXPECT_EQ(suite_conv_count(load("resnet101")), 1 + 3 * (3 + 4 + 23 + 3) + 4);
  EXPECT_EQ(suite_conv_count(load("resnet152")), 1 + 3 * (3 + 8 + 36 + 3) + 4);
  EXPECT_EQ(suite_conv_count(load("resnet50")), 53);
}

TEST(Suites, ResNet50IsAbout4Point1GigaMultiplyAdds) {
  // Published: 4.1 GMACs per 224x224 image (the fully connected layer adds only 2 M).
  EXPECT_NEAR(static_cast<double>(suite_flops(load("resnet50"))), 8.2e9, 0.03 * 8.2e9);
  EXPECT_NEAR(static_cast<double>(suite_flops(load("resnet101"))), 15.6e9, 0.03 * 15.6e9);
  EXPECT_NEAR(static_cast<double>(suite_flops(load("resnet152"))), 23.1e9, 0.03 * 23.1e9);
}

TEST(Suites, DenseNetsCountStemDenseLayersAndTransitions) {
  EXPECT_EQ(suite_conv_count(load("densenet121")), 1 + 2 * (6 + 12 + 24 + 16) + 3);
  EXPECT_EQ(suite_conv_count(load("densenet121")), 120);
  EXPECT_EQ(suite_conv_count(load("densenet169")), 1 + 2 * (6 + 12 + 32 + 32) + 3);
  EXPECT_EQ(suite_conv_count(load("densenet201")), 1 + 2 * (6 + 12 + 48 + 32) + 3);
}

TEST(Suites, DenseNetsAreAboutTheirPublishedMultiplyAdds) {
  // torchvision: 2.83, 3.36 and 4.29 GMACs per image, almost all of it in the convs.
  EXPECT_NEAR(static_cast<double>(suite_flops(load("densenet121"))), 5.66e9, 0.03 * 5.66e9);
  EXPECT_NEAR(static_cast<double>(suite_flops(load("densenet169"))), 6.72e9, 0.03 * 6.72e9);
  EXPECT_NEAR(static_cast<double>(suite_flops(load("densenet201"))), 8.58e9, 0.03 * 8.58e9);
}

TEST(Suites, DenseNetLastBlockEndsWithTheClassifierWidth) {
  // The 1x1 of the last dense layer reads all but 32 of the channels the classifier sees (1024, 1664, 1920).
  EXPECT_EQ(load("densenet121").layers.rbegin()[1].problem.c, 1024 - 32);
  EXPECT_EQ(load("densenet169").layers.rbegin()[1].problem.c, 1664 - 32);
  EXPECT_EQ(load("densenet201").layers.rbegin()[1].problem.c, 1920 - 32);
}

TEST(Suites, ResNet20HasNineteen3x3ConvsAndTwoProjections) {
  const Suite suite = load("resnet20_cifar");
  int three = 0, one = 0;
  for (const Layer& layer : suite.layers) (layer.problem.filter.w == 3 ? three : one) += layer.count;
  EXPECT_EQ(three, 19);
  EXPECT_EQ(one, 2);
  EXPECT_NEAR(static_cast<double>(suite_flops(suite)), 82e6, 0.03 * 82e6);  // about 41 M multiply-adds
}

TEST(Suites, CosmoFlowLayersHalveTheCubeFrom128To2) {
  const Suite suite = load("cosmoflow");
  ASSERT_EQ(suite.layers.size(), 7u);
  int extent = 128;
  for (const Layer& layer : suite.layers) {
    EXPECT_EQ(layer.problem.layout, Layout::ncdhw);
    EXPECT_EQ(output_dims(layer.problem), (Dims3{extent, extent, extent})) << layer.name;
    extent /= 2;
  }
}

TEST(Suites, CusnnLayersAreAll3x3Stride1Pad1) {
  const Suite suite = load("cusnn");
  ASSERT_EQ(suite.layers.size(), 8u);
  for (const Layer& layer : suite.layers) {
    EXPECT_EQ(layer.problem.filter, (Dims3{1, 3, 3}));
    EXPECT_EQ(layer.problem.stride, (Dims3{1, 1, 1}));
    EXPECT_EQ(layer.problem.padding, (Dims3{0, 1, 1}));
  }
}

TEST(Suites, EdgeCasesStaySmallEnoughForTheCpuReference) {
  const Suite suite = load("edge_cases");
  EXPECT_GE(suite.layers.size(), 25u);
  EXPECT_LE(suite.layers.size(), 40u);
  for (const Layer& layer : suite.layers) EXPECT_LT(flops(layer.problem), 20'000'000) << layer.name;
}

TEST(Suites, EdgeCasesCoverEveryCornerTheDesignNames) {
  const Suite suite = load("edge_cases");
  const auto any = [&](auto predicate) {
    return std::any_of(suite.layers.begin(), suite.layers.end(), [&](const Layer& l) { return predicate(l.problem); });
  };
  EXPECT_TRUE(any([](const Problem& p) { return p.c == 1; }));
  EXPECT_TRUE(any([](const Problem& p) { return p.c == 3; }));
  EXPECT_TRUE(any([](const Problem& p) { return p.k % 4 != 0 && p.k > 32; }));
  EXPECT_TRUE(any([](const Problem& p) { return p.input.h % 2 == 1 && p.input.w % 2 == 1 && p.input.h != p.input.w; }));
  EXPECT_TRUE(any([](const Problem& p) { return p.stride.h == 2; }));
  EXPECT_TRUE(any([](const Problem& p) { return p.padding.h > p.stride.h && p.stride.h == 1; }));
  EXPECT_TRUE(any([](const Problem& p) { return p.padding.h > p.stride.h && p.stride.h == 2; }));
  EXPECT_TRUE(any([](const Problem& p) { return p.dilation.h == 2; }));
  for (int f : {1, 5, 7}) EXPECT_TRUE(any([&](const Problem& p) { return p.filter.h == f && p.filter.w == f; }));
  EXPECT_TRUE(any([](const Problem& p) { return p.filter.h == 1 && p.filter.w == 3; }));
  EXPECT_TRUE(any([](const Problem& p) { return p.filter.h == 3 && p.filter.w == 1; }));
  EXPECT_TRUE(any([](const Problem& p) { return p.n == 2; }));
  EXPECT_TRUE(any([](const Problem& p) { return p.n == 3; }));
  EXPECT_TRUE(any([](const Problem& p) { return p.groups > 1 && p.groups < p.c; }));
  EXPECT_TRUE(any([](const Problem& p) { return p.groups == p.c && p.k == p.c; }));
  EXPECT_TRUE(any([](const Problem& p) { return p.groups == p.c && p.k == 2 * p.c; }));
  EXPECT_TRUE(any([](const Problem& p) { return rank(p.layout) == 3 && p.stride.d == 2 && p.padding.d > 0; }));
  EXPECT_TRUE(any([](const Problem& p) { return rank(p.layout) == 1; }));
  EXPECT_TRUE(any([](const Problem& p) { return p.layout == Layout::nhwc && p.groups > 1; }));
  EXPECT_TRUE(any([](const Problem& p) { return p.layout == Layout::ndhwc; }));
  EXPECT_TRUE(any([](const Problem& p) { return p.input == Dims3{1, 1, 1} && p.filter == Dims3{1, 1, 1}; }));
}

}  // namespace
}  // namespace convgen
