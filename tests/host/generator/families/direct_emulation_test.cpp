// direct_emulation_test: runs templates/direct.cu on the host, a std::thread per CUDA thread, against the reference.
// No GPU is needed: the template is plain C++ once the few CUDA words it uses are defined (support/host_cuda.hpp),
// so its index arithmetic, tiling, bounds checks and the family's launch geometry are checked end to end on every
// CI run.
#include <math.h>
#include <sys/mman.h>

#include <algorithm>
#include <barrier>
#include <cmath>
#include <cstdint>
#include <limits>
#include <thread>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>

#include "direct_params.hpp"
#include "generator/family.hpp"
#include "reference/host_tensor.hpp"
#include "reference/reference.hpp"
#include "support/corpus.hpp"
#include "support/host_cuda.hpp"
#include "support/literal_shape.hpp"

namespace convgen_emulation {
using namespace convgen::host_cuda;  // NOLINT(google-build-using-namespace): the template's CUDA words
}  // namespace convgen_emulation

#define __shared__ static

// Declares namespace NAME with kProblem, kSpec and the cfg constants the generator's prelude would render for them.
#define DIRECT_CASE(NAME, PROBLEM, SPEC)                                                                  \
  namespace convgen_emulation::NAME {                                                                     \
  constexpr convgen::testing_support::LiteralShape kProblem = PROBLEM;                                    \
  constexpr convgen::DirectParams kSpec = SPEC;                                                           \
  namespace cfg {                                                                                         \
  CONVGEN_HOST_PROBLEM_CONSTANTS(kProblem)                                                                \
  constexpr int BLOCK_M = kSpec.block_m, BLOCK_N = kSpec.block_n, BLOCK_K = kSpec.block_k;                \
  constexpr int THREAD_M = kSpec.thread_m, THREAD_N = kSpec.thread_n;                                     \
  }                                                                                                       \
  }

#define DIRECT_SPEC(BM, BN, BK, TM, TN) \
  (convgen::DirectParams{.block_m = BM, .block_n = BN, .block_k = BK, .thread_m = TM, .thread_n = TN})

using convgen::Dims3;
using convgen::Layout;
using convgen::Problem;
using Shape = convgen::testing_support::LiteralShape;

// Stem: C = 3, 7x7 stride 2 pad 3, K = 37 (partial channel tile), odd sizes, batch 2. Group-tiled.
DIRECT_CASE(stem_nchw,
            (Shape{.n = 2,
                   .c = 3,
                   .k = 37,
                   .input = {1, 23, 19},
                   .filter = {1, 7, 7},
                   .stride = {1, 2, 2},
                   .padding = {0, 3, 3},
                   .layout = Layout::nchw}),
            DIRECT_SPEC(16, 64, 3, 4, 4))
namespace convgen_emulation::stem_nchw {
#define CONVGEN_ENTRY kernel_stem_nchw
#include "templates/direct.cu"
#undef CONVGEN_ENTRY
}  // namespace convgen_emulation::stem_nchw

// The same in NHWC, with a partial input-channel step (3 = 2 + 1).
DIRECT_CASE(stem_nhwc,
            (Shape{.n = 2,
                   .c = 3,
                   .k = 37,
                   .input = {1, 23, 19},
                   .filter = {1, 7, 7},
                   .stride = {1, 2, 2},
                   .padding = {0, 3, 3},
                   .layout = Layout::nhwc}),
            DIRECT_SPEC(8, 32, 2, 2, 2))
namespace convgen_emulation::stem_nhwc {
#define CONVGEN_ENTRY kernel_stem_nhwc
#include "templates/direct.cu"
#undef CONVGEN_ENTRY
}  // namespace convgen_emulation::stem_nhwc

// Depthwise, stride 2, odd input, batch 2: blocks run across groups, two channels per thread.
DIRECT_CASE(depthwise_nchw,
            (Shape{.n = 2,
                   .c = 12,
                   .k = 12,
                   .input = {1, 15, 15},
                   .filter = {1, 3, 3},
                   .stride = {1, 2, 2},
                   .padding = {0, 1, 1},
                   .groups = 12,
                   .layout = Layout::nchw}),
            DIRECT_SPEC(4, 32, 1, 2, 1))
namespace convgen_emulation::depthwise_nchw {
#define CONVGEN_ENTRY kernel_depthwise_nchw
#include "templates/direct.cu"
#undef CONVGEN_ENTRY
}  // namespace convgen_emulation::depthwise_nchw

// Depthwise NHWC with a partial channel tile (24 = 16 + 8).
DIRECT_CASE(depthwise_nhwc,
            (Shape{.n = 1,
                   .c = 24,
                   .k = 24,
                   .input = {1, 14, 14},
                   .filter = {1, 3, 3},
                   .padding = {0, 1, 1},
                   .groups = 24,
                   .layout = Layout::nhwc}),
            DIRECT_SPEC(16, 32, 1, 1, 4))
namespace convgen_emulation::depthwise_nhwc {
#define CONVGEN_ENTRY kernel_depthwise_nhwc
#include "templates/direct.cu"
#undef CONVGEN_ENTRY
}  // namespace convgen_emulation::depthwise_nhwc

// Channel multiplier 2 (C/g = 1, K/g = 2): a block of 4 channels spans two groups.
DIRECT_CASE(multiplier2_nchw,
            (Shape{.n = 1,
                   .c = 8,
                   .k = 16,
                   .input = {1, 9, 11},
                   .filter = {1, 3, 3},
                   .padding = {0, 1, 1},
                   .groups = 8,
                   .layout = Layout::nchw}),
            DIRECT_SPEC(4, 32, 1, 2, 2))
namespace convgen_emulation::multiplier2_nchw {
#define CONVGEN_ENTRY kernel_multiplier2_nchw
#include "templates/direct.cu"
#undef CONVGEN_ENTRY
}  // namespace convgen_emulation::multiplier2_nchw

// Three groups of 4 -> 6 channels, dilation 2, padding 2: channel tiles of 4 inside a group of 6, channel steps of 3.
DIRECT_CASE(groups3_dilated_nchw,
            (Shape{.n = 1,
                   .c = 12,
                   .k = 18,
                   .input = {1, 13, 10},
                   .filter = {1, 3, 3},
                   .padding = {0, 2, 2},
                   .dilation = {1, 2, 2},
                   .groups = 3,
                   .layout = Layout::nchw}),
            DIRECT_SPEC(4, 32, 3, 2, 2))
namespace convgen_emulation::groups3_dilated_nchw {
#define CONVGEN_ENTRY kernel_groups3_dilated_nchw
#include "templates/direct.cu"
#undef CONVGEN_ENTRY
}  // namespace convgen_emulation::groups3_dilated_nchw

// Three groups of 2 -> 3 channels in NHWC, channel tiles of 4 crossing group boundaries.
DIRECT_CASE(groups3_across_nhwc,
            (Shape{.n = 2,
                   .c = 6,
                   .k = 9,
                   .input = {1, 7, 8},
                   .filter = {1, 3, 3},
                   .stride = {1, 2, 1},
                   .padding = {0, 1, 1},
                   .groups = 3,
                   .layout = Layout::nhwc}),
            DIRECT_SPEC(4, 32, 2, 2, 2))
namespace convgen_emulation::groups3_across_nhwc {
#define CONVGEN_ENTRY kernel_groups3_across_nhwc
#include "templates/direct.cu"
#undef CONVGEN_ENTRY
}  // namespace convgen_emulation::groups3_across_nhwc

// 3-D NCDHW, stride 2, padding 1, batch 2.
DIRECT_CASE(conv3d_ncdhw,
            (Shape{.n = 2,
                   .c = 4,
                   .k = 8,
                   .input = {7, 9, 8},
                   .filter = {3, 3, 3},
                   .stride = {2, 2, 2},
                   .padding = {1, 1, 1},
                   .layout = Layout::ncdhw}),
            DIRECT_SPEC(8, 64, 4, 2, 2))
namespace convgen_emulation::conv3d_ncdhw {
#define CONVGEN_ENTRY kernel_conv3d_ncdhw
#include "templates/direct.cu"
#undef CONVGEN_ENTRY
}  // namespace convgen_emulation::conv3d_ncdhw

// 3-D NDHWC with a different stride, padding and dilation per dim.
DIRECT_CASE(conv3d_ndhwc,
            (Shape{.n = 1,
                   .c = 3,
                   .k = 5,
                   .input = {6, 7, 5},
                   .filter = {3, 3, 2},
                   .stride = {1, 2, 1},
                   .padding = {1, 0, 2},
                   .dilation = {2, 1, 1},
                   .layout = Layout::ndhwc}),
            DIRECT_SPEC(4, 32, 3, 1, 2))
namespace convgen_emulation::conv3d_ndhwc {
#define CONVGEN_ENTRY kernel_conv3d_ndhwc
#include "templates/direct.cu"
#undef CONVGEN_ENTRY
}  // namespace convgen_emulation::conv3d_ndhwc

// 1-D NCW, stride 2, dilation 2.
DIRECT_CASE(conv1d_ncw,
            (Shape{.n = 2,
                   .c = 8,
                   .k = 16,
                   .input = {1, 1, 50},
                   .filter = {1, 1, 5},
                   .stride = {1, 1, 2},
                   .padding = {0, 0, 2},
                   .dilation = {1, 1, 2},
                   .layout = Layout::ncw}),
            DIRECT_SPEC(8, 32, 8, 4, 1))
namespace convgen_emulation::conv1d_ncw {
#define CONVGEN_ENTRY kernel_conv1d_ncw
#include "templates/direct.cu"
#undef CONVGEN_ENTRY
}  // namespace convgen_emulation::conv1d_ncw

// 1-D NWC with a 150-tap filter: past the unroll limit, the tap loop stays a loop.
DIRECT_CASE(conv1d_nwc_long_filter,
            (Shape{.n = 1,
                   .c = 2,
                   .k = 3,
                   .input = {1, 1, 300},
                   .filter = {1, 1, 150},
                   .padding = {0, 0, 10},
                   .layout = Layout::nwc}),
            DIRECT_SPEC(4, 64, 1, 2, 2))
namespace convgen_emulation::conv1d_nwc_long_filter {
#define CONVGEN_ENTRY kernel_conv1d_nwc_long_filter
#include "templates/direct.cu"
#undef CONVGEN_ENTRY
}  // namespace convgen_emulation::conv1d_nwc_long_filter

// Padding larger than the input: a 2x2 input with padding 3 gives 6x6 outputs, most taps in the padding.
DIRECT_CASE(
    padding_beyond_input,
    (Shape{
        .n = 1, .c = 4, .k = 4, .input = {1, 2, 2}, .filter = {1, 3, 3}, .padding = {0, 3, 3}, .layout = Layout::nchw}),
    DIRECT_SPEC(2, 32, 4, 1, 1))
namespace convgen_emulation::padding_beyond_input {
#define CONVGEN_ENTRY kernel_padding_beyond_input
#include "templates/direct.cu"
#undef CONVGEN_ENTRY
}  // namespace convgen_emulation::padding_beyond_input

// 1x1 stride 2 over 32 channels in steps of 8, a channel tile wider than K (one group).
DIRECT_CASE(pointwise_s2,
            (Shape{.n = 1,
                   .c = 32,
                   .k = 5,
                   .input = {1, 15, 15},
                   .filter = {1, 1, 1},
                   .stride = {1, 2, 2},
                   .layout = Layout::nchw}),
            DIRECT_SPEC(8, 64, 8, 4, 4))
namespace convgen_emulation::pointwise_s2 {
#define CONVGEN_ENTRY kernel_pointwise_s2
#include "templates/direct.cu"
#undef CONVGEN_ENTRY
}  // namespace convgen_emulation::pointwise_s2

// 32 x 64 x 1040 x 1040: 2,215,116,800 elements in the activation and in the output, past 2^31 - 1 (issue 17). The
// last image's channels from 2 on start past 2^31, so 32-bit offsets would wrap.
DIRECT_CASE(past_2_to_31,
            (Shape{.n = 32,
                   .c = 64,
                   .k = 64,
                   .input = {1, 1040, 1040},
                   .filter = {1, 3, 3},
                   .padding = {0, 1, 1},
                   .layout = Layout::nchw}),
            DIRECT_SPEC(16, 64, 8, 4, 4))
namespace convgen_emulation::past_2_to_31 {
#define CONVGEN_ENTRY kernel_past_2_to_31
#include "templates/direct.cu"
#undef CONVGEN_ENTRY
}  // namespace convgen_emulation::past_2_to_31

// The fused epilogue (issue 12): bias + residual + relu6 with alpha and beta not 1, in the group-tiled (stem, NHWC)
// and the across-groups (depthwise, NCHW) channel mappings, and clip with a negative beta in 3-D.
constexpr convgen::Epilogue kRelu6Epilogue{.alpha = 1.5, .beta = 0.5, .bias = true, .act = convgen::Activation::relu6};

DIRECT_CASE(stem_nhwc_bias_residual_relu6,
            (Shape{.n = 2,
                   .c = 3,
                   .k = 37,
                   .input = {1, 23, 19},
                   .filter = {1, 7, 7},
                   .stride = {1, 2, 2},
                   .padding = {0, 3, 3},
                   .layout = Layout::nhwc,
                   .epilogue = kRelu6Epilogue}),
            DIRECT_SPEC(8, 32, 2, 2, 2))
namespace convgen_emulation::stem_nhwc_bias_residual_relu6 {
#define CONVGEN_ENTRY kernel_stem_nhwc_bias_residual_relu6
#include "templates/direct.cu"
#undef CONVGEN_ENTRY
}  // namespace convgen_emulation::stem_nhwc_bias_residual_relu6

DIRECT_CASE(depthwise_nchw_bias_residual_relu6,
            (Shape{.n = 2,
                   .c = 12,
                   .k = 12,
                   .input = {1, 15, 15},
                   .filter = {1, 3, 3},
                   .stride = {1, 2, 2},
                   .padding = {0, 1, 1},
                   .groups = 12,
                   .layout = Layout::nchw,
                   .epilogue = kRelu6Epilogue}),
            DIRECT_SPEC(4, 32, 1, 2, 1))
namespace convgen_emulation::depthwise_nchw_bias_residual_relu6 {
#define CONVGEN_ENTRY kernel_depthwise_nchw_bias_residual_relu6
#include "templates/direct.cu"
#undef CONVGEN_ENTRY
}  // namespace convgen_emulation::depthwise_nchw_bias_residual_relu6

DIRECT_CASE(conv3d_ncdhw_residual_clip,
            (Shape{.n = 2,
                   .c = 4,
                   .k = 8,
                   .input = {7, 9, 8},
                   .filter = {3, 3, 3},
                   .stride = {2, 2, 2},
                   .padding = {1, 1, 1},
                   .layout = Layout::ncdhw,
                   .epilogue = {.beta = -1, .act = convgen::Activation::clip, .clip_lo = -0.5, .clip_hi = 1}}),
            DIRECT_SPEC(8, 64, 4, 2, 2))
namespace convgen_emulation::conv3d_ncdhw_residual_clip {
#define CONVGEN_ENTRY kernel_conv3d_ncdhw_residual_clip
#include "templates/direct.cu"
#undef CONVGEN_ENTRY
}  // namespace convgen_emulation::conv3d_ncdhw_residual_clip

static_assert(std::is_same_v<convgen_emulation::past_2_to_31::direct::Index, long long>,
              "a tensor past 2^31 elements is indexed in 64 bits");
static_assert(std::is_same_v<convgen_emulation::stem_nchw::direct::Index, int>, "small tensors keep 32-bit offsets");

namespace convgen {
namespace {

using Kernel = void (*)(const float*, const float*, float*, float*, const float*, const float*);

struct EmulationCase {
  const char* name;
  Problem problem;
  DirectParams spec;
  Kernel kernel;
};

void PrintTo(const EmulationCase& c, std::ostream* os) { *os << c.name; }

#define DIRECT_EMULATION_CASE(NAME)                                                                                   \
  EmulationCase {                                                                                                     \
#NAME, convgen_emulation::NAME::kProblem, convgen_emulation::NAME::kSpec, &convgen_emulation::NAME::kernel_##NAME \
  }

// Launches `kernel` over the grid the family computes, block after block; the output starts as NaN so that an
// output no thread writes fails the comparison.
std::vector<float> run_on_host(const EmulationCase& c, std::span<const float> activation, std::span<const float> filter,
                               std::span<const float> bias = {}, std::span<const float> residual = {}) {
  std::vector<float> output(static_cast<std::size_t>(output_elements(c.problem)),
                            std::numeric_limits<float>::quiet_NaN());
  const LaunchGeometry geometry = convgen::family("direct").plan(c.problem, convgen::to_spec(c.spec)).main_geometry();
  // An operand the epilogue does not read is passed as null, as the launcher does.
  const float* bias_data = bias.empty() ? nullptr : bias.data();
  const float* residual_data = residual.empty() ? nullptr : residual.data();
  convgen::host_cuda::launch(
      geometry, [&] { c.kernel(activation.data(), filter.data(), output.data(), nullptr, bias_data, residual_data); });
  return output;
}

class DirectEmulation : public testing::TestWithParam<EmulationCase> {};

TEST_P(DirectEmulation, MatchesTheReferenceOnEveryOutput) {
  const EmulationCase& c = GetParam();
  ASSERT_EQ(validate(c.problem), "");
  ASSERT_EQ(convgen::family("direct").check_support(c.problem, convgen::testing_support::h100(), convgen::to_spec(c.spec)), std::nullopt);
  ASSERT_EQ(convgen::family("direct").plan(c.problem, convgen::to_spec(c.spec)).main_geometry().grid[2], 1u);
  std::vector<float> activation(static_cast<std::size_t>(activation_elements(c.problem)));
  std::vector<float> filter(static_cast<std::size_t>(filter_elements(c.problem)));
  fill_random(activation, 1);
  fill_random(filter, 2);
  // The epilogue's operands where it reads them (empty, and null in the kernel, otherwise).
  std::vector<float> bias, residual;
  if (c.problem.epilogue.bias) {
    bias.resize(static_cast<std::size_t>(c.problem.k));
    fill_random(bias, 3);
  }
  if (reads_residual(c.problem.epilogue)) {
    residual.resize(static_cast<std::size_t>(output_elements(c.problem)));
    fill_random(residual, 4);
  }
  const std::vector<float> output = run_on_host(c, activation, filter, bias, residual);
  std::vector<double> expected = reference_conv(c.problem, activation, filter);
  apply_epilogue(c.problem, expected, {}, HostTensor::from_floats(DataType::fp32, bias),
                 HostTensor::from_floats(DataType::fp32, residual));
  if (c.problem.epilogue.act != Activation::none) {
    // The activation must have acted: some outputs sit at its bounds.
    const Epilogue& e = c.problem.epilogue;
    const double lo = e.act == Activation::clip ? e.clip_lo : 0, hi = e.act == Activation::clip ? e.clip_hi : 6;
    EXPECT_GT(std::count_if(expected.begin(), expected.end(), [&](double v) { return v == lo || v == hi; }), 0);
  }
  const ErrorStats stats = compare(output, expected);
  EXPECT_EQ(stats.nan_count, 0) << "outputs left unwritten";
  EXPECT_TRUE(passes(stats, Precision::fp32)) << "rel_l2 " << stats.rel_l2 << ", max_abs " << stats.max_abs;
}

INSTANTIATE_TEST_SUITE_P(
    EdgeCases, DirectEmulation,
    testing::Values(DIRECT_EMULATION_CASE(stem_nchw), DIRECT_EMULATION_CASE(stem_nhwc),
                    DIRECT_EMULATION_CASE(depthwise_nchw), DIRECT_EMULATION_CASE(depthwise_nhwc),
                    DIRECT_EMULATION_CASE(multiplier2_nchw), DIRECT_EMULATION_CASE(groups3_dilated_nchw),
                    DIRECT_EMULATION_CASE(groups3_across_nhwc), DIRECT_EMULATION_CASE(conv3d_ncdhw),
                    DIRECT_EMULATION_CASE(conv3d_ndhwc), DIRECT_EMULATION_CASE(conv1d_ncw),
                    DIRECT_EMULATION_CASE(conv1d_nwc_long_filter), DIRECT_EMULATION_CASE(padding_beyond_input),
                    DIRECT_EMULATION_CASE(pointwise_s2), DIRECT_EMULATION_CASE(stem_nhwc_bias_residual_relu6),
                    DIRECT_EMULATION_CASE(depthwise_nchw_bias_residual_relu6),
                    DIRECT_EMULATION_CASE(conv3d_ncdhw_residual_clip)),
    [](const testing::TestParamInfo<EmulationCase>& param) { return std::string(param.param.name); });

// An anonymous private mapping of `bytes` that reserves no memory: pages exist once touched (the tensors of a layer
// past 2^31 elements are 8.9 GB each; the test touches a few megabytes of them).
class SparseBuffer {
 public:
  explicit SparseBuffer(std::size_t bytes) : bytes_(bytes) {
    void* at = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    data_ = at == MAP_FAILED ? nullptr : static_cast<float*>(at);
  }
  ~SparseBuffer() {
    if (data_) munmap(data_, bytes_);
  }
  float* data() const { return data_; }

 private:
  std::size_t bytes_;
  float* data_;
};

TEST(DirectEmulationPast2To31, TheLastBlockReadsAndWritesPast2To31ElementsAtTheRightPlaces) {
  using convgen_emulation::past_2_to_31::kProblem;
  const Problem p = kProblem;
  const DirectParams spec = convgen_emulation::past_2_to_31::kSpec;
  ASSERT_EQ(validate(p), "");
  ASSERT_GT(activation_elements(p), std::int64_t{1} << 31);
  ASSERT_EQ(convgen::family("direct").check_support(p, convgen::testing_support::h100(), convgen::to_spec(spec)), std::nullopt);
  const LaunchGeometry geometry = convgen::family("direct").plan(p, convgen::to_spec(spec)).main_geometry();

  SparseBuffer activation(static_cast<std::size_t>(activation_elements(p)) * sizeof(float));
  SparseBuffer output(static_cast<std::size_t>(output_elements(p)) * sizeof(float));
  ASSERT_NE(activation.data(), nullptr);
  ASSERT_NE(output.data(), nullptr);
  std::vector<float> filter(static_cast<std::size_t>(filter_elements(p)));
  fill_random(filter, 2);

  // The last block: the last 64 pixels (image 31, row 1039, columns 976 to 1039) of channels 48 to 63. It reads
  // rows 1038 and 1039 of every input channel of image 31; those and two rows above get random values.
  constexpr std::int64_t kC = 64, kK = 64, kH = 1040, kW = 1040, kN = 31;
  const auto at = [&](std::int64_t channels, std::int64_t c, std::int64_t h, std::int64_t w) {
    return ((kN * channels + c) * kH + h) * kW + w;
  };
  std::vector<float> rows(static_cast<std::size_t>(4 * kW));
  for (std::int64_t c = 0; c < kC; ++c) {
    fill_random(rows, 100 + static_cast<std::uint64_t>(c));
    std::copy(rows.begin(), rows.end(), activation.data() + at(kC, c, kH - 4, 0));
  }
  for (std::int64_t k = 0; k < kK; ++k)
    std::fill_n(output.data() + at(kK, k, kH - 2, 0), 2 * kW, std::numeric_limits<float>::quiet_NaN());

  const unsigned threads = geometry.block[0] * geometry.block[1] * geometry.block[2];
  {
    std::barrier<> barrier(threads);
    convgen::host_cuda::block_barrier = &barrier;
    std::vector<std::jthread> block;
    for (unsigned t = 0; t < threads; ++t)
      block.emplace_back([&, t] {
        convgen::host_cuda::threadIdx = {t, 0, 0};
        convgen::host_cuda::blockIdx = {geometry.grid[0] - 1, geometry.grid[1] - 1, 0};
        convgen_emulation::past_2_to_31::kernel_past_2_to_31(activation.data(), filter.data(), output.data(), nullptr,
                                                             nullptr, nullptr);
      });
  }

  int checked = 0;
  for (std::int64_t k = 0; k < kK; ++k)
    for (std::int64_t w = 0; w < kW; ++w) {
      const float got = output.data()[at(kK, k, kH - 1, w)];
      if (k < 48 || w < 976) {
        EXPECT_TRUE(std::isnan(got)) << "k " << k << " w " << w << ": written by a block that does not own it";
        continue;
      }
      double expected = 0;
      for (std::int64_t c = 0; c < kC; ++c)
        for (std::int64_t r = 0; r < 3; ++r)
          for (std::int64_t s = 0; s < 3; ++s) {
            const std::int64_t h = kH - 1 + r - 1, x = w + s - 1;
            if (h >= kH || x < 0 || x >= kW) continue;
            expected += double{activation.data()[at(kC, c, h, x)]} *
                        filter[static_cast<std::size_t>(((k * kC + c) * 3 + r) * 3 + s)];
          }
      EXPECT_NEAR(got, expected, 1e-4 * std::max(1.0, std::abs(expected))) << "k " << k << " w " << w;
      ++checked;
    }
  EXPECT_EQ(checked, 16 * 64);
  EXPECT_GT(at(kK, 63, kH - 1, kW - 1), std::int64_t{1} << 31) << "the test must write past 2^31";
}

}  // namespace
}  // namespace convgen
