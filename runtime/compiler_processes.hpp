// compiler_processes: NVRTC compiles in worker processes (convgen-nvrtc-worker), one process per concurrent compile.
// NVRTC in many threads of one process does not scale (issue 16: 32 threads compiled 7x one thread's rate on 32
// cores, and one compile took 3-4x longer than alone); the same compiles in separate processes do.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "runtime/compiler.hpp"
#include "runtime/thread_pool.hpp"
#include "runtime/worker_process.hpp"

namespace convgen {

// The worker program's file name, installed and built beside the convgen program.
inline constexpr const char* kNvrtcWorkerName = "convgen-nvrtc-worker";

// Where the NVRTC worker is, or why there is none.
struct NvrtcWorkerLookup {
  std::optional<std::filesystem::path> worker;
  std::string missing_reason;  // when no worker: what was looked for; "" when CONVGEN_NVRTC_WORKER=none chose none
};

// Finds the worker: $CONVGEN_NVRTC_WORKER when set and not empty ("none": compile in this process), else `given`
// when there is one (a library that ships the worker beside itself), else convgen-nvrtc-worker in the running
// program's folder (/proc/self/exe's). A file that is not there or not executable is no worker.
NvrtcWorkerLookup find_nvrtc_worker(const std::optional<std::filesystem::path>& given = std::nullopt);

// A pool of NVRTC worker processes: each concurrent compile() takes an idle worker or starts one (lazily, up to
// `max_workers`; callers beyond that wait for one to be free), sends it the program and options, and returns its
// cubin, which is byte for byte what compile() in this process gives (the worker runs that same compile()). A
// worker that died while idle is replaced unseen; one that dies during a compile fails that compile with an Error
// naming the program and how the worker ended (its signal), and the next compile starts a fresh worker. A worker
// that cannot be started at all throws WorkerStartError. Thread-safe. The destructor ends every worker (no
// compile may be running then).
//   CompilerProcesses processes(*find_nvrtc_worker().worker, pool.size());
//   Cubin cubin = processes.compile(program, {.arch = "sm_90"});
class CompilerProcesses {
 public:
  struct Stats {
    std::int64_t started = 0;   // workers started
    std::int64_t lost = 0;      // workers that ended on their own (while idle, or during a compile)
    std::int64_t compiles = 0;  // requests answered (with a cubin or a compile error)
  };

  CompilerProcesses(std::filesystem::path worker, unsigned max_workers = usable_cores());
  ~CompilerProcesses();
  CompilerProcesses(const CompilerProcesses&) = delete;
  CompilerProcesses& operator=(const CompilerProcesses&) = delete;

  // Compiles in a worker; throws CompileError as compile() does, WorkerStartError, or Error when the worker was
  // lost or answered nonsense.
  Cubin compile(const Program& program, const CompileOptions& options);

  Stats stats() const;
  unsigned max_workers() const { return max_workers_; }
  // The process ids of the idle workers (a test kills one).
  std::vector<pid_t> idle_worker_ids() const;

 private:
  std::unique_ptr<WorkerProcess> take_worker();
  void give_back(std::unique_ptr<WorkerProcess> worker);  // null: the worker is gone, its place is free

  std::filesystem::path worker_path_;
  unsigned max_workers_;
  mutable std::mutex mutex_;
  std::condition_variable place_free_;
  std::vector<std::unique_ptr<WorkerProcess>> idle_;
  unsigned live_ = 0;  // idle and busy workers, and those being started
  Stats stats_;
};

// For as long as it lives, this process's JIT cache misses (compile_for_cache) compile in NVRTC worker processes, at
// most `max_workers` at once, the first started at the first miss (a command that compiles nothing starts none).
// Where find_nvrtc_worker finds none, or it cannot be started, compiles stay in this process after one line on
// stderr (none for CONVGEN_NVRTC_WORKER=none): never an error. The convgen tool holds one; a library user who wants
// worker compiles makes one. The destructor restores compiles in this process and ends the workers: no compile may
// be running then.
class WorkerCompiles {
 public:
  // `worker`: find_nvrtc_worker's `given`.
  explicit WorkerCompiles(unsigned max_workers = usable_cores(),
                          std::optional<std::filesystem::path> worker = std::nullopt);
  ~WorkerCompiles();
  WorkerCompiles(const WorkerCompiles&) = delete;
  WorkerCompiles& operator=(const WorkerCompiles&) = delete;

 private:
  Cubin compile(const Program& program, const CompileOptions& options);
  // Compiles in this process from now on, saying why on stderr unless `reason` is empty or it was said before.
  void compile_here_from_now_on(const std::string& reason);

  unsigned max_workers_;
  std::optional<std::filesystem::path> given_worker_;
  std::once_flag started_;
  std::unique_ptr<CompilerProcesses> processes_;  // set once, in started_
  std::atomic<bool> in_process_{false};
  std::atomic<bool> said_why_{false};
};

}  // namespace convgen
