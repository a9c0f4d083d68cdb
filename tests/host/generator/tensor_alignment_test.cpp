// tensor_alignment_test: what a plan says it needs of the caller's tensor addresses (LaunchPlan::tensor_alignment),
// per family and configuration, and misaligned_tensor's verdicts and messages. That the declarations are enough is
// the GPU test's (tests/gpu/conv/tensor_alignment_gpu_test.cpp).
#include <gtest/gtest.h>

#include "generator/family.hpp"
#include "igemm_params.hpp"
#include "igemm_tc_params.hpp"
#include "igemm_wgmma_params.hpp"
#include "pointwise_params.hpp"
#include "support/corpus.hpp"

namespace convgen {
namespace {

Problem layer(Layout layout, Precision precision, int k = 64) {
  return {.n = 2,
          .c = 32,
          .k = k,
          .input = {1, 14, 14},
          .filter = {1, 3, 3},
          .padding = {0, 1, 1},
          .layout = layout,
          .precision = precision};
}

TensorAlignment alignment_of(const Problem& p, const KernelSpec& spec) { return plan_for(p, spec).tensor_alignment; }

TEST(TensorAlignment, IgemmNeedsItsVectorOfTheFilterAndOfChannelsLastActivations) {
  const IgemmParams vector4{.vector = 4};
  EXPECT_EQ(alignment_of(layer(Layout::nhwc, Precision::fp32), to_spec(vector4)),
            (TensorAlignment{.activation = 16, .filter = 16}));
  EXPECT_EQ(alignment_of(layer(Layout::nchw, Precision::fp32), to_spec(vector4)), (TensorAlignment{.filter = 16}));
  EXPECT_EQ(alignment_of(layer(Layout::nhwc, Precision::fp16), to_spec(vector4)),
            (TensorAlignment{.activation = 8, .filter = 8}));
  EXPECT_EQ(alignment_of(layer(Layout::nhwc, Precision::fp32), to_spec(IgemmParams{.vector = 1})), TensorAlignment{});
}

TEST(TensorAlignment, IgemmTcPairsTheOutputOnlyUnsplitChannelsLastWithEvenChannels) {
  const IgemmTcParams unsplit{.split_k = 1, .vector = true};
  EXPECT_EQ(alignment_of(layer(Layout::nhwc, Precision::fp16), to_spec(unsplit)),
            (TensorAlignment{.activation = 16, .filter = 16, .output = 4}));
  EXPECT_EQ(alignment_of(layer(Layout::nhwc, Precision::tf32), to_spec(unsplit)),
            (TensorAlignment{.activation = 16, .filter = 16, .output = 8}));
  EXPECT_EQ(alignment_of(layer(Layout::nhwc, Precision::fp16, 37), to_spec(unsplit)).output, 0);
  EXPECT_EQ(alignment_of(layer(Layout::nchw, Precision::fp16), to_spec(unsplit)), (TensorAlignment{.filter = 16}));
  EXPECT_EQ(alignment_of(layer(Layout::nhwc, Precision::fp16), to_spec(IgemmTcParams{.split_k = 4, .vector = false})),
            TensorAlignment{});
}

TEST(TensorAlignment, IgemmWgmmaCopiesSixteenBytesUnlessItsPassesPadTheChannels) {
  const Problem p = layer(Layout::nhwc, Precision::fp16);
  EXPECT_EQ(alignment_of(p, to_spec(IgemmWgmmaParams{})),
            (TensorAlignment{.activation = 16, .filter = 16, .output = 16}));
  EXPECT_EQ(alignment_of(p, to_spec(IgemmWgmmaParams{.split_k = 2})).output, 0);  // the reduce pass stores
  EXPECT_EQ(alignment_of(p, to_spec(IgemmWgmmaParams{.split_k = 2, .cluster_reduce = true})).output, 8);
  // Three channels: padded by pad_activation and pad_filter, which read them one element at a time.
  Problem image = p;
  image.c = 3;
  EXPECT_EQ(alignment_of(image, to_spec(IgemmWgmmaParams{})),
            (TensorAlignment{.activation = 0, .filter = 0, .output = 16}));
}

TEST(TensorAlignment, PointwiseReadsFloat4sOfPixelsAndStoresThemUnsplit) {
  const Problem p{.n = 2, .c = 64, .k = 32, .input = {1, 14, 14}, .filter = {1, 1, 1}};
  EXPECT_EQ(alignment_of(p, to_spec(PointwiseParams{.vector = 4})), (TensorAlignment{.activation = 16, .output = 16}));
  EXPECT_EQ(alignment_of(p, to_spec(PointwiseParams{.vector = 1, .split_k = 2})), TensorAlignment{});
  Problem odd = p;
  odd.input = {1, 7, 7};  // 49 pixels an image: no float4 of them
  EXPECT_EQ(alignment_of(odd, to_spec(PointwiseParams{.vector = 1})), TensorAlignment{});
}

TEST(TensorAlignment, AReluPrologueLeavesTheActivationToItsPassWhichTakesAnyAlignment) {
  Problem p = layer(Layout::nhwc, Precision::fp16);
  p.relu_on_load = true;
  const KernelSpec spec = to_spec(IgemmTcParams{.vector = true});
  ASSERT_TRUE(needs_relu_prologue(p, spec));
  EXPECT_EQ(alignment_of(p, spec), (TensorAlignment{.activation = 0, .filter = 16, .output = 4}));
}

TEST(TensorAlignment, EveryPlanOfTheCorpusDeclaresPowersOfTwoUpToSixteenBytes) {
  const Gpu gpu = testing_support::h100();
  for (const Layer& l : testing_support::edge_cases().layers)
    for (const Family* f : all_families())
      for (const KernelSpec& spec : f->enumerate(l.problem, gpu)) {
        const TensorAlignment a = alignment_of(l.problem, spec);
        for (int bytes : {a.activation, a.filter, a.output})
          EXPECT_TRUE(bytes == 0 || (bytes <= 16 && (bytes & (bytes - 1)) == 0)) << kernel_name(spec) << " " << bytes;
      }
}

TEST(MisalignedTensor, NamesTheFirstTensorOffItsDeclaredAlignmentOrItsElements) {
  LaunchPlan plan;
  plan.tensor_alignment = {.activation = 16, .output = 8};
  EXPECT_EQ(misaligned_tensor(plan, 4, 0x1000, 0x2004, 0x3008), "");
  const std::string activation = misaligned_tensor(plan, 4, 0x1008, 0x2000, 0x3000);
  EXPECT_NE(activation.find("activation at 0x1008 is not 16-byte aligned"), std::string::npos) << activation;
  const std::string output = misaligned_tensor(plan, 4, 0x1010, 0x2000, 0x3004);
  EXPECT_NE(output.find("output at 0x3004 is not 8-byte aligned"), std::string::npos) << output;
  // Nothing declared of the filter: its 2-byte elements still.
  const std::string filter = misaligned_tensor(plan, 2, 0x1000, 0x2001, 0x3000);
  EXPECT_NE(filter.find("filter at 0x2001 is not aligned to its 2-byte elements"), std::string::npos) << filter;
}

}  // namespace
}  // namespace convgen
