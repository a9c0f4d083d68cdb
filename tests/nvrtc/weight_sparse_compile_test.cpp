// weight_sparse_compile_test: the weight-sparse family's representative configurations (both value modes, the
// table variant and the staged table, without and with live channels) compile for sm_80 and sm_90 (the first and a
// third of the others for sm_90 in CI: support/compile_sweep.hpp) on every corpus layer it serves, with filters pruned
// to 90% zeros; the table variants in both layouts, 1x1 and 3x3, stride 1 and 2, rows whole and in slices, on layers
// too big to bake, without spilling (for sm_80, and a third of them for sm_90 in CI).
#include <gtest/gtest.h>

#include "conv/conv_kernel.hpp"
#include "convgen/weights.hpp"
#include "reference/pruning.hpp"
#include "support/compile_sweep.hpp"
#include "support/corpus.hpp"
#include "weight_sparse_params.hpp"

namespace convgen {
namespace {

using namespace testing_support;

TEST(WeightSparseCompile, CorpusLayersWithPrunedFiltersCompileForSm80AndSm90) {
  const Gpu gpu = h100();
  int compiled = 0;
  int index = 0;
  for (const Layer& layer : edge_cases().layers) {
    const Problem p = with_weights(layer.problem, pruned_random_filter(layer.problem, 0.9, 5));
    const std::vector<KernelSpec> specs = family("weight_sparse").enumerate(p, gpu);
    if (specs.empty()) continue;  // grouped, 3-D or not fp32: declined with a reason (host tests)
    // The first, the first of the other value mode (immediates or packed), the first table and the first staged table
    // without and with live channels.
    std::vector<KernelSpec> picked = {specs.front()};
    const auto mode = [](const KernelSpec& s) {
      const WeightSparseParams w = params_of<WeightSparseParams>(s);
      return w.table ? 1 + w.table + (w.live_channels ? 1 : 0) : w.immediates ? 1 : 0;
    };
    for (const int wanted : {0, 1, 2, 3, 4})
      for (const KernelSpec& s : specs)
        if (mode(s) == wanted) {
          if (mode(s) != mode(specs.front())) picked.push_back(s);
          break;
        }
    for (const KernelSpec& spec : picked) {
      const KernelSource source = family("weight_sparse").render(p, spec);
      for (const char* arch : {"sm_80", "sm_90"}) {
        // sm_90: the first and a third of the others in CI (support/compile_sweep.hpp).
        if (!compile_in_sweep(index++, std::string_view(arch) == "sm_80", spec == specs.front())) continue;
        Cubin cubin;
        ASSERT_NO_THROW(cubin = compile(to_program(source), {.arch = arch})) << layer.name << " " << kernel_name(spec);
        EXPECT_FALSE(cubin.image.empty());
        ++compiled;
      }
    }
  }
  EXPECT_GT(compiled, 10);
}

TEST(WeightSparseCompile, TableVariantCompilesBigLayersInBothLayoutsStridesAndFilterSizes) {
  const Gpu gpu = h100();
  int compiled = 0;
  int index = 0;
  for (const Layout layout : {Layout::nchw, Layout::nhwc})
    for (const int r : {1, 3})
      for (const int stride : {1, 2}) {
        // 256 -> 256 at 28x28: 59K nonzeros at 90% zeros for 3x3 (ResNet-50's conv4_1_3x3), 6.6K for 1x1.
        const Problem shape{.n = 1,
                            .c = 256,
                            .k = 256,
                            .input = {1, 28, 28},
                            .filter = {1, r, r},
                            .stride = {1, stride, stride},
                            .padding = {0, r / 2, r / 2},
                            .layout = layout};
        const Problem p = with_weights(shape, pruned_random_filter(shape, 0.9, 7));
        for (const int variant : {1, 2, 3, 4}) {
          // The table with rows in 4 slices (shared memory), with whole rows and 4 pixels a thread; the staged table
          // with 32 channels a block and 2 pixels a thread, without and with live channels.
          WeightSparseParams s;
          s.block_pixels = variant >= 3 ? 64 : 128;
          s.k_group = variant >= 3 ? 32 : 4;
          s.table = variant >= 3 ? 2 : 1;
          s.pixels_per_thread = variant == 1 ? 1 : variant == 2 ? 4 : 2;
          s.live_channels = variant == 4;
          s.split = variant == 1 ? 4 : 1;
          const KernelSpec spec = to_spec(s);
          ASSERT_EQ(family("weight_sparse").check_support(p, gpu, spec), std::nullopt);
          const KernelSource source = family("weight_sparse").render(p, spec);
          EXPECT_LT(source.text.size(), 40000u) << "the table's code does not grow with the nonzeros";
          for (const char* arch : {"sm_80", "sm_90"}) {
            if (!compile_in_sweep(index++, std::string_view(arch) == "sm_80", false)) continue;
            Cubin cubin;
            ASSERT_NO_THROW(cubin = compile(to_program(source), {.arch = arch}))
                << describe(p) << " " << kernel_name(spec) << " " << arch;
            EXPECT_FALSE(cubin.image.empty());
            EXPECT_EQ(cubin.entry_reports.size(), 3u);  // the main entry, pack_values and pack_pattern
            for (const auto& [entry, report] : cubin.entry_reports)
              EXPECT_EQ(report.spill_store_bytes, 0) << entry << " " << describe(p) << " " << arch;
            ++compiled;
          }
        }
      }
  EXPECT_EQ(compiled, full_compile_sweep() ? 64 : 32 + 11);  // sm_90: 11 of the 32 (every third of the sweep)
}

}  // namespace
}  // namespace convgen
