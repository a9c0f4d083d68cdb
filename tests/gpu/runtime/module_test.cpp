// module_test: a tiny NVRTC kernel loaded, launched, timed and replayed from a graph on the live GPU.
#include "runtime/module.hpp"

#include <bit>
#include <cstring>
#include <numeric>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/device.hpp"
#include "runtime/jit_cache.hpp"

namespace convgen {
namespace {

// Checks that `message` starts with `prefix`, printing the whole message when not.
void expect_starts_with(const std::string& message, const std::string& prefix) {
  EXPECT_TRUE(message.starts_with(prefix)) << "message: " << message << "\nexpected prefix: " << prefix;
}

const Program kAxpy{
    .name = "axpy.cu",
    .source =
        "extern \"C\" __global__ void axpy(float a, const float* x, float* y, int n) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i < n) y[i] = a * x[i] + y[i];\n"
        "}\n"
        "extern \"C\" __global__ void fill_smem(float* y, int n) {\n"
        "  extern __shared__ float s_values[];\n"
        "  for (int i = threadIdx.x; i < n; i += blockDim.x) s_values[i] = float(i);\n"
        "  __syncthreads();\n"
        "  for (int i = threadIdx.x; i < n; i += blockDim.x) y[i] = s_values[n - 1 - i];\n"
        "}\n",
};

class ModuleTest : public testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_available()) GTEST_SKIP() << "no CUDA device: " << no_device_reason();
    context_.emplace(0);
    gpu_ = query_device(0);
    cubin_ = compile(kAxpy, {.arch = gpu_.arch});
  }

  std::optional<Context> context_;
  Gpu gpu_;
  Cubin cubin_;
};

constexpr int kCount = 1000;

std::vector<float> iota_values() {
  std::vector<float> values(kCount);
  std::iota(values.begin(), values.end(), 0.0f);
  return values;
}

TEST_F(ModuleTest, ATinyKernelComputesAxpy) {
  Module module(cubin_, kAxpy.name);
  const Kernel axpy = module.kernel("axpy");
  DeviceBuffer x(kCount * sizeof(float)), y(kCount * sizeof(float));
  x.upload(iota_values());
  y.upload(std::vector<float>(kCount, 1.0f));
  float a = 2;
  int n = kCount;
  void* args[] = {&a, x.arg(), y.arg(), &n};
  Stream stream;
  launch(axpy, {.grid = {(kCount + 255) / 256, 1, 1}, .block = {256, 1, 1}}, args, stream.get());
  stream.synchronize();
  std::vector<float> result(kCount);
  y.download(result);
  for (int i = 0; i < kCount; ++i) ASSERT_EQ(result[i], 2.0f * i + 1.0f) << "at " << i;
}

TEST_F(ModuleTest, KernelAttributesMatchThePtxasReport) {
  Module module(cubin_, kAxpy.name);
  const Kernel axpy = module.kernel("axpy");
  EXPECT_EQ(axpy.name(), "axpy");
  EXPECT_GT(axpy.registers(), 0);
  // NVRTC's cache, unless disabled, returns an empty log on a hit: the report must be there on every compile.
  EXPECT_EQ(axpy.registers(), parse_ptxas_reports(cubin_.log).at("axpy").registers) << cubin_.log;
  EXPECT_EQ(axpy.max_threads_per_block(), gpu_.max_threads_per_block);
  EXPECT_EQ(axpy.static_smem_bytes(), 0);
}

TEST_F(ModuleTest, DynamicSharedMemoryAbove48KiBWorksAfterOptingIn) {
  ASSERT_GT(gpu_.smem_per_block_optin_bytes, 48 * 1024);
  Module module(cubin_, kAxpy.name);
  const Kernel fill = module.kernel("fill_smem");
  const int n = gpu_.smem_per_block_optin_bytes / static_cast<int>(sizeof(float));
  const LaunchConfig config{.block = {256, 1, 1}, .dynamic_smem_bytes = static_cast<unsigned>(n * sizeof(float))};
  DeviceBuffer y(n * sizeof(float));
  void* args[] = {y.arg(), const_cast<int*>(&n)};
  Stream stream;
  EXPECT_THROW(launch(fill, config, args, stream.get()), ApiError) << "refused before opting in";
  fill.set_max_dynamic_smem(static_cast<int>(config.dynamic_smem_bytes));
  launch(fill, config, args, stream.get());
  stream.synchronize();
  std::vector<float> result(n);
  y.download(result);
  EXPECT_EQ(result.front(), float(n - 1));
  EXPECT_EQ(result.back(), 0.0f);
}

TEST_F(ModuleTest, TooManyThreadsPerBlockIsAnApiErrorNamingKernelAndBlock) {
  Module module(cubin_, kAxpy.name);
  const Kernel axpy = module.kernel("axpy");
  DeviceBuffer x(4), y(4);
  float a = 1;
  int n = 1;
  void* args[] = {&a, x.arg(), y.arg(), &n};
  try {
    launch(axpy, {.grid = {1, 1, 1}, .block = {2048, 1, 1}}, args, nullptr);
    FAIL() << "expected ApiError";
  } catch (const ApiError& e) {
    expect_starts_with(e.what(),
                       "cannot launch kernel 'axpy' with grid (1, 1, 1), block (2048, 1, 1), 0 bytes of "
                       "dynamic shared memory: CUDA_ERROR_INVALID_VALUE");
  }
}

TEST_F(ModuleTest, AMissingKernelIsNamedWithItsModule) {
  Module module(cubin_, kAxpy.name);
  try {
    module.kernel("saxpy");
    FAIL() << "expected ApiError";
  } catch (const ApiError& e) {
    expect_starts_with(e.what(), "module 'axpy.cu' has no kernel 'saxpy': CUDA_ERROR_NOT_FOUND");
  }
}

TEST_F(ModuleTest, ACubinForAnotherArchitectureIsRefusedNamingModuleAndArch) {
  const std::string other_arch = compute_capability(gpu_) >= 90 ? "sm_80" : "sm_90";
  const Cubin other = compile(kAxpy, {.arch = other_arch});
  try {
    Module module(other, kAxpy.name);
    FAIL() << "expected ApiError";
  } catch (const ApiError& e) {
    expect_starts_with(e.what(), "cannot load module 'axpy.cu' (cubin for " + other_arch + ", ");
    EXPECT_NE(std::string(e.what()).find("CUDA_ERROR_NO_BINARY_FOR_GPU"), std::string::npos) << e.what();
  }
}

TEST_F(ModuleTest, EventsTimeAPositiveDuration) {
  Module module(cubin_, kAxpy.name);
  const Kernel axpy = module.kernel("axpy");
  DeviceBuffer x(kCount * sizeof(float)), y(kCount * sizeof(float));
  float a = 1;
  int n = kCount;
  void* args[] = {&a, x.arg(), y.arg(), &n};
  Stream stream;
  Event start, stop;
  start.record(stream.get());
  for (int i = 0; i < 100; ++i) launch(axpy, {.grid = {4, 1, 1}, .block = {256, 1, 1}}, args, stream.get());
  stop.record(stream.get());
  stop.synchronize();
  const float ms = Event::elapsed_ms(start, stop);
  EXPECT_GT(ms, 0.0f);
  EXPECT_LT(ms, 1000.0f);
}

TEST_F(ModuleTest, GraphReplayGivesTheSameResultAsDirectLaunches) {
  Module module(cubin_, kAxpy.name);
  const Kernel axpy = module.kernel("axpy");
  DeviceBuffer x(kCount * sizeof(float)), y(kCount * sizeof(float));
  x.upload(iota_values());
  float a = 3;
  int n = kCount;
  void* args[] = {&a, x.arg(), y.arg(), &n};
  const LaunchConfig config{.grid = {(kCount + 127) / 128, 1, 1}, .block = {128, 1, 1}};
  Stream stream;
  // y = 0.5, then two axpys: y = 0.5 + 2 * 3 * x.
  const auto work = [&] {
    y.fill_u32(std::bit_cast<std::uint32_t>(0.5f), stream.get());
    launch(axpy, config, args, stream.get());
    launch(axpy, config, args, stream.get());
  };
  work();
  stream.synchronize();
  std::vector<float> direct(kCount);
  y.download(direct);

  Graph graph = Graph::capture(stream.get(), work);
  y.fill_u32(0, stream.get());
  for (int replay = 0; replay < 3; ++replay) graph.launch(stream.get());  // the fill makes each replay equal
  stream.synchronize();
  std::vector<float> replayed(kCount);
  y.download(replayed);
  EXPECT_EQ(replayed, direct);
  EXPECT_EQ(direct[10], 0.5f + 2 * 3 * 10.0f);
}

TEST_F(ModuleTest, ACaptureWhoseBodyThrowsLeavesTheStreamUsable) {
  Stream stream;
  EXPECT_THROW(Graph::capture(stream.get(), [] { throw InputError("body failed"); }), InputError);
  DeviceBuffer y(16);
  y.fill_u8(7, stream.get());
  stream.synchronize();
  std::vector<std::uint8_t> bytes(16);
  y.download_bytes(bytes.data(), bytes.size());
  EXPECT_EQ(bytes, std::vector<std::uint8_t>(16, 7));
}

TEST_F(ModuleTest, ACachedCubinLoadsAndRuns) {
  JitCache cache(std::nullopt);
  cache.get_or_compile(kAxpy, {.arch = gpu_.arch});
  const Cubin cached = cache.get_or_compile(kAxpy, {.arch = gpu_.arch});
  ASSERT_EQ(cache.stats().memory_hits, 1);
  Module module(cached, kAxpy.name);
  EXPECT_EQ(module.kernel("axpy").registers(), parse_ptxas_reports(cached.log).at("axpy").registers) << cached.log;
}

TEST_F(ModuleTest, UploadLargerThanTheBufferIsAnInputError) {
  DeviceBuffer small(8);
  try {
    small.upload(std::vector<float>(3, 1.0f));
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "upload of 12 bytes does not fit a device buffer of 8 bytes");
  }
}

}  // namespace
}  // namespace convgen
