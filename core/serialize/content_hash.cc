#include "core/serialize/content_hash.h"

#include <cstdio>
#include <cstring>

#include "core/support/error.h"
#include "runtime_minimal/core/verify.h"
#include "runtime_minimal/schema/module_generated.h"

namespace agate {
namespace serialize {
namespace {

constexpr size_t kPrefixLength = 8;  // "fnv1a64:"
constexpr size_t kDigits = 16;

// The byte offset of the hash digits inside `module`.
size_t DigitsOffset(const std::vector<uint8_t>& module) {
  flatbuffers::Verifier verifier(module.data(), module.size());
  AGATE_REQUIRE(fb::VerifyModuleBuffer(verifier), kCorrupt) << "not a valid agate module (" << module.size() << " bytes)";
  const fb::Module* m = fb::GetModule(module.data());
  AGATE_REQUIRE(m->metadata() != nullptr && m->metadata()->content_hash() != nullptr &&
                    m->metadata()->content_hash()->size() == kPrefixLength + kDigits,
                kCorrupt)
      << "module has no content hash";
  return static_cast<size_t>(reinterpret_cast<const uint8_t*>(m->metadata()->content_hash()->c_str()) -
                             module.data()) + kPrefixLength;
}

}  // namespace

std::string ComputeContentHash(const std::vector<uint8_t>& module) {
  std::vector<uint8_t> copy = module;
  std::memset(copy.data() + DigitsOffset(module), '0', kDigits);
  char text[kPrefixLength + kDigits + 1];
  std::snprintf(text, sizeof(text), "fnv1a64:%016llx",
                static_cast<unsigned long long>(rt::Fnv1a64(copy.data(), copy.size())));
  return text;
}

std::string StoredContentHash(const std::vector<uint8_t>& module) {
  flatbuffers::Verifier verifier(module.data(), module.size());
  if (!fb::VerifyModuleBuffer(verifier)) return "";
  const fb::Module* m = fb::GetModule(module.data());
  if (m->metadata() == nullptr || m->metadata()->content_hash() == nullptr) return "";
  return m->metadata()->content_hash()->str();
}

}  // namespace serialize
}  // namespace agate
