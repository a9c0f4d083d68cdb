// thread_pool_test: results and exceptions come back through futures, tasks run in parallel, shutdown drains.
#include "runtime/thread_pool.hpp"

#include <sched.h>

#include <atomic>
#include <chrono>
#include <stdexcept>

#include <gtest/gtest.h>

namespace convgen {
namespace {

TEST(ThreadPool, ReturnsEachTasksResult) {
  ThreadPool pool(3);
  std::vector<std::future<int>> results;
  for (int i = 0; i < 20; ++i) results.push_back(pool.submit([i] { return i * i; }));
  for (int i = 0; i < 20; ++i) EXPECT_EQ(results[i].get(), i * i);
}

TEST(ThreadPool, AnExceptionArrivesThroughItsFutureAndTheOthersStillRun) {
  ThreadPool pool(2);
  auto bad = pool.submit([]() -> int { throw std::runtime_error("task failed"); });
  auto good = pool.submit([] { return 7; });
  EXPECT_THROW(bad.get(), std::runtime_error);
  EXPECT_EQ(good.get(), 7);
}

TEST(ThreadPool, TasksRunAtTheSameTime) {
  ThreadPool pool(2);
  // Each task waits for the other to start: with one worker at a time both would time out.
  std::mutex mutex;
  std::condition_variable arrived;
  int started = 0;
  const auto meet = [&] {
    std::unique_lock lock(mutex);
    ++started;
    arrived.notify_all();
    return arrived.wait_for(lock, std::chrono::seconds(10), [&] { return started == 2; });
  };
  auto first = pool.submit(meet);
  auto second = pool.submit(meet);
  EXPECT_TRUE(first.get());
  EXPECT_TRUE(second.get());
}

TEST(ThreadPool, DestructorRunsEveryQueuedTask) {
  std::atomic<int> done{0};
  {
    ThreadPool pool(1);
    for (int i = 0; i < 50; ++i) pool.submit([&done] { ++done; });
  }
  EXPECT_EQ(done.load(), 50);
}

TEST(ThreadPool, HasAtLeastOneWorker) {
  EXPECT_EQ(ThreadPool(0).size(), 1u);
  EXPECT_GE(ThreadPool().size(), 1u);
}

TEST(UsableCores, CountsTheAffinityMaskNotTheMachinesCores) {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  ASSERT_EQ(sched_getaffinity(0, sizeof mask, &mask), 0);
  EXPECT_EQ(usable_cores(), static_cast<unsigned>(CPU_COUNT(&mask)));
  // Narrowed to one core (in a thread of its own: the mask is per thread), as `taskset -c N` would.
  int first = 0;
  while (!CPU_ISSET(first, &mask)) ++first;
  unsigned narrowed = 0, pool_size = 0;
  std::thread([&] {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    if (sched_setaffinity(0, sizeof one, &one) != 0) return;
    narrowed = usable_cores();
    pool_size = ThreadPool().size();
  }).join();
  EXPECT_EQ(narrowed, 1u);
  EXPECT_EQ(pool_size, 1u);
}

}  // namespace
}  // namespace convgen
