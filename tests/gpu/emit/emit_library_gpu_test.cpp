// emit_library_gpu_test: the checked-in example libraries on the GPU. generated/cusnn_sm90: every layer through an op
// (create, run, destroy) and the one-shot call against the float64 reference and against the JIT path running the
// same kernel, and the time per call through both. generated/weight_twins_sm90: each layer's own pruned filter through
// an op of the one shape, and a filter neither kernel was made for refused. generated/relu_on_load_sm90: layers that
// take their input before its ReLU, one kernel applying max(0, x) as it loads and two behind the ReLU prologue, on
// an unrectified input against the reference of max(0, x) and the JIT path.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "conv/conv_kernel.hpp"
#include "cusnn_sm90.h"
#include "generator/gpu_json.hpp"
#include "generator/shapes.hpp"
#include "igemm_params.hpp"
#include "reference/inputs.hpp"
#include "reference/npy.hpp"
#include "reference/reference.hpp"
#include "relu_on_load_sm90.h"
#include "runtime/driver.hpp"
#include "runtime/module.hpp"
#include "weight_twins_sm90.h"

namespace convgen {
namespace {

// A library's problem as convgen's (the emitted C structs of every library have these fields).
template <class LibraryProblem>
Problem to_problem(const LibraryProblem& p) {
  return {.n = p.n,
          .c = p.c,
          .k = p.k,
          .input = {p.d, p.h, p.w},
          .filter = {p.t, p.r, p.s},
          .stride = {p.stride_d, p.stride_h, p.stride_w},
          .padding = {p.pad_d, p.pad_h, p.pad_w},
          .dilation = {p.dilation_d, p.dilation_h, p.dilation_w},
          .groups = p.groups,
          .layout = static_cast<Layout>(p.layout),
          .precision = static_cast<Precision>(p.precision)};
}

// Median milliseconds per call of `call`, from 7 samples of 20 calls between events (a record, not a benchmark).
template <class F>
double ms_per_call(CUstream stream, F&& call) {
  for (int i = 0; i < 3; ++i) call();
  Event start, stop;
  std::vector<double> samples;
  for (int sample = 0; sample < 7; ++sample) {
    start.record(stream);
    for (int i = 0; i < 20; ++i) call();
    stop.record(stream);
    stop.synchronize();
    samples.push_back(Event::elapsed_ms(start, stop) / 20);
  }
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

std::int64_t differing_words(const std::vector<float>& a, const std::vector<float>& b) {
  std::int64_t count = 0;
  for (std::size_t i = 0; i < a.size(); ++i) count += std::memcmp(&a[i], &b[i], sizeof(float)) != 0;
  return count;
}

TEST(EmitLibraryGpu, EveryCusnnLayerThroughTheLibraryMatchesTheReferenceAndTheJitPath) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: " << no_device_reason();
  Context context(0);
  if (cusnn_sm90_check_device() != CUSNN_SM90_SUCCESS)
    GTEST_SKIP() << "the library cannot run here: " << cusnn_sm90_last_error_message();
  Stream stream;
  const Gpu h100 = load_gpu(std::string(CONVGEN_SOURCE_DIR) + "/gpus/h100_sxm.json");  // what regen-examples used
  const Suite suite = load_suite(std::string(CONVGEN_SOURCE_DIR) + "/shapes/cusnn.csv");
  ASSERT_EQ(cusnn_sm90_problem_count(), suite.layers.size());
  JitCache cache(std::nullopt);

  std::string table = fmt::format("{:<18} {:<42} {:>8} {:>10} {:>10} {:>14} {:>12}\n", "layer", "kernel", "rel L2",
                                  "lib us", "JIT us", "lib==JIT bits", "JIT==JIT");
  for (std::size_t i = 0; i < cusnn_sm90_problem_count(); ++i) {
    const cusnn_sm90_problem& lp = *cusnn_sm90_problem_at(i);
    const Problem problem = to_problem(lp);
    const std::string layer = cusnn_sm90_problem_name(i);
    SCOPED_TRACE(layer);
    EXPECT_EQ(problem, suite.layers[i].problem);
    char key[256];
    cusnn_sm90_problem_key(&lp, key, sizeof key);
    EXPECT_EQ(std::string(key), problem_key(problem));
    const char* kernel = cusnn_sm90_kernel_name(&lp, 90);
    ASSERT_NE(kernel, nullptr);
    const BuiltKernel built = build_kernel(problem, parse_kernel_name(kernel), h100, cache);
    ConvLauncher jit(built);

    std::vector<float> activation(static_cast<std::size_t>(activation_elements(problem)));
    std::vector<float> filter(static_cast<std::size_t>(filter_elements(problem)));
    fill_random(activation, 100 + i);
    fill_random(filter, 200 + i);
    const std::size_t outputs = static_cast<std::size_t>(output_elements(problem));
    DeviceBuffer d_activation(activation.size() * 4), d_filter(filter.size() * 4), d_output(outputs * 4);
    d_activation.upload(activation);
    d_filter.upload(filter);

    // The library's op: its plan set up once with this filter, every call with the workspace it asks for.
    cusnn_sm90_op op = nullptr;
    ASSERT_EQ(cusnn_sm90_op_create(&lp, d_filter.ptr(), stream.get(), &op), CUSNN_SM90_SUCCESS)
        << cusnn_sm90_last_error_message();
    DeviceBuffer d_workspace(std::max<std::size_t>(cusnn_sm90_op_workspace_size(op), 256));
    const CUdeviceptr workspace = cusnn_sm90_op_workspace_size(op) > 0 ? d_workspace.ptr() : 0;

    // Each run starts from a NaN-poisoned output, so an output a kernel does not write fails.
    const auto run_library = [&] {
      return cusnn_sm90_op_run(op, d_activation.ptr(), d_output.ptr(), workspace, stream.get());
    };
    const auto run_one_shot = [&] {
      return cusnn_sm90_conv_forward(&lp, d_activation.ptr(), d_filter.ptr(), d_output.ptr(), stream.get());
    };
    // The JIT path's own setup (a transformed filter) and workspace (transformed tiles), where its plan has them.
    jit.prepare(d_filter.ptr(), stream.get());
    DeviceBuffer d_jit_workspace(static_cast<std::size_t>(std::max<std::int64_t>(built.plan.workspace_bytes(), 256)));
    const CUdeviceptr jit_workspace = built.plan.workspace_bytes() > 0 ? d_jit_workspace.ptr() : 0;
    const auto run_jit = [&] {
      jit.launch(d_activation.ptr(), d_filter.ptr(), d_output.ptr(), jit_workspace, stream.get());
    };
    std::vector<float> from_library(outputs), from_one_shot(outputs), from_jit(outputs), from_jit_again(outputs);
    d_output.fill_u32(0x7fc00000u, stream.get());
    ASSERT_EQ(run_library(), CUSNN_SM90_SUCCESS) << cusnn_sm90_last_error_message();
    stream.synchronize();
    d_output.download(from_library);
    // The one-shot call serves a plan with no setup and no workspace, and refuses the others (they need an op).
    d_output.fill_u32(0x7fc00000u, stream.get());
    if (workspace == 0 && built.plan.setup.empty() && built.plan.persistent_bytes() == 0) {
      ASSERT_EQ(run_one_shot(), CUSNN_SM90_SUCCESS) << cusnn_sm90_last_error_message();
      stream.synchronize();
      d_output.download(from_one_shot);
      const ErrorStats one_shot_stats = compare(from_one_shot, reference_conv(problem, activation, filter));
      EXPECT_TRUE(passes(one_shot_stats, problem.precision)) << "one-shot rel L2 " << one_shot_stats.rel_l2;
    } else {
      EXPECT_EQ(run_one_shot(), CUSNN_SM90_ERROR_NEEDS_OP);
    }
    d_output.fill_u32(0x7fc00000u, stream.get());
    run_jit();
    stream.synchronize();
    d_output.download(from_jit);
    d_output.fill_u32(0x7fc00000u, stream.get());
    run_jit();
    stream.synchronize();
    d_output.download(from_jit_again);

    const std::vector<double> reference = reference_conv(problem, activation, filter);
    const ErrorStats lib_stats = compare(from_library, reference);
    const ErrorStats jit_stats = compare(from_jit, reference);
    EXPECT_TRUE(passes(lib_stats, problem.precision))
        << "rel L2 " << lib_stats.rel_l2 << ", NaN " << lib_stats.nan_count;
    EXPECT_TRUE(passes(jit_stats, problem.precision)) << "rel L2 " << jit_stats.rel_l2;
    const std::int64_t lib_vs_jit = differing_words(from_library, from_jit);
    const std::int64_t jit_vs_jit = differing_words(from_jit, from_jit_again);
    if (!built.plan.zeroes_output_first() && jit_vs_jit == 0) {
      // One thread sums each output in a fixed order: the same kernel must give the same bits.
      EXPECT_EQ(lib_vs_jit, 0) << kernel;
    } else {
      // Split-K adds partial sums with atomics in whatever order blocks finish (act_sparse's warps, each a share of
      // the channels, add theirs into shared memory in whatever order they finish), so even two JIT runs may differ
      // in the last bits; the library must be as close to the JIT path as the JIT path is to the reference.
      std::vector<double> jit_as_double(from_jit.begin(), from_jit.end());
      const ErrorStats lib_vs_jit_stats = compare(from_library, jit_as_double);
      EXPECT_LE(lib_vs_jit_stats.rel_l2, 1e-6) << kernel;
    }

    const double lib_ms = ms_per_call(stream.get(), [&] { run_library(); });
    const double jit_ms = ms_per_call(stream.get(), run_jit);
    stream.synchronize();
    EXPECT_EQ(cusnn_sm90_op_destroy(op), CUSNN_SM90_SUCCESS) << cusnn_sm90_last_error_message();
    table += fmt::format("{:<18} {:<42} {:>8.1e} {:>10.2f} {:>10.2f} {:>14} {:>12}\n", layer, kernel, lib_stats.rel_l2,
                         lib_ms * 1000, jit_ms * 1000,
                         lib_vs_jit == 0 ? std::string("yes") : fmt::format("{} differ", lib_vs_jit),
                         jit_vs_jit == 0 ? std::string("yes") : fmt::format("{} differ", jit_vs_jit));
  }
  std::printf("\ncusnn_sm90 through the library's ops and the JIT path (median of 7 x 20 back-to-back calls):\n%s",
              table.c_str());
  if (const char* path = std::getenv("CONVGEN_VERIFY_REPORT"); path && *path)
    std::ofstream(path, std::ios::app) << "\ncusnn_sm90 library vs JIT path:\n" << table;
}

// An unknown problem is refused, or handed to the fallback, before the driver is touched: with or without a GPU.
TEST(EmitLibraryGpu, AnUnknownProblemIsRefusedOrHandedToTheFallback) {
  cusnn_sm90_problem unknown = *cusnn_sm90_problem_at(0);
  unknown.n = 5;
  EXPECT_EQ(cusnn_sm90_conv_forward(&unknown, 1, 1, 1, nullptr), CUSNN_SM90_ERROR_UNKNOWN_PROBLEM);
  EXPECT_EQ(std::string(cusnn_sm90_last_error_message()),
            "problem n5_c128_k32_i1x56x56_f1x3x3_s1x1x1_p0x1x1_d1x1x1_g1_nchw_fp32 was not emitted into cusnn_sm90 "
            "(it serves 8 problems; see cusnn_sm90_problem_at)");
  int calls = 0;
  cusnn_sm90_set_fallback(
      [](const cusnn_sm90_problem*, unsigned long long, unsigned long long, unsigned long long, void*, void* user) {
        ++*static_cast<int*>(user);
        return CUSNN_SM90_SUCCESS;
      },
      &calls);
  EXPECT_EQ(cusnn_sm90_conv_forward(&unknown, 1, 1, 1, nullptr), CUSNN_SM90_SUCCESS);
  // An op needs an emitted problem: the fallback serves one-shot calls only.
  cusnn_sm90_op op = nullptr;
  EXPECT_EQ(cusnn_sm90_op_create(&unknown, 1, nullptr, &op), CUSNN_SM90_ERROR_UNKNOWN_PROBLEM);
  EXPECT_EQ(op, nullptr);
  cusnn_sm90_set_fallback(nullptr, nullptr);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(cusnn_sm90_op_destroy(nullptr), CUSNN_SM90_SUCCESS);
  EXPECT_EQ(cusnn_sm90_op_run(nullptr, 1, 1, 0, nullptr), CUSNN_SM90_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(cusnn_sm90_last_error_message()), "cusnn_sm90_op_run: op is NULL");
}

// The C++ wrapper's op is RAII and movable, and throws cusnn_sm90::error with the status and the message.
TEST(EmitLibraryGpu, TheCxxOpRunsALayerAndThrowsForAnUnknownProblem) {
  cusnn_sm90_problem unknown = *cusnn_sm90_problem_at(0);
  unknown.n = 5;
  try {
    cusnn_sm90::op bad(unknown, 1);
    ADD_FAILURE() << "no error";
  } catch (const cusnn_sm90::error& e) {
    EXPECT_EQ(e.code(), CUSNN_SM90_ERROR_UNKNOWN_PROBLEM);
  }
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: " << no_device_reason();
  Context context(0);
  if (cusnn_sm90_check_device() != CUSNN_SM90_SUCCESS)
    GTEST_SKIP() << "the library cannot run here: " << cusnn_sm90_last_error_message();
  const Problem problem = to_problem(*cusnn_sm90_problem_at(0));
  std::vector<float> activation(static_cast<std::size_t>(activation_elements(problem)));
  std::vector<float> filter(static_cast<std::size_t>(filter_elements(problem)));
  fill_random(activation, 7);
  fill_random(filter, 8);
  DeviceBuffer d_activation(activation.size() * 4), d_filter(filter.size() * 4);
  DeviceBuffer d_output(static_cast<std::size_t>(output_elements(problem)) * 4);
  d_activation.upload(activation);
  d_filter.upload(filter);
  cusnn_sm90::op first(*cusnn_sm90_problem_at(0), d_filter.ptr());
  cusnn_sm90::op conv = std::move(first);
  EXPECT_EQ(first.get(), nullptr);  // NOLINT(bugprone-use-after-move): a moved-from op is empty
  DeviceBuffer d_workspace(std::max<std::size_t>(conv.workspace_size(), 256));
  conv.run(d_activation.ptr(), d_output.ptr(), conv.workspace_size() > 0 ? d_workspace.ptr() : 0);
  std::vector<float> output(static_cast<std::size_t>(output_elements(problem)));
  d_output.download(output);  // synchronous: the legacy default stream
  const ErrorStats stats = compare(output, reference_conv(problem, activation, filter));
  EXPECT_TRUE(passes(stats, problem.precision)) << "rel L2 " << stats.rel_l2;
  // A tensor off its alignment (here its 4-byte elements) is refused before anything is enqueued.
  EXPECT_EQ(cusnn_sm90_op_run(conv.get(), d_activation.ptr() + 2, d_output.ptr(), d_workspace.ptr(), nullptr),
            CUSNN_SM90_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(cusnn_sm90_last_error_message()).find("the activation address is not a multiple of 4 bytes"),
            std::string::npos)
      << cusnn_sm90_last_error_message();
}

// Two layers of one shape emitted with pruned filters of their own (examples/weight_twins), each baked into its
// kernel: an op created with either filter takes the kernel made for it and computes the reference with it; a filter
// with a nonzero outside both patterns is refused at creation.
TEST(EmitLibraryGpu, AnOpTakesTheKernelMadeForTheFilterItIsGivenAndRefusesAnother) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: " << no_device_reason();
  Context context(0);
  if (weight_twins_sm90_check_device() != WEIGHT_TWINS_SM90_SUCCESS)
    GTEST_SKIP() << "the library cannot run here: " << weight_twins_sm90_last_error_message();
  ASSERT_EQ(weight_twins_sm90_problem_count(), 2u);
  const weight_twins_sm90_problem& shape = *weight_twins_sm90_problem_at(0);
  const Problem problem = to_problem(shape);
  const std::string folder = std::string(CONVGEN_SOURCE_DIR) + "/examples/weight_twins/";
  const std::vector<float> a = read_npy(folder + "a.npy").values, b = read_npy(folder + "b.npy").values;
  std::vector<float> activation(static_cast<std::size_t>(activation_elements(problem)));
  fill_random(activation, 11);
  DeviceBuffer d_activation(activation.size() * 4), d_output(static_cast<std::size_t>(output_elements(problem)) * 4);
  d_activation.upload(activation);
  Stream stream;
  for (const std::vector<float>* filter : {&a, &b, &a}) {
    DeviceBuffer d_filter(filter->size() * 4);
    d_filter.upload(*filter);
    weight_twins_sm90_op op = nullptr;
    ASSERT_EQ(weight_twins_sm90_op_create(&shape, d_filter.ptr(), stream.get(), &op), WEIGHT_TWINS_SM90_SUCCESS)
        << weight_twins_sm90_last_error_message();
    DeviceBuffer d_workspace(std::max<std::size_t>(weight_twins_sm90_op_workspace_size(op), 256));
    d_output.fill_u32(0x7fc00000u, stream.get());
    ASSERT_EQ(
        weight_twins_sm90_op_run(op, d_activation.ptr(), d_output.ptr(),
                                 weight_twins_sm90_op_workspace_size(op) > 0 ? d_workspace.ptr() : 0, stream.get()),
        WEIGHT_TWINS_SM90_SUCCESS)
        << weight_twins_sm90_last_error_message();
    stream.synchronize();
    std::vector<float> output(static_cast<std::size_t>(output_elements(problem)));
    d_output.download(output);
    const ErrorStats stats = compare(output, reference_conv(problem, activation, *filter));
    EXPECT_TRUE(passes(stats, problem.precision))
        << (filter == &a ? "a" : "b") << "'s filter: rel L2 " << stats.rel_l2 << ", NaN " << stats.nan_count;
    EXPECT_EQ(weight_twins_sm90_op_destroy(op), WEIGHT_TWINS_SM90_SUCCESS);
  }
  // a's filter with a nonzero where neither a's nor b's has one.
  std::vector<float> other = a;
  std::size_t extra = 0;
  while (extra < a.size() && (a[extra] != 0.0f || b[extra] != 0.0f)) ++extra;
  ASSERT_LT(extra, a.size());
  other[extra] = 0.5f;
  DeviceBuffer d_other(other.size() * 4);
  d_other.upload(other);
  weight_twins_sm90_op op = nullptr;
  EXPECT_EQ(weight_twins_sm90_op_create(&shape, d_other.ptr(), stream.get(), &op),
            WEIGHT_TWINS_SM90_ERROR_FILTER_MISMATCH);
  EXPECT_EQ(op, nullptr);
  EXPECT_NE(std::string(weight_twins_sm90_last_error_message())
                .find(" is 0.5 where the filter its kernel was made for "
                      "has a zero"),
            std::string::npos)
      << weight_twins_sm90_last_error_message();
}

// Each layer of relu_on_load_sm90 through an op on an input before its ReLU (negative where the ReLU leaves a zero):
// the reference of max(0, x), and the JIT path's same kernel and plan (with or without its prologue) bit for bit.
TEST(EmitLibraryGpu, LayersThatTakeTheirInputBeforeItsReluMatchTheReferenceBehindThePrologueOrNot) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: " << no_device_reason();
  Context context(0);
  if (relu_on_load_sm90_check_device() != RELU_ON_LOAD_SM90_SUCCESS)
    GTEST_SKIP() << "the library cannot run here: " << relu_on_load_sm90_last_error_message();
  Stream stream;
  const Gpu h100 = load_gpu(std::string(CONVGEN_SOURCE_DIR) + "/gpus/h100_sxm.json");
  const Suite suite = load_suite(std::string(CONVGEN_SOURCE_DIR) + "/examples/relu_on_load/relu_on_load.csv");
  ASSERT_EQ(relu_on_load_sm90_problem_count(), suite.layers.size());
  JitCache cache(std::nullopt);
  int behind_a_prologue = 0;
  for (std::size_t i = 0; i < relu_on_load_sm90_problem_count(); ++i) {
    const relu_on_load_sm90_problem& lp = *relu_on_load_sm90_problem_at(i);
    SCOPED_TRACE(relu_on_load_sm90_problem_name(i));
    Problem problem = to_problem(lp);
    problem.relu_on_load = lp.relu_on_load != 0;
    ASSERT_TRUE(problem.relu_on_load);
    problem.act_sparsity = suite.layers[i].problem.act_sparsity;  // not part of the C struct; the kernel's choice
    const char* kernel = relu_on_load_sm90_kernel_name(&lp, 90);
    ASSERT_NE(kernel, nullptr);
    const BuiltKernel built = build_kernel(problem, parse_kernel_name(kernel), h100, cache);
    behind_a_prologue += !built.plan.activation_buffer.empty();
    ConvLauncher jit(built);
    const HostTensor activation =
        make_tensor(problem, TensorRole::activation, SparseRandom{SparsityPattern::blob, 0.5}, 300 + i);
    const HostTensor filter = make_tensor(problem, TensorRole::filter, DenseRandom{}, 400 + i);
    HostTensor from_library = HostTensor::for_problem(problem, TensorRole::output);
    HostTensor from_jit = from_library;
    DeviceBuffer d_activation(activation.size_bytes()), d_filter(filter.size_bytes()),
        d_output(from_library.size_bytes());
    d_activation.upload_bytes(activation.bytes().data(), activation.size_bytes());
    d_filter.upload_bytes(filter.bytes().data(), filter.size_bytes());

    relu_on_load_sm90_op op = nullptr;
    ASSERT_EQ(relu_on_load_sm90_op_create(&lp, d_filter.ptr(), stream.get(), &op), RELU_ON_LOAD_SM90_SUCCESS)
        << relu_on_load_sm90_last_error_message();
    EXPECT_EQ(relu_on_load_sm90_op_workspace_size(op), static_cast<std::size_t>(built.plan.workspace_bytes()));
    DeviceBuffer d_workspace(std::max<std::size_t>(relu_on_load_sm90_op_workspace_size(op), 256));
    const CUdeviceptr workspace = relu_on_load_sm90_op_workspace_size(op) > 0 ? d_workspace.ptr() : 0;
    d_output.fill_u32(0x7fc00000u, stream.get());
    ASSERT_EQ(relu_on_load_sm90_op_run(op, d_activation.ptr(), d_output.ptr(), workspace, stream.get()),
              RELU_ON_LOAD_SM90_SUCCESS)
        << relu_on_load_sm90_last_error_message();
    stream.synchronize();
    d_output.download_bytes(from_library.bytes().data(), from_library.size_bytes());
    EXPECT_EQ(relu_on_load_sm90_op_destroy(op), RELU_ON_LOAD_SM90_SUCCESS);

    jit.prepare(d_filter.ptr(), stream.get());
    DeviceBuffer d_jit_workspace(static_cast<std::size_t>(std::max<std::int64_t>(built.plan.workspace_bytes(), 256)));
    HostTensor from_jit_again = from_jit;
    for (HostTensor* out : {&from_jit, &from_jit_again}) {
      d_output.fill_u32(0x7fc00000u, stream.get());
      jit.launch(d_activation.ptr(), d_filter.ptr(), d_output.ptr(),
                 built.plan.workspace_bytes() > 0 ? d_jit_workspace.ptr() : 0, stream.get());
      stream.synchronize();
      d_output.download_bytes(out->bytes().data(), out->size_bytes());
    }

    const std::vector<double> reference = reference_conv(problem, activation, filter);
    const ErrorStats stats = compare(from_library, reference);
    EXPECT_TRUE(passes(stats, problem.precision))
        << kernel << ": rel L2 " << stats.rel_l2 << ", NaN " << stats.nan_count;
    if (from_jit == from_jit_again) {
      EXPECT_EQ(from_library, from_jit) << kernel << ": the same kernel and plan must give the same bits";
    } else {  // a kernel whose warps add into shared memory in whatever order they finish (act_sparse's channels)
      std::vector<double> jit_as_double(static_cast<std::size_t>(from_jit.size()));
      for (std::int64_t e = 0; e < from_jit.size(); ++e) jit_as_double[static_cast<std::size_t>(e)] = from_jit.get(e);
      EXPECT_LE(compare(from_library, jit_as_double).rel_l2, problem.precision == Precision::fp32 ? 1e-6 : 1e-3)
          << kernel;
    }
  }
  EXPECT_GE(behind_a_prologue, 2) << "the example's layers should run two kernels behind the ReLU prologue";
}

}  // namespace
}  // namespace convgen
