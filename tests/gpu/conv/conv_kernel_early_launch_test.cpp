// conv_kernel_early_launch_test: every family's kernels launched early (programmatic dependent launch, on a GPU of
// compute capability 9.0 or later; skipped elsewhere) read what the stream's previous kernel wrote and write nothing
// before it has ended: each family's default kernel, on the layers it serves of a small set with C = K and the same
// extent out as in, called twice in a chain (support/chained_calls.hpp).
#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "conv/conv_kernel.hpp"
#include "generator/family.hpp"
#include "runtime/device.hpp"
#include "runtime/driver.hpp"
#include "support/chained_calls.hpp"

namespace convgen {
namespace {

using testing_support::verify_chained_calls;

Problem chain_layer(int n, int c, int hw, int r, Layout layout, Precision precision) {
  return Problem{.n = n, .c = c, .k = c, .input = {1, hw, hw}, .filter = {1, r, r}, .padding = {0, r / 2, r / 2},
                 .layout = layout, .precision = precision};
}

TEST(ConvKernelEarlyLaunchGpu, EveryFamilysKernelsInAChainReadThePreviousCallsOutput) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: " << no_device_reason();
  Context context(0);
  const Gpu gpu = query_device(0);
  if (!has_early_launch(gpu.arch)) GTEST_SKIP() << "early launch needs compute capability 9.0; this GPU is " << gpu.arch;
  ASSERT_TRUE(early_launch_enabled()) << "CONVGEN_EARLY_LAUNCH=0 turns off what this test checks";
  JitCache cache{std::nullopt};
  std::vector<Problem> layers;
  for (Precision precision : {Precision::fp32, Precision::tf32, Precision::fp16})
    for (Layout layout : {Layout::nchw, Layout::nhwc}) {
      layers.push_back(chain_layer(1, 32, 14, 3, layout, precision));
      layers.push_back(chain_layer(4, 64, 28, 3, layout, precision));
      layers.push_back(chain_layer(2, 128, 14, 1, layout, precision));
    }
  std::vector<std::string> chained;
  for (const Family* f : all_families())
    for (const Problem& p : layers) {
      const std::optional<KernelSpec> spec = f->default_spec(p, gpu);
      if (!spec) continue;
      const BuiltKernel kernel = build_kernel(p, *spec, gpu, cache);
      bool early = false;
      for (const LaunchStep& step : kernel.plan.run) early = early || launches_early(step, kernel.cubin.arch);
      EXPECT_TRUE(early) << kernel.source.entry << " launches nothing early";
      verify_chained_calls(kernel, 3);
      chained.push_back(std::string(f->name()));
    }
  for (const Family* f : all_families())
    if (std::find(chained.begin(), chained.end(), f->name()) == chained.end())
      std::cout << f->name() << ": no default kernel for these layers (weights needed, or none served)\n";
  EXPECT_GE(chained.size(), 20u);
}

}  // namespace
}  // namespace convgen
