// timing_test (gpu): two tiny kernels timed interleaved in both modes, rotating buffer sets, and their energy.
#include "measure/timing.hpp"

#include <optional>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "measure/nvml.hpp"
#include "runtime/device.hpp"

namespace convgen {
namespace {

const Program kKernels{
    .name = "timing_kernels.cu",
    .source =
        "extern \"C\" __global__ void scale(float* y, int n) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i < n) y[i] = 2.0f * y[i] + 1.0f;\n"
        "}\n"
        "extern \"C\" __global__ void square(float* y, int n) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i < n) y[i] = y[i] * y[i];\n"
        "}\n",
};

constexpr int kCount = 1 << 16;
constexpr int kSets = 3;

class TimingTest : public testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_available()) GTEST_SKIP() << "no CUDA device: " << no_device_reason();
    context_.emplace(0);
    module_.emplace(compile(kKernels, {.arch = query_device(0).arch}), kKernels.name);
    for (int set = 0; set < kSets; ++set) buffers_.emplace_back(kCount * sizeof(float));
    stream_.emplace();
  }

  // A candidate launching `entry` on buffer set `set`, counting the sets it was given.
  Candidate candidate(const std::string& entry, std::vector<int>* sets_seen) {
    const Kernel kernel = module_->kernel(entry);
    return {.name = entry, .enqueue = [this, kernel, sets_seen](CUstream stream, int set) {
              if (sets_seen != nullptr) sets_seen->push_back(set);
              int n = kCount;
              void* args[] = {buffers_[set].arg(), &n};
              launch(kernel, {.grid = {kCount / 256, 1, 1}, .block = {256, 1, 1}}, args, stream);
            }};
  }

  std::optional<Context> context_;
  std::optional<Module> module_;
  std::vector<DeviceBuffer> buffers_;
  std::optional<Stream> stream_;
};

void expect_sane(const SampleStats& stats, int samples) {
  EXPECT_EQ(stats.count, samples);
  EXPECT_GT(stats.min, 0);
  EXPECT_LE(stats.min, stats.p10);
  EXPECT_LE(stats.p10, stats.median);
  EXPECT_LE(stats.median, stats.p90);
  EXPECT_LE(stats.p90, stats.max);
  EXPECT_LT(stats.median, 1000) << "µs per call of a tiny kernel";
}

TEST_F(TimingTest, TwoKernelsInterleavedGetStreamAndGraphTimes) {
  std::vector<int> sets_seen;
  const std::vector<Candidate> candidates{candidate("scale", &sets_seen), candidate("square", nullptr)};
  const TimingOptions options{.warmup_calls = 2, .samples = 20, .calls_per_sample = 10, .buffer_sets = kSets};
  const std::vector<TimingResult> results = time_interleaved(candidates, options, *stream_);
  ASSERT_EQ(results.size(), 2u);
  for (const TimingResult& r : results) {
    EXPECT_EQ(r.calls_per_sample, 12);  // 10 rounded up to a multiple of 3 sets
    ASSERT_EQ(r.stream_samples_us.size(), 20u);
    expect_sane(r.stream, 20);
    ASSERT_TRUE(r.graph.has_value()) << r.graph_error;
    EXPECT_EQ(r.graph_error, "");
    ASSERT_EQ(r.graph_samples_us.size(), 20u);
    expect_sane(*r.graph, 20);
    std::cout << fmt::format("stream {:.2f} µs (p10 {:.2f}, p90 {:.2f}), graph {:.2f} µs\n", r.stream.median,
                             r.stream.p10, r.stream.p90, r.graph->median);
  }
  // Warm-up (sets 0, 1), then 20 stream samples and one graph capture of 12 calls each, rotating 0, 1, 2, 0, ...
  ASSERT_EQ(sets_seen.size(), 2u + 20 * 12 + 12);
  for (std::size_t i = 2; i < sets_seen.size(); ++i) {
    EXPECT_EQ(sets_seen[i], static_cast<int>((i - 2) % kSets)) << i;
  }
}

TEST_F(TimingTest, ACandidateThatCannotBeCapturedKeepsItsStreamTimes) {
  const Candidate capturable = candidate("scale", nullptr);
  const Candidate syncing{.name = "syncing", .enqueue = [&](CUstream stream, int set) {
                            capturable.enqueue(stream, set);
                            // Synchronizing a capturing stream is illegal: the capture fails, the stream mode works.
                            CONVGEN_CU_CHECK(driver().cuStreamSynchronize(stream));
                          }};
  const std::vector<Candidate> candidates{syncing, capturable};
  const std::vector<TimingResult> results = time_interleaved(candidates, {.warmup_calls = 1, .samples = 20}, *stream_);
  expect_sane(results[0].stream, 20);
  EXPECT_FALSE(results[0].graph.has_value());
  EXPECT_NE(results[0].graph_error, "");
  EXPECT_TRUE(results[0].graph_samples_us.empty());
  ASSERT_TRUE(results[1].graph.has_value()) << results[1].graph_error;
  expect_sane(*results[1].graph, 20);
}

TEST_F(TimingTest, GraphModeCanBeTurnedOff) {
  const std::vector<Candidate> candidates{candidate("scale", nullptr)};
  const std::vector<TimingResult> results = time_interleaved(candidates, {.samples = 20, .graph = false}, *stream_);
  expect_sane(results[0].stream, 20);
  EXPECT_FALSE(results[0].graph.has_value());
  EXPECT_EQ(results[0].graph_error, "");
}

TEST_F(TimingTest, EnergyPerCallIsPositiveWhenNvmlIsPresent) {
  const Nvml* nvml = Nvml::open(0);
  if (nvml == nullptr) GTEST_SKIP() << "no NVML: " << nvml_unavailable_reason(0);
  const std::string why = nvml->energy_unavailable_reason();
  if (!why.empty()) GTEST_SKIP() << why;
  const Candidate scale = candidate("scale", nullptr);
  const EnergyMeasurement energy = energy_per_call(
      nvml, [&] { scale.enqueue(stream_->get(), 0); }, stream_->get());
  ASSERT_TRUE(energy.mj_per_call.has_value()) << energy.unavailable;
  std::cout << fmt::format("{:.4f} mJ per call ({} calls, {:.3f} s, {} mJ); SM {} MHz, {} W\n", *energy.mj_per_call,
                           energy.calls, energy.seconds, energy.total_mj, nvml->sm_clock_mhz().value_or(-1),
                           nvml->power_w().value_or(-1));
  EXPECT_GT(*energy.mj_per_call, 0);
  EXPECT_GE(energy.seconds, 0.2);
  EXPECT_GT(energy.calls, 0);
  const DeviceState state = device_state(nvml);
  EXPECT_TRUE(state.sm_clock_mhz.has_value());
  EXPECT_TRUE(state.power_w.has_value());
}

}  // namespace
}  // namespace convgen
