// The host profile end to end: modules written to disk, mapped, their embedded
// kernels loaded with memfd/dlopen, executors on the heap and the thread pool.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "agate/runtime.h"
#include "core/serialize/serialize_module.h"
#include "core/support/file.h"
#include "runtime_minimal/testing/test_kernels.h"
#include "runtime_minimal/testing/test_modules.h"

namespace agate {
namespace {

using serialize::TargetKind;

std::string Message() { return agate_last_error_message(); }

std::string WriteModule(const std::string& name, const serialize::ModuleSpec& spec) {
  const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/" + name;
  WriteFileAtomically(path, serialize::SerializeModule(spec));
  return path;
}

// Runs the MLP on `x` with a fresh executor; returns y.
std::vector<float> RunMlp(agate_module_t* module, std::vector<float> x, const agate_executor_options* options) {
  agate_executor_t* executor = nullptr;
  EXPECT_EQ(agate_executor_create(module, options, &executor), AGATE_OK) << Message();
  int64_t shape[2];
  DLTensor t = testing::MatrixTensor(x.data(), shape);
  EXPECT_EQ(agate_executor_set_input(executor, 0, &t), AGATE_OK) << Message();
  EXPECT_EQ(agate_executor_run(executor), AGATE_OK) << Message();
  std::vector<float> y(AGATE_TEST_VEC);
  DLTensor out = testing::MatrixTensor(y.data(), shape);
  EXPECT_EQ(agate_executor_copy_output(executor, 0, &out), AGATE_OK) << Message();
  EXPECT_EQ(agate_executor_free(executor), AGATE_OK);
  return y;
}

// Mappings of embedded kernel objects (memfd "agate-kernels") in this process.
int KernelObjectMappings() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  int n = 0;
  while (std::getline(maps, line)) n += line.find("agate-kernels") != std::string::npos;
  return n;
}

TEST(HostProfileTest, LoadsFromAFileAndRunsEmbeddedKernels) {
  const std::string path = WriteModule("mlp.agm", testing::MlpSpec(TargetKind::kHostCpu));
  agate_module_t* module = nullptr;
  ASSERT_EQ(agate_module_load_from_file(path.c_str(), nullptr, &module), AGATE_OK) << Message();
  const std::vector<float> x = testing::MlpInput(5);
  EXPECT_EQ(RunMlp(module, x, nullptr), testing::MlpReference(x));
  agate_executor_options serial = {sizeof(agate_executor_options), 1};
  EXPECT_EQ(RunMlp(module, x, &serial), testing::MlpReference(x));
  EXPECT_EQ(agate_module_free(module), AGATE_OK);
}

// Runtime ABI 1.2 on the CPU: an output written into the caller's memory, refused
// when misaligned or mismatched (the previous binding stays), unbound with NULL.
TEST(HostProfileTest, OutputsWrittenIntoTheCallersMemory) {
  std::vector<uint8_t> bytes = serialize::SerializeModule(testing::MlpSpec(TargetKind::kHostCpu));
  agate_module_t* module = nullptr;
  ASSERT_EQ(agate_module_load_from_memory(bytes.data(), bytes.size(), nullptr, &module), AGATE_OK) << Message();
  agate_executor_t* executor = nullptr;
  ASSERT_EQ(agate_executor_create(module, nullptr, &executor), AGATE_OK) << Message();
  std::vector<float> x = testing::MlpInput(4);
  int64_t shape[2];
  DLTensor in = testing::MatrixTensor(x.data(), shape);
  ASSERT_EQ(agate_executor_set_input(executor, 0, &in), AGATE_OK) << Message();
  alignas(64) float mine[AGATE_TEST_VEC + 16] = {};
  int64_t out_shape[2];
  DLTensor misaligned = testing::MatrixTensor(mine + 1, out_shape);
  EXPECT_EQ(agate_executor_set_output(executor, 0, &misaligned), AGATE_INVALID_ARGUMENT);
  EXPECT_NE(Message().find("not 64-byte aligned"), std::string::npos) << Message();
  DLTensor out = testing::MatrixTensor(mine, out_shape);
  out.dtype.bits = 64;
  EXPECT_EQ(agate_executor_set_output(executor, 0, &out), AGATE_INVALID_ARGUMENT);
  EXPECT_EQ(agate_executor_set_output(executor, 1, &out), AGATE_OUT_OF_RANGE);
  out.dtype.bits = 32;
  ASSERT_EQ(agate_executor_set_output(executor, 0, &out), AGATE_OK) << Message();
  ASSERT_EQ(agate_executor_run(executor), AGATE_OK) << Message();
  const std::vector<float> expected = testing::MlpReference(x);
  EXPECT_EQ(std::vector<float>(mine, mine + AGATE_TEST_VEC), expected);
  DLTensor view;
  ASSERT_EQ(agate_executor_get_output(executor, 0, &view), AGATE_OK);
  EXPECT_EQ(view.data, mine);
  ASSERT_EQ(agate_executor_set_output(executor, 0, nullptr), AGATE_OK);
  std::fill(mine, mine + AGATE_TEST_VEC, 0.0f);
  const std::vector<float> next = testing::MlpInput(5);
  std::copy(next.begin(), next.end(), x.begin());  // the bound input's memory, changed in place
  ASSERT_EQ(agate_executor_run(executor), AGATE_OK) << Message();
  EXPECT_EQ(mine[3], 0.0f) << "unbound: the caller's memory is no longer written";
  ASSERT_EQ(agate_executor_get_output(executor, 0, &view), AGATE_OK);
  EXPECT_NE(view.data, mine);
  EXPECT_EQ(std::vector<float>(static_cast<float*>(view.data), static_cast<float*>(view.data) + AGATE_TEST_VEC),
            testing::MlpReference(x));
  agate_executor_free(executor);
  // A CPU module runs on the host only.
  agate_module_options options{sizeof(agate_module_options), 2};
  agate_module_t* other = nullptr;
  EXPECT_EQ(agate_module_load_from_memory_with_options(bytes.data(), bytes.size(), nullptr, &options, &other),
            AGATE_INVALID_ARGUMENT);
  EXPECT_NE(Message().find("device 2 was asked for, but the module runs on the CPU"), std::string::npos) << Message();
  DLDevice where{};
  ASSERT_EQ(agate_module_device(module, &where), AGATE_OK);
  EXPECT_EQ(where.device_type, kDLCPU);
  agate_module_free(module);
}

TEST(HostProfileTest, LoadsFromMemoryWithACopy) {
  std::vector<uint8_t> bytes = serialize::SerializeModule(testing::MlpSpec(TargetKind::kHostCpu));
  agate_module_t* module = nullptr;
  ASSERT_EQ(agate_module_load_from_memory(bytes.data(), bytes.size(), nullptr, &module), AGATE_OK) << Message();
  std::fill(bytes.begin(), bytes.end(), 0);  // the caller may reuse its bytes at once
  const std::vector<float> x = testing::MlpInput(2);
  EXPECT_EQ(RunMlp(module, x, nullptr), testing::MlpReference(x));
  agate_module_free(module);
}

TEST(HostProfileTest, MicroModulesUseTheStaticTableOnTheHostToo) {
  const std::vector<uint8_t> bytes = serialize::SerializeModule(testing::MlpSpec(TargetKind::kMicro));
  agate_module_t* module = nullptr;
  ASSERT_EQ(agate_module_load_from_memory(bytes.data(), bytes.size(), testing::TestKernelTable(), &module), AGATE_OK)
      << Message();
  const std::vector<float> x = testing::MlpInput(4);
  EXPECT_EQ(RunMlp(module, x, nullptr), testing::MlpReference(x));
  agate_module_free(module);
}

TEST(HostProfileTest, TheExecutorArenaIsWhatThePlanSays) {
  const serialize::ModuleSpec spec = testing::MlpSpec(TargetKind::kHostCpu);
  uint64_t plan_end = 0;  // the furthest arena byte any call touches
  for (const serialize::CallSpec& call : spec.plan) {
    for (const serialize::ArgSpec& arg : call.args) {
      if (arg.kind == serialize::ArgSpec::Kind::kArena) plan_end = std::max(plan_end, arg.offset + arg.bytes);
    }
  }
  const std::vector<uint8_t> bytes = serialize::SerializeModule(spec);
  agate_module_t* module = nullptr;
  ASSERT_EQ(agate_module_load_from_memory(bytes.data(), bytes.size(), nullptr, &module), AGATE_OK) << Message();
  agate_executor_t* executor = nullptr;
  ASSERT_EQ(agate_executor_create(module, nullptr, &executor), AGATE_OK) << Message();
  uint64_t arena = 0;
  ASSERT_EQ(agate_executor_arena_bytes(executor, &arena), AGATE_OK);
  EXPECT_EQ(arena, spec.arena_bytes);
  EXPECT_EQ(arena, plan_end);  // and the heap arena is allocated exactly: ASan sees any overrun
  agate_executor_free(executor);
  agate_module_free(module);
}

TEST(HostProfileTest, HeapArenasHonourTheModulesAlignment) {
  serialize::ModuleSpec spec = testing::MlpSpec(TargetKind::kHostCpu);
  spec.arena_alignment = 4096;
  spec.kernels.push_back(serialize::KernelSpec{"agate_test_check_page_aligned", {AGATE_TEST_VEC_BYTES}});
  spec.plan.insert(spec.plan.begin(), serialize::CallSpec{3, {serialize::ArgSpec::Arena(0, AGATE_TEST_VEC_BYTES)}});
  const std::vector<uint8_t> bytes = serialize::SerializeModule(spec);
  agate_module_t* module = nullptr;
  ASSERT_EQ(agate_module_load_from_memory(bytes.data(), bytes.size(), nullptr, &module), AGATE_OK) << Message();
  const std::vector<float> x = testing::MlpInput(3);
  EXPECT_EQ(RunMlp(module, x, nullptr), testing::MlpReference(x));
  agate_module_free(module);
}

TEST(HostProfileTest, LoadRunFreeCyclesReleaseEverything) {
  const std::string path = WriteModule("cycle.agm", testing::MlpSpec(TargetKind::kHostCpu));
  const int mappings_before = KernelObjectMappings();
  const std::vector<float> x = testing::MlpInput(9);
  const std::vector<float> want = testing::MlpReference(x);
  for (int cycle = 0; cycle < 20; ++cycle) {
    agate_module_t* module = nullptr;
    ASSERT_EQ(agate_module_load_from_file(path.c_str(), nullptr, &module), AGATE_OK) << Message();
    EXPECT_GT(KernelObjectMappings(), mappings_before);
    ASSERT_EQ(RunMlp(module, x, nullptr), want);
    agate_module_free(module);
  }
  EXPECT_EQ(KernelObjectMappings(), mappings_before);  // every embedded object was unloaded
}

TEST(HostProfileTest, ExecutorsRunInParallelOverOneModule) {
  // 8 threads x 200 runs, one shared module, an executor per thread, all
  // competing for the shared pool: every output equals the serial reference.
  ASSERT_EQ(agate_runtime_set_num_threads(4), AGATE_OK);
  const std::vector<uint8_t> bytes = serialize::SerializeModule(testing::MlpSpec(TargetKind::kHostCpu));
  agate_module_t* module = nullptr;
  ASSERT_EQ(agate_module_load_from_memory(bytes.data(), bytes.size(), nullptr, &module), AGATE_OK) << Message();
  constexpr int kThreads = 8;
  constexpr int kRuns = 200;
  std::vector<std::vector<float>> want(kThreads);
  agate_executor_options serial = {sizeof(agate_executor_options), 1};
  for (int t = 0; t < kThreads; ++t) want[t] = RunMlp(module, testing::MlpInput(t), &serial);
  std::vector<int> mismatches(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      agate_executor_t* executor = nullptr;
      if (agate_executor_create(module, nullptr, &executor) != AGATE_OK) {
        mismatches[t] = kRuns;
        return;
      }
      std::vector<float> x = testing::MlpInput(t);
      int64_t shape[2];
      DLTensor input = testing::MatrixTensor(x.data(), shape);
      agate_executor_set_input(executor, 0, &input);
      for (int run = 0; run < kRuns; ++run) {
        DLTensor y;
        if (agate_executor_run(executor) != AGATE_OK || agate_executor_get_output(executor, 0, &y) != AGATE_OK ||
            std::memcmp(y.data, want[t].data(), AGATE_TEST_VEC_BYTES) != 0) {
          ++mismatches[t];
        }
      }
      agate_executor_free(executor);
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(mismatches[t], 0) << "thread " << t;
  agate_module_free(module);
  ASSERT_EQ(agate_runtime_set_num_threads(0), AGATE_OK);
}

TEST(HostProfileTest, OptionsFromOlderCallersReadAsDefaults) {
  const std::vector<uint8_t> bytes = serialize::SerializeModule(testing::MlpSpec(TargetKind::kHostCpu));
  agate_module_t* module = nullptr;
  ASSERT_EQ(agate_module_load_from_memory(bytes.data(), bytes.size(), nullptr, &module), AGATE_OK) << Message();
  // A caller compiled when the struct held only struct_size: num_threads reads as 0.
  agate_executor_options old_options = {sizeof(uint32_t), 77};
  const std::vector<float> x = testing::MlpInput(6);
  EXPECT_EQ(RunMlp(module, x, &old_options), testing::MlpReference(x));
  agate_executor_options bad = {0, 1};
  agate_executor_t* executor = nullptr;
  EXPECT_EQ(agate_executor_create(module, &bad, &executor), AGATE_INVALID_ARGUMENT);
  EXPECT_NE(Message().find("struct_size is 0"), std::string::npos) << Message();
  agate_module_free(module);
}

TEST(HostProfileTest, ThreadCountComesFromTheApiThenTheEnvironment) {
  int32_t n = 0;
  ASSERT_EQ(agate_runtime_set_num_threads(3), AGATE_OK);
  ASSERT_EQ(agate_runtime_num_threads(&n), AGATE_OK);
  EXPECT_EQ(n, 3);
  setenv("AGATE_NUM_THREADS", "5", 1);
  ASSERT_EQ(agate_runtime_set_num_threads(0), AGATE_OK);
  ASSERT_EQ(agate_runtime_num_threads(&n), AGATE_OK);
  EXPECT_EQ(n, 5);
  setenv("AGATE_NUM_THREADS", "lots", 1);  // ignored: back to the physical cores
  ASSERT_EQ(agate_runtime_num_threads(&n), AGATE_OK);
  EXPECT_GE(n, 1);
  unsetenv("AGATE_NUM_THREADS");
  EXPECT_EQ(agate_runtime_set_num_threads(-1), AGATE_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace agate
