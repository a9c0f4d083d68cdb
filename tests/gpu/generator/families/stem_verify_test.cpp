// stem_verify_test: every configuration the stem family offers, verified on the GPU against the float64 reference
// (outputs poisoned, inputs random): on every edge-case corpus layer it serves and on the suites' stems at batch 1
// and 2, and its default with the fused epilogue (bias + residual + relu6). Prints the cases and the worst error.
#include <gtest/gtest.h>

#include "generator/shapes.hpp"
#include "measure/verify.hpp"
#include "runtime/device.hpp"
#include "runtime/driver.hpp"
#include "runtime/module.hpp"
#include "support/corpus.hpp"
#include "support/verify_tally.hpp"

namespace convgen {
namespace {

using namespace testing_support;

TEST(StemGpu, EveryConfigurationIsCorrectOnTheCorpusAndTheSuitesStems) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: " << no_device_reason();
  Context context(0);
  const Gpu gpu = query_device(0);
  JitCache cache(std::nullopt);
  const Family& stem = family("stem");
  const std::string table = "stem: verified cases (configuration, shape)";
  std::vector<Layer> layers = edge_cases().layers;
  for (const char* suite : {"resnet50.csv", "resnet20_cifar.csv"}) {
    const Layer first = load_suite(source_dir() / "shapes" / suite).layers.front();
    for (int batch : {1, 2}) {
      Layer layer = first;
      layer.problem.n = batch;
      layer.name = fmt::format("{}_{}_n{}", suite, first.name, batch);
      layers.push_back(layer);
    }
  }
  std::uint64_t seed = 7000;
  int served = 0;
  for (const Layer& layer : layers) {
    const std::vector<KernelSpec> specs = stem.enumerate(layer.problem, gpu);
    if (specs.empty()) continue;
    ++served;
    for (const KernelSpec& spec : specs) {
      BuiltKernel kernel;
      ASSERT_NO_THROW(kernel = build_kernel(layer.problem, spec, gpu, cache)) << layer.name << " " << kernel_name(spec);
      const Verification v = verify_on_gpu(kernel, {.seed = seed++});
      tally_verification(table, "stem", layer.name + " " + kernel_name(spec), v);
      EXPECT_TRUE(v.passed) << layer.name << " (" << describe(layer.problem) << ") " << kernel_name(spec) << ": "
                            << v.failure;
    }
    // The default with the fused epilogue.
    Problem fused = layer.problem;
    fused.epilogue = {.alpha = 1.5, .beta = 0.5, .bias = true, .act = Activation::relu6};
    if (auto spec = stem.default_spec(fused, gpu)) {
      const BuiltKernel kernel = build_kernel(fused, *spec, gpu, cache);
      const Verification v = verify_on_gpu(kernel, {.seed = seed++});
      tally_verification(table, "stem", layer.name + " bias+add:0.5+relu6 " + kernel_name(*spec), v);
      EXPECT_TRUE(v.passed) << layer.name << " with bias+add:0.5+relu6: " << v.failure;
    }
  }
  EXPECT_GE(served, 8);
}

}  // namespace
}  // namespace convgen
