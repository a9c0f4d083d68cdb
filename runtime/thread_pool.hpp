// thread_pool: a small fixed pool of worker threads; compiles of independent programs run on it in parallel.
#pragma once

#include <condition_variable>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <queue>
#include <thread>
#include <type_traits>
#include <vector>

namespace convgen {

// The cores this process may run on: the count of its CPU affinity mask, which taskset, Slurm's task binding and a
// container's cpuset narrow (std::thread::hardware_concurrency counts every online core of the machine, whatever
// the mask), else hardware_concurrency(); at least 1. The default worker count of compile pools: on a machine
// shared by several processes each sized to its own cores, none oversubscribes the others'.
unsigned usable_cores();

// A fixed set of threads taking tasks in submission order. The destructor runs every task already submitted,
// then joins.
//   ThreadPool pool(4);
//   std::future<int> answer = pool.submit([] { return 42; });
class ThreadPool {
 public:
  // Starts `threads` workers (at least one).
  explicit ThreadPool(unsigned threads = usable_cores());
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Queues `task`; its result, or the exception it threw, arrives through the future.
  template <class F>
  auto submit(F&& task) -> std::future<std::invoke_result_t<std::decay_t<F>>> {
    using Result = std::invoke_result_t<std::decay_t<F>>;
    // std::function needs a copyable target and packaged_task is move-only: share it.
    auto packaged = std::make_shared<std::packaged_task<Result()>>(std::forward<F>(task));
    std::future<Result> future = packaged->get_future();
    enqueue([packaged] { (*packaged)(); });
    return future;
  }

  unsigned size() const { return static_cast<unsigned>(workers_.size()); }

 private:
  void enqueue(std::function<void()> job);
  void work();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::queue<std::function<void()>> jobs_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace convgen
