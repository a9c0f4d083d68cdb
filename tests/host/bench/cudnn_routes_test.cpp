// cudnn_routes_test: the cuDNN baseline's pieces that need no GPU: name tables, the problem in cuDNN's terms,
// cuDNN's own descriptors checked against convgen's output shape, the check macro and the constructor's errors.
#include "bench/cudnn_routes.hpp"

#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "bench/cudnn_check.hpp"
#include "convgen/error.hpp"
#include "runtime/driver.hpp"
#include "support/corpus.hpp"

namespace convgen {
namespace {

Problem with_layout(Problem problem, Layout layout) {
  problem.layout = layout;
  return problem;
}

// The layout of the same rank with the channels on the other side.
Layout other_layout(Layout layout) {
  switch (layout) {
    case Layout::ncw:
      return Layout::nwc;
    case Layout::nwc:
      return Layout::ncw;
    case Layout::nchw:
      return Layout::nhwc;
    case Layout::nhwc:
      return Layout::nchw;
    case Layout::ncdhw:
      return Layout::ndhwc;
    default:
      return Layout::ncdhw;
  }
}

TEST(CudnnRoutesNames, LegacyAlgorithmsAreTheEightOfCudnnInItsOrder) {
  ASSERT_EQ(EnumNames<LegacyAlgo>::table.size(), static_cast<std::size_t>(CUDNN_CONVOLUTION_FWD_ALGO_COUNT));
  EXPECT_EQ(static_cast<int>(LegacyAlgo::implicit_gemm), CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM);
  EXPECT_EQ(static_cast<int>(LegacyAlgo::implicit_precomp_gemm), CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM);
  EXPECT_EQ(static_cast<int>(LegacyAlgo::gemm), CUDNN_CONVOLUTION_FWD_ALGO_GEMM);
  EXPECT_EQ(static_cast<int>(LegacyAlgo::direct), CUDNN_CONVOLUTION_FWD_ALGO_DIRECT);
  EXPECT_EQ(static_cast<int>(LegacyAlgo::fft), CUDNN_CONVOLUTION_FWD_ALGO_FFT);
  EXPECT_EQ(static_cast<int>(LegacyAlgo::fft_tiling), CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING);
  EXPECT_EQ(static_cast<int>(LegacyAlgo::winograd), CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD);
  EXPECT_EQ(static_cast<int>(LegacyAlgo::winograd_nonfused), CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED);
  std::vector<std::string> names;
  for (const auto& [algo, name] : EnumNames<LegacyAlgo>::table) {
    names.emplace_back(name);
    EXPECT_EQ(parse_enum<LegacyAlgo>(name), algo);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM", "DIRECT", "FFT",
                                             "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED"}));
}

TEST(CudnnRoutesNames, MathModeFollowsThePrecision) {
  EXPECT_EQ(cudnn_math(Precision::fp32), CudnnMath::strict_fp32);
  EXPECT_EQ(cudnn_math(Precision::tf32), CudnnMath::tf32);
  EXPECT_EQ(cudnn_math(Precision::fp16), CudnnMath::tensor_op);
  EXPECT_EQ(cudnn_math(Precision::bf16), CudnnMath::tensor_op);
  EXPECT_EQ(fmt::format("{}", CudnnMath::strict_fp32), "strict_fp32");
  EXPECT_EQ(fmt::format("{} {}", GraphSource::heur_a, GraphSource::all), "heur_a all");
}

TEST(CudnnRoutesNames, NotesAndKnobsAreNamedWithoutTheirPrefixAndUnknownOnesByNumber) {
  EXPECT_EQ(numerical_note_name(CUDNN_NUMERICAL_NOTE_TENSOR_CORE), "TENSOR_CORE");
  EXPECT_EQ(numerical_note_name(CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS), "DOWN_CONVERT_INPUTS");
  EXPECT_EQ(numerical_note_name(CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_6x6), "WINOGRAD_TILE_6x6");
  EXPECT_EQ(numerical_note_name(CUDNN_NUMERICAL_NOTE_STRICT_NAN_PROP), "STRICT_NAN_PROP");
  EXPECT_EQ(numerical_note_name(77), "NOTE_77");
  EXPECT_EQ(behavior_note_name(CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION), "RUNTIME_COMPILATION");
  EXPECT_EQ(behavior_note_name(CUDNN_BEHAVIOR_NOTE_CUBLASLT_DEPENDENCY), "CUBLASLT_DEPENDENCY");
  EXPECT_EQ(behavior_note_name(-1), "NOTE_-1");
  EXPECT_EQ(knob_name(CUDNN_KNOB_TYPE_SWIZZLE), "SWIZZLE");
  EXPECT_EQ(knob_name(CUDNN_KNOB_TYPE_TILE_SIZE), "TILE_SIZE");
  EXPECT_EQ(knob_name(CUDNN_KNOB_TYPE_KERNEL_CFG), "KERNEL_CFG");
  EXPECT_EQ(knob_name(CUDNN_KNOB_TYPE_SPLIT_K_SLC), "SPLIT_K_SLC");
  EXPECT_EQ(knob_name(CUDNN_KNOB_TYPE_SWAP_AB), "SWAP_AB");
  EXPECT_EQ(knob_name(CUDNN_KNOB_TYPE_COUNTS), "KNOB_44");
}

TEST(CudnnRoutesNames, KnobsAreWrittenInKnobTypeOrder) {
  EXPECT_EQ(format_knobs({}), "");
  EXPECT_EQ(format_knobs({{CUDNN_KNOB_TYPE_TILE_SIZE, 3}, {CUDNN_KNOB_TYPE_SWIZZLE, 1}, {99, -2}}),
            "SWIZZLE=1,TILE_SIZE=3,KNOB_99=-2");
}

TEST(CudnnRoutesNames, GraphRoutesAreNamedByEngineAndEverySource) {
  EXPECT_EQ(graph_algo_name(3, {"heur_a #0", "heur_b #2", "all"}), "engine 3 [heur_a #0, heur_b #2, all]");
  EXPECT_EQ(graph_algo_name(12, {"all"}), "engine 12 [all]");
}

TEST(CudnnRoutesMath, StrictFp32ExcludesTensorCoreAndDownConvertingEnginesOnly) {
  EXPECT_EQ(graph_exclusion(CudnnMath::strict_fp32, {CUDNN_NUMERICAL_NOTE_FFT, CUDNN_NUMERICAL_NOTE_TENSOR_CORE}),
            "excluded: tensor cores in strict fp32");
  EXPECT_EQ(graph_exclusion(CudnnMath::strict_fp32, {CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS}),
            "excluded: down-converts inputs in strict fp32");
  EXPECT_EQ(graph_exclusion(CudnnMath::strict_fp32, {CUDNN_NUMERICAL_NOTE_WINOGRAD, CUDNN_NUMERICAL_NOTE_FFT}), "");
  EXPECT_EQ(graph_exclusion(CudnnMath::strict_fp32, {}), "");
  EXPECT_EQ(graph_exclusion(CudnnMath::tf32, {CUDNN_NUMERICAL_NOTE_TENSOR_CORE}), "");
  EXPECT_EQ(graph_exclusion(CudnnMath::tensor_op, {CUDNN_NUMERICAL_NOTE_TENSOR_CORE}), "");
}

TEST(CudnnRoutesShape, ChannelsFirst2dIsPackedRowMajorWithTheFilterKcrs) {
  const Problem p{.n = 2, .c = 8, .k = 4, .input = {1, 5, 7}, .filter = {1, 3, 3}, .padding = {0, 1, 1}};
  const CudnnConvShape s = cudnn_conv_shape(p);
  EXPECT_EQ(s.activation, (CudnnTensorShape{{2, 8, 5, 7}, {280, 35, 7, 1}}));
  EXPECT_EQ(s.filter, (CudnnTensorShape{{4, 8, 3, 3}, {72, 9, 3, 1}}));
  EXPECT_EQ(s.output, (CudnnTensorShape{{2, 4, 5, 7}, {140, 35, 7, 1}}));
  EXPECT_EQ(s.padding, (std::vector<std::int64_t>{1, 1}));
  EXPECT_EQ(s.stride, (std::vector<std::int64_t>{1, 1}));
  EXPECT_EQ(s.dilation, (std::vector<std::int64_t>{1, 1}));
}

TEST(CudnnRoutesShape, ChannelsLastGroupedKeepsNchwDimsWithChannelsInnermostAndTheFilterKrsc) {
  const Problem p{.n = 1,
                  .c = 8,
                  .k = 6,
                  .input = {1, 5, 7},
                  .filter = {1, 3, 1},
                  .stride = {1, 2, 1},
                  .groups = 2,
                  .layout = Layout::nhwc};
  const CudnnConvShape s = cudnn_conv_shape(p);
  EXPECT_EQ(s.activation, (CudnnTensorShape{{1, 8, 5, 7}, {280, 1, 56, 8}}));
  EXPECT_EQ(s.filter, (CudnnTensorShape{{6, 4, 3, 1}, {12, 1, 4, 4}}));
  EXPECT_EQ(s.output, (CudnnTensorShape{{1, 6, 2, 7}, {84, 1, 42, 6}}));
  EXPECT_EQ(s.stride, (std::vector<std::int64_t>{2, 1}));
}

TEST(CudnnRoutesShape, ThreeDimensionalProblemsStay3d) {
  const Problem p{.n = 1,
                  .c = 2,
                  .k = 3,
                  .input = {4, 5, 6},
                  .filter = {3, 3, 3},
                  .padding = {1, 0, 1},
                  .dilation = {1, 2, 1},
                  .layout = Layout::ndhwc};
  const CudnnConvShape s = cudnn_conv_shape(p);
  EXPECT_EQ(s.activation, (CudnnTensorShape{{1, 2, 4, 5, 6}, {240, 1, 60, 12, 2}}));
  EXPECT_EQ(s.filter, (CudnnTensorShape{{3, 2, 3, 3, 3}, {54, 1, 18, 6, 2}}));
  EXPECT_EQ(s.output.dims, (std::vector<std::int64_t>{1, 3, 4, 1, 6}));
  EXPECT_EQ(s.padding, (std::vector<std::int64_t>{1, 0, 1}));
  EXPECT_EQ(s.dilation, (std::vector<std::int64_t>{1, 2, 1}));
}

TEST(CudnnRoutesShape, OneDimensionalProblemsBecome2dWithHeightOne) {
  const Problem p{.n = 1, .c = 3, .k = 2, .input = {1, 1, 9}, .filter = {1, 1, 3}, .layout = Layout::nwc};
  const CudnnConvShape s = cudnn_conv_shape(p);
  EXPECT_EQ(s.activation, (CudnnTensorShape{{1, 3, 1, 9}, {27, 1, 27, 3}}));
  EXPECT_EQ(s.filter, (CudnnTensorShape{{2, 3, 1, 3}, {9, 1, 9, 3}}));
  EXPECT_EQ(s.output.dims, (std::vector<std::int64_t>{1, 2, 1, 7}));
  EXPECT_EQ(s.padding, (std::vector<std::int64_t>{0, 0}));
}

TEST(CudnnRoutesShape, AnInvalidProblemIsAnInputErrorNamingIt) {
  const Problem p{.c = 6, .k = 4, .groups = 4};
  try {
    cudnn_conv_shape(p);
    FAIL() << "no InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "invalid problem " + problem_key(p) + ": " + validate(p));
  }
}

// cuDNN's own derivation of the output shape from the legacy descriptors agrees with convgen's on every edge case,
// in both layouts: the descriptors say what convgen means.
TEST(CudnnRoutesDescriptors, LegacyDescriptorsGiveConvgensOutputShapeOnEveryEdgeCase) {
  for (const Layer& layer : testing_support::edge_cases().layers) {
    for (const Layout layout : {layer.problem.layout, other_layout(layer.problem.layout)}) {
      const Problem p = with_layout(layer.problem, layout);
      std::vector<int> dims;
      ASSERT_NO_THROW(dims = cudnn_legacy_output_dims(p)) << layer.name << " " << to_string(layout);
      const std::vector<std::int64_t> expected = cudnn_conv_shape(p).output.dims;
      EXPECT_EQ(std::vector<std::int64_t>(dims.begin(), dims.end()), expected)
          << layer.name << " " << to_string(layout);
    }
  }
}

// The graph API checks the X, W, Y shapes against the convolution when the operation is finalized.
TEST(CudnnRoutesDescriptors, GraphOperationFinalizesOnEveryEdgeCase) {
  for (const Layer& layer : testing_support::edge_cases().layers)
    for (const Layout layout : {layer.problem.layout, other_layout(layer.problem.layout)})
      EXPECT_NO_THROW(cudnn_check_graph_operation(with_layout(layer.problem, layout)))
          << layer.name << " " << to_string(layout);
}

TEST(CudnnRoutesCheck, CheckMacroNamesTheExpressionStatusFileAndLine) {
  // A fresh thread: cuDNN keeps the last failure's detail per thread, and this one has none.
  std::string message;
  std::thread([&] {
    try {
      detail::cudnn_check(CUDNN_STATUS_NOT_SUPPORTED, "cudnnFoo(x)", "bench/x.cpp", 7);
    } catch (const CudnnError& e) {
      message = e.what();
      EXPECT_EQ(e.status(), CUDNN_STATUS_NOT_SUPPORTED);
    }
  }).join();
  EXPECT_EQ(message, "bench/x.cpp:7: cudnnFoo(x) failed: CUDNN_STATUS_NOT_SUPPORTED");
}

TEST(CudnnRoutesCheck, CheckMacroAddsCudnnsDetailOfAFailedCall) {
  cudnnTensorDescriptor_t desc = nullptr;
  ASSERT_EQ(cudnnCreateTensorDescriptor(&desc), CUDNN_STATUS_SUCCESS);
  const int dims[1] = {1}, strides[1] = {1};
  try {
    CONVGEN_CUDNN_CHECK(cudnnSetTensorNdDescriptor(desc, CUDNN_DATA_FLOAT, 0, dims, strides));
    ADD_FAILURE() << "no CudnnError";
  } catch (const CudnnError& e) {
    EXPECT_EQ(e.status(), CUDNN_STATUS_BAD_PARAM);
    const std::string message = e.what();
    EXPECT_EQ(message.rfind(std::string(__FILE__) + ":", 0), 0u) << message;
    EXPECT_NE(message.find(": cudnnSetTensorNdDescriptor(desc, CUDNN_DATA_FLOAT, 0, dims, strides) failed: "
                           "CUDNN_STATUS_BAD_PARAM ("),
              std::string::npos)
        << message;
  }
  cudnnDestroyTensorDescriptor(desc);
}

TEST(CudnnRoutesVersion, VersionIsTheLoadedLibrarysOfThisMajor) {
  const std::string version = cudnn_version();
  EXPECT_TRUE(std::regex_match(version, std::regex(R"(\d+\.\d+\.\d+)"))) << version;
  EXPECT_EQ(version.rfind(std::to_string(CUDNN_MAJOR) + ".", 0), 0u) << version;
}

TEST(CudnnRoutesBaseline, AnInvalidProblemIsAnInputErrorWithOrWithoutADevice) {
  const Problem p{.n = 0};
  try {
    CudnnBaseline baseline(p);
    FAIL() << "no InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "invalid problem " + problem_key(p) + ": batch must be positive, got 0");
  }
}

TEST(CudnnRoutesBaseline, WithoutADeviceTheBaselineThrowsNoDeviceError) {
  if (cuda_available()) GTEST_SKIP() << "this machine has a CUDA device";
  try {
    CudnnBaseline baseline(Problem{.c = 4, .k = 4, .input = {1, 6, 6}, .filter = {1, 3, 3}});
    FAIL() << "no NoDeviceError";
  } catch (const NoDeviceError& e) {
    EXPECT_EQ(std::string(e.what()), "no CUDA device: " + no_device_reason());
  }
}

}  // namespace
}  // namespace convgen
