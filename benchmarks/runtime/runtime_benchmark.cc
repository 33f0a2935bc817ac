// Runtime benchmarks (rerun: bazel run -c opt //benchmarks/runtime:runtime_benchmark):
//   BM_LoadFromFile      module load: mmap + verify + embedded kernels (dlopen) + ready
//   BM_LoadInPlace       core-profile load: verify + resolve against a static table
//   BM_ExecutorPerCall   the executor's per-kernel-call cost vs calling the same
//                        kernels directly (counters: ns_per_call, direct_ns_per_call,
//                        overhead_ns_per_call; goal < 100 ns)
//   BM_ForkJoin          one parallel_for of N trivial tasks on the host pool
//   BM_MlpRun            a small 3-kernel model end to end
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "agate/runtime.h"
#include "core/serialize/serialize_module.h"
#include "core/support/file.h"
#include "runtime_minimal/host/thread_pool.h"
#include "runtime_minimal/testing/test_kernels.h"
#include "runtime_minimal/testing/test_modules.h"

namespace agate {
namespace {

using serialize::TargetKind;

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/agate_bench_" + name;
}

void Check(agate_status_t status, benchmark::State& state) {
  if (status != AGATE_OK) state.SkipWithError(agate_last_error_message());
}

// A module with `calls` noop calls and `constant_bytes` of weights: load time vs size.
serialize::ModuleSpec LargeSpec(TargetKind kind, int calls, size_t constant_bytes) {
  serialize::ModuleSpec spec = testing::NoopChainSpec(kind, calls);
  spec.constants.push_back(serialize::ConstantSpec{std::vector<uint8_t>(constant_bytes, 7), 64});
  return spec;
}

void BM_LoadFromFile(benchmark::State& state) {
  const int calls = static_cast<int>(state.range(0));
  const size_t constants = static_cast<size_t>(state.range(1));
  const std::string path = TempPath("load_" + std::to_string(calls) + "_" + std::to_string(constants) + ".agm");
  const std::vector<uint8_t> bytes = serialize::SerializeModule(LargeSpec(TargetKind::kHostCpu, calls, constants));
  WriteFileAtomically(path, bytes);
  for (auto _ : state) {
    agate_module_t* module = nullptr;
    Check(agate_module_load_from_file(path.c_str(), nullptr, &module), state);
    agate_module_free(module);
  }
  state.counters["module_bytes"] = static_cast<double>(bytes.size());
  std::remove(path.c_str());
}
BENCHMARK(BM_LoadFromFile)->Args({3, 4096})->Args({1000, 8 << 20})->Unit(benchmark::kMicrosecond);

void BM_LoadInPlace(benchmark::State& state) {
  const int calls = static_cast<int>(state.range(0));
  const std::vector<uint8_t> bytes = serialize::SerializeModule(LargeSpec(TargetKind::kMicro, calls, 4096));
  void* data = nullptr;
  if (posix_memalign(&data, 4096, bytes.size()) != 0) return;
  std::copy(bytes.begin(), bytes.end(), static_cast<uint8_t*>(data));
  size_t need = 0;
  Check(agate_module_in_place_bytes(data, bytes.size(), &need), state);
  std::vector<uint64_t> memory(need / 8 + 1);
  for (auto _ : state) {
    agate_module_t* module = nullptr;
    Check(agate_module_load_in_place(data, bytes.size(), testing::TestKernelTable(), memory.data(), need, &module),
          state);
    agate_module_free(module);
  }
  free(data);
}
BENCHMARK(BM_LoadInPlace)->Arg(3)->Arg(1000)->Unit(benchmark::kMicrosecond);

// Calls the same kernels with the same arguments as the plan, directly.
double DirectNsPerCall(const std::vector<agate_kernel_fn>& fns, const std::vector<void*>& args, int reps) {
  agate_kernel_ctx ctx = {};
  ctx.abi_version = AGATE_KERNEL_ABI_VERSION;
  const auto start = std::chrono::steady_clock::now();
  for (int r = 0; r < reps; ++r) {
    for (size_t c = 0; c < fns.size(); ++c) {
      agate_kernel_fn volatile fn = fns[c];  // an indirect call, as generated code or a plan would make
      benchmark::DoNotOptimize(fn(&args[c], &ctx));
    }
  }
  const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
  return ns / (static_cast<double>(reps) * fns.size());
}

void BM_ExecutorPerCall(benchmark::State& state) {
  const int calls = static_cast<int>(state.range(0));
  const std::vector<uint8_t> bytes = serialize::SerializeModule(testing::NoopChainSpec(TargetKind::kHostCpu, calls));
  agate_module_t* module = nullptr;
  Check(agate_module_load_from_memory(bytes.data(), bytes.size(), nullptr, &module), state);
  agate_executor_options options = {sizeof(agate_executor_options), 1};
  agate_executor_t* executor = nullptr;
  Check(agate_executor_create(module, &options, &executor), state);
  uint8_t x = 0;
  int64_t shape[1] = {1};
  DLTensor input = {&x, {kDLCPU, 0}, 1, {kDLUInt, 8, 1}, shape, nullptr, 0};
  Check(agate_executor_set_input(executor, 0, &input), state);
  for (auto _ : state) Check(agate_executor_run(executor), state);
  std::vector<agate_kernel_fn> fns(calls, agate_test_noop);
  std::vector<uint8_t> arena(64);
  std::vector<void*> args(calls, arena.data());
  // Both measured the same way, interleaved, best of 5: executor and direct calls.
  double direct = 1e30, through_executor = 1e30;
  for (int round = 0; round < 5; ++round) {
    direct = std::min(direct, DirectNsPerCall(fns, args, 2000));
    const auto start = std::chrono::steady_clock::now();
    for (int r = 0; r < 2000; ++r) agate_executor_run(executor);
    const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
    through_executor = std::min(through_executor, ns / (2000.0 * calls));
  }
  state.counters["ns_per_call"] = through_executor;
  state.counters["direct_ns_per_call"] = direct;
  // The executor's cost per call on top of the kernel call itself.
  state.counters["overhead_ns_per_call"] = through_executor - direct;
  state.SetItemsProcessed(state.iterations() * calls);
  agate_executor_free(executor);
  agate_module_free(module);
}
BENCHMARK(BM_ExecutorPerCall)->Arg(100)->Arg(1000);

int32_t EmptyTask(int32_t, int32_t, void*) { return 0; }

void BM_ForkJoin(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  rt::ThreadPool pool(threads);
  for (auto _ : state) benchmark::DoNotOptimize(pool.ParallelFor(EmptyTask, nullptr, threads));
}
BENCHMARK(BM_ForkJoin)->Arg(2)->Arg(4)->UseRealTime();

void BM_MlpRun(benchmark::State& state) {
  const std::vector<uint8_t> bytes = serialize::SerializeModule(testing::MlpSpec(TargetKind::kHostCpu));
  agate_module_t* module = nullptr;
  Check(agate_module_load_from_memory(bytes.data(), bytes.size(), nullptr, &module), state);
  agate_executor_options options = {sizeof(agate_executor_options), static_cast<int32_t>(state.range(0))};
  agate_executor_t* executor = nullptr;
  Check(agate_executor_create(module, &options, &executor), state);
  std::vector<float> x = testing::MlpInput(1);
  int64_t shape[2];
  DLTensor input = testing::MatrixTensor(x.data(), shape);
  Check(agate_executor_set_input(executor, 0, &input), state);
  for (auto _ : state) Check(agate_executor_run(executor), state);
  agate_executor_free(executor);
  agate_module_free(module);
}
BENCHMARK(BM_MlpRun)->Arg(1)->Arg(0)->UseRealTime();

}  // namespace
}  // namespace agate

BENCHMARK_MAIN();
