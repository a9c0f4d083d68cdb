// verification_test (GPU): the one pipeline: a candidate that writes nothing, one that writes zeros and one of ours on
// dense, sparse (every pattern, 0 to 100% zeros) and 16-bit buffers, with the failure message word for word.
#include "measure/verification.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <memory>
#include <optional>

#include "generator/family.hpp"
#include "measure/verify.hpp"
#include "runtime/device.hpp"
#include "runtime/driver.hpp"
#include "runtime/jit_cache.hpp"
#include "runtime/module.hpp"

namespace convgen {
namespace {

const Problem kProblem{.n = 2, .c = 16, .k = 8, .input = {1, 9, 9}, .filter = {1, 3, 3}, .padding = {0, 1, 1}};

class GpuPipeline : public testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_available()) GTEST_SKIP() << "no CUDA device: " << no_device_reason();
    context_.emplace(0);
    stream_.emplace();
  }
  std::optional<Context> context_;
  std::optional<Stream> stream_;  // made after the context is current
};

TEST_F(GpuPipeline, AnUnwrittenOutputFailsWithTheFirstNaN) {
  for (Precision precision : {Precision::fp32, Precision::fp16, Precision::bf16}) {
    Problem p = kProblem;
    p.precision = precision;
    ConvMeasurement m(p, {});
    const Verification v = m.verify({"nothing", [](const ConvPointers&, CUstream) {}}, *stream_);
    EXPECT_FALSE(v.passed);
    EXPECT_EQ(v.failure, fmt::format("nothing on {}: wrong result: {} outputs are NaN or infinite (first at output 0)",
                                     problem_key(p), output_elements(p)));
  }
}

TEST_F(GpuPipeline, AZeroOutputFailsWithTheRelativeErrorAndWhere) {
  ConvMeasurement m(kProblem, {.seed = 4});
  const auto bytes = static_cast<std::size_t>(tensor_bytes(kProblem, TensorRole::output));
  const Verification v = m.verify({"zeros", [bytes](const ConvPointers& t, CUstream s) {
                                     CONVGEN_CU_CHECK(driver().cuMemsetD8Async(t.output, 0, bytes, s));
                                   }},
                                  *stream_);
  EXPECT_FALSE(v.passed);
  EXPECT_EQ(v.stats.rel_l2, 1.0);
  EXPECT_EQ(v.failure.rfind(fmt::format("zeros on {}: wrong result: relative L2 error 1.0e+00 > 1e-05 (max error ",
                                        problem_key(kProblem)),
                            0),
            0u)
      << v.failure;
}

TEST_F(GpuPipeline, OurDefaultKernelPassesOnEveryPatternAndSparsity) {
  const Gpu gpu = query_device(0);
  JitCache cache{std::nullopt};
  const BuiltKernel kernel = build_kernel(kProblem, default_choice(kProblem, gpu), gpu, cache);
  const ConvCandidate candidate = kernel_candidate(kernel);
  for (SparsityPattern pattern : {SparsityPattern::uniform, SparsityPattern::channel, SparsityPattern::blob})
    for (double fraction : {0.0, 0.5, 0.9, 0.99, 1.0}) {
      ConvMeasurement m(kProblem, {.activation = SparseRandom{pattern, fraction}}, 3);
      const Verification v = m.verify(candidate, *stream_);
      EXPECT_TRUE(v.passed) << to_string(pattern) << " " << fraction << ": " << v.failure;
      const std::vector<TimingResult> t = m.time(std::span(&candidate, 1), {.samples = 3, .calls_per_sample = 3},
                                                 *stream_);
      EXPECT_EQ(t.size(), 1u);
    }
}

}  // namespace
}  // namespace convgen
