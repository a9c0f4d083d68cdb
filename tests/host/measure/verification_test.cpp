// verification_test: the one failure message of the verify-and-time pipeline, word for word, and what the pipeline
// needs from the host side (buffer sizes from the element type; no device without a GPU).
#include "measure/verification.hpp"

#include <algorithm>
#include <cmath>

#include <gtest/gtest.h>

#include "convgen/error.hpp"
#include "runtime/driver.hpp"

namespace convgen {
namespace {

const Problem kProblem{.n = 1, .c = 8, .k = 4, .input = {1, 6, 6}, .filter = {1, 3, 3}, .padding = {0, 1, 1}};

TEST(VerificationFailure, NamesTheCandidateTheProblemTheErrorTheLimitAndWhere) {
  const ErrorStats stats{.rel_l2 = 0.0031, .max_abs = 0.5, .compared = 288, .max_abs_index = 123};
  EXPECT_EQ(verification_failure("igemm_m64_n64_k8_tm4_tn4_st2_sk1_v1", kProblem, stats),
            "igemm_m64_n64_k8_tm4_tn4_st2_sk1_v1 on n1_c8_k4_i1x6x6_f1x3x3_s1x1x1_p0x1x1_d1x1x1_g1_nchw_fp32: wrong "
            "result: relative L2 error 3.1e-03 > 1e-05 (max error 5.0e-01 at output 123)");
}

TEST(VerificationFailure, UsesThePrecisionsLimit) {
  Problem p = kProblem;
  p.precision = Precision::tf32;
  const ErrorStats stats{.rel_l2 = 0.0031, .max_abs = 0.5, .compared = 288, .max_abs_index = 7};
  EXPECT_EQ(verification_failure("cudnn legacy:GEMM", p, stats),
            "cudnn legacy:GEMM on n1_c8_k4_i1x6x6_f1x3x3_s1x1x1_p0x1x1_d1x1x1_g1_nchw_tf32: wrong result: relative "
            "L2 error 3.1e-03 > 2e-03 (max error 5.0e-01 at output 7)");
  p.precision = Precision::fp16;
  EXPECT_EQ(verification_failure("cudnn legacy:GEMM", p, stats), "");  // within fp16's 1e-2
}

TEST(VerificationFailure, NamesTheFirstNaNAndAnEmptyComparison) {
  const ErrorStats nan{.rel_l2 = 0, .nan_count = 12, .compared = 288, .first_nan_index = 17};
  EXPECT_EQ(verification_failure("direct_m4_n128_k1_tm1_tn2_st1_sk1_v1", kProblem, nan),
            "direct_m4_n128_k1_tm1_tn2_st1_sk1_v1 on n1_c8_k4_i1x6x6_f1x3x3_s1x1x1_p0x1x1_d1x1x1_g1_nchw_fp32: wrong "
            "result: 12 outputs are NaN or infinite (first at output 17)");
  EXPECT_EQ(verification_failure("x", kProblem, ErrorStats{}),
            "x on n1_c8_k4_i1x6x6_f1x3x3_s1x1x1_p0x1x1_d1x1x1_g1_nchw_fp32: wrong result: no output compared");
  EXPECT_EQ(verification_failure("x", kProblem, {.rel_l2 = 1e-6, .compared = 1}), "");
}

TEST(BufferSetBytes, ComeFromTheElementType) {
  Problem p = kProblem;
  const std::int64_t elements = 8 * 36 + 4 * 8 * 9 + 4 * 36;
  EXPECT_EQ(buffer_set_bytes(p), elements * 4);
  p.precision = Precision::tf32;
  EXPECT_EQ(buffer_set_bytes(p), elements * 4);
  p.precision = Precision::bf16;
  EXPECT_EQ(buffer_set_bytes(p), elements * 2);
  // The epilogue's bias (K) and residual (the output's size) count where it reads them.
  p.epilogue = {.bias = true};
  EXPECT_EQ(buffer_set_bytes(p), (elements + 4) * 2);
  p.epilogue = {.beta = 1, .bias = true};
  EXPECT_EQ(buffer_set_bytes(p), (elements + 4 + 4 * 36) * 2);
}

TEST(ComputeReference, IsWholeForSmallLayersAndSampledForLargeOnes) {
  InputTensors in = make_inputs(kProblem, {});
  const ReferenceOutputs whole = compute_reference(kProblem, in, 1);
  EXPECT_TRUE(whole.indices.empty());
  EXPECT_EQ(whole.values, reference_conv(kProblem, in.activation, in.filter));
  const Problem large{.n = 8, .c = 256, .k = 256, .input = {1, 56, 56}, .filter = {1, 3, 3}, .padding = {0, 1, 1}};
  ASSERT_GT(flops(large) / 2, kFullReferenceMacs);
  in = make_inputs(large, {});
  const ReferenceOutputs sampled = compute_reference(large, in, 1);
  EXPECT_EQ(sampled.indices.size(), static_cast<std::size_t>(kSampledOutputs));
  EXPECT_EQ(sampled.values.size(), static_cast<std::size_t>(kSampledOutputs));
}

TEST(ComputeReference, AppliesTheProblemsEpilogueWithItsOwnBiasAndResidual) {
  Problem p = kProblem;
  p.epilogue = {.alpha = 0.5, .beta = 2, .bias = true, .act = Activation::relu6};
  const InputTensors in = make_inputs(p, {});
  ASSERT_EQ(in.bias.size(), p.k);
  ASSERT_EQ(in.residual.size(), output_elements(p));
  const ReferenceOutputs ref = compute_reference(p, in, 1);
  const std::vector<double> conv = reference_conv(p, in.activation, in.filter);
  ASSERT_EQ(ref.values.size(), conv.size());
  int clamped = 0;
  for (std::size_t i = 0; i < conv.size(); ++i) {
    const auto index = static_cast<std::int64_t>(i);
    const double v = 0.5 * conv[i] + 2.0 * in.residual.get(index) + in.bias.get(output_channel(p, index));
    EXPECT_DOUBLE_EQ(ref.values[i], std::clamp(v, 0.0, 6.0)) << i;
    clamped += v < 0 || v > 6;
  }
  EXPECT_GT(clamped, 0);  // the activation acted
  // The scale the error is relative to: the norm before the activation, which the clamp made larger than the output's.
  double pre_sq = 0, out_sq = 0;
  for (std::size_t i = 0; i < conv.size(); ++i) {
    const auto index = static_cast<std::int64_t>(i);
    const double v = 0.5 * conv[i] + 2.0 * in.residual.get(index) + in.bias.get(output_channel(p, index));
    pre_sq += v * v;
    out_sq += ref.values[i] * ref.values[i];
  }
  EXPECT_NEAR(ref.scale_l2, std::sqrt(pre_sq), 1e-9 * std::sqrt(pre_sq));
  EXPECT_GT(ref.scale_l2, std::sqrt(out_sq));
}

TEST(ConvMeasurement, NeedsADevice) {
  if (cuda_available()) GTEST_SKIP() << "a CUDA driver is present";
  EXPECT_THROW(ConvMeasurement(kProblem, ConvInputs{}), NoDeviceError);
}

}  // namespace
}  // namespace convgen

namespace convgen {

// The new user's 128x512x512x512 3x3 problem on an 80 GB device: refused at once, naming the bytes asked and free.
TEST(MemoryCheck, AProblemLargerThanTheDeviceIsRefusedNamingTheBytes) {
  const Problem p{.n = 128, .c = 512, .k = 512, .input = {1, 512, 512}, .filter = {1, 3, 3}, .padding = {0, 1, 1}};
  const MemoryNeed need = memory_need(p, 1);
  EXPECT_EQ(need.device_bytes, 2 * std::int64_t{128} * 512 * 512 * 512 * 4 + 512 * 512 * 9 * 4);
  EXPECT_EQ(memory_need(p, 3).device_bytes, 3 * need.device_bytes);
  try {
    check_memory_fits(p, 1, std::int64_t{79'000'000'000}, std::nullopt);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "512->512 3x3 s1 p1 at 512x512 -> 512x512, n128: needs 137.45 GB of device memory (activation 68.72 "
              "GB, filter 0.01 GB, output 68.72 GB) and the device has 79.00 GB free");
  }
  EXPECT_THROW(check_memory_fits(p, 1, std::nullopt, std::int64_t{64'000'000'000}), InputError);
  EXPECT_NO_THROW(check_memory_fits(p, 1, std::nullopt, std::nullopt));  // nothing known: nothing refused
  EXPECT_NO_THROW(check_memory_fits(p, 1, std::int64_t{200'000'000'000}, std::int64_t{200'000'000'000}));
}

TEST(MemoryCheck, SetsOfBuffersCountInTheMessageAndHostMemoryIsRead) {
  const Problem p{.n = 1, .c = 64, .k = 64, .input = {1, 56, 56}, .filter = {1, 3, 3}, .padding = {0, 1, 1}};
  try {
    check_memory_fits(p, 4, std::int64_t{1'000'000}, std::nullopt);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("needs 0.01 GB of device memory (4 sets of activation"), std::string::npos)
        << e.what();
  }
  const std::optional<std::int64_t> host = host_available_bytes();
  ASSERT_TRUE(host.has_value());  // Linux: /proc/meminfo
  EXPECT_GT(*host, 0);
}

}  // namespace convgen
