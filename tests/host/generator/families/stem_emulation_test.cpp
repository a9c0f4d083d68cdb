// stem_emulation_test: runs templates/stem.cu on the host, a std::thread per CUDA thread, against the reference. No
// GPU is needed: the template is plain C++ once the few CUDA words it uses are defined (support/host_cuda.hpp), so its
// patch and filter staging, the phases of the column stride, the padded row pitch, partial tiles and the family's
// launch geometry are checked end to end on every CI run.
#include <algorithm>
#include <limits>
#include <span>
#include <vector>

#include <gtest/gtest.h>

#include "generator/family.hpp"
#include "reference/host_tensor.hpp"
#include "reference/reference.hpp"
#include "stem_params.hpp"
#include "support/corpus.hpp"
#include "support/host_cuda.hpp"
#include "support/literal_shape.hpp"

namespace convgen_emulation {
using namespace convgen::host_cuda;  // NOLINT(google-build-using-namespace): the template's CUDA words
}  // namespace convgen_emulation

#define __shared__ static

// Declares namespace NAME with kProblem, kSpec and the cfg constants the generator's prelude would render for them.
#define STEM_CASE(NAME, PROBLEM, SPEC)                                                                          \
  namespace convgen_emulation::NAME {                                                                           \
  constexpr convgen::testing_support::LiteralShape kProblem = PROBLEM;                                          \
  constexpr convgen::StemParams kSpec = SPEC;                                                                   \
  namespace cfg {                                                                                               \
  CONVGEN_HOST_PROBLEM_CONSTANTS(kProblem)                                                                      \
  constexpr int BLOCK_Q = kSpec.block_q, THREAD_P = kSpec.thread_p, THREAD_K = kSpec.thread_k;                 \
  constexpr int WARPS_P = kSpec.warps_p, WARPS_K = kSpec.warps_k;                                               \
  }                                                                                                             \
  }

#define STEM_SPEC(Q, TP, TK, WP, WK) \
  (convgen::StemParams{.block_q = Q, .thread_p = TP, .thread_k = TK, .warps_p = WP, .warps_k = WK})

using convgen::Layout;
using Shape = convgen::testing_support::LiteralShape;

constexpr convgen::Epilogue kRelu6Epilogue{.alpha = 1.5, .beta = 0.5, .bias = true, .act = convgen::Activation::relu6};

// ResNet's stem shape, small: C = 3, 7x7 stride 2 pad 3, K = 37 (a partial channel tile), odd sizes, batch 2; two
// row groups of 16 lanes.
STEM_CASE(stem7x7_s2_partial_tiles, (Shape{.n = 2, .c = 3, .k = 37, .input = {1, 23, 19}, .filter = {1, 7, 7}, .stride = {1, 2, 2}, .padding = {0, 3, 3}, .layout = Layout::nchw}), STEM_SPEC(16, 2, 8, 2, 2))
namespace convgen_emulation::stem7x7_s2_partial_tiles {
#define CONVGEN_ENTRY stem_kernel_stem7x7_s2_partial_tiles
#include "templates/stem.cu"
#undef CONVGEN_ENTRY
}  // namespace convgen_emulation::stem7x7_s2_partial_tiles

// A 3x3 stride-1 stem with 32 lanes a row and a partial column tile (70 = 32 + 32 + 6), three rows a thread.
STEM_CASE(wide_q32_3x3, (Shape{.n = 1, .c = 3, .k = 20, .input = {1, 30, 70}, .filter = {1, 3, 3}, .padding = {0, 1, 1}, .layout = Layout::nchw}), STEM_SPEC(32, 3, 4, 2, 3))
namespace convgen_emulation::wide_q32_3x3 {
#define CONVGEN_ENTRY stem_kernel_wide_q32_3x3
#include "templates/stem.cu"
#undef CONVGEN_ENTRY
}  // namespace convgen_emulation::wide_q32_3x3

// Dilation 2, strides 2 and 3 (three phases of the column stride), padding past the filter's reach.
STEM_CASE(dilated_strided_padding_beyond, (Shape{.n = 1, .c = 2, .k = 8, .input = {1, 9, 31}, .filter = {1, 3, 5}, .stride = {1, 2, 3}, .padding = {0, 2, 4}, .dilation = {1, 2, 2}, .layout = Layout::nchw}), STEM_SPEC(16, 4, 4, 1, 2))
namespace convgen_emulation::dilated_strided_padding_beyond {
#define CONVGEN_ENTRY stem_kernel_dilated_strided_padding_beyond
#include "templates/stem.cu"
#undef CONVGEN_ENTRY
}  // namespace convgen_emulation::dilated_strided_padding_beyond

// 1-D NCW, stride 2, dilation 2.
STEM_CASE(conv1d_ncw, (Shape{.n = 2, .c = 4, .k = 9, .input = {1, 1, 50}, .filter = {1, 1, 5}, .stride = {1, 1, 2}, .padding = {0, 0, 2}, .dilation = {1, 1, 2}, .layout = Layout::ncw}), STEM_SPEC(16, 1, 4, 1, 1))
namespace convgen_emulation::conv1d_ncw {
#define CONVGEN_ENTRY stem_kernel_conv1d_ncw
#include "templates/stem.cu"
#undef CONVGEN_ENTRY
}  // namespace convgen_emulation::conv1d_ncw

// The most input channels the family serves, a 5x5 filter, 16 channels a thread.
STEM_CASE(eight_channels_5x5, (Shape{.n = 1, .c = 8, .k = 16, .input = {1, 12, 12}, .filter = {1, 5, 5}, .padding = {0, 2, 2}, .layout = Layout::nchw}), STEM_SPEC(16, 2, 16, 1, 1))
namespace convgen_emulation::eight_channels_5x5 {
#define CONVGEN_ENTRY stem_kernel_eight_channels_5x5
#include "templates/stem.cu"
#undef CONVGEN_ENTRY
}  // namespace convgen_emulation::eight_channels_5x5

// The fused epilogue: bias + residual + relu6 with alpha and beta not 1.
STEM_CASE(stem_bias_residual_relu6, (Shape{.n = 2, .c = 3, .k = 10, .input = {1, 17, 13}, .filter = {1, 7, 7}, .stride = {1, 2, 2}, .padding = {0, 3, 3}, .layout = Layout::nchw, .epilogue = kRelu6Epilogue}), STEM_SPEC(32, 2, 8, 2, 1))
namespace convgen_emulation::stem_bias_residual_relu6 {
#define CONVGEN_ENTRY stem_kernel_stem_bias_residual_relu6
#include "templates/stem.cu"
#undef CONVGEN_ENTRY
}  // namespace convgen_emulation::stem_bias_residual_relu6

// The row pitch is padded so that the two row groups of 16 lanes read different banks (rows 4 apart at stride 2).
static_assert(convgen_emulation::stem7x7_s2_partial_tiles::stem::ROW_PITCH * 4 % 32 == 16);
static_assert(convgen_emulation::wide_q32_3x3::stem::ROW_PITCH == convgen_emulation::wide_q32_3x3::stem::PHASE_COLS);

namespace convgen {
namespace {

using Kernel = void (*)(const float*, const float*, float*, float*, const float*, const float*);

struct EmulationCase {
  const char* name;
  Problem problem;
  StemParams spec;
  Kernel kernel;
  int smem_bytes;  // the template's static shared memory (its s_stage)
};

void PrintTo(const EmulationCase& c, std::ostream* os) { *os << c.name; }

#define STEM_EMULATION_CASE(NAME)                                                                                     \
  EmulationCase {                                                                                                     \
#NAME, convgen_emulation::NAME::kProblem, convgen_emulation::NAME::kSpec, &convgen_emulation::NAME::stem_kernel_##NAME, \
        4 * (convgen_emulation::NAME::stem::FILTER_FLOATS + convgen_emulation::NAME::stem::PATCH_FLOATS)                  \
  }

class StemEmulation : public testing::TestWithParam<EmulationCase> {};

// Launches the kernel over the grid the family computes, block after block; the output starts as NaN so that an
// output no thread writes fails the comparison.
TEST_P(StemEmulation, MatchesTheReferenceOnEveryOutput) {
  const EmulationCase& c = GetParam();
  ASSERT_EQ(validate(c.problem), "");
  const KernelSpec spec = to_spec(c.spec);
  ASSERT_EQ(family("stem").check_support(c.problem, testing_support::h100(), spec), std::nullopt);
  std::vector<float> activation(static_cast<std::size_t>(activation_elements(c.problem)));
  std::vector<float> filter(static_cast<std::size_t>(filter_elements(c.problem)));
  fill_random(activation, 1);
  fill_random(filter, 2);
  std::vector<float> bias, residual;
  if (c.problem.epilogue.bias) {
    bias.resize(static_cast<std::size_t>(c.problem.k));
    fill_random(bias, 3);
  }
  if (reads_residual(c.problem.epilogue)) {
    residual.resize(static_cast<std::size_t>(output_elements(c.problem)));
    fill_random(residual, 4);
  }
  std::vector<float> output(static_cast<std::size_t>(output_elements(c.problem)),
                            std::numeric_limits<float>::quiet_NaN());
  // The family's view of the block (its shared-memory check and the cost model's occupancy) is the template's.
  EXPECT_EQ(family("stem").cost_features(c.problem, spec).smem_bytes_per_block, c.smem_bytes);
  const LaunchPlan plan = family("stem").plan(c.problem, spec);
  ASSERT_EQ(plan.run.size(), 1u);
  EXPECT_TRUE(plan.run.front().early_launch);
  EXPECT_EQ(plan.main_geometry().grid[2], static_cast<unsigned>(c.problem.n));
  const float* bias_data = bias.empty() ? nullptr : bias.data();
  const float* residual_data = residual.empty() ? nullptr : residual.data();
  host_cuda::launch(plan.main_geometry(), [&] {
    c.kernel(activation.data(), filter.data(), output.data(), nullptr, bias_data, residual_data);
  });
  std::vector<double> expected = reference_conv(c.problem, activation, filter);
  apply_epilogue(c.problem, expected, {}, HostTensor::from_floats(DataType::fp32, bias),
                 HostTensor::from_floats(DataType::fp32, residual));
  const ErrorStats stats = compare(output, expected);
  EXPECT_EQ(stats.nan_count, 0) << "outputs left unwritten";
  EXPECT_TRUE(passes(stats, Precision::fp32)) << "rel_l2 " << stats.rel_l2 << ", max_abs " << stats.max_abs;
}

INSTANTIATE_TEST_SUITE_P(
    EdgeCases, StemEmulation,
    testing::Values(STEM_EMULATION_CASE(stem7x7_s2_partial_tiles), STEM_EMULATION_CASE(wide_q32_3x3),
                    STEM_EMULATION_CASE(dilated_strided_padding_beyond), STEM_EMULATION_CASE(conv1d_ncw),
                    STEM_EMULATION_CASE(eight_channels_5x5), STEM_EMULATION_CASE(stem_bias_residual_relu6)),
    [](const testing::TestParamInfo<EmulationCase>& param) { return std::string(param.param.name); });

}  // namespace
}  // namespace convgen
