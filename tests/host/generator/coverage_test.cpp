// coverage_test: every layer of every shapes file is served by at least one family on the H100 descriptor.
#include <gtest/gtest.h>

#include "support/corpus.hpp"

namespace convgen {
namespace {

using namespace testing_support;

TEST(Coverage, EveryLayerOfEverySuiteHasADefaultChoiceThatPassesCheckSupport) {
  const Gpu gpu = h100();
  int layers = 0;
  for (const auto& file : suite_files()) {
    for (const Layer& layer : load_suite(file).layers) {
      ++layers;
      KernelSpec spec;
      ASSERT_NO_THROW(spec = default_choice(layer.problem, gpu)) << file << ": " << layer.name;
      EXPECT_EQ(check_support(layer.problem, gpu, spec), std::nullopt)
          << file.filename() << ": " << layer.name << ": " << kernel_name(spec);
    }
  }
  EXPECT_GT(layers, 100);
}

TEST(Coverage, EveryFamilyServesEveryEdgeCaseItDoesNotDeclineWithAReason) {
  const Gpu gpu = h100();
  for (const Layer& layer : edge_cases().layers) {
    for (const Family* family : all_families()) {
      const auto specs = family->enumerate(layer.problem, gpu);
      for (const KernelSpec& spec : specs) {
        EXPECT_EQ(family->check_support(layer.problem, gpu, spec), std::nullopt)
            << layer.name << ": enumerate() listed " << kernel_name(spec) << " but check_support declines it";
        EXPECT_EQ(spec.family, family->name());
      }
    }
  }
}

}  // namespace
}  // namespace convgen
