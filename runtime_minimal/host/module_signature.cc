#include "runtime_minimal/host/module_signature.h"

#include <string.h>

// Builds without libsodium (the Android NDK has none; bindings/android/Makefile):
// signed loading is refused, saying why; unsigned modules load as always.
#if !defined(AGATE_RT_NO_SIGNATURES)
#include <sodium.h>
#endif

#include "runtime_minimal/core/message.h"

namespace agate {
namespace rt {

bool HasSignatureTrailer(const uint8_t* data, size_t size) {
  return data != nullptr && size >= kSignatureTrailerBytes &&
         memcmp(data + size - sizeof(kSignatureMagic), kSignatureMagic, sizeof(kSignatureMagic)) == 0;
}

agate_status_t CheckModuleSignature(const uint8_t* data, size_t size, const uint8_t* public_key,
                                    size_t* out_module_size) {
  const bool has_trailer = HasSignatureTrailer(data, size);
  const size_t module_size = has_trailer ? size - kSignatureTrailerBytes : size;
  if (public_key != nullptr) {
    if (!has_trailer) {
      return Fail(AGATE_INVALID_ARGUMENT) << "module is not signed, and a public key was given: unsigned modules are "
                                             "refused (sign it with agate compile --sign-key)";
    }
#if defined(AGATE_RT_NO_SIGNATURES)
    return Fail(AGATE_UNAVAILABLE) << "this runtime was built without libsodium (AGATE_RT_NO_SIGNATURES): it cannot "
                                      "check module signatures";
#else
    if (sodium_init() < 0) return Fail(AGATE_UNAVAILABLE) << "libsodium cannot be initialized";
    const uint8_t* signature = data + module_size;
    if (crypto_sign_verify_detached(signature, data, module_size, public_key) != 0) {
      return Fail(AGATE_CORRUPT) << "module signature does not verify with the given public key: the module was "
                                    "changed after signing, or signed with another key";
    }
#endif
  }
  *out_module_size = module_size;
  return AGATE_OK;
}

}  // namespace rt
}  // namespace agate
