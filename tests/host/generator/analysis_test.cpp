// analysis_test: roofline numbers of known layers, count weighting, the table golden and the JSON.
#include "generator/analysis.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "convgen/error.hpp"

namespace convgen {
namespace {

// Round numbers, so the expected times can be worked by hand.
const Gpu test_gpu{
    .name = "test gpu", .arch = "sm_90", .dram_bandwidth_gbs = 3000, .peak_fp32_tflops = 60, .peak_fp16_tflops = 1000};

// ResNet-50's 3x3 64->64 at 56x56: compute bound in fp32.
const Layer conv3x3{.name = "conv2_3x3",
                    .problem = {.c = 64, .k = 64, .input = {1, 56, 56}, .filter = {1, 3, 3}, .padding = {0, 1, 1}}};

// A 1x1 256->64 at 56x56 in fp16: memory bound against 1000 TFLOP/s.
const Layer conv1x1{.name = "conv2_1x1",
                    .problem = {.c = 256, .k = 64, .input = {1, 56, 56}, .precision = Precision::fp16},
                    .count = 3};

TEST(Analysis, KnownLayerHasItsFlopsBytesAndComputeFloor) {
  const LayerAnalysis a = analyze_layer(conv3x3, test_gpu);
  EXPECT_EQ(a.flops, 2.0 * 64 * 64 * 9 * 56 * 56);
  EXPECT_EQ(a.flops, 231211008.0);
  EXPECT_EQ(a.bytes, (64.0 * 56 * 56 * 2 + 64 * 64 * 9) * 4);
  EXPECT_DOUBLE_EQ(a.intensity, 231211008.0 / 1753088.0);
  EXPECT_DOUBLE_EQ(a.floor_us, 231211008.0 / 60e12 * 1e6);  // 3.85 us compute vs 0.58 us memory
  EXPECT_TRUE(a.compute_bound);
  EXPECT_EQ(a.count, 1);
  EXPECT_EQ(a.name, "conv2_3x3");
}

TEST(Analysis, WinogradFloorOnlyWhereWinogradApplies) {
  const LayerAnalysis a = analyze_layer(conv3x3, test_gpu);
  EXPECT_EQ(winograd_flop_reduction(conv3x3.problem), 4);
  EXPECT_EQ(a.winograd_flops, 231211008.0 / 4);
  EXPECT_DOUBLE_EQ(a.winograd_floor_us, 231211008.0 / 4 / 60e12 * 1e6);  // 0.96 us compute, still above memory
  EXPECT_EQ(analyze_layer(conv1x1, test_gpu).winograd_floor_us, 0);
  Problem strided = conv3x3.problem;
  strided.stride = {1, 2, 2};
  EXPECT_EQ(winograd_flop_reduction(strided), 0);
  Problem volume = conv3x3.problem;
  volume.filter = {3, 3, 3};
  volume.input = {8, 16, 16};
  volume.padding = {1, 1, 1};
  volume.layout = Layout::ncdhw;
  EXPECT_EQ(winograd_flop_reduction(volume), 8);
}

TEST(Analysis, LowIntensityLayerIsMemoryBound) {
  const LayerAnalysis a = analyze_layer(conv1x1, test_gpu);
  EXPECT_EQ(a.flops, 2.0 * 256 * 64 * 56 * 56);
  EXPECT_EQ(a.bytes, (256.0 * 56 * 56 + 64 * 256 + 64 * 56 * 56) * 2);
  EXPECT_DOUBLE_EQ(a.floor_us, 2039808.0 / 3000e9 * 1e6);  // 0.68 us memory vs 0.10 us compute
  EXPECT_FALSE(a.compute_bound);
}

TEST(Analysis, TotalsWeightEachLayerByItsCount) {
  const NetworkAnalysis a = analyze(Suite{.name = "mini", .layers = {conv3x3, conv1x1}}, test_gpu);
  ASSERT_EQ(a.layers.size(), 2u);
  EXPECT_EQ(a.name, "mini");
  EXPECT_EQ(a.total_flops, 231211008.0 + 3 * 102760448.0);
  EXPECT_EQ(a.total_bytes, 1753088.0 + 3 * 2039808.0);
  EXPECT_DOUBLE_EQ(a.total_floor_us, a.layers[0].floor_us + 3 * a.layers[1].floor_us);
}

TEST(Analysis, TableShowsEachLayerThenCountWeightedTotals) {
  const NetworkAnalysis a = analyze(Suite{.name = "mini", .layers = {conv3x3, conv1x1}}, test_gpu);
  EXPECT_EQ(format_analysis_table(a, test_gpu),
            "layer      shape                                    count  GFLOP     MB  FLOP/B  floor µs  bound\n"
            "conv2_3x3  64->64 3x3 s1 p1 at 56x56 -> 56x56, n1       1  0.231  1.753   131.9      3.85  compute\n"
            "conv2_1x1  256->64 1x1 s1 p0 at 56x56 -> 56x56, n1      3  0.103  2.040    50.4      0.68  memory\n"
            "--------------------------------------------------------------------------------------------------\n"
            "total                                                   4  0.539  7.873    68.5      5.89\n"
            "roofline on test gpu: DRAM 3000 GB/s; fp32 60.0 TFLOP/s (ridge 20.0 FLOP/B); "
            "fp16 1000.0 TFLOP/s (ridge 333.3 FLOP/B)\n");
}

TEST(Analysis, JsonHoldsLayersAndTotals) {
  const NetworkAnalysis a = analyze(Suite{.name = "mini", .layers = {conv3x3, conv1x1}}, test_gpu);
  const auto json = nlohmann::json::parse(analysis_to_json(a, test_gpu));
  EXPECT_EQ(json["suite"], "mini");
  EXPECT_EQ(json["gpu"]["name"], "test gpu");
  ASSERT_EQ(json["layers"].size(), 2u);
  EXPECT_EQ(json["layers"][0]["problem"], problem_key(conv3x3.problem));
  EXPECT_EQ(json["layers"][0]["bound"], "compute");
  EXPECT_EQ(json["layers"][1]["bound"], "memory");
  EXPECT_EQ(json["layers"][1]["count"], 3);
  EXPECT_EQ(json["total"]["count"], 4);
  EXPECT_EQ(json["total"]["flops"].get<double>(), a.total_flops);
  EXPECT_EQ(json["total"]["floor_us"].get<double>(), a.total_floor_us);
}

TEST(Analysis, GpuWithoutThePrecisionsPeakIsRejected) {
  const Layer bf16{.name = "x", .problem = {.precision = Precision::bf16}};
  try {
    analyze_layer(bf16, test_gpu);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "gpu 'test gpu': peak_bf16_tflops must be positive to analyze bf16 layer 'x', got 0");
  }
}

TEST(Analysis, GpuWithoutBandwidthIsRejected) {
  Gpu gpu = test_gpu;
  gpu.dram_bandwidth_gbs = 0;
  try {
    analyze_layer(conv3x3, gpu);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "gpu 'test gpu': dram_bandwidth_gbs must be positive, got 0");
  }
}

TEST(Analysis, InvalidLayerIsRejectedWithItsName) {
  const Layer bad{.name = "bad", .problem = {.c = 3, .groups = 2}};
  try {
    analyze_layer(bad, test_gpu);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "layer 'bad': input channels 3 are not divisible by groups 2");
  }
}

}  // namespace
}  // namespace convgen
