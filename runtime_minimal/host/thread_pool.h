// The host thread pool behind agate_kernel_ctx.parallel_for.
//
// Why its own pool with spin-then-sleep workers: generated kernels fork and join
// once per parallel loop, and a MobileNet-sized model runs hundreds of small
// loops per inference, so fork/join latency (not throughput) dominates. Workers
// spin for a short while after each job, catching the next fork within
// nanoseconds; after that they sleep on a condition variable so an idle process
// costs no CPU. The caller's thread runs tasks too and is counted in the size.
//
// One job runs at a time. A parallel_for that finds the pool busy (another
// executor's loop on another thread, or a nested loop) runs its tasks on its own
// thread instead of waiting, so executors on many threads never deadlock and
// never oversubscribe the cores.
#ifndef AGATE_RUNTIME_MINIMAL_HOST_THREAD_POOL_H_
#define AGATE_RUNTIME_MINIMAL_HOST_THREAD_POOL_H_

#include <stdint.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "agate/kernel_abi.h"

namespace agate {
namespace rt {

class ThreadPool {
 public:
  // num_threads >= 1 counts the calling thread: num_threads - 1 workers.
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return static_cast<int>(workers_.size()) + 1; }

  // Runs task(0..num_tasks-1) on the workers and the calling thread; returns 0 or
  // the first non-zero task status. Runs serially when another job is running.
  int32_t ParallelFor(agate_parallel_task_fn task, void* closure, int32_t num_tasks);

 private:
  void WorkerLoop();
  void RunTasks();
  int32_t RunJob(agate_parallel_task_fn task, void* closure, int32_t num_tasks);

  std::vector<std::thread> workers_;
  std::mutex job_mutex_;  // held by the thread whose job the pool runs
  // The current job. Written only between jobs: after the previous job was
  // closed and no worker is inside it (active_ == 0).
  agate_parallel_task_fn task_ = nullptr;
  void* closure_ = nullptr;
  int32_t num_tasks_ = 0;
  std::atomic<int32_t> next_task_{0};
  std::atomic<int32_t> done_tasks_{0};
  std::atomic<int32_t> first_error_{0};
  // Job e is published by epoch_ = e and closed by closed_epoch_ = e. A worker
  // joins by incrementing active_ and re-checking that e is current and open, so
  // the caller waits only for workers actually inside the job, never for one the
  // OS has not scheduled (which matters when threads outnumber free cores).
  std::atomic<uint64_t> epoch_{0};
  std::atomic<uint64_t> closed_epoch_{0};
  std::atomic<int32_t> active_{0};
  std::atomic<bool> stop_{false};
  std::atomic<int32_t> sleepers_{0};
  std::mutex sleep_mutex_;
  std::condition_variable wake_;
};

// The process-wide pool every host executor shares, sized by
// SetSharedPoolThreads, else AGATE_NUM_THREADS, else the physical core count.
// Executors hold SharedPoolHandle() (stable for the life of the process) as
// agate_kernel_ctx.pool with SharedParallelFor; the pool behind it is created
// on first use, rebuilt when resized, and never destroyed at exit.
void* SharedPoolHandle();
int32_t SharedParallelFor(void* handle, agate_parallel_task_fn task, void* closure, int32_t num_tasks);
// Resizes the shared pool (0: back to the default); waits for a running job.
void SetSharedPoolThreads(int num_threads);
// The size the shared pool has or will have.
int SharedPoolThreads();

// agate_kernel_ctx.parallel_for over a ThreadPool* in `pool`.
int32_t PoolParallelFor(void* pool, agate_parallel_task_fn task, void* closure, int32_t num_tasks);

// Physical cores available to this process (hyper-threads counted once).
int PhysicalCoreCount();

}  // namespace rt
}  // namespace agate

#endif  // AGATE_RUNTIME_MINIMAL_HOST_THREAD_POOL_H_
