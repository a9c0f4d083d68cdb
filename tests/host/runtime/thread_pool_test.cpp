// thread_pool_test: results and exceptions come back through futures, tasks run in parallel, shutdown drains.
#include "runtime/thread_pool.hpp"

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

}  // namespace
}  // namespace convgen
