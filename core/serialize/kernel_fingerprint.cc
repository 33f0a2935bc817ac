#include "core/serialize/kernel_fingerprint.h"

#include <cstdio>

#include "runtime_minimal/core/verify.h"

namespace agate {
namespace serialize {
namespace {

// Little-endian, so the fingerprint is the same on every host the compiler runs on.
void AppendU64(std::string* bytes, uint64_t value) {
  for (int i = 0; i < 8; ++i) bytes->push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

// Length-prefixed, so ("ab", "c") and ("a", "bc") differ.
void AppendString(std::string* bytes, const std::string& text) {
  AppendU64(bytes, text.size());
  bytes->append(text);
}

}  // namespace

uint64_t KernelFingerprint(const std::string& prefix, const std::vector<KernelSpec>& kernels, const std::string& code) {
  std::string bytes = "agate-kernel-fingerprint-1";
  AppendString(&bytes, prefix);
  AppendU64(&bytes, kernels.size());
  for (const KernelSpec& k : kernels) {
    AppendString(&bytes, k.name);
    AppendU64(&bytes, k.param_bytes.size());
    for (uint64_t b : k.param_bytes) AppendU64(&bytes, b);
    AppendU64(&bytes, k.workspace_bytes);
  }
  AppendString(&bytes, code);
  uint64_t hash = rt::Fnv1a64(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  return hash == 0 ? 1 : hash;
}

std::string FingerprintHex(uint64_t fingerprint) {
  char text[19];
  std::snprintf(text, sizeof(text), "0x%016llx", static_cast<unsigned long long>(fingerprint));
  return text;
}

}  // namespace serialize
}  // namespace agate
