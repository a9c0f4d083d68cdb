// epilogue_verify_test: the fused epilogue, output = act(alpha * conv + beta * residual + bias), verified on the GPU
// against the float64 reference with the same epilogue (outputs poisoned, inputs, bias and residual random): every
// family × representative configurations × the edge-case corpus, igemm_tc in tf32, fp16 and bf16 (split-K's reduce
// included), weight_sparse with a pruned filter, and the refusal of a launch without the bias or residual.
#include <algorithm>

#include <gtest/gtest.h>

#include "convgen/weights.hpp"
#include "igemm_tc_params.hpp"
#include "measure/verify.hpp"
#include "reference/inputs.hpp"
#include "reference/pruning.hpp"
#include "runtime/device.hpp"
#include "runtime/driver.hpp"
#include "runtime/module.hpp"
#include "support/corpus.hpp"
#include "support/verify_tally.hpp"
#include "weight_sparse_params.hpp"

namespace convgen {
namespace {

using namespace testing_support;

const std::string kTallyTable = "epilogue: verified cases per family (family, epilogue, configuration, shape)";

// The epilogues every family is held to: each term, each activation, scales other than 1.
const std::vector<Epilogue>& epilogues() {
  static const std::vector<Epilogue> all = {
      parse_epilogue("alpha:1.5+bias+add:0.5+relu6"),
      parse_epilogue("bias+add+relu"),
      parse_epilogue("bias+clip:-0.5:1"),
      parse_epilogue("alpha:-1+add:2"),
  };
  return all;
}

Problem with_epilogue(Problem p, const Epilogue& e) {
  p.epilogue = e;
  return p;
}

class GpuEpilogueVerify : public testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_available()) GTEST_SKIP() << "no CUDA device: " << no_device_reason();
    context_ = std::make_unique<Context>(0);
    gpu_ = query_device(0);
  }

  void verify(const std::string& label, const Problem& problem, const KernelSpec& spec, std::uint64_t seed) {
    BuiltKernel kernel;
    ASSERT_NO_THROW(kernel = build_kernel(problem, spec, gpu_, cache_)) << label << " " << kernel_name(spec);
    const Verification v =
        verify_on_gpu(kernel, {.activation = DenseRandom{}, .filter = expected_filter(problem), .seed = seed});
    tally_verification(kTallyTable, spec.family,
                       fmt::format("{} {} {}", to_string(problem.epilogue), kernel_name(spec), label), v);
    EXPECT_TRUE(v.passed) << label << " (" << describe(problem) << "): " << v.failure;
  }

  std::unique_ptr<Context> context_;
  Gpu gpu_;
  JitCache cache_{std::nullopt};
};

TEST_F(GpuEpilogueVerify, EveryFamilyAppliesEachEpilogueOnTheEdgeCaseCorpus) {
  std::uint64_t seed = 1;
  int cases = 0;
  for (const Layer& layer : edge_cases().layers)
    for (const Epilogue& e : epilogues()) {
      const Problem p = with_epilogue(layer.problem, e);
      for (const Family* family : all_families())
        for (const KernelSpec& spec : representative_specs(*family, p, gpu_, 2)) {
          verify(layer.name, p, spec, seed++);
          ++cases;
        }
    }
  EXPECT_GT(cases, 0);
}

TEST_F(GpuEpilogueVerify, IgemmTcAppliesTheEpilogueInEveryPrecisionAndInSplitKsReduce) {
  std::uint64_t seed = 2000;
  for (const Precision precision : {Precision::tf32, Precision::fp16, Precision::bf16})
    for (const Layer& layer : edge_cases().layers) {
      Problem p = with_epilogue(layer.problem, epilogues()[0]);
      p.precision = precision;
      for (const KernelSpec& spec : representative_specs(family("igemm_tc"), p, gpu_, 2))
        verify(fmt::format("{} {}", layer.name, precision), p, spec, seed++);
    }
  // A long reduction on few output pixels: the split-K configurations, whose reduce entry applies the epilogue.
  int split_configs = 0;
  for (const Precision precision : {Precision::tf32, Precision::fp16, Precision::bf16}) {
    const Problem p = with_epilogue(testing_support::long_reduction(precision), epilogues()[1]);
    for (const KernelSpec& spec : family("igemm_tc").enumerate(p, gpu_)) {
      if (params_of<IgemmTcParams>(spec).split_k == 1) continue;
      ++split_configs;
      verify(fmt::format("split_k_512_to_96_at_7 {}", precision), p, spec, seed++);
    }
  }
  EXPECT_GT(split_configs, 0) << "igemm_tc enumerated no split-K configuration with an epilogue";
}

TEST_F(GpuEpilogueVerify, WeightSparseAppliesTheEpilogueWithItsBakedFilter) {
  std::uint64_t seed = 3000;
  int cases = 0;
  for (const Layer& layer : edge_cases().layers) {
    const Problem p =
        with_epilogue(with_weights(layer.problem, pruned_random_filter(layer.problem, 0.9, seed)), epilogues()[0]);
    std::vector<KernelSpec> specs = representative_specs(family("weight_sparse"), p, gpu_, 0);
    for (const int variant : {1, 2})  // and the first table (tb1) and staged table (tb2)
      for (const KernelSpec& s : family("weight_sparse").enumerate(p, gpu_))
        if (params_of<WeightSparseParams>(s).table == variant) {
          if (std::find(specs.begin(), specs.end(), s) == specs.end()) specs.push_back(s);
          break;
        }
    for (const KernelSpec& spec : specs) {
      verify(layer.name + " (90% zero weights)", p, spec, seed++);
      ++cases;
    }
  }
  EXPECT_GT(cases, 0) << "weight_sparse served no corpus layer";
}

TEST_F(GpuEpilogueVerify, ALaunchWithoutTheBiasOrResidualItsEpilogueReadsIsRefused) {
  const Problem p = with_epilogue(
      {.n = 1, .c = 8, .k = 8, .input = {1, 9, 9}, .filter = {1, 3, 3}, .padding = {0, 1, 1}}, epilogues()[0]);
  const BuiltKernel kernel = build_kernel(p, default_choice(p, gpu_), gpu_, cache_);
  ConvLauncher launcher(kernel);
  DeviceBuffer tensor(static_cast<std::size_t>(tensor_bytes(p, TensorRole::output)) * 4);
  Stream stream;
  const std::string key = problem_key(p);
  try {
    launcher.launch(tensor.ptr(), tensor.ptr(), tensor.ptr(), 0, stream.get(), {.residual = tensor.ptr()});
    ADD_FAILURE() << "a launch without the bias was not refused";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), key + ": its epilogue adds a bias (K values): the bias pointer is null");
  }
  try {
    launcher.launch(tensor.ptr(), tensor.ptr(), tensor.ptr(), 0, stream.get(), {.bias = tensor.ptr()});
    ADD_FAILURE() << "a launch without the residual was not refused";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              key + ": its epilogue adds a residual (the output's shape): the residual pointer is null");
  }
}

}  // namespace
}  // namespace convgen
