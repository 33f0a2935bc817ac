#include "core/serialize/module_metadata.h"

#include "core/support/error.h"

namespace agate {
namespace serialize {

const fb::Metadata* ReadModuleMetadata(const std::vector<uint8_t>& module) {
  flatbuffers::Verifier verifier(module.data(), module.size());
  AGATE_REQUIRE(fb::VerifyModuleBuffer(verifier), kCorrupt) << "not a valid agate module (" << module.size() << " bytes)";
  const fb::Module* m = fb::GetModule(module.data());
  if (m->metadata() == nullptr || m->metadata()->size() == 0) return nullptr;
  flatbuffers::Verifier nested(m->metadata()->data(), m->metadata()->size());
  AGATE_REQUIRE(nested.VerifyBuffer<fb::Metadata>(nullptr), kCorrupt)
      << "module metadata (" << m->metadata()->size() << " bytes) is corrupt";
  return flatbuffers::GetRoot<fb::Metadata>(m->metadata()->data());
}

}  // namespace serialize
}  // namespace agate
