// Corrupt, hostile and mismatched modules: each is refused with a clear status
// and message, never a crash (this test also runs under --config=asan).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <random>
#include <string>

#include "agate/runtime.h"
#include "core/serialize/serialize_module.h"
#include "core/support/file.h"
#include "runtime_minimal/schema/module_generated.h"
#include "runtime_minimal/testing/test_kernels.h"
#include "runtime_minimal/testing/test_modules.h"

// Huge sizes a flipped bit may ask for must fail as allocations, not abort ASan.
extern "C" const char* __asan_default_options() { return "allocator_may_return_null=1"; }

namespace agate {
namespace {

using serialize::TargetKind;

std::string Message() { return agate_last_error_message(); }

std::vector<uint8_t> HostMlp() { return serialize::SerializeModule(testing::MlpSpec(TargetKind::kHostCpu)); }

// Loads `bytes`; returns the status, freeing any module.
agate_status_t Load(const std::vector<uint8_t>& bytes) {
  agate_module_t* module = nullptr;
  const agate_status_t status = agate_module_load_from_memory(bytes.data(), bytes.size(), nullptr, &module);
  agate_module_free(module);
  return status;
}

// Overwrites a scalar field of the root table in place (SerializeModule writes every field).
void PatchModuleField(std::vector<uint8_t>& bytes, flatbuffers::voffset_t field, uint32_t value) {
  auto* table = reinterpret_cast<flatbuffers::Table*>(const_cast<fb::Module*>(fb::GetModule(bytes.data())));
  uint8_t* address = table->GetAddressOf(field);
  ASSERT_NE(address, nullptr);
  std::memcpy(address, &value, sizeof(value));
}

TEST(CorruptModuleTest, TheUnmodifiedModuleLoadsAndRuns) {
  EXPECT_EQ(Load(HostMlp()), AGATE_OK) << Message();
}

TEST(CorruptModuleTest, TruncatedAtEverySixteenthIsRefused) {
  const std::vector<uint8_t> bytes = HostMlp();
  for (int k = 0; k < 16; ++k) {
    const std::vector<uint8_t> truncated(bytes.begin(), bytes.begin() + bytes.size() * k / 16);
    EXPECT_EQ(Load(truncated), AGATE_CORRUPT) << "truncated to " << k << "/16: " << Message();
    EXPECT_FALSE(Message().empty());
  }
  EXPECT_EQ(Load(std::vector<uint8_t>(bytes.begin(), bytes.begin() + 4)), AGATE_CORRUPT);
  EXPECT_NE(Message().find("too short"), std::string::npos) << Message();
}

TEST(CorruptModuleTest, RandomBitFlipsAreRefusedOrHarmless) {
  const std::vector<uint8_t> bytes = HostMlp();
  std::mt19937 rng(1234);
  int refused = 0;
  int ran = 0;
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<uint8_t> flipped = bytes;
    const size_t bit = std::uniform_int_distribution<size_t>(0, bytes.size() * 8 - 1)(rng);
    flipped[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    agate_module_t* module = nullptr;
    const agate_status_t status = agate_module_load_from_memory(flipped.data(), flipped.size(), nullptr, &module);
    if (status != AGATE_OK) {
      ++refused;
      EXPECT_FALSE(Message().empty()) << "bit " << bit;
      continue;
    }
    // Accepted: the flip hit data that does not change the structure (a constant,
    // a name, padding). Running must still be safe.
    size_t executor_bytes = 0;
    if (agate_executor_in_place_bytes(module, &executor_bytes) == AGATE_OK && executor_bytes < (1u << 20)) {
      agate_executor_t* executor = nullptr;
      if (agate_executor_create(module, nullptr, &executor) == AGATE_OK) {
        std::vector<float> x = testing::MlpInput(0);
        int64_t shape[2];
        DLTensor t = testing::MatrixTensor(x.data(), shape);
        if (agate_executor_set_input(executor, 0, &t) == AGATE_OK && agate_executor_run(executor) == AGATE_OK) ++ran;
        agate_executor_free(executor);
      }
    }
    agate_module_free(module);
  }
  EXPECT_GT(refused, 100);  // most flips hit structure, checksums or version fields
  RecordProperty("refused", refused);
  RecordProperty("ran", ran);
}

TEST(CorruptModuleTest, AWrongIdentifierIsNotAnAgateModule) {
  std::vector<uint8_t> bytes = HostMlp();
  std::memcpy(bytes.data() + 4, "ONNX", 4);
  EXPECT_EQ(Load(bytes), AGATE_CORRUPT);
  EXPECT_NE(Message().find("not an agate module: file identifier 'ONNX', expected 'AGTM'"), std::string::npos)
      << Message();
  bytes[4] = 0;
  EXPECT_EQ(Load(bytes), AGATE_CORRUPT);
  EXPECT_NE(Message().find("0x004e4e58"), std::string::npos) << Message();
}

TEST(CorruptModuleTest, AFutureMajorVersionIsAVersionMismatch) {
  std::vector<uint8_t> bytes = HostMlp();
  PatchModuleField(bytes, fb::Module::VT_FORMAT_MAJOR, 4);
  PatchModuleField(bytes, fb::Module::VT_FORMAT_MINOR, 3);
  EXPECT_EQ(Load(bytes), AGATE_VERSION_MISMATCH);
  EXPECT_NE(Message().find("module format 4.3 is newer than this runtime (reads format major 1..3)"),
            std::string::npos)
      << Message();
  PatchModuleField(bytes, fb::Module::VT_FORMAT_MAJOR, 0);
  EXPECT_EQ(Load(bytes), AGATE_VERSION_MISMATCH);
  EXPECT_NE(Message().find("older than this runtime reads"), std::string::npos) << Message();
}

TEST(CorruptModuleTest, AFutureMinorVersionIsAccepted) {
  std::vector<uint8_t> bytes = HostMlp();
  PatchModuleField(bytes, fb::Module::VT_FORMAT_MINOR, 7);
  EXPECT_EQ(Load(bytes), AGATE_OK) << Message();
}

TEST(CorruptModuleTest, AFutureKernelAbiIsAVersionMismatch) {
  std::vector<uint8_t> bytes = HostMlp();
  PatchModuleField(bytes, fb::Module::VT_KERNEL_ABI_VERSION, AGATE_KERNEL_ABI_VERSION + 1);
  EXPECT_EQ(Load(bytes), AGATE_VERSION_MISMATCH);
  EXPECT_NE(Message().find("kernel ABI 2"), std::string::npos) << Message();
}

TEST(CorruptModuleTest, AnOffsetOutsideTheArenaIsOutOfRange) {
  serialize::ModuleSpec spec = testing::MlpSpec(TargetKind::kHostCpu);
  spec.plan[1].args[2] = serialize::ArgSpec::Arena(spec.arena_bytes - 512, AGATE_TEST_VEC_BYTES);
  EXPECT_EQ(Load(serialize::SerializeModuleUnverifiedForTesting(spec)), AGATE_OUT_OF_RANGE);
  EXPECT_NE(Message().find("call 1 argument 2 covers arena bytes [1536, +1024) outside the arena of 2048 bytes"),
            std::string::npos)
      << Message();
  spec.plan[1].args[2] = serialize::ArgSpec::Arena(~uint64_t{0} - 8, AGATE_TEST_VEC_BYTES);  // would wrap around
  EXPECT_EQ(Load(serialize::SerializeModuleUnverifiedForTesting(spec)), AGATE_OUT_OF_RANGE);
}

TEST(CorruptModuleTest, AnArgumentSmallerThanTheKernelUsesIsRefused) {
  serialize::ModuleSpec spec = testing::MlpSpec(TargetKind::kHostCpu);
  spec.plan[2].args[0] = serialize::ArgSpec::Arena(0, 16);
  EXPECT_EQ(Load(serialize::SerializeModuleUnverifiedForTesting(spec)), AGATE_CORRUPT);
  EXPECT_NE(Message().find("call 2 argument 0 has 16 bytes but kernel 'agate_test_relu' parameter 0 uses 1024"),
            std::string::npos)
      << Message();
}

TEST(CorruptModuleTest, AMissingKernelIsNotFound) {
  serialize::ModuleSpec spec = testing::MlpSpec(TargetKind::kHostCpu);
  spec.kernels[1].name = "agate_test_softmax";
  EXPECT_EQ(Load(serialize::SerializeModule(spec)), AGATE_NOT_FOUND);
  EXPECT_NE(Message().find("kernel 1 'agate_test_softmax' is not in the module's host object"), std::string::npos)
      << Message();
}

TEST(CorruptModuleTest, AModifiedHostObjectFailsItsChecksum) {
  std::vector<uint8_t> bytes = HostMlp();
  const fb::Module* m = fb::GetModule(bytes.data());
  const size_t offset = static_cast<size_t>(m->host_object()->data()->data() - bytes.data());
  bytes[offset + m->host_object()->data()->size() / 2] ^= 0x10;
  EXPECT_EQ(Load(bytes), AGATE_CORRUPT);
  EXPECT_NE(Message().find("host object does not match its checksum"), std::string::npos) << Message();
}

TEST(CorruptModuleTest, AHostObjectForAnotherMachineIsAVersionMismatch) {
  serialize::ModuleSpec spec = testing::MlpSpec(TargetKind::kHostCpu);
  const uint16_t aarch64 = 183, x86_64 = 62;
  const uint16_t other = sizeof(void*) == 8 && spec.host_object[18] == x86_64 ? aarch64 : x86_64;
  std::memcpy(&spec.host_object[18], &other, 2);  // e_machine
  EXPECT_EQ(Load(serialize::SerializeModule(spec)), AGATE_VERSION_MISMATCH);
  const std::string expected = other == aarch64 ? "module built for aarch64, this runtime runs on x86-64"
                                                : "module built for x86-64, this runtime runs on aarch64";
  EXPECT_NE(Message().find(expected), std::string::npos) << Message();
  const uint16_t unnamed = 0x1234;
  std::memcpy(&spec.host_object[18], &unnamed, 2);
  EXPECT_EQ(Load(serialize::SerializeModule(spec)), AGATE_VERSION_MISMATCH);
  EXPECT_NE(Message().find("module built for ELF machine 4660 (class 2)"), std::string::npos) << Message();
  spec.host_object.assign(64, 'x');
  EXPECT_EQ(Load(serialize::SerializeModule(spec)), AGATE_CORRUPT);
  EXPECT_NE(Message().find("not an ELF file"), std::string::npos) << Message();
}

TEST(CorruptModuleTest, ACudaModuleWithoutTheCudaProfileIsUnavailable) {
  serialize::ModuleSpec spec = testing::MlpSpec(TargetKind::kCuda);
  spec.target = "cuda -arch=sm_90";
  for (serialize::KernelSpec& k : spec.kernels) {
    k.has_cuda = true;
    k.cuda.image = {'/', '/', ' ', 'p', 't', 'x'};
  }
  EXPECT_EQ(Load(serialize::SerializeModule(spec)), AGATE_UNAVAILABLE);
  EXPECT_NE(Message().find("built without the cuda profile"), std::string::npos) << Message();
}

TEST(CorruptModuleTest, MissingAndEmptyFilesAreRefused) {
  agate_module_t* module = nullptr;
  EXPECT_EQ(agate_module_load_from_file("/nonexistent/m.agm", nullptr, &module), AGATE_NOT_FOUND);
  EXPECT_NE(Message().find("cannot open module '/nonexistent/m.agm'"), std::string::npos) << Message();
  const std::string empty = std::string(std::getenv("TEST_TMPDIR")) + "/empty.agm";
  WriteFileAtomically(empty, {});
  EXPECT_EQ(agate_module_load_from_file(empty.c_str(), nullptr, &module), AGATE_CORRUPT);
  EXPECT_NE(Message().find("is empty"), std::string::npos) << Message();
  const std::string truncated = std::string(std::getenv("TEST_TMPDIR")) + "/truncated.agm";
  std::vector<uint8_t> bytes = HostMlp();
  bytes.resize(bytes.size() / 2);
  WriteFileAtomically(truncated, bytes);
  EXPECT_EQ(agate_module_load_from_file(truncated.c_str(), nullptr, &module), AGATE_CORRUPT);
  EXPECT_EQ(module, nullptr);
}

}  // namespace
}  // namespace agate
