// compiler_processes_test: the worker pool with a fake worker (tests/support/fake_nvrtc_worker.cpp): replies come
// back, concurrent compiles run in as many processes up to the limit, a worker that crashes or exits fails only its
// compile and is replaced, and finding the worker follows CONVGEN_NVRTC_WORKER.
#include "runtime/compiler_processes.hpp"

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <future>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "runtime/jit_cache.hpp"
#include "support/processes.hpp"

namespace convgen {
namespace {

namespace fs = std::filesystem;
using testing_support::ScopedEnvironment;
using testing_support::wait_until_ended;

const fs::path kFakeWorker = CONVGEN_FAKE_NVRTC_WORKER;

// The process id a fake worker wrote as the cubin's image.
long worker_pid(const Cubin& cubin) { return std::stol(std::string(cubin.image.begin(), cubin.image.end())); }

Program named(const std::string& name) { return {.name = name, .source = ""}; }

// A folder of its own for meet.cu's rendezvous files.
class MeetingPlace {
 public:
  MeetingPlace() : folder_(fs::temp_directory_path() / fmt::format("convgen-meet-{}-{}", getpid(), counter_++)) {
    fs::remove_all(folder_);
    fs::create_directories(folder_);
  }
  ~MeetingPlace() { fs::remove_all(folder_); }
  // A program whose worker waits until `count` workers are there.
  Program program(int count) const {
    return {.name = "meet.cu", .source = fmt::format("{}\n{}", folder_.string(), count)};
  }

 private:
  static inline int counter_ = 0;
  fs::path folder_;
};

TEST(CompilerProcesses, ACompileComesBackFromAnotherProcess) {
  CompilerProcesses processes(kFakeWorker, 2);
  const Cubin cubin = processes.compile(named("a.cu"), {.arch = "sm_80"});
  EXPECT_NE(worker_pid(cubin), getpid());
  EXPECT_EQ(cubin.arch, "sm_80");
  EXPECT_EQ(cubin.report.registers, 7);
  EXPECT_EQ(cubin.entry_reports.at("fake").cmem0_bytes, 380);
  EXPECT_EQ(cubin.compile_ms, 1.5);
  // One at a time: the same worker answers again.
  EXPECT_EQ(worker_pid(processes.compile(named("b.cu"), {})), worker_pid(cubin));
  EXPECT_EQ(processes.stats().started, 1);
  EXPECT_EQ(processes.stats().compiles, 2);
}

TEST(CompilerProcesses, ConcurrentCompilesRunInAsManyProcesses) {
  constexpr int kConcurrent = 4;
  CompilerProcesses processes(kFakeWorker, kConcurrent);
  const MeetingPlace place;
  // Each worker replies only once all four are there: they run at the same time, or the test times out.
  std::vector<std::future<Cubin>> results;
  for (int i = 0; i < kConcurrent; ++i)
    results.push_back(
        std::async(std::launch::async, [&] { return processes.compile(place.program(kConcurrent), {}); }));
  std::set<long> pids;
  for (auto& result : results) pids.insert(worker_pid(result.get()));
  EXPECT_EQ(pids.size(), 4u);
  EXPECT_EQ(processes.stats().started, 4);
  EXPECT_EQ(processes.idle_worker_ids().size(), 4u);
}

TEST(CompilerProcesses, NoMoreWorkersThanTheLimitRunAndTheOtherCallersWait) {
  CompilerProcesses processes(kFakeWorker, 2);
  const MeetingPlace place;
  // Pairs meet: two workers, each answering two of the four requests.
  std::vector<std::future<Cubin>> results;
  for (int i = 0; i < 4; ++i)
    results.push_back(std::async(std::launch::async, [&] { return processes.compile(place.program(2), {}); }));
  std::set<long> pids;
  for (auto& result : results) pids.insert(worker_pid(result.get()));
  EXPECT_EQ(pids.size(), 2u);
  EXPECT_EQ(processes.stats().started, 2);
}

TEST(CompilerProcesses, AWorkerThatCrashesFailsItsCompileNamingTheSignalAndTheNextGetsAFreshOne) {
  CompilerProcesses processes(kFakeWorker, 1);
  const long first = worker_pid(processes.compile(named("a.cu"), {}));
  try {
    processes.compile(named("crash.cu"), {.arch = "sm_90"});
    FAIL() << "expected WorkerLostError";
  } catch (const WorkerLostError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("compiling crash.cu for sm_90"), std::string::npos) << message;
    EXPECT_NE(message.find("ended on signal 11 (Segmentation fault)"), std::string::npos) << message;
    EXPECT_NE(message.find("the next compile starts a fresh one"), std::string::npos) << message;
  }
  const long second = worker_pid(processes.compile(named("a.cu"), {}));
  EXPECT_NE(second, first);
  EXPECT_EQ(processes.stats().started, 2);
  EXPECT_EQ(processes.stats().lost, 1);
}

TEST(CompilerProcesses, AWorkerThatExitsWithoutReplyingFailsItsCompileWithTheStatus) {
  CompilerProcesses processes(kFakeWorker, 1);
  try {
    processes.compile(named("exit.cu"), {});
    FAIL() << "expected WorkerLostError";
  } catch (const WorkerLostError& e) {
    EXPECT_NE(std::string(e.what()).find("exited with status 3"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(processes.compile(named("a.cu"), {}));
}

TEST(CompilerProcesses, AWorkerKilledWhileIdleIsReplacedUnseen) {
  CompilerProcesses processes(kFakeWorker, 1);
  processes.compile(named("a.cu"), {});
  const std::vector<pid_t> idle = processes.idle_worker_ids();
  ASSERT_EQ(idle.size(), 1u);
  ASSERT_EQ(kill(idle[0], SIGKILL), 0);
  wait_until_ended(idle[0]);
  const Cubin cubin = processes.compile(named("b.cu"), {});
  EXPECT_NE(worker_pid(cubin), idle[0]);
  EXPECT_EQ(processes.stats().lost, 1);
}

TEST(CompilerProcesses, ACompileErrorComesBackWholeAndKeepsTheWorker) {
  CompilerProcesses processes(kFakeWorker, 1);
  const long first = worker_pid(processes.compile(named("a.cu"), {}));
  try {
    processes.compile(named("compile_error.cu"), {});
    FAIL() << "expected CompileError";
  } catch (const CompileError& e) {
    EXPECT_STREQ(e.what(), "fake failure of compile_error.cu");
    EXPECT_EQ(e.log(), "fake log");
    EXPECT_EQ(e.options(), std::vector<std::string>{"--fake-option"});
    EXPECT_EQ(e.saved_source(), "saved/compile_error.cu");
  }
  EXPECT_EQ(worker_pid(processes.compile(named("a.cu"), {})), first);
}

TEST(CompilerProcesses, NonsenseFromAWorkerIsAnErrorAndTheWorkerIsReplaced) {
  CompilerProcesses processes(kFakeWorker, 1);
  const long first = worker_pid(processes.compile(named("a.cu"), {}));
  try {
    processes.compile(named("nonsense.cu"), {});
    FAIL() << "expected Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("answered nonsense"), std::string::npos) << e.what();
  }
  EXPECT_NE(worker_pid(processes.compile(named("a.cu"), {})), first);
}

TEST(CompilerProcesses, AWorkerThatCannotStartIsAWorkerStartError) {
  CompilerProcesses processes("/nonexistent/convgen-nvrtc-worker", 1);
  EXPECT_THROW(processes.compile(named("a.cu"), {}), WorkerStartError);
  EXPECT_THROW(processes.compile(named("a.cu"), {}), WorkerStartError);  // its place was given back
}

TEST(CompilerProcesses, TheDestructorEndsEveryWorker) {
  std::vector<pid_t> pids;
  {
    CompilerProcesses processes(kFakeWorker, 2);
    const MeetingPlace place;
    auto first = std::async(std::launch::async, [&] { return processes.compile(place.program(2), {}); });
    processes.compile(place.program(2), {});
    first.get();
    pids = processes.idle_worker_ids();
  }
  ASSERT_EQ(pids.size(), 2u);
  for (const pid_t pid : pids) EXPECT_FALSE(kill(pid, 0) == 0) << pid;
}

TEST(FindNvrtcWorker, TakesTheEnvironmentVariableFirst) {
  {
    const ScopedEnvironment chosen("CONVGEN_NVRTC_WORKER", kFakeWorker.c_str());
    EXPECT_EQ(find_nvrtc_worker().worker, kFakeWorker);
  }
  {
    const ScopedEnvironment chosen("CONVGEN_NVRTC_WORKER", "none");
    const NvrtcWorkerLookup lookup = find_nvrtc_worker();
    EXPECT_FALSE(lookup.worker);
    EXPECT_EQ(lookup.missing_reason, "");
  }
  {
    const ScopedEnvironment chosen("CONVGEN_NVRTC_WORKER", "/nonexistent/worker");
    const NvrtcWorkerLookup lookup = find_nvrtc_worker();
    EXPECT_FALSE(lookup.worker);
    EXPECT_EQ(lookup.missing_reason, "CONVGEN_NVRTC_WORKER=/nonexistent/worker is no executable file");
  }
}

TEST(FindNvrtcWorker, ThenTheGivenWorkerThenBesideTheRunningProgram) {
  {
    const ScopedEnvironment unset("CONVGEN_NVRTC_WORKER", nullptr);
    EXPECT_EQ(find_nvrtc_worker(kFakeWorker).worker, kFakeWorker);
    const NvrtcWorkerLookup missing = find_nvrtc_worker(std::filesystem::path("/nonexistent/worker"));
    EXPECT_FALSE(missing.worker);
    EXPECT_EQ(missing.missing_reason, "/nonexistent/worker is no executable file");
  }
  {  // the variable still wins, "none" too
    const ScopedEnvironment none("CONVGEN_NVRTC_WORKER", "none");
    EXPECT_FALSE(find_nvrtc_worker(kFakeWorker).worker);
  }
}

TEST(FindNvrtcWorker, ElseLooksBesideTheRunningProgram) {
  const ScopedEnvironment unset("CONVGEN_NVRTC_WORKER", nullptr);
  const NvrtcWorkerLookup lookup = find_nvrtc_worker();
  // The test binary has no worker beside it.
  EXPECT_FALSE(lookup.worker);
  EXPECT_NE(lookup.missing_reason.find("no convgen-nvrtc-worker beside convgen_host_runtime_tests"), std::string::npos)
      << lookup.missing_reason;
}

TEST(WorkerCompiles, SendsTheJitCachesMissesToWorkersWhileItLives) {
  const ScopedEnvironment chosen("CONVGEN_NVRTC_WORKER", kFakeWorker.c_str());
  const WorkerCompiles workers(2);
  JitCache cache(std::nullopt);
  const Cubin cubin = cache.get_or_compile(named("a.cu"), {.arch = "sm_90"});
  EXPECT_NE(worker_pid(cubin), getpid());
  EXPECT_EQ(cache.stats().compiles, 1);
}

TEST(WorkerCompiles, WithoutAWorkerCompilesInThisProcessAfterOneLine) {
  const ScopedEnvironment missing("CONVGEN_NVRTC_WORKER", "/nonexistent/worker");
  const Program axpy{.name = "axpy.cu",
                     .source = "extern \"C\" __global__ void axpy(float a, float* y) { y[threadIdx.x] *= a; }\n"};
  testing::internal::CaptureStderr();
  {
    const WorkerCompiles workers(2);
    for (int i = 0; i < 2; ++i) {
      const Cubin cubin = compile_for_cache(axpy, {.arch = "sm_80"});  // NVRTC here: a real cubin
      EXPECT_EQ(cubin.image.at(1), 'E');
    }
  }
  const std::string said = testing::internal::GetCapturedStderr();
  EXPECT_EQ(said,
            "convgen: NVRTC compiles run in this process, not in worker processes: CONVGEN_NVRTC_WORKER=/nonexistent/"
            "worker is no executable file (CONVGEN_NVRTC_WORKER names the worker; 'none' compiles here without this "
            "note)\n");
}

TEST(WorkerCompiles, NoneCompilesInThisProcessSilently) {
  const ScopedEnvironment none("CONVGEN_NVRTC_WORKER", "none");
  testing::internal::CaptureStderr();
  {
    const WorkerCompiles workers(2);
    const Cubin cubin = compile_for_cache({.name = "k.cu", .source = "__global__ void k() {}\n"}, {.arch = "sm_80"});
    EXPECT_EQ(cubin.image.at(1), 'E');
  }
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}

}  // namespace
}  // namespace convgen
