// pointwise_test: the 1x1 SGEMM family's search space (float4 loads exactly where allowed, split-K only for small
// grids), its support reasons, and its plan (the filter packed once; one launch, and split-K's reduce).
#include <set>

#include <gtest/gtest.h>

#include "generator/family.hpp"
#include "generator/shapes.hpp"
#include "pointwise_params.hpp"
#include "support/corpus.hpp"

namespace convgen {
namespace {

using testing_support::h100;
using testing_support::source_dir;

const Family& pointwise() { return family("pointwise"); }

bool is_pointwise_layer(const Problem& p) {
  return p.filter.d == 1 && p.filter.h == 1 && p.filter.w == 1 && p.groups == 1 && !channels_last(p.layout) &&
         p.padding.d == 0 && p.padding.h == 0 && p.padding.w == 0;
}

std::int64_t pixels(const Problem& p) {
  const Dims3 out = output_dims(p);
  return std::int64_t{out.d} * out.h * out.w;
}

TEST(PointwiseFamily, EnumeratesSupportedCandidatesForEveryOneByOneLayerOfResnet50AndDensenet121) {
  const Gpu gpu = h100();
  int layers = 0;
  for (const char* suite : {"resnet50.csv", "densenet121.csv"}) {
    for (const Layer& layer : load_suite(source_dir() / "shapes" / suite).layers) {
      for (int batch : {1, 8}) {
        Problem p = layer.problem;
        p.n = batch;
        const std::vector<KernelSpec> specs = pointwise().enumerate(p, gpu);
        if (!is_pointwise_layer(p)) {
          EXPECT_TRUE(specs.empty()) << problem_key(p);
          continue;
        }
        ++layers;
        ASSERT_FALSE(specs.empty()) << problem_key(p);
        EXPECT_LE(specs.size(), 16u);
        const bool unit = p.stride.d == 1 && p.stride.h == 1 && p.stride.w == 1;
        std::set<std::string> names;
        bool unsplit = false;
        for (const KernelSpec& s : specs) {
          EXPECT_EQ(pointwise().check_support(p, gpu, s), std::nullopt) << kernel_name(s);
          EXPECT_TRUE(names.insert(kernel_name(s)).second) << kernel_name(s);
          EXPECT_EQ(parse_kernel_name(kernel_name(s)), s);
          const PointwiseParams w = params_of<PointwiseParams>(s);
          // float4 loads wherever a run of 4 pixels is whole: stride 1 and pixels a multiple of 4.
          EXPECT_EQ(w.vector, unit && pixels(p) % 4 == 0 ? 4 : 1) << kernel_name(s);
          unsplit = unsplit || w.split_k == 1;
          if (w.split_k > 1) {
            // Only where the tiles alone fill fewer blocks than the SMs.
            PointwiseParams one = w;
            one.split_k = 1;
            EXPECT_LT(pointwise().cost_features(p, to_spec(one)).blocks, gpu.sm_count) << kernel_name(s);
          }
        }
        EXPECT_TRUE(unsplit) << problem_key(p);
        EXPECT_EQ(pointwise().default_spec(p, gpu), specs.front());
      }
    }
  }
  EXPECT_GT(layers, 100);
}

TEST(PointwiseFamily, PacksTheFilterOnceAndAddsTheReducePassOnlyForSplitK) {
  Problem p = load_suite(source_dir() / "shapes" / "resnet50.csv").layers.front().problem;
  p.n = 2;
  p.c = 40;
  p.k = 70;
  p.input = {1, 6, 10};
  p.filter = {1, 1, 1};
  p.padding = {0, 0, 0};
  p.stride = {1, 1, 1};
  p.layout = Layout::nchw;
  ASSERT_EQ(validate(p), "");
  for (int split_k : {1, 4}) {
    const KernelSpec s = to_spec(PointwiseParams{
        .block_m = 64, .block_n = 32, .block_k = 8, .thread_m = 8, .thread_n = 4, .vector = 4, .split_k = split_k});
    ASSERT_EQ(pointwise().check_support(p, h100(), s), std::nullopt);
    const LaunchPlan plan = pointwise().plan(p, s);
    ASSERT_EQ(plan.setup.size(), 1u);
    EXPECT_EQ(plan.setup[0].entry_suffix, "pack_filter");
    ASSERT_NE(plan.find("packed_filter"), nullptr);
    EXPECT_TRUE(plan.find("packed_filter")->persistent);
    EXPECT_EQ(plan.find("packed_filter")->bytes, 40 * 128 * 4);  // C to 40 (5 steps of 8), K to 128
    EXPECT_EQ(plan.main_geometry().grid, (std::array<unsigned, 3>{2, 2, static_cast<unsigned>(2 * split_k)}));
    if (split_k == 1) {
      ASSERT_EQ(plan.run.size(), 1u);
      EXPECT_EQ(plan.workspace_bytes(), 0);
    } else {
      ASSERT_EQ(plan.run.size(), 2u);
      EXPECT_EQ(plan.run[1].entry_suffix, "reduce");
      EXPECT_EQ(plan.find("partials")->bytes, std::int64_t{split_k} * output_elements(p) * 4);
      EXPECT_EQ(pointwise().cost_features(p, s).extra_launches, 1);
    }
  }
}

TEST(PointwiseFamily, DeclinesWhatTheTemplateDoesNotServeWithAReason) {
  const Gpu gpu = h100();
  Problem p = load_suite(source_dir() / "shapes" / "resnet50.csv").layers.front().problem;
  p.c = 64;
  p.k = 64;
  p.input = {1, 8, 8};
  p.filter = {1, 1, 1};
  p.padding = {0, 0, 0};
  p.stride = {1, 1, 1};
  p.layout = Layout::nchw;
  ASSERT_EQ(validate(p), "");
  const KernelSpec s = *pointwise().default_spec(p, gpu);
  Problem nhwc = p;
  nhwc.layout = Layout::nhwc;
  EXPECT_EQ(pointwise().check_support(nhwc, gpu, s), "pointwise handles channels-first layouts only, got nhwc");
  Problem three = p;
  three.filter = {1, 3, 3};
  EXPECT_EQ(pointwise().check_support(three, gpu, s), "pointwise handles 1x1 filters only, got 1x3x3");
  Problem padded = p;
  padded.padding = {0, 1, 1};
  EXPECT_EQ(pointwise().check_support(padded, gpu, s),
            "pointwise handles unpadded convolutions only, got padding 0x1x1");
  Problem grouped = p;
  grouped.groups = 2;
  EXPECT_EQ(pointwise().check_support(grouped, gpu, s), "pointwise handles ungrouped convolutions only, got 2 groups");
  Problem half = p;
  half.precision = Precision::fp16;
  EXPECT_EQ(pointwise().check_support(half, gpu, s), "precision fp16 is not supported by pointwise (fp32 only)");
  Problem strided = p;
  strided.stride = {1, 2, 2};
  PointwiseParams v4 = params_of<PointwiseParams>(s);
  v4.vector = 4;
  v4.split_k = 1;
  EXPECT_EQ(pointwise().check_support(strided, gpu, to_spec(v4)),
            "vector 4 reads 4 pixels at once: it needs stride 1 and a multiple of 4 output pixels per image, got 16 "
            "pixels");
  PointwiseParams split = params_of<PointwiseParams>(s);
  split.block_k = 16;
  split.split_k = 8;  // 64 channels: 4 steps of 16
  EXPECT_EQ(pointwise().check_support(p, gpu, to_spec(split)), "split_k 8 exceeds the 4 steps of 16 input channels");
}

}  // namespace
}  // namespace convgen
