// pointwise_test: the 1x1 SGEMM family's search space (float4 loads exactly where allowed, split-K only for small
// grids, cp.async pipelines only where the GPU has them), its support reasons, and its plan (the filter packed once;
// one launch over the batch's columns, and split-K's reduce).
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

// A stride-1 1x1 layer, channels-first (resnet50's first layer with these fields changed).
Problem one_by_one(int n, int c, int k, int h, int w) {
  Problem p = load_suite(source_dir() / "shapes" / "resnet50.csv").layers.front().problem;
  p.n = n;
  p.c = c;
  p.k = k;
  p.input = {1, h, w};
  p.filter = {1, 1, 1};
  p.padding = {0, 0, 0};
  p.stride = {1, 1, 1};
  p.layout = Layout::nchw;
  return p;
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
        EXPECT_LE(specs.size(), 32u);
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

TEST(PointwiseFamily, OffersTheCpAsyncPipelinesOnlyWhereTheGpuHasThem) {
  const Problem p = one_by_one(1, 256, 64, 56, 56);
  ASSERT_EQ(validate(p), "");
  std::set<int> stages;
  for (const KernelSpec& s : pointwise().enumerate(p, h100())) stages.insert(params_of<PointwiseParams>(s).cp_stages);
  EXPECT_GT(stages.size(), 1u) << "the H100's candidates should include cp.async rings";
  const Gpu volta = load_gpu(source_dir() / "gpus" / "v100_sxm2.json");
  const std::vector<KernelSpec> specs = pointwise().enumerate(p, volta);
  ASSERT_FALSE(specs.empty());
  for (const KernelSpec& s : specs) EXPECT_EQ(params_of<PointwiseParams>(s).cp_stages, 0) << kernel_name(s);
  PointwiseParams ring = params_of<PointwiseParams>(specs.front());
  ring.cp_stages = 3;
  EXPECT_EQ(pointwise().check_support(p, volta, to_spec(ring)),
            "cp_stages 3 needs cp.async (sm_80 or later), the gpu is sm_70");
  ring.cp_stages = 5;
  EXPECT_EQ(pointwise().check_support(p, h100(), to_spec(ring)), "cp_stages must be 0, 2, 3 or 4, got 5");
  // The cost model sees a ring's latency once per cp - 1 steps: 256 channels, 16 steps of 16.
  PointwiseParams registers{.block_m = 64,
                            .block_n = 64,
                            .block_k = 16,
                            .thread_m = 8,
                            .thread_n = 4,
                            .vector = 4,
                            .split_k = 1,
                            .cp_stages = 0};
  EXPECT_EQ(pointwise().cost_features(p, to_spec(registers)).main_loop_steps, 16);
  registers.cp_stages = 4;
  EXPECT_EQ(pointwise().cost_features(p, to_spec(registers)).main_loop_steps, 6);  // ceil(16 / 3)
  registers.cp_stages = 2;
  EXPECT_EQ(pointwise().cost_features(p, to_spec(registers)).main_loop_steps, 16);
  // Four stages of the 128 x 128 block of 16 channels would take 64 KiB of static shared memory.
  ring = PointwiseParams{.block_m = 128,
                         .block_n = 128,
                         .block_k = 16,
                         .thread_m = 8,
                         .thread_n = 8,
                         .vector = 4,
                         .split_k = 1,
                         .cp_stages = 4};
  EXPECT_EQ(pointwise().check_support(p, h100(), to_spec(ring)), "65536 bytes of static shared memory exceed 48 KiB");
}

TEST(PointwiseFamily, IsTheDefaultForOneByOneLayersWithFloat4LoadsAndAtSmallBatchOnly) {
  const Gpu gpu = h100();
  const Suite resnet = load_suite(source_dir() / "shapes" / "resnet50.csv");
  auto layer = [&](std::string_view name, int batch) {
    for (const Layer& l : resnet.layers)
      if (l.name == name) {
        Problem p = l.problem;
        p.n = batch;
        p.act_sparsity = 0;
        return p;
      }
    ADD_FAILURE() << "no layer " << name;
    return resnet.layers.front().problem;
  };
  // 56x56, stride 1: float4 loads, first at any batch, even where zeros are expected.
  EXPECT_EQ(default_choice(layer("conv2_expand", 8), gpu).family, "pointwise");
  Problem sparse = layer("conv2_reduce", 1);
  sparse.act_sparsity = 0.6;
  EXPECT_EQ(default_choice(sparse, gpu).family, "pointwise");
  // Stride 2 and 7x7 (scalar loads): first at batch 1, igemm's from batch 4 on.
  EXPECT_EQ(default_choice(layer("conv3_proj", 1), gpu).family, "pointwise");
  EXPECT_EQ(default_choice(layer("conv3_proj", 8), gpu).family, "igemm");
  EXPECT_EQ(default_choice(layer("conv5_reduce", 8), gpu).family, "igemm");
  // Never ahead of the families of other precisions.
  Problem half = layer("conv2_expand", 8);
  half.precision = Precision::fp16;
  EXPECT_GT(pointwise().default_rank(half), family("igemm_tc").default_rank(half));
}

TEST(PointwiseFamily, PacksTheFilterOnceAndAddsTheReducePassOnlyForSplitK) {
  const Problem p = one_by_one(2, 40, 70, 6, 10);
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
    // 2 images of 60 pixels: 120 columns in 4 blocks of 32 (the second spans both images).
    EXPECT_EQ(plan.main_geometry().grid, (std::array<unsigned, 3>{4, 2, static_cast<unsigned>(split_k)}));
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
  const Problem p = one_by_one(1, 64, 64, 8, 8);
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
