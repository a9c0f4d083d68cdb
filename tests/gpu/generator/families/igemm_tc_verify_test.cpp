// igemm_tc_verify_test: the tensor-core family verified on the GPU against the float64 reference (outputs poisoned,
// inputs random, the precision's limit): the edge-case corpus in tf32, fp16 and bf16, each row in its own layout and
// channels-last; every configuration the search space offers on a handful of layers; split-K in every precision.
// Prints, and appends to $CONVGEN_VERIFY_REPORT, the cases, failures and worst error per precision and layout.
#include <cstdlib>
#include <fstream>
#include <map>

#include <gtest/gtest.h>

#include "igemm_tc_params.hpp"
#include "measure/verify.hpp"
#include "runtime/device.hpp"
#include "runtime/driver.hpp"
#include "runtime/module.hpp"
#include "runtime/thread_pool.hpp"
#include "support/corpus.hpp"
#include "support/verify_cases.hpp"
#include "support/verify_tally.hpp"

namespace convgen {
namespace {

using namespace testing_support;

const std::string kTallyTable = "igemm_tc verified cases per precision and layout (configuration, shape)";


Problem with(Problem p, Precision precision, Layout layout) {
  p.precision = precision;
  p.layout = layout;
  return p;
}

constexpr std::array kPrecisions = {Precision::tf32, Precision::fp16, Precision::bf16};

class IgemmTcGpu : public testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_available()) GTEST_SKIP() << "no CUDA device: " << no_device_reason();
    context_ = std::make_unique<Context>(0);
    gpu_ = query_device(0);
  }

  int verify_all(const std::vector<Case>& cases, std::uint64_t seed) {
    return verify_cases(cases, gpu_, cache_, seed, kTallyTable);
  }

  std::unique_ptr<Context> context_;
  Gpu gpu_;
  JitCache cache_{std::nullopt};
};

TEST_F(IgemmTcGpu, RepresentativeConfigurationsAreCorrectOnTheEdgeCaseCorpusInEveryPrecisionAndLayout) {
  std::vector<Case> cases;
  for (const Layer& layer : edge_cases().layers)
    for (Precision precision : kPrecisions) {
      std::vector<Layout> layouts = {layer.problem.layout};
      if (!channels_last(layer.problem.layout)) layouts.push_back(channels_last_of(layer.problem.layout));
      for (Layout layout : layouts) {
        const Problem p = with(layer.problem, precision, layout);
        const std::vector<KernelSpec> specs = representative_specs(family("igemm_tc"), p, gpu_, 3);
        EXPECT_FALSE(specs.empty()) << layer.name << " " << problem_key(p);
        for (const KernelSpec& s : specs)
          cases.push_back({fmt::format("{} {} {}", layer.name, precision, layout), p, s});
      }
    }
  EXPECT_GT(verify_all(cases, 1), 0);
}

// Every configuration enumerate() offers, that is every one the tuner can pick, on layers of the networks (the
// cusnn layers in fp16 NHWC at batch 1 and 8, the layers timed in bench/results) and a few others in every precision.
TEST_F(IgemmTcGpu, EveryEnumeratedConfigurationIsCorrectOnNetworkLayersAndAFewEdgeCases) {
  std::vector<Problem> problems;
  for (const Layer& layer : load_suite(source_dir() / "shapes" / "cusnn.csv").layers)
    for (int batch : {1, 8}) {
      Problem p = with(layer.problem, Precision::fp16, Layout::nhwc);
      p.n = batch;
      problems.push_back(p);
    }
  for (Precision precision : kPrecisions) {
    for (const char* name : {"c3_k100_7x7_s2_p3", "c32_k100_3x3", "groups4_batch2", "ndhwc_3x3x3_p1"})
      for (const Layer& layer : edge_cases().layers)
        if (layer.name == name) problems.push_back(with(layer.problem, precision, channels_last_of(layer.problem.layout)));
    const Layer deep = load_suite(source_dir() / "shapes" / "cusnn.csv").layers.back();  // 512 -> 512 at 7x7
    problems.push_back(with(deep.problem, precision, Layout::nchw));
    problems.push_back(with(deep.problem, precision, Layout::nhwc));
  }
  std::vector<Case> cases;
  for (const Problem& p : problems) {
    const std::vector<KernelSpec> specs = family("igemm_tc").enumerate(p, gpu_);
    EXPECT_FALSE(specs.empty()) << problem_key(p);
    for (const KernelSpec& s : specs) cases.push_back({problem_key(p), p, s});
  }
  EXPECT_GT(verify_all(cases, 100), 0);
}

TEST_F(IgemmTcGpu, SplitKOfEveryCountAddsThePartialSumsCorrectlyInEveryPrecision) {
  // A long reduction on few output pixels: the case split-K exists for; K = 96 is a partial 64-channel tile.
  std::vector<Case> cases;
  for (Precision precision : kPrecisions)
    for (Layout layout : {Layout::nhwc, Layout::nchw}) {
      const Problem p{.n = 1, .c = 512, .k = 96, .input = {1, 7, 7}, .filter = {1, 3, 3}, .padding = {0, 1, 1},
                      .layout = layout, .precision = precision};
      const int block_k = precision == Precision::tf32 ? 16 : 32;
      for (int split_k : {2, 3, 5, 8, 16, 24}) {
        const KernelSpec s = to_spec(IgemmTcParams{.block_m = 32, .block_n = 64, .block_k = block_k, .warp_m = 32,
                                                   .warp_n = 32, .stages = 3, .split_k = split_k, .vector = true});
        ASSERT_EQ(family("igemm_tc").check_support(p, gpu_, s), std::nullopt) << kernel_name(s);
        cases.push_back({fmt::format("split_k {} {} {}", split_k, precision, layout), p, s});
      }
    }
  EXPECT_EQ(verify_all(cases, 500), static_cast<int>(cases.size()));
}

}  // namespace
}  // namespace convgen
