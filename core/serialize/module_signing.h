// Signing modules and their Ed25519 keys, for `agate compile --sign-key` and `agate keygen`.
//
// Why: a host module is code (agate/runtime.h says why); a loader given a public key runs only
// modules signed with the matching secret key. The trailer format, and the check the runtime
// makes, are in runtime_minimal/host/module_signature.h: this file only produces them.
//
// Key files are raw bytes in libsodium's crypto_sign format: a secret key file holds 64 bytes
// (seed and public key), a public key file 32 bytes. The equivalent with libsodium itself:
// crypto_sign_keypair(pk, sk), then write sk and pk as they are.
#ifndef AGATE_CORE_SERIALIZE_MODULE_SIGNING_H_
#define AGATE_CORE_SERIALIZE_MODULE_SIGNING_H_

#include <cstdint>
#include <string>
#include <vector>

namespace agate {
namespace serialize {

struct SigningKeyPair {
  std::vector<uint8_t> public_key;  // 32 bytes
  std::vector<uint8_t> secret_key;  // 64 bytes
};

// A fresh key pair from libsodium's random source.
SigningKeyPair GenerateSigningKeyPair();

// The key in a file: kInvalidArgument naming the file when it is not exactly 64 (secret) or
// 32 (public) bytes; kNotFound / kIo from reading.
std::vector<uint8_t> ReadSecretKeyFile(const std::string& path);
std::vector<uint8_t> ReadPublicKeyFile(const std::string& path);

// `module` followed by the signature trailer (Ed25519 over all of `module`). kInvalidArgument
// when `module` is already signed or the key is not 64 bytes.
std::vector<uint8_t> SignModule(const std::vector<uint8_t>& module, const std::vector<uint8_t>& secret_key);

}  // namespace serialize
}  // namespace agate

#endif  // AGATE_CORE_SERIALIZE_MODULE_SIGNING_H_
