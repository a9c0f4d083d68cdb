// conv_kernel_test: build_kernel compiles with kernel_compile_options (--minimal: the same bytes as the architecture
// alone) and remembers what it built in its JIT cache: the same problem, kernel and architecture built again is
// recalled (the same kernel, nothing rendered, keyed or compiled); another kernel, problem or architecture is not, nor
// is anything of another cache object, a problem carrying its filter's values or templates read from a folder (real
// NVRTC compiles of small kernels).
#include "conv/conv_kernel.hpp"

#include <cstdlib>
#include <optional>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "convgen/error.hpp"
#include "convgen/weights.hpp"
#include "support/corpus.hpp"

namespace convgen {
namespace {

namespace fs = std::filesystem;
using namespace testing_support;
using Stats = JitCache::Stats;

// A small 3x3 layer: its kernels compile in a fraction of a second.
const Problem kSmall{.c = 8, .k = 8, .input = {1, 8, 8}, .filter = {1, 3, 3}, .padding = {0, 1, 1}};

Gpu a100() { return load_gpu(source_dir() / "gpus" / "a100_sxm4.json"); }

// Sets an environment variable for the scope, restoring the earlier value (or its absence) afterwards.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(BuildKernel, TheSameKernelBuiltAgainIsRecalledFromItsCache) {
  const Gpu gpu = h100();
  const KernelSpec spec = default_choice(kSmall, gpu);
  JitCache cache(std::nullopt);
  const BuiltKernel first = build_kernel(kSmall, spec, gpu, cache);
  const BuiltKernel again = build_kernel(kSmall, spec, gpu, cache);
  EXPECT_EQ(cache.stats(), (Stats{.memory_hits = 1, .misses = 1, .compiles = 1, .recalls = 1}));
  EXPECT_EQ(again.problem, first.problem);
  EXPECT_EQ(again.spec, first.spec);
  EXPECT_EQ(again.source.text, first.source.text);
  EXPECT_EQ(again.plan, first.plan);
  EXPECT_EQ(again.cubin.image, first.cubin.image);
  EXPECT_EQ(again.cubin.report, first.cubin.report);
  EXPECT_EQ(again.cubin.entry_reports, first.cubin.entry_reports);
  EXPECT_GT(first.cubin.compile_ms, 0);
  EXPECT_EQ(again.cubin.compile_ms, 0);  // as any cached cubin
}

TEST(BuildKernel, CompilesWithKernelCompileOptionsToTheSameBytesAsTheArchitectureAlone) {
  const Gpu gpu = h100();
  JitCache cache(std::nullopt);
  const BuiltKernel built = build_kernel(kSmall, default_choice(kSmall, gpu), gpu, cache);
  EXPECT_EQ(kernel_compile_options(gpu.arch), (CompileOptions{.arch = gpu.arch, .extra = {"--minimal"}}));
  EXPECT_EQ(built.cubin.image, compile(to_program(built.source), {.arch = gpu.arch}).image);
}

TEST(BuildKernel, AnotherKernelProblemOrArchitectureIsNotRecalled) {
  const Gpu gpu = h100();
  const KernelSpec spec = default_choice(kSmall, gpu);
  JitCache cache(std::nullopt);
  build_kernel(kSmall, spec, gpu, cache);

  // The same source (the expected sparsity is not rendered): the cubin's memory hit, and the problem's own sparsity.
  Problem sparse = kSmall;
  sparse.act_sparsity = 0.5;
  EXPECT_EQ(build_kernel(sparse, spec, gpu, cache).problem, sparse);
  // An epilogue that the problem key writes as the default's ("none"), but rendered as its own (BETA = -0).
  Problem negative_zero_beta = kSmall;
  negative_zero_beta.epilogue.beta = -0.0;
  ASSERT_EQ(problem_key(negative_zero_beta), problem_key(kSmall));
  EXPECT_NE(build_kernel(negative_zero_beta, spec, gpu, cache).source.text,
            build_kernel(kSmall, spec, gpu, cache).source.text);
  EXPECT_EQ(cache.stats(), (Stats{.memory_hits = 2, .misses = 2, .compiles = 2, .recalls = 1}));

  std::optional<KernelSpec> other;
  for (const KernelSpec& candidate : family(spec.family).enumerate(kSmall, gpu))
    if (candidate != spec) other = candidate;
  ASSERT_TRUE(other) << "one other " << spec.family << " kernel for " << problem_key(kSmall);
  EXPECT_EQ(build_kernel(kSmall, *other, gpu, cache).spec, *other);
  const Gpu sm80 = a100();
  ASSERT_NE(sm80.arch, gpu.arch);
  EXPECT_EQ(build_kernel(kSmall, spec, sm80, cache).cubin.arch, sm80.arch);
  EXPECT_EQ(cache.stats(), (Stats{.memory_hits = 2, .misses = 4, .compiles = 4, .recalls = 1}));
}

TEST(BuildKernel, AFreshCacheOnTheSameFolderRecallsNothingAndReadsTheDisk) {
  const fs::path dir =
      fs::temp_directory_path() / ("convgen-conv-kernel-test-" + std::to_string(std::random_device()()));
  const Gpu gpu = h100();
  const KernelSpec spec = default_choice(kSmall, gpu);
  JitCache cache(dir);
  const BuiltKernel built = build_kernel(kSmall, spec, gpu, cache);
  JitCache fresh(dir);
  const BuiltKernel loaded = build_kernel(kSmall, spec, gpu, fresh);
  EXPECT_EQ(fresh.stats(), (Stats{.disk_hits = 1}));
  EXPECT_EQ(loaded.cubin.image, built.cubin.image);
  build_kernel(kSmall, spec, gpu, fresh);
  EXPECT_EQ(fresh.stats(), (Stats{.memory_hits = 1, .disk_hits = 1, .recalls = 1}));
  fs::remove_all(dir);
}

TEST(BuildKernel, AProblemCarryingItsFilterIsRenderedAndKeyedEveryTime) {
  const Gpu gpu = h100();
  const Problem p = with_weights(kSmall, std::vector<float>(static_cast<std::size_t>(filter_elements(kSmall)), 0.5f));
  const KernelSpec spec = default_choice(p, gpu);
  JitCache cache(std::nullopt);
  build_kernel(p, spec, gpu, cache);
  const BuiltKernel again = build_kernel(p, spec, gpu, cache);
  EXPECT_EQ(cache.stats(), (Stats{.memory_hits = 1, .misses = 1, .compiles = 1}));  // the cubin's hit, no recall
  EXPECT_EQ(again.problem.weights.values, p.weights.values);
}

TEST(BuildKernel, TemplatesReadFromAFolderAreRenderedAndKeyedEveryTime) {
  const ScopedEnv templates("CONVGEN_TEMPLATE_DIR", (source_dir() / "templates").string());
  const Gpu gpu = h100();
  const KernelSpec spec = default_choice(kSmall, gpu);
  JitCache cache(std::nullopt);
  build_kernel(kSmall, spec, gpu, cache);
  build_kernel(kSmall, spec, gpu, cache);
  EXPECT_EQ(cache.stats(), (Stats{.memory_hits = 1, .misses = 1, .compiles = 1}));
}

TEST(SmemCarveout, ThePercentageIsReadAndAnythingElseIsRefusedNamingTheVariable) {
  EXPECT_EQ(parse_smem_carveout(nullptr), std::nullopt);
  EXPECT_EQ(parse_smem_carveout(""), std::nullopt);
  EXPECT_EQ(parse_smem_carveout("0"), 0);
  EXPECT_EQ(parse_smem_carveout("100"), 100);
  for (const char* bad : {"101", "-1", "50%", "max", " 50"}) {
    try {
      parse_smem_carveout(bad);
      ADD_FAILURE() << "'" << bad << "' was accepted";
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()),
                std::string("CONVGEN_SMEM_CARVEOUT: expected a percentage from 0 to 100, got '") + bad + "'");
    }
  }
}

}  // namespace
}  // namespace convgen
