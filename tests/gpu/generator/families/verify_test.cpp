// verify_test: every family × representative configurations × the edge-case corpus, and the default
// choice on one layer of every suite, verified on the GPU against the float64 reference (outputs poisoned,
// inputs random). Prints the number of verified cases and the worst relative error per family.
#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>

#include <gtest/gtest.h>

#include "igemm_params.hpp"
#include "measure/verify.hpp"
#include "convgen/weights.hpp"
#include "reference/inputs.hpp"
#include "reference/pruning.hpp"
#include "runtime/device.hpp"
#include "runtime/driver.hpp"
#include "runtime/module.hpp"
#include "runtime/thread_pool.hpp"
#include "support/corpus.hpp"
#include "support/verify_tally.hpp"
#include "weight_sparse_params.hpp"

namespace convgen {
namespace {

using namespace testing_support;


const std::string kTallyTable = "verified cases per family (family, configuration, shape)";

class GpuVerify : public testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_available()) GTEST_SKIP() << "no CUDA device: " << no_device_reason();
    context_ = std::make_unique<Context>(0);
    gpu_ = query_device(0);
  }

  // Builds and verifies one (problem, spec); records the tally; returns a gtest assertion result.
  void verify(const std::string& label, const Problem& problem, const KernelSpec& spec, std::uint64_t seed,
              const TensorSource& activation = DenseRandom{}) {
    BuiltKernel kernel;
    ASSERT_NO_THROW(kernel = build_kernel(problem, spec, gpu_, cache_)) << label << " " << kernel_name(spec);
    verify_built(label, kernel, seed, activation);
  }

  // Builds the requests in parallel (NVRTC), then verifies each kernel built on each activation source, one seed a
  // verification from `seed` on; a request that did not build fails the test. Returns how many built.
  int build_and_verify(const std::vector<BuildRequest>& requests, const std::vector<std::string>& labels,
                       std::uint64_t& seed, const std::vector<TensorSource>& sources) {
    ThreadPool pool;
    const std::vector<BuildOutcome> built = build_kernels(requests, gpu_, cache_, pool);
    int count = 0;
    for (std::size_t i = 0; i < built.size(); ++i) {
      if (const auto* error = std::get_if<std::exception_ptr>(&built[i])) {
        try {
          std::rethrow_exception(*error);
        } catch (const std::exception& e) {
          ADD_FAILURE() << labels[i] << " " << kernel_name(requests[i].spec) << " did not build: " << e.what();
        }
        continue;
      }
      ++count;
      for (const TensorSource& source : sources)
        verify_built(sources.size() > 1 ? fmt::format("{}, {}", labels[i], describe(source)) : labels[i],
                     std::get<BuiltKernel>(built[i]), seed++, source);
    }
    return count;
  }

  void verify_built(const std::string& label, const BuiltKernel& kernel, std::uint64_t seed,
                    const TensorSource& activation = DenseRandom{}) {
    // The problem's own filter where it carries one (weight_sparse bakes it), else dense random.
    const Verification v =
        verify_on_gpu(kernel, {.activation = activation, .filter = expected_filter(kernel.problem), .seed = seed});
    tally_verification(kTallyTable, kernel.spec.family, label + " " + kernel_name(kernel.spec), v);
    EXPECT_TRUE(v.passed) << label << " (" << describe(kernel.problem) << "): " << v.failure;
  }

  std::unique_ptr<Context> context_;
  Gpu gpu_;
  JitCache cache_{std::nullopt};
};

TEST_F(GpuVerify, EveryFamilyAndRepresentativeConfigurationIsCorrectOnTheEdgeCaseCorpus) {
  std::uint64_t seed = 1;
  for (const Layer& layer : edge_cases().layers)
    for (const Family* family : all_families())
      for (const KernelSpec& spec : representative_specs(*family, layer.problem, gpu_, 3))
        verify(layer.name, layer.problem, spec, seed++);
}

// Activations with zeros where ReLU leaves them. The activation-sparse family: every pattern at 0, 50, 90, 99 and 100%
// zeros, its representative configurations, each of its sparse loops with the dense loop forced off (dense_at
// 128), so both of its paths meet every pattern, the first configuration with its other channel loop (ur), and block-
// staged (bs) with and without its dense loop. The dense families: one fraction per pattern.
TEST_F(GpuVerify, EveryFamilyIsCorrectOnSparseActivationsOfEveryPatternAndZeroFraction) {
  std::uint64_t seed = 5000;
  std::vector<TensorSource> sources, few_sources = {SparseRandom{SparsityPattern::uniform, 0.5},
                                                     SparseRandom{SparsityPattern::channel, 0.9},
                                                     SparseRandom{SparsityPattern::blob, 0.99}};
  for (SparsityPattern pattern : {SparsityPattern::uniform, SparsityPattern::channel, SparsityPattern::blob})
    for (double zeros : {0.0, 0.5, 0.9, 0.99, 1.0}) sources.push_back(SparseRandom{pattern, zeros});
  std::vector<Layer> layers = edge_cases().layers;
  for (const Layer& layer : load_suite(source_dir() / "shapes" / "cusnn.csv").layers) layers.push_back(layer);
  for (const Layer& layer : layers)
    for (const Family* family : all_families()) {
      std::vector<KernelSpec> specs = representative_specs(*family, layer.problem, gpu_, 2);
      if (family->name() == "act_sparse" && !specs.empty()) {
        const std::size_t index_of_mode = param_index(*family, "sm"), index_of_dense_at = param_index(*family, "dm");
        for (int mode : {0, 1, 2}) {
          KernelSpec variant = specs.front();
          variant.values[index_of_mode] = mode;
          variant.values[index_of_dense_at] = 128;
          if (!family->check_support(layer.problem, gpu_, variant)) specs.push_back(variant);
        }
        KernelSpec unrolled = specs.front();  // the channel loop unrolled by 2 or not: the other of the first's
        unrolled.values[param_index(*family, "ur")] = 1 - unrolled.values[param_index(*family, "ur")];
        if (!family->check_support(layer.problem, gpu_, unrolled)) specs.push_back(unrolled);
        // The first's geometry block-staged (bs: halos staged in shared memory, the live channels listed), with its
        // dense loop and with the dense loop forced off.
        KernelSpec staged = specs.front();
        staged.values[param_index(*family, "bs")] = 1;
        staged.values[index_of_mode] = 3;
        staged.values[param_index(*family, "ur")] = 0;
        staged.values[param_index(*family, "lb")] = 1;
        for (int dense_at : {0, 128}) {
          staged.values[index_of_dense_at] = dense_at;
          if (!family->check_support(layer.problem, gpu_, staged)) specs.push_back(staged);
        }
      }
      for (const KernelSpec& spec : specs)
        for (const TensorSource& source : family->name() == "act_sparse" ? sources : few_sources)
          verify(fmt::format("{} {}", layer.name, describe(source)), layer.problem, spec, seed++, source);
    }
}

// act_sparse's split channels reduced in a thread-block cluster (cr1, sm_90 and later; skipped elsewhere): on every
// corpus and cuSNN layer, the first representative configuration split 2, 4 and 8 ways in clusters, on dense, half-
// zero uniform, 90%-zero blob and all-zero activations, and with the fused epilogue (bias + ReLU, and + residual),
// which only the clustered splits serve (a template path: enumerate does not offer it, measured slower).
TEST_F(GpuVerify, ActSparseSplitsReducedInAClusterAreCorrect) {
  if (!has_thread_block_clusters(gpu_.arch)) GTEST_SKIP() << "no thread-block clusters on " << gpu_.arch;
  const Family& f = family("act_sparse");
  const std::vector<TensorSource> sources = {DenseRandom{}, SparseRandom{SparsityPattern::uniform, 0.5},
                                             SparseRandom{SparsityPattern::blob, 0.9},
                                             SparseRandom{SparsityPattern::blob, 1.0}};
  std::vector<Layer> layers = edge_cases().layers;
  const Suite cusnn = load_suite(source_dir() / "shapes" / "cusnn.csv");
  for (const Layer& layer : cusnn.layers) layers.push_back(layer);
  std::uint64_t seed = 9000;
  int verified = 0;
  for (const Layer& layer : layers) {
    const std::vector<KernelSpec> specs = representative_specs(f, layer.problem, gpu_, 1);
    if (specs.empty()) continue;
    for (int split : {2, 4, 8}) {
      KernelSpec clustered = specs.front();
      clustered.values[param_index(f, "sc")] = split;
      clustered.values[param_index(f, "cr")] = 1;
      if (f.check_support(layer.problem, gpu_, clustered)) continue;
      for (const TensorSource& source : sources)
        verify(fmt::format("{} {}", layer.name, describe(source)), layer.problem, clustered, seed++, source);
      for (const char* epilogue : {"bias+relu", "bias+add+relu"}) {
        Problem fused = layer.problem;
        fused.epilogue = parse_epilogue(epilogue);
        if (f.check_support(fused, gpu_, clustered)) continue;
        verify(fmt::format("{} {}", layer.name, epilogue), fused, clustered, seed++,
               SparseRandom{SparsityPattern::blob, 0.9});
      }
      ++verified;
    }
  }
  EXPECT_GE(verified, 20) << "too few clustered configurations were served";
}

// max(0, x) applied as the activation is loaded (relu_on_load, act_sparse's relu1): the input is the producer's
// output before its ReLU (negative where the ReLU leaves a zero), on every corpus and cuSNN layer, every pattern at
// 0, 50, 90, 99 and 100% zeros, the default and first representative configurations and the first block-staged;
// and with a fused bias + ReLU epilogue.
TEST_F(GpuVerify, ActSparseAppliesReluOnLoadToAnUnrectifiedInput) {
  const Family& f = family("act_sparse");
  std::vector<TensorSource> sources;
  for (SparsityPattern pattern : {SparsityPattern::uniform, SparsityPattern::channel, SparsityPattern::blob})
    for (double zeros : {0.0, 0.5, 0.9, 0.99, 1.0}) sources.push_back(SparseRandom{pattern, zeros});
  std::vector<Layer> layers = edge_cases().layers;
  for (const Layer& layer : load_suite(source_dir() / "shapes" / "cusnn.csv").layers) layers.push_back(layer);
  std::uint64_t seed = 12000;
  int served = 0;
  for (const Layer& layer : layers) {
    Problem problem = layer.problem;
    problem.relu_on_load = true;
    std::vector<KernelSpec> specs = representative_specs(f, problem, gpu_, 1);
    if (specs.empty()) continue;
    KernelSpec staged = specs.front();
    staged.values[param_index(f, "bs")] = 1;
    staged.values[param_index(f, "sm")] = 3;
    staged.values[param_index(f, "ur")] = 0;
    staged.values[param_index(f, "lb")] = 1;
    if (!f.check_support(problem, gpu_, staged)) specs.push_back(staged);
    ++served;
    for (const KernelSpec& spec : specs) {
      ASSERT_EQ(spec.values[param_index(f, "relu")], 1) << kernel_name(spec);
      for (const TensorSource& source : sources)
        verify(fmt::format("{} relu on load {}", layer.name, describe(source)), problem, spec, seed++, source);
    }
    Problem fused = problem;
    fused.epilogue = parse_epilogue("bias+relu");
    if (auto spec = f.default_spec(fused, gpu_))
      verify(fmt::format("{} relu on load, bias+relu", layer.name), fused, *spec, seed++,
             SparseRandom{SparsityPattern::blob, 0.7});
  }
  EXPECT_GE(served, 20) << "act_sparse served too few layers with relu_on_load";
}

// relu_on_load behind the ReLU prologue (a relu pass into a per-call buffer the kernel reads as its activation): every
// family's default configuration that does not apply max(0, x) itself, act_sparse's relu0 among them, on every corpus
// layer in fp32, and on every fourth in fp16 and bf16 channels-last (the tensor-core families' precisions and
// layout); the input unrectified (negative where the ReLU leaves a zero), blob at 50% and uniform at 90% zeros.
TEST_F(GpuVerify, EveryFamilyServesReluOnLoadBehindAReluPrologue) {
  const std::vector<TensorSource> sources = {SparseRandom{SparsityPattern::blob, 0.5},
                                             SparseRandom{SparsityPattern::uniform, 0.9}};
  std::vector<Problem> problems;
  const std::vector<Layer> layers = edge_cases().layers;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    Problem p = layers[i].problem;
    p.relu_on_load = true;
    problems.push_back(p);
    if (i % 4 != 0) continue;
    for (Precision precision : {Precision::fp16, Precision::bf16}) {
      Problem half = p;
      half.precision = precision;
      half.layout = channels_last_of(p.layout);
      problems.push_back(half);
    }
  }
  std::uint64_t seed = 14000;
  std::map<std::string, int> served;
  for (const Problem& problem : problems)
    for (const Family* f : all_families()) {
      std::optional<KernelSpec> spec = f->default_spec(problem, gpu_);
      if (spec && f->name() == "act_sparse") spec->values[param_index(*f, "relu")] = 0;
      if (!spec || f->check_support(problem, gpu_, *spec)) continue;
      ASSERT_TRUE(needs_relu_prologue(problem, *spec)) << kernel_name(*spec);
      ++served[std::string(f->name())];
      for (const TensorSource& source : sources)
        verify(fmt::format("{} behind a relu prologue, {}", problem_key(problem), describe(source)), problem, *spec,
               seed++, source);
    }
  // weight_sparse and sparse24_tc serve problems that carry a pruned filter only, which these do not.
  for (const char* name : {"act_sparse", "direct", "igemm", "igemm_tc", "pointwise", "winograd"})
    EXPECT_GE(served[name], 1) << name << " served none";
}

TEST_F(GpuVerify, TheDefaultChoiceAndEachFamilysDefaultAreCorrectOnOneLayerOfEverySuite) {
  std::uint64_t seed = 1000;
  for (const auto& file : suite_files()) {
    const Suite suite = load_suite(file);
    for (const std::size_t index : {std::size_t{0}, suite.layers.size() / 2}) {
      const Layer& layer = suite.layers[index];
      const std::string label = suite.name + "/" + layer.name;
      for (const Family* family : all_families())
        if (auto spec = family->default_spec(layer.problem, gpu_)) verify(label, layer.problem, *spec, seed++);
    }
  }
}

// weight_sparse bakes the filter or reads it from a table: every corpus layer it serves, with filters pruned to 0, 50,
// 90, 99 and 100% zeros and one whose odd output channels are all zero, in every mode (baked with immediates, baked
// with the packed array, the table, the staged table): the default configuration and the first of each
// other mode, the table with 4 pixels a thread, and the staged table with 4 pixels a thread and with one slice of
// threads. A baked kernel takes NVRTC seconds (the code holds the filter), so all are compiled first, in parallel.
TEST_F(GpuVerify, WeightSparseIsCorrectWithPrunedFiltersOfEverySparsity) {
  std::uint64_t seed = 1;
  std::vector<BuildRequest> requests;
  std::vector<std::string> labels;
  std::vector<Layer> layers = edge_cases().layers;
  for (const Layer& layer : load_suite(source_dir() / "shapes" / "cusnn.csv").layers) layers.push_back(layer);
  for (const Layer& layer : layers) {
    std::vector<Problem> pruned;
    for (double zeros : {0.0, 0.5, 0.9, 0.99, 1.0})
      pruned.push_back(with_weights(layer.problem, pruned_random_filter(layer.problem, zeros, seed)));
    std::vector<float> channels = pruned_random_filter(layer.problem, 0.5, seed);
    const std::size_t per_k = channels.size() / static_cast<std::size_t>(layer.problem.k);
    for (std::size_t i = 0; i < channels.size(); ++i)
      if ((i / per_k) % 2 == 1) channels[i] = 0;
    pruned.push_back(with_weights(layer.problem, channels));
    for (const Problem& p : pruned) {
      std::vector<KernelSpec> specs = representative_specs(family("weight_sparse"), p, gpu_, 0);
      if (specs.empty()) continue;  // declined (grouped, 3-D, or a filter of more than 32 taps)
      const auto mode = [](const KernelSpec& s) {
        const WeightSparseParams w = params_of<WeightSparseParams>(s);
        // The staged table: float4 (pt 4) and float2 (pt 2) reads of 1x1 tiles, one slice, others.
        if (w.table == 2) return w.pixels_per_thread == 4 ? 5 : w.pixels_per_thread == 2 ? 7 : w.split == 1 ? 6 : 4;
        return w.table ? 2 + (w.pixels_per_thread == 4) : w.immediates ? 1 : 0;
      };
      for (const int wanted : {0, 1, 2, 3, 4, 5, 6, 7})
        for (const KernelSpec& s : family("weight_sparse").enumerate(p, gpu_))
          if (mode(s) == wanted) {
            if (std::find(specs.begin(), specs.end(), s) == specs.end()) specs.push_back(s);
            break;
          }
      for (const KernelSpec& spec : specs) {
        requests.push_back({p, spec});
        labels.push_back(fmt::format("{} ({:.0f}% zero weights)", layer.name, 100 * weight_zero_fraction(p)));
      }
    }
  }
  build_and_verify(requests, labels, seed, {DenseRandom{}});
}

// weight_sparse's staged table with live channels (lc: each chunk's rows compacted to the channels whose staged
// patch holds a nonzero): every corpus and cuSNN layer it serves, filters pruned to 50, 90 and 100% zeros, on
// activations with blob, uniform and channel zeros from none to all, the first lc configuration of each pixels-a-
// thread count and of one slice.
TEST_F(GpuVerify, WeightSparseLiveChannelsAreCorrectOnSparseActivations) {
  std::uint64_t seed = 500;
  std::vector<TensorSource> sources = {DenseRandom{}, SparseRandom{SparsityPattern::channel, 0.5},
                                       SparseRandom{SparsityPattern::uniform, 0.7}};
  for (double zeros : {0.7, 0.9, 0.99, 1.0}) sources.push_back(SparseRandom{SparsityPattern::blob, zeros});
  std::vector<BuildRequest> requests;
  std::vector<std::string> labels;
  std::vector<Layer> layers = edge_cases().layers;
  for (const Layer& layer : load_suite(source_dir() / "shapes" / "cusnn.csv").layers) layers.push_back(layer);
  for (const Layer& layer : layers)
    for (double zeros : {0.5, 0.9, 1.0}) {
      const Problem p = with_weights(layer.problem, pruned_random_filter(layer.problem, zeros, seed));
      std::vector<int> wanted = {1, 2, 4, 0};  // pixels a thread; 0: one slice
      for (const KernelSpec& s : family("weight_sparse").enumerate(p, gpu_)) {
        const WeightSparseParams w = params_of<WeightSparseParams>(s);
        if (!w.live_channels) continue;
        auto it = std::find_if(wanted.begin(), wanted.end(),
                               [&](int m) { return m == 0 ? w.split == 1 : m == w.pixels_per_thread; });
        if (it == wanted.end()) continue;
        wanted.erase(it);
        requests.push_back({p, s});
        labels.push_back(fmt::format("{} ({:.0f}% zero weights)", layer.name, 100 * zeros));
      }
    }
  EXPECT_GE(build_and_verify(requests, labels, seed, sources), 20);
}

TEST_F(GpuVerify, SplitKConfigurationsAccumulateCorrectly) {
  // A long reduction on few output pixels: the case split-K exists for.
  const Problem problem{.n = 1, .c = 512, .k = 96, .input = {1, 7, 7}, .filter = {1, 3, 3},
                        .padding = {0, 1, 1}};
  int split_configs = 0;
  for (const KernelSpec& spec : family("igemm").enumerate(problem, gpu_)) {
    if (params_of<IgemmParams>(spec).split_k == 1) continue;
    ++split_configs;
    verify("split_k_512_to_96_at_7", problem, spec, 77 + split_configs);
  }
  EXPECT_GT(split_configs, 0) << "igemm enumerated no split-K configuration for a 7x7 layer with C = 512";
}

}  // namespace
}  // namespace convgen
