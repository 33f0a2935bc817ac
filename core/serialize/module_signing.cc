#include "core/serialize/module_signing.h"

#include <sodium.h>

#include <algorithm>
#include <iterator>

#include "core/support/error.h"
#include "core/support/file.h"
#include "runtime_minimal/host/module_signature.h"

namespace agate {
namespace serialize {
namespace {

static_assert(crypto_sign_BYTES == rt::kSignatureBytes, "the trailer holds one Ed25519 signature");
static_assert(crypto_sign_PUBLICKEYBYTES == rt::kPublicKeyBytes, "Ed25519 public keys are 32 bytes");

void InitSodium() {
  AGATE_REQUIRE(sodium_init() >= 0, kUnavailable) << "libsodium cannot be initialized";
}

std::vector<uint8_t> ReadKeyFile(const std::string& path, size_t bytes, const char* what) {
  std::vector<uint8_t> key = ReadFile(path);
  AGATE_REQUIRE(key.size() == bytes, kInvalidArgument)
      << "'" << path << "' is not an Ed25519 " << what << " key file: it holds " << key.size() << " bytes, a "
      << what << " key file holds " << bytes << " (agate keygen writes them)";
  return key;
}

}  // namespace

SigningKeyPair GenerateSigningKeyPair() {
  InitSodium();
  SigningKeyPair pair;
  pair.public_key.resize(crypto_sign_PUBLICKEYBYTES);
  pair.secret_key.resize(crypto_sign_SECRETKEYBYTES);
  crypto_sign_keypair(pair.public_key.data(), pair.secret_key.data());
  return pair;
}

std::vector<uint8_t> ReadSecretKeyFile(const std::string& path) {
  return ReadKeyFile(path, crypto_sign_SECRETKEYBYTES, "secret");
}

std::vector<uint8_t> ReadPublicKeyFile(const std::string& path) {
  return ReadKeyFile(path, crypto_sign_PUBLICKEYBYTES, "public");
}

std::vector<uint8_t> SignModule(const std::vector<uint8_t>& module, const std::vector<uint8_t>& secret_key) {
  AGATE_REQUIRE(secret_key.size() == crypto_sign_SECRETKEYBYTES, kInvalidArgument)
      << "an Ed25519 secret key has " << crypto_sign_SECRETKEYBYTES << " bytes, got " << secret_key.size();
  AGATE_REQUIRE(!rt::HasSignatureTrailer(module.data(), module.size()), kInvalidArgument)
      << "the module is already signed";
  InitSodium();
  std::vector<uint8_t> signed_module = module;
  signed_module.resize(module.size() + rt::kSignatureTrailerBytes);
  crypto_sign_detached(signed_module.data() + module.size(), nullptr, module.data(), module.size(),
                       secret_key.data());
  std::copy(std::begin(rt::kSignatureMagic), std::end(rt::kSignatureMagic),
            signed_module.begin() + static_cast<std::ptrdiff_t>(module.size() + rt::kSignatureBytes));
  return signed_module;
}

}  // namespace serialize
}  // namespace agate
