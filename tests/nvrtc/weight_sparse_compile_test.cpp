// weight_sparse_compile_test: the weight-sparse family's representative configurations (both value modes) compile
// for sm_80 and sm_90 on every corpus layer it serves, with filters pruned to 90% zeros.
#include <gtest/gtest.h>

#include "conv/conv_kernel.hpp"
#include "convgen/weights.hpp"
#include "reference/pruning.hpp"
#include "support/corpus.hpp"

namespace convgen {
namespace {

using namespace testing_support;

TEST(WeightSparseCompile, CorpusLayersWithPrunedFiltersCompileForSm80AndSm90) {
  const Gpu gpu = h100();
  int compiled = 0;
  for (const Layer& layer : edge_cases().layers) {
    const Problem p = with_weights(layer.problem, pruned_random_filter(layer.problem, 0.9, 5));
    const std::vector<KernelSpec> specs = family("weight_sparse").enumerate(p, gpu);
    if (specs.empty()) continue;  // grouped, 3-D or not fp32: declined with a reason (host tests)
    std::vector<KernelSpec> picked = {specs.front()};
    for (const KernelSpec& s : specs)
      if (s.values.back() != specs.front().values.back()) {
        picked.push_back(s);
        break;
      }
    for (const KernelSpec& spec : picked) {
      const KernelSource source = family("weight_sparse").render(p, spec);
      for (const char* arch : {"sm_80", "sm_90"}) {
        Cubin cubin;
        ASSERT_NO_THROW(cubin = compile(to_program(source), {.arch = arch})) << layer.name << " " << kernel_name(spec);
        EXPECT_FALSE(cubin.image.empty());
        ++compiled;
      }
    }
  }
  EXPECT_GT(compiled, 10);
}

}  // namespace
}  // namespace convgen
