#include "runtime_minimal/host/thread_pool.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

#include <set>
#include <utility>

namespace agate {
namespace rt {
namespace {

// About 50-100 microseconds of spinning before a worker sleeps: long enough to
// catch the next loop of a running model, short enough to free the core soon.
constexpr int kSpinIterations = 1 << 14;

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

int32_t RunSerially(agate_parallel_task_fn task, void* closure, int32_t num_tasks) {
  for (int32_t t = 0; t < num_tasks; ++t) {
    const int32_t rc = task(t, num_tasks, closure);
    if (rc != 0) return rc;
  }
  return 0;
}

int ReadIntFile(const char* path, int fallback) {
  FILE* f = fopen(path, "r");
  if (f == nullptr) return fallback;
  int value = fallback;
  if (fscanf(f, "%d", &value) != 1) value = fallback;
  fclose(f);
  return value;
}

int DefaultThreads() {
  const char* env = getenv("AGATE_NUM_THREADS");
  if (env != nullptr) {
    char* end = nullptr;
    const long n = strtol(env, &end, 10);
    if (end != env && *end == '\0' && n >= 1 && n <= 1024) return static_cast<int>(n);
  }
  return PhysicalCoreCount();
}

struct SharedPoolState {
  std::mutex mutex;  // held while a job runs on the pool, and while resizing
  ThreadPool* pool = nullptr;
  int requested = 0;  // 0: default
};

SharedPoolState& Shared() {
  static SharedPoolState* state = new SharedPoolState();  // never destroyed: workers may outlive main
  return *state;
}

}  // namespace

ThreadPool::ThreadPool(int num_threads) {
  for (int i = 1; i < num_threads; ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(sleep_mutex_);
    stop_.store(true);
  }
  wake_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::RunTasks() {
  const agate_parallel_task_fn task = task_;
  void* const closure = closure_;
  const int32_t num_tasks = num_tasks_;
  for (;;) {
    const int32_t t = next_task_.fetch_add(1, std::memory_order_relaxed);
    if (t >= num_tasks) return;
    const int32_t rc = task(t, num_tasks, closure);
    if (rc != 0) {
      int32_t expected = 0;
      first_error_.compare_exchange_strong(expected, rc);
    }
    done_tasks_.fetch_add(1, std::memory_order_release);
  }
}

void ThreadPool::WorkerLoop() {
  uint64_t seen = 0;
  for (;;) {
    uint64_t epoch = epoch_.load(std::memory_order_acquire);
    for (int i = 0; i < kSpinIterations && epoch == seen && !stop_.load(std::memory_order_relaxed); ++i) {
      CpuRelax();
      epoch = epoch_.load(std::memory_order_acquire);
    }
    if (epoch == seen) {
      std::unique_lock<std::mutex> lock(sleep_mutex_);
      sleepers_.fetch_add(1);
      wake_.wait(lock, [&] { return stop_.load() || epoch_.load() != seen; });
      sleepers_.fetch_sub(1);
      epoch = epoch_.load(std::memory_order_acquire);
    }
    if (stop_.load()) return;
    seen = epoch;
    // Join job `epoch` only while it is current and open (see active_).
    active_.fetch_add(1);
    if (epoch_.load() == epoch && closed_epoch_.load() != epoch) RunTasks();
    active_.fetch_sub(1);
  }
}

// Spins briefly, then yields, until `done` holds.
template <typename Done>
void WaitUntil(Done done) {
  for (int spins = 0; !done(); ++spins) {
    if (spins < kSpinIterations) {
      CpuRelax();
    } else {
      std::this_thread::yield();
    }
  }
}

int32_t ThreadPool::RunJob(agate_parallel_task_fn task, void* closure, int32_t num_tasks) {
  // The previous job is closed and empty (active_ == 0): the fields are free.
  task_ = task;
  closure_ = closure;
  num_tasks_ = num_tasks;
  next_task_.store(0, std::memory_order_relaxed);
  done_tasks_.store(0, std::memory_order_relaxed);
  first_error_.store(0, std::memory_order_relaxed);
  const uint64_t epoch = epoch_.fetch_add(1) + 1;  // seq_cst: publishes the job, ordered before sleepers_
  if (sleepers_.load() > 0) {
    { std::lock_guard<std::mutex> lock(sleep_mutex_); }
    wake_.notify_all();
  }
  RunTasks();
  WaitUntil([&] { return done_tasks_.load(std::memory_order_acquire) == num_tasks; });
  closed_epoch_.store(epoch);
  WaitUntil([&] { return active_.load() == 0; });
  return first_error_.load(std::memory_order_relaxed);
}

int32_t ThreadPool::ParallelFor(agate_parallel_task_fn task, void* closure, int32_t num_tasks) {
  if (num_tasks <= 0) return 0;
  if (num_tasks == 1 || workers_.empty()) return RunSerially(task, closure, num_tasks);
  std::unique_lock<std::mutex> lock(job_mutex_, std::try_to_lock);
  if (!lock.owns_lock()) return RunSerially(task, closure, num_tasks);
  return RunJob(task, closure, num_tasks);
}

int32_t PoolParallelFor(void* pool, agate_parallel_task_fn task, void* closure, int32_t num_tasks) {
  return static_cast<ThreadPool*>(pool)->ParallelFor(task, closure, num_tasks);
}

void* SharedPoolHandle() { return &Shared(); }

int32_t SharedParallelFor(void* handle, agate_parallel_task_fn task, void* closure, int32_t num_tasks) {
  SharedPoolState& state = *static_cast<SharedPoolState*>(handle);
  if (num_tasks <= 1) return RunSerially(task, closure, num_tasks);
  std::unique_lock<std::mutex> lock(state.mutex, std::try_to_lock);
  if (!lock.owns_lock()) return RunSerially(task, closure, num_tasks);
  if (state.pool == nullptr) state.pool = new ThreadPool(state.requested > 0 ? state.requested : DefaultThreads());
  return state.pool->ParallelFor(task, closure, num_tasks);
}

void SetSharedPoolThreads(int num_threads) {
  SharedPoolState& state = Shared();
  std::lock_guard<std::mutex> lock(state.mutex);
  state.requested = num_threads;
  delete state.pool;  // rebuilt at the next parallel loop
  state.pool = nullptr;
}

int SharedPoolThreads() {
  SharedPoolState& state = Shared();
  std::lock_guard<std::mutex> lock(state.mutex);
  if (state.pool != nullptr) return state.pool->num_threads();
  return state.requested > 0 ? state.requested : DefaultThreads();
}

int PhysicalCoreCount() {
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  if (sched_getaffinity(0, sizeof(cpus), &cpus) != 0) {
    const unsigned n = std::thread::hardware_concurrency();
    return n > 0 ? static_cast<int>(n) : 1;
  }
  std::set<std::pair<int, int>> cores;  // (package, core)
  int logical = 0;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &cpus)) continue;
    ++logical;
    char path[128];
    snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/topology/core_id", cpu);
    const int core = ReadIntFile(path, cpu);
    snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/topology/physical_package_id", cpu);
    const int package = ReadIntFile(path, 0);
    cores.insert({package, core});
  }
  if (cores.empty()) return logical > 0 ? logical : 1;
  return static_cast<int>(cores.size());
}

}  // namespace rt
}  // namespace agate
