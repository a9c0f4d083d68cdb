// api_precision_test: the public API in tf32, fp16 and bf16 on the GPU: a context chooses the tensor-core kernel,
// the op runs on typed device pointers (float, or 16-bit bits for half and bfloat16) and matches the reference; a
// pointer of the wrong element size is refused.
#include <gtest/gtest.h>

#include <cstdint>

#include <fmt/format.h>

#include "convgen/convgen.hpp"
#include "convgen/error.hpp"
#include "measure/verification.hpp"
#include "runtime/device.hpp"
#include "runtime/driver.hpp"
#include "runtime/module.hpp"
#include "support/context_test.hpp"

namespace convgen {
namespace {

class ApiPrecisionGpu : public testing_support::ContextTest {};

// Runs `op` through the verification pipeline with typed pointers of element type T.
template <class T>
Verification run_typed(const ConvOp& op) {
  ConvMeasurement measurement(op.problem(), {.seed = 11});
  Stream stream;
  const ConvCandidate candidate{op.kernel_name(), [&op](const ConvPointers& t, CUstream s) {
                                  op.run(reinterpret_cast<const T*>(t.activation), reinterpret_cast<const T*>(t.filter),
                                         reinterpret_cast<T*>(t.output), s);
                                }};
  return measurement.verify(candidate, stream);
}

TEST_F(ApiPrecisionGpu, TensorCorePrecisionsRunOnTypedPointersAndMatchTheReference) {
  ConvContext context(options());
  for (Precision precision : {Precision::tf32, Precision::fp16, Precision::bf16}) {
    const Problem problem{.n = 2, .c = 32, .k = 48, .input = {1, 14, 14}, .filter = {1, 3, 3},
                          .padding = {0, 1, 1}, .layout = Layout::nhwc, .precision = precision};
    const ConvOp& op = context.conv(problem);
    // A tensor-core family's kernel: igemm_tc, or on Hopper igemm_wgmma, which ranks first there.
    const std::string& name = op.kernel_name();
    EXPECT_TRUE(name.starts_with(has_wgmma(query_device(0)) ? "igemm_wgmma_" : "igemm_tc_"))
        << to_string(precision) << ": " << name;
    const Verification v =
        precision == Precision::tf32 ? run_typed<float>(op) : run_typed<std::uint16_t>(op);
    EXPECT_TRUE(v.passed) << to_string(precision) << ": " << v.failure;
  }
}

TEST_F(ApiPrecisionGpu, APointerOfTheWrongElementSizeIsRefused) {
  ConvContext context(options());
  const Problem problem{.n = 1, .c = 16, .k = 16, .input = {1, 8, 8}, .filter = {1, 3, 3}, .padding = {0, 1, 1},
                        .layout = Layout::nhwc, .precision = Precision::fp16};
  const ConvOp& op = context.conv(problem);
  const float* none = nullptr;
  try {
    op.run(none, none, const_cast<float*>(none), nullptr);
    ADD_FAILURE() << "a float pointer was accepted for an fp16 problem";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(),
                 "ConvOp::run: pointers to 4-byte elements given, the problem's precision fp16 takes 2-byte elements");
  }
}

}  // namespace
}  // namespace convgen
