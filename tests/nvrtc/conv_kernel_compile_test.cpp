// conv_kernel_compile_test: the options build_kernel compiles with (kernel_compile_options: --minimal) change no byte
// of any family's cubin: for every family, its default kernel on the first edge case it serves (the tensor-core
// families in fp16, igemm_wgmma channels-last, weight_sparse with a filter pruned to 90% zeros), for sm_80 and sm_90
// where the family serves them, against a compile with the family's architecture (compile_arch) alone.
#include <gtest/gtest.h>

#include "conv/conv_kernel.hpp"
#include "convgen/weights.hpp"
#include "reference/pruning.hpp"
#include "support/corpus.hpp"

namespace convgen {
namespace {

using namespace testing_support;

// The problem a family is tried on: an edge case in the form the family serves.
Problem as_served_by(const Family& f, const Problem& p) {
  if (f.name() == "igemm_tc" || f.name() == "igemm_wgmma") {
    Problem half = p;
    half.precision = Precision::fp16;
    if (f.name() == "igemm_wgmma" && half.layout == Layout::nchw) half.layout = Layout::nhwc;
    return half;
  }
  if (f.name() == "weight_sparse") return with_weights(p, pruned_random_filter(p, 0.9, 1));
  if (f.name() == "sparse24_tc") {
    Problem half = p;
    half.precision = Precision::fp16;
    return with_weights(half, two_four_pruned_random_filter(half, 1));
  }
  return p;
}

TEST(KernelCompileOptions, ChangeNoByteOfAnyFamilysCubin) {
  const Gpu sm90 = h100();
  const Gpu sm80 = load_gpu(source_dir() / "gpus" / "a100_sxm4.json");
  JitCache cache(std::nullopt);
  for (const Family* f : all_families()) {
    // igemm_wgmma needs sm_90 (wgmma): it is held to sm_90 alone; every other family to both.
    const bool sm90_only = f->name() == "igemm_wgmma";
    std::optional<std::pair<Problem, KernelSpec>> served;
    for (const Layer& layer : edge_cases().layers) {
      const Problem p = as_served_by(*f, layer.problem);
      if (auto spec = f->default_spec(p, sm90); spec && (sm90_only || !check_support(p, sm80, *spec))) {
        served.emplace(p, *spec);
        break;
      }
    }
    ASSERT_TRUE(served) << f->name() << " serves no edge case";
    const auto& [problem, spec] = *served;
    for (const Gpu& gpu : {sm80, sm90}) {
      if (sm90_only && gpu == sm80) continue;
      const BuiltKernel built = build_kernel(problem, spec, gpu, cache);
      const Cubin plain = compile(to_program(built.source), {.arch = compile_arch(spec, gpu)});
      EXPECT_EQ(built.cubin.image, plain.image) << kernel_name(spec) << " " << gpu.arch;
      EXPECT_EQ(built.cubin.entry_reports, plain.entry_reports) << kernel_name(spec) << " " << gpu.arch;
    }
  }
}

}  // namespace
}  // namespace convgen
