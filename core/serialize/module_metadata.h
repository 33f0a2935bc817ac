// Reading a module's metadata (compiler version, creation options, content hash).
//
// Why a separate reader: the metadata is a FlatBuffer nested inside the module
// (runtime_minimal/schema/module.fbs) that only tools read, so the runtime never
// verifies it or pays flash for its verifier. Tools verify it here before use.
#ifndef AGATE_CORE_SERIALIZE_MODULE_METADATA_H_
#define AGATE_CORE_SERIALIZE_MODULE_METADATA_H_

#include <cstdint>
#include <vector>

#include "runtime_minimal/schema/module_generated.h"

namespace agate {
namespace serialize {

// The verified metadata of `module` (a view into it), or NULL when the module has
// none. Throws agate::Error(kCorrupt) when the module or its metadata is invalid.
const fb::Metadata* ReadModuleMetadata(const std::vector<uint8_t>& module);

}  // namespace serialize
}  // namespace agate

#endif  // AGATE_CORE_SERIALIZE_MODULE_METADATA_H_
