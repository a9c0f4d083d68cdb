// thread_pool: worker loop, queueing and shutdown of the fixed thread pool.
#include "runtime/thread_pool.hpp"

#include <sched.h>

#include <algorithm>

namespace convgen {

unsigned usable_cores() {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (sched_getaffinity(0, sizeof mask, &mask) == 0) {
    const int count = CPU_COUNT(&mask);
    if (count > 0) return static_cast<unsigned>(count);
  }
  return std::max(std::thread::hardware_concurrency(), 1u);
}

ThreadPool::ThreadPool(unsigned threads) {
  const unsigned count = std::max(threads, 1u);
  workers_.reserve(count);
  for (unsigned i = 0; i < count; ++i) workers_.emplace_back([this] { work(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

void ThreadPool::enqueue(std::function<void()> job) {
  {
    std::lock_guard lock(mutex_);
    jobs_.push(std::move(job));
  }
  wake_.notify_one();
}

void ThreadPool::work() {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
      if (jobs_.empty()) return;  // stopping, and nothing left to run
      job = std::move(jobs_.front());
      jobs_.pop();
    }
    job();  // a packaged_task: exceptions land in its future, never here
  }
}

}  // namespace convgen
