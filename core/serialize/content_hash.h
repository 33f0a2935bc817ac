// The module content hash: an identifier of a module's bytes for caches and logs.
//
// Why this shape: the hash is stored inside the module it hashes. SerializeModule
// writes a placeholder of 16 '0' digits into Metadata.content_hash, hashes the
// whole buffer, and overwrites the placeholder with the digits, so anyone can
// recompute it from the file alone (ComputeContentHash zeroes the digits first).
// FNV-1a 64: fast and dependency-free; it detects changes, it does not resist forgery.
#ifndef AGATE_CORE_SERIALIZE_CONTENT_HASH_H_
#define AGATE_CORE_SERIALIZE_CONTENT_HASH_H_

#include <cstdint>
#include <string>
#include <vector>

namespace agate {
namespace serialize {

// "fnv1a64:" + 16 hex digits of `module` with its own hash digits read as zeros.
// Throws agate::Error(kCorrupt) when `module` is not a verifiable module with a hash.
std::string ComputeContentHash(const std::vector<uint8_t>& module);

// The hash string stored in `module` (empty when it has none).
std::string StoredContentHash(const std::vector<uint8_t>& module);

}  // namespace serialize
}  // namespace agate

#endif  // AGATE_CORE_SERIALIZE_CONTENT_HASH_H_
