#include "core/serialize/content_hash.h"

#include <cstdio>
#include <cstring>

#include "core/serialize/module_metadata.h"
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
  const fb::Metadata* metadata = ReadModuleMetadata(module);
  AGATE_REQUIRE(metadata != nullptr && metadata->content_hash() != nullptr &&
                    metadata->content_hash()->size() == kPrefixLength + kDigits,
                kCorrupt)
      << "module has no content hash";
  return static_cast<size_t>(reinterpret_cast<const uint8_t*>(metadata->content_hash()->c_str()) - module.data()) +
         kPrefixLength;
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
  try {
    const fb::Metadata* metadata = ReadModuleMetadata(module);
    if (metadata == nullptr || metadata->content_hash() == nullptr) return "";
    return metadata->content_hash()->str();
  } catch (const Error&) {
    return "";
  }
}

}  // namespace serialize
}  // namespace agate
