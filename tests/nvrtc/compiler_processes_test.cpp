// compiler_processes_test: compiles in convgen-nvrtc-worker processes give the very cubins, ptxas reports and
// compile errors that compile() gives in this process, concurrently too, and a killed worker is replaced.
#include "runtime/compiler_processes.hpp"

#include <signal.h>

#include <filesystem>
#include <future>
#include <regex>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "conv/conv_kernel.hpp"
#include "generator/family.hpp"
#include "generator/gpu_json.hpp"
#include "generator/shapes.hpp"
#include "runtime/jit_cache.hpp"
#include "runtime/thread_pool.hpp"
#include "support/processes.hpp"

namespace convgen {
namespace {

const std::filesystem::path kSourceDir = CONVGEN_SOURCE_DIR;
const std::filesystem::path kWorker = std::filesystem::path(CONVGEN_BINARY_DIR) / "tools/convgen" / kNvrtcWorkerName;

// A program with a header and an option of its own, so that both cross to the worker.
Program scale_program(int i) {
  return {
      .name = fmt::format("scale{}.cu", i),
      .source = fmt::format("#include \"factor.cuh\"\n"
                            "extern \"C\" __global__ void scale{0}(float* x) {{ x[threadIdx.x] *= kFactor + {0}; }}\n",
                            i),
      .headers = {{"factor.cuh", "constexpr float kFactor = FACTOR;\n"}}};
}
const CompileOptions kScaleOptions{.arch = "sm_90", .extra = {"-DFACTOR=3.0f"}};

// The log without ptxas's "Compile time = 1.437 ms" lines: the one part of a compile that differs run to run, in one
// process as in two.
std::string without_compile_times(const std::string& log) {
  static const std::regex compile_time(R"(ptxas info\s*: Compile time = [0-9.]+ ms\n?)");
  return std::regex_replace(log, compile_time, "");
}

void expect_same_cubin(const Cubin& worker, const Cubin& here) {
  EXPECT_EQ(worker.arch, here.arch);
  EXPECT_TRUE(worker.image == here.image)
      << "images differ: " << worker.image.size() << " and " << here.image.size() << " bytes";
  EXPECT_EQ(without_compile_times(worker.log), without_compile_times(here.log));
  EXPECT_NE(without_compile_times(here.log).find("Used "), std::string::npos) << here.log;
  EXPECT_EQ(worker.report, here.report);
  EXPECT_EQ(worker.entry_reports, here.entry_reports);
  EXPECT_GT(worker.compile_ms, 0);
}

TEST(CompilerProcesses, AWorkersCubinIsByteForByteTheOneCompiledHere) {
  CompilerProcesses processes(kWorker, 1);
  expect_same_cubin(processes.compile(scale_program(1), kScaleOptions), compile(scale_program(1), kScaleOptions));
}

TEST(CompilerProcesses, AGeneratedKernelWithTheTemplateHeadersIsTheSameCompiledEitherWay) {
  const Gpu gpu = load_gpu(kSourceDir / "gpus/h100_sxm.json");
  const Problem problem = load_suite(kSourceDir / "shapes/resnet50.csv").layers.at(1).problem;
  const KernelSpec spec = default_choice(problem, gpu);
  const Program program = to_program(family(spec.family).render(problem, spec));
  ASSERT_FALSE(program.headers.empty());
  CompilerProcesses processes(kWorker, 1);
  const Cubin worker = processes.compile(program, {.arch = gpu.arch});
  expect_same_cubin(worker, compile(program, {.arch = gpu.arch}));
  EXPECT_GT(worker.report.registers, 0) << worker.log;
}

TEST(CompilerProcesses, ACompileErrorIsTheOneRaisedHere) {
  const Program broken{.name = "broken_in_worker.cu", .source = "__global__ void k() { undeclared_thing(); }\n"};
  CompilerProcesses processes(kWorker, 1);
  std::optional<CompileError> worker, here;
  try {
    processes.compile(broken, {.arch = "sm_90"});
  } catch (const CompileError& e) {
    worker = e;
  }
  try {
    compile(broken, {.arch = "sm_90"});
  } catch (const CompileError& e) {
    here = e;
  }
  ASSERT_TRUE(worker && here);
  EXPECT_STREQ(worker->what(), here->what());
  EXPECT_EQ(worker->log(), here->log());
  EXPECT_EQ(worker->options(), here->options());
  EXPECT_EQ(worker->saved_source(), here->saved_source());
  EXPECT_NE(worker->log().find("undeclared_thing"), std::string::npos) << worker->log();
  // The worker is still there for the next compile.
  EXPECT_NO_THROW(processes.compile(scale_program(2), kScaleOptions));
  EXPECT_EQ(processes.stats().started, 1);
}

TEST(CompilerProcesses, ConcurrentCompilesOnAPoolGiveEachProgramItsOwnCubin) {
  constexpr int kPrograms = 6;
  ThreadPool pool(3);
  CompilerProcesses processes(kWorker, pool.size());
  std::vector<std::future<Cubin>> results;
  for (int i = 0; i < kPrograms; ++i)
    results.push_back(pool.submit([&processes, i] { return processes.compile(scale_program(i), kScaleOptions); }));
  for (int i = 0; i < kPrograms; ++i) {
    SCOPED_TRACE(i);
    expect_same_cubin(results[i].get(), compile(scale_program(i), kScaleOptions));
  }
  EXPECT_LE(processes.stats().started, 3);
  EXPECT_EQ(processes.stats().compiles, kPrograms);
}

TEST(CompilerProcesses, AKilledWorkerIsReplacedAndTheNextCompileSucceeds) {
  CompilerProcesses processes(kWorker, 1);
  processes.compile(scale_program(1), kScaleOptions);
  const std::vector<pid_t> idle = processes.idle_worker_ids();
  ASSERT_EQ(idle.size(), 1u);
  ASSERT_EQ(kill(idle[0], SIGKILL), 0);
  testing_support::wait_until_ended(idle[0]);
  expect_same_cubin(processes.compile(scale_program(3), kScaleOptions), compile(scale_program(3), kScaleOptions));
  EXPECT_EQ(processes.stats().started, 2);
}

TEST(WorkerCompiles, TheJitCacheCompilesInWorkersToTheSameCubin) {
  const testing_support::ScopedEnvironment chosen("CONVGEN_NVRTC_WORKER", kWorker.c_str());
  const WorkerCompiles workers(2);
  JitCache cache(std::nullopt);
  expect_same_cubin(cache.get_or_compile(scale_program(4), kScaleOptions), compile(scale_program(4), kScaleOptions));
}

}  // namespace
}  // namespace convgen
