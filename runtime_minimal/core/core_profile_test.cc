// The core profile end to end: a microcontroller-style module (kernel names
// only) loaded in place, resolved against a static kernel table, run in caller
// memory.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "agate/runtime.h"
#include "core/serialize/serialize_module.h"
#include "runtime_minimal/testing/test_kernels.h"
#include "runtime_minimal/testing/test_modules.h"

namespace agate {
namespace {

using serialize::TargetKind;

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
using AlignedBytes = std::unique_ptr<uint8_t, FreeDeleter>;

AlignedBytes AlignedCopy(const std::vector<uint8_t>& bytes, size_t offset = 0) {
  void* p = nullptr;
  EXPECT_EQ(posix_memalign(&p, 4096, bytes.size() + offset), 0);
  std::memcpy(static_cast<uint8_t*>(p) + offset, bytes.data(), bytes.size());
  return AlignedBytes(static_cast<uint8_t*>(p));
}

AlignedBytes AlignedMemory(size_t bytes) {
  void* p = nullptr;
  EXPECT_EQ(posix_memalign(&p, 64, bytes == 0 ? 1 : bytes), 0);
  return AlignedBytes(static_cast<uint8_t*>(p));
}

std::string Message() { return agate_last_error_message(); }

// A module loaded in place with its memory; frees in the right order.
class InPlaceModule {
 public:
  explicit InPlaceModule(const std::vector<uint8_t>& bytes, const agate_kernel_table* table = testing::TestKernelTable())
      : data_(AlignedCopy(bytes)), size_(bytes.size()) {
    size_t need = 0;
    status_ = agate_module_in_place_bytes(data_.get(), size_, &need);
    if (status_ != AGATE_OK) return;
    memory_ = AlignedMemory(need);
    status_ = agate_module_load_in_place(data_.get(), size_, table, memory_.get(), need, &module_);
  }
  ~InPlaceModule() { agate_module_free(module_); }
  agate_status_t status() const { return status_; }
  agate_module_t* get() const { return module_; }

 private:
  AlignedBytes data_;
  size_t size_;
  AlignedBytes memory_;
  agate_status_t status_ = AGATE_OK;
  agate_module_t* module_ = nullptr;
};

class InPlaceExecutor {
 public:
  explicit InPlaceExecutor(agate_module_t* module) {
    size_t need = 0;
    EXPECT_EQ(agate_executor_in_place_bytes(module, &need), AGATE_OK) << Message();
    memory_ = AlignedMemory(need);
    EXPECT_EQ(agate_executor_create_in_place(module, memory_.get(), need, &executor_), AGATE_OK) << Message();
  }
  ~InPlaceExecutor() { agate_executor_free(executor_); }
  agate_executor_t* get() const { return executor_; }

 private:
  AlignedBytes memory_;
  agate_executor_t* executor_ = nullptr;
};

TEST(CoreProfileTest, RunsAMicroModuleInCallerMemory) {
  InPlaceModule module(serialize::SerializeModule(testing::MlpSpec(TargetKind::kMicro)));
  ASSERT_EQ(module.status(), AGATE_OK) << Message();
  InPlaceExecutor executor(module.get());
  std::vector<float> x = testing::MlpInput(3);
  int64_t shape[2];
  DLTensor input = testing::MatrixTensor(x.data(), shape);
  ASSERT_EQ(agate_executor_set_input(executor.get(), 0, &input), AGATE_OK) << Message();
  ASSERT_EQ(agate_executor_run(executor.get()), AGATE_OK) << Message();
  std::vector<float> y(AGATE_TEST_VEC);
  int64_t out_shape[2];
  DLTensor output = testing::MatrixTensor(y.data(), out_shape);
  ASSERT_EQ(agate_executor_copy_output(executor.get(), 0, &output), AGATE_OK) << Message();
  EXPECT_EQ(y, testing::MlpReference(x));

  DLTensor view;
  ASSERT_EQ(agate_executor_get_output(executor.get(), 0, &view), AGATE_OK);
  EXPECT_EQ(std::memcmp(view.data, y.data(), AGATE_TEST_VEC_BYTES), 0);
  EXPECT_EQ(view.ndim, 2);
  EXPECT_EQ(view.shape[1], 16);
  EXPECT_EQ(view.device.device_type, kDLCPU);

  uint64_t arena = 0;
  ASSERT_EQ(agate_executor_arena_bytes(executor.get(), &arena), AGATE_OK);
  EXPECT_EQ(arena, testing::MlpSpec(TargetKind::kMicro).arena_bytes);
}

// A kernel table generated with its module carries the module's kernel fingerprint; the
// fingerprinted loader refuses one generated for other kernels (same names, other model),
// naming both values, and a module that records none.
TEST(CoreProfileTest, RefusesAKernelTableWithAnotherFingerprint) {
  serialize::ModuleSpec spec = testing::MlpSpec(TargetKind::kMicro);
  spec.kernel_fingerprint = 0x0123456789abcdefull;
  const std::vector<uint8_t> bytes = serialize::SerializeModule(spec);
  AlignedBytes data = AlignedCopy(bytes);
  size_t need = 0;
  ASSERT_EQ(agate_module_in_place_bytes(data.get(), bytes.size(), &need), AGATE_OK) << Message();
  AlignedBytes memory = AlignedMemory(need);
  agate_module_t* module = nullptr;
  ASSERT_EQ(agate_module_load_in_place_fingerprinted(data.get(), bytes.size(), testing::TestKernelTable(),
                                                     0x0123456789abcdefull, memory.get(), need, &module),
            AGATE_OK)
      << Message();
  ASSERT_NE(module, nullptr);
  InPlaceExecutor executor(module);
  std::vector<float> x = testing::MlpInput(5);
  int64_t shape[2];
  DLTensor input = testing::MatrixTensor(x.data(), shape);
  ASSERT_EQ(agate_executor_set_input(executor.get(), 0, &input), AGATE_OK) << Message();
  ASSERT_EQ(agate_executor_run(executor.get()), AGATE_OK) << Message();
  agate_module_free(module);

  module = nullptr;
  EXPECT_EQ(agate_module_load_in_place_fingerprinted(data.get(), bytes.size(), testing::TestKernelTable(),
                                                     0x0123456789abcdeeull, memory.get(), need, &module),
            AGATE_INVALID_ARGUMENT);
  EXPECT_EQ(module, nullptr);
  EXPECT_NE(Message().find("kernel table fingerprint 0x0123456789abcdee differs from the module's 0x0123456789abcdef"),
            std::string::npos)
      << Message();
  EXPECT_EQ(agate_module_load_in_place_fingerprinted(data.get(), bytes.size(), testing::TestKernelTable(), 0,
                                                     memory.get(), need, &module),
            AGATE_INVALID_ARGUMENT);
  EXPECT_NE(Message().find("kernel_fingerprint is 0"), std::string::npos) << Message();
  // The plain loader does not compare: hand-written tables carry no fingerprint.
  InPlaceModule plain(bytes);
  EXPECT_EQ(plain.status(), AGATE_OK) << Message();

  const std::vector<uint8_t> unfingerprinted = serialize::SerializeModule(testing::MlpSpec(TargetKind::kMicro));
  AlignedBytes old_data = AlignedCopy(unfingerprinted);
  EXPECT_EQ(agate_module_load_in_place_fingerprinted(old_data.get(), unfingerprinted.size(), testing::TestKernelTable(),
                                                     0x0123456789abcdefull, memory.get(), need, &module),
            AGATE_VERSION_MISMATCH);
  EXPECT_NE(Message().find("records no kernel fingerprint"), std::string::npos) << Message();
  EXPECT_EQ(agate_module_load_in_place_fingerprinted(data.get(), bytes.size(), testing::TestKernelTable(),
                                                     0x0123456789abcdefull, memory.get(), need, nullptr),
            AGATE_INVALID_ARGUMENT);
}

TEST(CoreProfileTest, HonoursAPageAlignedArena) {
  serialize::ModuleSpec spec = testing::MlpSpec(TargetKind::kMicro);
  spec.arena_alignment = 4096;
  // A first call that fails unless the arena really starts on a page.
  spec.kernels.push_back(serialize::KernelSpec{"agate_test_check_page_aligned", {AGATE_TEST_VEC_BYTES}});
  spec.plan.insert(spec.plan.begin(), serialize::CallSpec{3, {serialize::ArgSpec::Arena(0, AGATE_TEST_VEC_BYTES)}});
  InPlaceModule module(serialize::SerializeModule(spec));
  ASSERT_EQ(module.status(), AGATE_OK) << Message();
  InPlaceExecutor executor(module.get());
  std::vector<float> x = testing::MlpInput(8);
  int64_t shape[2];
  DLTensor input = testing::MatrixTensor(x.data(), shape);
  ASSERT_EQ(agate_executor_set_input(executor.get(), 0, &input), AGATE_OK) << Message();
  ASSERT_EQ(agate_executor_run(executor.get()), AGATE_OK) << Message();
  DLTensor y;
  ASSERT_EQ(agate_executor_get_output(executor.get(), 0, &y), AGATE_OK);
  EXPECT_EQ(std::memcmp(y.data, testing::MlpReference(x).data(), AGATE_TEST_VEC_BYTES), 0);
}

TEST(CoreProfileTest, DescribesInputsAndOutputs) {
  InPlaceModule module(serialize::SerializeModule(testing::MlpSpec(TargetKind::kMicro)));
  ASSERT_EQ(module.status(), AGATE_OK) << Message();
  uint32_t n = 0;
  ASSERT_EQ(agate_module_num_inputs(module.get(), &n), AGATE_OK);
  EXPECT_EQ(n, 1u);
  ASSERT_EQ(agate_module_num_outputs(module.get(), &n), AGATE_OK);
  EXPECT_EQ(n, 1u);
  agate_tensor_info info;
  ASSERT_EQ(agate_module_input_info(module.get(), 0, &info), AGATE_OK);
  EXPECT_STREQ(info.name, "x");
  EXPECT_EQ(info.dtype.code, kDLFloat);
  EXPECT_EQ(info.dtype.bits, 32);
  EXPECT_EQ(info.ndim, 2);
  EXPECT_EQ(info.bytes, uint64_t{AGATE_TEST_VEC_BYTES});
  EXPECT_EQ(agate_module_output_info(module.get(), 1, &info), AGATE_OUT_OF_RANGE);
  EXPECT_NE(Message().find("output 1 of 1"), std::string::npos) << Message();
  uint32_t index = 9;
  ASSERT_EQ(agate_module_find_output(module.get(), "y", &index), AGATE_OK);
  EXPECT_EQ(index, 0u);
  EXPECT_EQ(agate_module_find_input(module.get(), "nope", &index), AGATE_NOT_FOUND);
  EXPECT_NE(Message().find("no input named 'nope'"), std::string::npos) << Message();
  const char* target = nullptr;
  ASSERT_EQ(agate_module_target(module.get(), &target), AGATE_OK);
  EXPECT_STREQ(target, "c -mcpu=cortex-m4");
}

TEST(CoreProfileTest, AKernelMissingFromTheStaticTableIsRefusedAtLoad) {
  serialize::ModuleSpec spec = testing::MlpSpec(TargetKind::kMicro);
  spec.kernels[2].name = "agate_test_softmax";
  InPlaceModule module(serialize::SerializeModule(spec));
  EXPECT_EQ(module.status(), AGATE_NOT_FOUND);
  EXPECT_NE(Message().find("kernel 2 'agate_test_softmax' is not in the static kernel table"), std::string::npos)
      << Message();
  InPlaceModule no_table(serialize::SerializeModule(testing::MlpSpec(TargetKind::kMicro)), nullptr);
  EXPECT_EQ(no_table.status(), AGATE_NOT_FOUND);
  EXPECT_NE(Message().find("none was given"), std::string::npos) << Message();
}

TEST(CoreProfileTest, RefusesTooLittleOrMisalignedMemory) {
  const std::vector<uint8_t> bytes = serialize::SerializeModule(testing::MlpSpec(TargetKind::kMicro));
  AlignedBytes data = AlignedCopy(bytes);
  size_t need = 0;
  ASSERT_EQ(agate_module_in_place_bytes(data.get(), bytes.size(), &need), AGATE_OK);
  AlignedBytes memory = AlignedMemory(need);
  agate_module_t* module = nullptr;
  EXPECT_EQ(agate_module_load_in_place(data.get(), bytes.size(), testing::TestKernelTable(), memory.get(), need - 1,
                                       &module),
            AGATE_RESOURCE_EXHAUSTED);
  EXPECT_NE(Message().find("module needs " + std::to_string(need) + " bytes"), std::string::npos) << Message();
  // The bias constant asks for 4096-byte alignment: module bytes 8 bytes off refuse.
  AlignedBytes shifted = AlignedCopy(bytes, 8);
  EXPECT_EQ(agate_module_load_in_place(shifted.get() + 8, bytes.size(), testing::TestKernelTable(), memory.get(), need,
                                       &module),
            AGATE_INVALID_ARGUMENT);
  EXPECT_NE(Message().find("not aligned to 4096 bytes"), std::string::npos) << Message();

  ASSERT_EQ(agate_module_load_in_place(data.get(), bytes.size(), testing::TestKernelTable(), memory.get(), need,
                                       &module),
            AGATE_OK);
  size_t exec_need = 0;
  ASSERT_EQ(agate_executor_in_place_bytes(module, &exec_need), AGATE_OK);
  AlignedBytes exec_memory = AlignedMemory(exec_need);
  agate_executor_t* executor = nullptr;
  EXPECT_EQ(agate_executor_create_in_place(module, exec_memory.get(), exec_need - 1, &executor),
            AGATE_RESOURCE_EXHAUSTED);
  EXPECT_EQ(agate_module_free(module), AGATE_OK);
}

TEST(CoreProfileTest, ChecksInputsAgainstTheModule) {
  InPlaceModule module(serialize::SerializeModule(testing::MlpSpec(TargetKind::kMicro)));
  ASSERT_EQ(module.status(), AGATE_OK) << Message();
  InPlaceExecutor executor(module.get());
  EXPECT_EQ(agate_executor_run(executor.get()), AGATE_INVALID_ARGUMENT);
  EXPECT_NE(Message().find("input 0 'x' is not bound"), std::string::npos) << Message();

  std::vector<float> x(AGATE_TEST_VEC);
  int64_t shape[2];
  DLTensor t = testing::MatrixTensor(x.data(), shape);
  shape[1] = 8;
  EXPECT_EQ(agate_executor_set_input(executor.get(), 0, &t), AGATE_INVALID_ARGUMENT);
  EXPECT_NE(Message().find("extent 8 on axis 1"), std::string::npos) << Message();
  t = testing::MatrixTensor(x.data(), shape);
  t.dtype.code = kDLInt;
  EXPECT_EQ(agate_executor_set_input(executor.get(), 0, &t), AGATE_INVALID_ARGUMENT);
  EXPECT_NE(Message().find("'x' has dtype"), std::string::npos) << Message();
  t = testing::MatrixTensor(x.data(), shape);
  int64_t strides[2] = {1, 16};  // column-major
  t.strides = strides;
  EXPECT_EQ(agate_executor_set_input(executor.get(), 0, &t), AGATE_INVALID_ARGUMENT);
  EXPECT_NE(Message().find("compact row-major"), std::string::npos) << Message();
  t = testing::MatrixTensor(x.data(), shape);
  EXPECT_EQ(agate_executor_set_input(executor.get(), 1, &t), AGATE_OUT_OF_RANGE);
  EXPECT_EQ(agate_executor_set_input(executor.get(), 0, nullptr), AGATE_INVALID_ARGUMENT);
}

TEST(CoreProfileTest, AFailingKernelStopsTheRunNamingIt) {
  serialize::ModuleSpec spec = testing::MlpSpec(TargetKind::kMicro);
  spec.kernels[1].name = "agate_test_fail";
  InPlaceModule module(serialize::SerializeModule(spec));
  ASSERT_EQ(module.status(), AGATE_OK) << Message();
  InPlaceExecutor executor(module.get());
  std::vector<float> x = testing::MlpInput(0);
  int64_t shape[2];
  DLTensor t = testing::MatrixTensor(x.data(), shape);
  ASSERT_EQ(agate_executor_set_input(executor.get(), 0, &t), AGATE_OK);
  EXPECT_EQ(agate_executor_run(executor.get()), AGATE_INTERNAL);
  EXPECT_NE(Message().find("kernel 'agate_test_fail' (plan call 1) failed with code 7"), std::string::npos) << Message();
}

// A kernel whose run-time check i failed returns -1 - i: with the module's message for it, the
// run fails with AGATE_INVALID_ARGUMENT and that message (the input was wrong, not agate);
// without one it stays AGATE_INTERNAL naming the kernel.
TEST(CoreProfileTest, AFailedRunTimeCheckIsTheCallersError) {
  for (bool with_messages : {true, false}) {
    serialize::ModuleSpec spec = testing::MlpSpec(TargetKind::kMicro);
    spec.kernels[1].name = "agate_test_check_failed";
    // The first message holds a NUL (a node may be named so): the second must still be message 1.
    const std::string first("Op 'a\0b': first check", 22);
    if (with_messages) spec.kernels[1].check_messages = {first, "Op 'b': operand ('v') is wrong"};
    InPlaceModule module(serialize::SerializeModule(spec));
    ASSERT_EQ(module.status(), AGATE_OK) << Message();
    InPlaceExecutor executor(module.get());
    std::vector<float> x = testing::MlpInput(0);
    int64_t shape[2];
    DLTensor t = testing::MatrixTensor(x.data(), shape);
    ASSERT_EQ(agate_executor_set_input(executor.get(), 0, &t), AGATE_OK);
    if (with_messages) {
      EXPECT_EQ(agate_executor_run(executor.get()), AGATE_INVALID_ARGUMENT);
      EXPECT_NE(Message().find("Op 'b': operand ('v') is wrong"), std::string::npos) << Message();
    } else {
      EXPECT_EQ(agate_executor_run(executor.get()), AGATE_INTERNAL);
      EXPECT_NE(Message().find("failed with code -2"), std::string::npos) << Message();
    }
  }
}

TEST(CoreProfileTest, KernelsGetTheirWorkspace) {
  InPlaceModule module(serialize::SerializeModule(testing::WorkspaceSpec(TargetKind::kMicro)));
  ASSERT_EQ(module.status(), AGATE_OK) << Message();
  InPlaceExecutor executor(module.get());
  std::vector<float> x = testing::MlpInput(1);
  int64_t shape[2];
  DLTensor t = testing::MatrixTensor(x.data(), shape);
  ASSERT_EQ(agate_executor_set_input(executor.get(), 0, &t), AGATE_OK);
  ASSERT_EQ(agate_executor_run(executor.get()), AGATE_OK) << Message();
  DLTensor y;
  ASSERT_EQ(agate_executor_get_output(executor.get(), 0, &y), AGATE_OK);
  for (int i = 0; i < AGATE_TEST_VEC; ++i) ASSERT_EQ(static_cast<float*>(y.data)[i], 2 * x[i]);
}

TEST(CoreProfileTest, NullHandlesAreInvalidArgumentsNotCrashes) {
  uint32_t n = 0;
  EXPECT_EQ(agate_module_num_inputs(nullptr, &n), AGATE_INVALID_ARGUMENT);
  EXPECT_EQ(agate_executor_run(nullptr), AGATE_INVALID_ARGUMENT);
  EXPECT_EQ(agate_module_free(nullptr), AGATE_OK);
  EXPECT_EQ(agate_executor_free(nullptr), AGATE_OK);
  size_t bytes = 0;
  EXPECT_EQ(agate_module_in_place_bytes(nullptr, 100, &bytes), AGATE_INVALID_ARGUMENT);
  EXPECT_STREQ(agate_status_name(AGATE_CORRUPT), "corrupt");
  EXPECT_EQ(agate_runtime_abi_version(), uint32_t{AGATE_RUNTIME_ABI_VERSION});
}

}  // namespace
}  // namespace agate
