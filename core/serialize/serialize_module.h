// SerializeModule: a ModuleSpec to the bytes of an agate module.
//
// Why here and not in the compiler's back ends: one place owns the format, so
// every back end (LLVM host, CUDA, micro) writes modules the runtime accepts.
// The result is checked with the runtime's own verifier before it is returned,
// so the compiler can never write a module the runtime would refuse.
#ifndef AGATE_CORE_SERIALIZE_SERIALIZE_MODULE_H_
#define AGATE_CORE_SERIALIZE_SERIALIZE_MODULE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/serialize/module_spec.h"

namespace agate {
namespace serialize {

// Serializes `spec`. Throws agate::Error naming the tensor, kernel, call or
// argument at fault when the spec does not pass the runtime's verifier
// (kInvalidArgument; kOutOfRange for offsets outside the arena).
std::vector<uint8_t> SerializeModule(const ModuleSpec& spec);

// Serializes without verifying: only for tests that need refused modules.
std::vector<uint8_t> SerializeModuleUnverifiedForTesting(const ModuleSpec& spec);

}  // namespace serialize
}  // namespace agate

#endif  // AGATE_CORE_SERIALIZE_SERIALIZE_MODULE_H_
