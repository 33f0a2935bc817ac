#include "runtime_minimal/host/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace agate {
namespace rt {
namespace {

struct Counts {
  std::vector<std::atomic<int>> hits;
  explicit Counts(int n) : hits(n) {}
};

int32_t CountTask(int32_t task, int32_t num_tasks, void* closure) {
  auto* counts = static_cast<Counts*>(closure);
  if (num_tasks != static_cast<int32_t>(counts->hits.size())) return 99;
  counts->hits[task].fetch_add(1);
  return 0;
}

TEST(ThreadPoolTest, RunsEveryTaskExactlyOnce) {
  for (int threads : {1, 2, 4}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.num_threads(), threads);
    for (int n : {1, 2, 3, 7, 64, 1000}) {
      for (int repeat = 0; repeat < 20; ++repeat) {
        Counts counts(n);
        ASSERT_EQ(pool.ParallelFor(CountTask, &counts, n), 0);
        for (int t = 0; t < n; ++t) ASSERT_EQ(counts.hits[t].load(), 1) << "threads " << threads << " n " << n;
      }
    }
  }
}

TEST(ThreadPoolTest, ReturnsAFailingTasksStatus) {
  ThreadPool pool(3);
  auto fail_on_five = [](int32_t task, int32_t, void*) -> int32_t { return task == 5 ? 42 : 0; };
  EXPECT_EQ(pool.ParallelFor(fail_on_five, nullptr, 16), 42);
  Counts counts(8);
  EXPECT_EQ(pool.ParallelFor(CountTask, &counts, 8), 0);  // the pool recovers
}

struct Nested {
  ThreadPool* pool;
  std::atomic<int> inner{0};
};

int32_t InnerTask(int32_t, int32_t, void* closure) {
  static_cast<Nested*>(closure)->inner.fetch_add(1);
  return 0;
}

int32_t OuterTask(int32_t, int32_t, void* closure) {
  auto* nested = static_cast<Nested*>(closure);
  return nested->pool->ParallelFor(InnerTask, nested, 4);  // runs serially: the pool is busy
}

TEST(ThreadPoolTest, NestedLoopsRunOnTheCallingThread) {
  ThreadPool pool(2);
  Nested nested{&pool};
  EXPECT_EQ(pool.ParallelFor(OuterTask, &nested, 6), 0);
  EXPECT_EQ(nested.inner.load(), 24);
}

TEST(ThreadPoolTest, ConcurrentCallersAllComplete) {
  ThreadPool pool(3);
  std::vector<std::thread> callers;
  std::atomic<int> failures{0};
  for (int c = 0; c < 4; ++c) {
    callers.emplace_back([&] {
      for (int i = 0; i < 200; ++i) {
        Counts counts(9);
        if (pool.ParallelFor(CountTask, &counts, 9) != 0) failures.fetch_add(1);
        for (auto& h : counts.hits) failures.fetch_add(h.load() != 1);
      }
    });
  }
  for (auto& t : callers) t.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST(ThreadPoolTest, SharedPoolResizes) {
  SetSharedPoolThreads(2);
  Counts counts(10);
  EXPECT_EQ(SharedParallelFor(SharedPoolHandle(), CountTask, &counts, 10), 0);
  EXPECT_EQ(SharedPoolThreads(), 2);
  SetSharedPoolThreads(3);
  EXPECT_EQ(SharedPoolThreads(), 3);
  Counts again(5);
  EXPECT_EQ(SharedParallelFor(SharedPoolHandle(), CountTask, &again, 5), 0);
  for (auto& h : again.hits) EXPECT_EQ(h.load(), 1);
  SetSharedPoolThreads(0);
  EXPECT_GE(PhysicalCoreCount(), 1);
}

}  // namespace
}  // namespace rt
}  // namespace agate
