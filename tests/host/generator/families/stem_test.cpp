// stem_test: the few-channel family's search space (every candidate supported, within the GPU's limits, on every
// stem of the suites), its support reasons, its plan (one early launch over column and row tiles, channel tiles and
// images) and its place in the default choice (first from 8 MFLOP of work).
#include <gtest/gtest.h>

#include "generator/family.hpp"
#include "generator/shapes.hpp"
#include "stem_params.hpp"
#include "support/corpus.hpp"

namespace convgen {
namespace {

using testing_support::h100;
using testing_support::source_dir;

const Family& stem() { return family("stem"); }

Problem resnet50_conv1(int batch) {
  Problem p = load_suite(source_dir() / "shapes" / "resnet50.csv").layers.front().problem;
  p.n = batch;
  return p;
}

TEST(StemFamily, EnumeratesSupportedCandidatesForEveryFewChannelLayerOfTheSuites) {
  const Gpu gpu = h100();
  int served = 0;
  for (const char* suite : {"resnet50.csv", "densenet121.csv", "resnet20_cifar.csv", "cusnn.csv"}) {
    for (const Layer& layer : load_suite(source_dir() / "shapes" / suite).layers) {
      for (int batch : {1, 8}) {
        Problem p = layer.problem;
        p.n = batch;
        const std::vector<KernelSpec> specs = stem().enumerate(p, gpu);
        if (p.c > 8) {
          EXPECT_TRUE(specs.empty()) << problem_key(p);
          continue;
        }
        ++served;
        ASSERT_FALSE(specs.empty()) << problem_key(p);
        EXPECT_LE(specs.size(), 24u);
        for (const KernelSpec& spec : specs) {
          EXPECT_EQ(stem().check_support(p, gpu, spec), std::nullopt) << kernel_name(spec);
          const CostFeatures f = stem().cost_features(p, spec);
          EXPECT_GT(f.blocks, 0);
          EXPECT_LE(f.smem_bytes_per_block, 48 * 1024);
          EXPECT_GE(f.flops_per_block * static_cast<double>(f.blocks), f.flops) << kernel_name(spec);
        }
      }
    }
  }
  EXPECT_GE(served, 6);  // resnet50's, densenet121's and resnet20's stems at two batches
}

TEST(StemFamily, ThePlanIsOneEarlyLaunchOverColumnAndRowTilesChannelTilesAndImages) {
  const Problem p = resnet50_conv1(8);  // 112 x 112 outputs, 64 channels
  const KernelSpec spec = to_spec(StemParams{.block_q = 32, .thread_p = 4, .thread_k = 16, .warps_p = 2, .warps_k = 2});
  ASSERT_EQ(stem().check_support(p, h100(), spec), std::nullopt);
  EXPECT_EQ(kernel_name(spec), "stem_q32_tp4_tk16_wp2_wk2");
  const LaunchPlan plan = stem().plan(p, spec);
  ASSERT_EQ(plan.run.size(), 1u);
  EXPECT_TRUE(plan.setup.empty());
  EXPECT_TRUE(plan.run.front().early_launch);
  const LaunchGeometry& g = plan.main_geometry();
  EXPECT_EQ(g.grid[0], 4u * 14u);  // 4 column tiles of 32 (the last 16 wide) x 14 row tiles of 8
  EXPECT_EQ(g.grid[1], 2u);        // 2 channel tiles of 32
  EXPECT_EQ(g.grid[2], 8u);        // one image each
  EXPECT_EQ(g.block[0], 128u);
  EXPECT_EQ(g.dynamic_smem_bytes, 0u);
}

TEST(StemFamily, RefusesWhatItDoesNotServeWithTheReason) {
  const Gpu gpu = h100();
  const KernelSpec spec = to_spec(StemParams{.block_q = 32, .thread_p = 4, .thread_k = 16, .warps_p = 2, .warps_k = 2});
  const auto reason = [&](Problem p) { return stem().check_support(p, gpu, spec).value_or("supported"); };
  Problem p = resnet50_conv1(1);
  p.precision = Precision::fp16;
  EXPECT_EQ(reason(p), "precision fp16 is not supported by stem (fp32 only)");
  p = resnet50_conv1(1);
  p.layout = Layout::nhwc;
  EXPECT_EQ(reason(p), "stem handles channels-first layouts only, got nhwc");
  p = resnet50_conv1(1);
  p.c = 16;
  EXPECT_EQ(reason(p), "stem serves at most 8 input channels (a stem's), got 16");
  p = resnet50_conv1(1);
  p.c = 4;
  p.k = 64;
  p.groups = 2;
  EXPECT_EQ(reason(p), "stem handles ungrouped convolutions only, got 2 groups");
  p = resnet50_conv1(1);
  p.input = {5, 224, 224};
  p.filter = {3, 7, 7};
  p.layout = Layout::ncdhw;
  EXPECT_EQ(reason(p), "stem handles 1-D and 2-D layers only, got depth 5 and a filter depth of 3");
  p = resnet50_conv1(1);
  const KernelSpec bad_q = to_spec(StemParams{.block_q = 8, .thread_p = 4, .thread_k = 16, .warps_p = 2, .warps_k = 2});
  EXPECT_EQ(stem().check_support(p, gpu, bad_q).value_or(""), "block_q must be 16 or 32, got 8");
  // 8 rows of 16 channels a thread: 128 accumulators and a 21-value column.
  const KernelSpec big = to_spec(StemParams{.block_q = 32, .thread_p = 8, .thread_k = 16, .warps_p = 1, .warps_k = 1});
  EXPECT_EQ(stem().check_support(p, gpu, big).value_or(""),
            "an estimated 189 registers per thread (128 accumulators) would spill");
  // A grayscale stem: 6 rows of 16 channels a thread need a 17-value column, an estimated 153 registers; 512 threads
  // of that exceed a block's 65,536 (the patch and filter of one channel fit in shared memory).
  Problem gray = p;
  gray.c = 1;
  const KernelSpec tall = to_spec(StemParams{.block_q = 16, .thread_p = 6, .thread_k = 16, .warps_p = 4, .warps_k = 4});
  EXPECT_EQ(stem().check_support(gray, gpu, tall).value_or(""),
            "an estimated 153 registers per thread x 512 threads exceed the 65536 registers per block");
  // 64 channels of a 7x7 filter over 3 channels and a 29-row patch: past 48 KiB.
  const KernelSpec wide = to_spec(StemParams{.block_q = 32, .thread_p = 4, .thread_k = 16, .warps_p = 4, .warps_k = 4});
  EXPECT_NE(stem().check_support(p, gpu, wide).value_or("").find("bytes of shared memory"), std::string::npos);
}

// Measured on the H200 (bench/results/h200/stem-2026-11-30/): first for ResNet-50's stem at batch 1 and 8 and
// ResNet-20's at batch 32; ResNet-20's at batch 1 (0.9 MFLOP) stays direct's.
TEST(StemFamily, IsTheDefaultChoiceForTheStemsItWasMeasuredFastestOn) {
  const Gpu gpu = h100();
  EXPECT_EQ(default_choice(resnet50_conv1(1), gpu).family, "stem");
  EXPECT_EQ(default_choice(resnet50_conv1(8), gpu).family, "stem");
  Problem small = load_suite(source_dir() / "shapes" / "resnet20_cifar.csv").layers.front().problem;
  small.n = 1;
  EXPECT_EQ(default_choice(small, gpu).family, "direct");
  small.n = 32;
  EXPECT_EQ(default_choice(small, gpu).family, "stem");
  // Not first where it does not serve: fp16, or more than 8 channels.
  Problem half = resnet50_conv1(8);
  half.precision = Precision::fp16;
  EXPECT_NE(default_choice(half, gpu).family, "stem");
}

}  // namespace
}  // namespace convgen
