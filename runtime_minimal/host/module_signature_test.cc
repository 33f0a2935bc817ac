// Signed modules through the [host] loaders: a module signed with the key's pair loads, and
// unsigned, tampered and wrong-key modules are refused before any of their code is loaded.
#include "runtime_minimal/host/module_signature.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "agate/runtime.h"
#include "core/serialize/module_signing.h"
#include "core/serialize/serialize_module.h"
#include "core/support/error.h"
#include "core/support/file.h"
#include "runtime_minimal/testing/test_kernels.h"
#include "runtime_minimal/testing/test_modules.h"

namespace agate {
namespace {

using serialize::TargetKind;

std::string Message() { return agate_last_error_message(); }

class ModuleSignatureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    module_ = serialize::SerializeModule(testing::MlpSpec(TargetKind::kHostCpu));
    keys_ = serialize::GenerateSigningKeyPair();
    signed_ = serialize::SignModule(module_, keys_.secret_key);
  }
  // Loads from memory with the key (or without one when `key` is null); frees on success.
  agate_status_t LoadFromMemory(const std::vector<uint8_t>& bytes, const uint8_t* key) {
    agate_module_t* module = nullptr;
    agate_status_t status =
        key ? agate_module_load_from_memory_signed(bytes.data(), bytes.size(), nullptr, nullptr, key, &module)
            : agate_module_load_from_memory(bytes.data(), bytes.size(), nullptr, &module);
    if (status == AGATE_OK) {
      EXPECT_NE(module, nullptr);
      agate_module_free(module);
    } else {
      EXPECT_EQ(module, nullptr);
    }
    return status;
  }
  agate_status_t LoadFromFile(const std::vector<uint8_t>& bytes, const uint8_t* key) {
    const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/module.agm";
    WriteFileAtomically(path, bytes);
    agate_module_t* module = nullptr;
    agate_status_t status = agate_module_load_from_file_signed(path.c_str(), nullptr, nullptr, key, &module);
    if (status == AGATE_OK) agate_module_free(module);
    return status;
  }
  std::vector<uint8_t> module_, signed_;
  serialize::SigningKeyPair keys_;
};

TEST_F(ModuleSignatureTest, TheSignatureIsATrailerOverTheWholeModule) {
  ASSERT_EQ(signed_.size(), module_.size() + rt::kSignatureTrailerBytes);
  EXPECT_TRUE(std::equal(module_.begin(), module_.end(), signed_.begin()));
  EXPECT_TRUE(rt::HasSignatureTrailer(signed_.data(), signed_.size()));
  EXPECT_FALSE(rt::HasSignatureTrailer(module_.data(), module_.size()));
  EXPECT_THROW(serialize::SignModule(signed_, keys_.secret_key), Error);  // signed once only
}

TEST_F(ModuleSignatureTest, SignedModuleLoadsWithItsKey) {
  EXPECT_EQ(LoadFromMemory(signed_, keys_.public_key.data()), AGATE_OK) << Message();
  EXPECT_EQ(LoadFromFile(signed_, keys_.public_key.data()), AGATE_OK) << Message();
  // And runs like the unsigned module.
  agate_module_t* module = nullptr;
  ASSERT_EQ(agate_module_load_from_memory_signed(signed_.data(), signed_.size(), nullptr, nullptr,
                                                 keys_.public_key.data(), &module),
            AGATE_OK)
      << Message();
  agate_executor_t* executor = nullptr;
  ASSERT_EQ(agate_executor_create(module, nullptr, &executor), AGATE_OK) << Message();
  std::vector<float> x = testing::MlpInput(3), y(AGATE_TEST_VEC);
  int64_t shape[2], out_shape[2];
  DLTensor in = testing::MatrixTensor(x.data(), shape), out = testing::MatrixTensor(y.data(), out_shape);
  ASSERT_EQ(agate_executor_set_input(executor, 0, &in), AGATE_OK) << Message();
  ASSERT_EQ(agate_executor_run(executor), AGATE_OK) << Message();
  ASSERT_EQ(agate_executor_copy_output(executor, 0, &out), AGATE_OK) << Message();
  EXPECT_EQ(y, testing::MlpReference(x));
  agate_executor_free(executor);
  agate_module_free(module);
}

TEST_F(ModuleSignatureTest, UnsignedModuleIsRefusedWhenAKeyIsGiven) {
  EXPECT_EQ(LoadFromMemory(module_, keys_.public_key.data()), AGATE_INVALID_ARGUMENT);
  EXPECT_NE(Message().find("not signed"), std::string::npos) << Message();
  EXPECT_EQ(LoadFromFile(module_, keys_.public_key.data()), AGATE_INVALID_ARGUMENT);
}

TEST_F(ModuleSignatureTest, TamperedModuleIsRefused) {
  // A flipped bit anywhere in the module part, the signature, or bytes appended before the
  // trailer: none verifies.
  for (size_t at : {size_t{0}, module_.size() / 3, module_.size() / 2, module_.size() - 1, module_.size() + 5}) {
    std::vector<uint8_t> tampered = signed_;
    tampered[at] ^= 0x01;
    EXPECT_EQ(LoadFromMemory(tampered, keys_.public_key.data()), AGATE_CORRUPT) << "byte " << at;
    EXPECT_NE(Message().find("does not verify"), std::string::npos) << Message();
  }
  std::vector<uint8_t> extended = signed_;
  extended.insert(extended.begin() + static_cast<std::ptrdiff_t>(module_.size()), 0);
  EXPECT_EQ(LoadFromMemory(extended, keys_.public_key.data()), AGATE_CORRUPT);
  EXPECT_EQ(LoadFromFile(std::vector<uint8_t>(signed_.begin() + 1, signed_.end()), keys_.public_key.data()),
            AGATE_CORRUPT);
}

TEST_F(ModuleSignatureTest, WrongKeyIsRefused) {
  serialize::SigningKeyPair other = serialize::GenerateSigningKeyPair();
  EXPECT_EQ(LoadFromMemory(signed_, other.public_key.data()), AGATE_CORRUPT);
  EXPECT_EQ(LoadFromFile(signed_, other.public_key.data()), AGATE_CORRUPT);
  EXPECT_EQ(LoadFromMemory(serialize::SignModule(module_, other.secret_key), keys_.public_key.data()), AGATE_CORRUPT);
}

TEST_F(ModuleSignatureTest, LoadersWithoutAKeyAcceptSignedModules) {
  EXPECT_EQ(LoadFromMemory(signed_, nullptr), AGATE_OK) << Message();
  EXPECT_EQ(LoadFromMemory(module_, nullptr), AGATE_OK) << Message();
}

TEST_F(ModuleSignatureTest, NullKeyIsAnError) {
  agate_module_t* module = nullptr;
  EXPECT_EQ(agate_module_load_from_memory_signed(signed_.data(), signed_.size(), nullptr, nullptr, nullptr, &module),
            AGATE_INVALID_ARGUMENT);
  EXPECT_EQ(agate_module_load_from_file_signed("x.agm", nullptr, nullptr, nullptr, &module), AGATE_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace agate
