// compiler_processes: the worker pool (take an idle worker or start one, replace the lost), finding the worker
// program, and routing the JIT cache's compiles to the pool.
#include "runtime/compiler_processes.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include <fmt/format.h>

#include "runtime/compile_protocol.hpp"

namespace convgen {
namespace {

bool is_executable_file(const std::filesystem::path& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec) && access(path.c_str(), X_OK) == 0;
}

}  // namespace

NvrtcWorkerLookup find_nvrtc_worker(const std::optional<std::filesystem::path>& given) {
  if (const char* chosen = std::getenv("CONVGEN_NVRTC_WORKER"); chosen != nullptr && *chosen != '\0') {
    if (std::string_view(chosen) == "none") return {};
    if (is_executable_file(chosen)) return {.worker = std::filesystem::path(chosen)};
    return {.missing_reason = fmt::format("CONVGEN_NVRTC_WORKER={} is no executable file", chosen)};
  }
  if (given) {
    if (is_executable_file(*given)) return {.worker = *given};
    return {.missing_reason = fmt::format("{} is no executable file", given->string())};
  }
  std::error_code ec;
  const std::filesystem::path program = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return {.missing_reason = fmt::format("the running program is unknown (/proc/self/exe: {})", ec.message())};
  const std::filesystem::path worker = program.parent_path() / kNvrtcWorkerName;
  if (is_executable_file(worker)) return {.worker = worker};
  return {.missing_reason = fmt::format("no {} beside {}", kNvrtcWorkerName, program.filename().string())};
}

CompilerProcesses::CompilerProcesses(std::filesystem::path worker, unsigned max_workers)
    : worker_path_(std::move(worker)), max_workers_(std::max(1u, max_workers)) {}

CompilerProcesses::~CompilerProcesses() {
  std::lock_guard lock(mutex_);
  idle_.clear();  // each kills and reaps its process
}

std::unique_ptr<WorkerProcess> CompilerProcesses::take_worker() {
  std::unique_lock lock(mutex_);
  place_free_.wait(lock, [&] { return !idle_.empty() || live_ < max_workers_; });
  if (!idle_.empty()) {
    // The most recently used first: its pages are warm.
    std::unique_ptr<WorkerProcess> worker = std::move(idle_.back());
    idle_.pop_back();
    if (worker->running()) return worker;
    ++stats_.lost;  // killed while idle (by a user, the OOM killer ...): a fresh one takes its place
  } else {
    ++live_;
  }
  lock.unlock();
  try {
    auto worker = std::make_unique<WorkerProcess>(worker_path_);
    lock.lock();
    ++stats_.started;
    return worker;
  } catch (...) {
    if (!lock.owns_lock()) lock.lock();
    --live_;
    place_free_.notify_one();
    throw;
  }
}

void CompilerProcesses::give_back(std::unique_ptr<WorkerProcess> worker) {
  std::lock_guard lock(mutex_);
  if (worker)
    idle_.push_back(std::move(worker));
  else
    --live_;
  place_free_.notify_one();
}

Cubin CompilerProcesses::compile(const Program& program, const CompileOptions& options) {
  const std::string request = encode_compile_request(program, options);
  std::unique_ptr<WorkerProcess> worker = take_worker();
  std::string reply;
  try {
    reply = worker->exchange(request);
  } catch (const WorkerLostError& e) {
    worker.reset();
    {
      std::lock_guard lock(mutex_);
      ++stats_.lost;
    }
    give_back(nullptr);
    throw WorkerLostError(fmt::format("compiling {} for {}: the NVRTC worker {}; the next compile starts a fresh one",
                                      program.name, options.arch, e.what()));
  }
  {
    std::lock_guard lock(mutex_);
    ++stats_.compiles;
  }
  try {
    Cubin cubin = decode_compile_reply(reply);
    give_back(std::move(worker));
    return cubin;
  } catch (const ProtocolError& e) {
    // Not a reply: a worker of another build, or not a worker at all. End it; the next compile starts another.
    worker.reset();
    give_back(nullptr);
    throw Error(fmt::format("compiling {} for {}: the NVRTC worker {} answered nonsense: {}", program.name,
                            options.arch, worker_path_.string(), e.what()));
  } catch (...) {
    give_back(std::move(worker));  // a compile error (or another failure the worker reported): it is well
    throw;
  }
}

CompilerProcesses::Stats CompilerProcesses::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

std::vector<pid_t> CompilerProcesses::idle_worker_ids() const {
  std::lock_guard lock(mutex_);
  std::vector<pid_t> ids;
  for (const auto& worker : idle_) ids.push_back(worker->pid());
  return ids;
}

WorkerCompiles::WorkerCompiles(unsigned max_workers, std::optional<std::filesystem::path> worker)
    : max_workers_(max_workers), given_worker_(std::move(worker)) {
  set_cache_compiler(
      [this](const Program& program, const CompileOptions& options) { return compile(program, options); });
}

WorkerCompiles::~WorkerCompiles() { set_cache_compiler({}); }

void WorkerCompiles::compile_here_from_now_on(const std::string& reason) {
  in_process_ = true;
  if (!reason.empty() && !said_why_.exchange(true))
    fmt::print(stderr,
               "convgen: NVRTC compiles run in this process, not in worker processes: {} (CONVGEN_NVRTC_WORKER names "
               "the worker; 'none' compiles here without this note)\n",
               reason);
}

Cubin WorkerCompiles::compile(const Program& program, const CompileOptions& options) {
  std::call_once(started_, [this] {
    NvrtcWorkerLookup lookup = find_nvrtc_worker(given_worker_);
    if (lookup.worker)
      processes_ = std::make_unique<CompilerProcesses>(*lookup.worker, max_workers_);
    else
      compile_here_from_now_on(lookup.missing_reason);
  });
  if (!in_process_) {
    try {
      return processes_->compile(program, options);
    } catch (const WorkerStartError& e) {
      compile_here_from_now_on(e.what());
    }
  }
  return convgen::compile(program, options);
}

}  // namespace convgen
