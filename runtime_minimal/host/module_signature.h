// Optional Ed25519 signatures of module files, checked by the host loader.
//
// Why: a host module is code. Its embedded shared object is dlopen'ed when the module is
// loaded, which runs the object's constructors before any kernel is called, so loading a
// module from an untrusted place is running a program from there. The FNV-1a checksums in the
// format catch accidental corruption (integrity) but anyone can recompute them; a signature
// tells who built the module (authenticity). A loader given a public key refuses unsigned
// modules and modules whose signature does not verify.
//
// The format: a signed module file is the module's bytes followed by a 72-byte trailer,
//
//   [ module bytes M: exactly the FlatBuffer agate compile writes                    ]
//   [ 64 bytes: Ed25519 signature of M (libsodium crypto_sign_detached)              ]
//   [ 8 bytes: "AGSIG001"                                                            ]
//
// The signed bytes are M, all of it and nothing else, and M is exactly what the loader parses
// afterwards: no field of the module is excluded from the signature, so moving or rewriting
// fields inside M cannot keep a signature valid. A loader without a key strips the trailer and
// loads M as if it were unsigned (a signature never makes a module load differently).
// Microcontroller modules (core profile, agate_module_load_in_place) carry no code, their
// kernels are linked into the firmware: the core profile does not verify signatures.
#ifndef AGATE_RUNTIME_MINIMAL_HOST_MODULE_SIGNATURE_H_
#define AGATE_RUNTIME_MINIMAL_HOST_MODULE_SIGNATURE_H_

#include <stddef.h>
#include <stdint.h>

#include "agate/status.h"

namespace agate {
namespace rt {

constexpr size_t kSignatureBytes = 64;
constexpr size_t kPublicKeyBytes = 32;
constexpr char kSignatureMagic[8] = {'A', 'G', 'S', 'I', 'G', '0', '0', '1'};
constexpr size_t kSignatureTrailerBytes = kSignatureBytes + sizeof(kSignatureMagic);

// True when `data` ends with a signature trailer (its module part is size - kSignatureTrailerBytes).
bool HasSignatureTrailer(const uint8_t* data, size_t size);

// The module part of `data`. With `public_key` (32 bytes, or NULL for none): the file must carry
// a trailer whose signature verifies over the module part, else AGATE_INVALID_ARGUMENT (unsigned)
// or AGATE_CORRUPT (tampered, or signed with another key), with a message. Without a key, a
// trailer is stripped unverified. *out_module_size is written only on AGATE_OK.
agate_status_t CheckModuleSignature(const uint8_t* data, size_t size, const uint8_t* public_key,
                                    size_t* out_module_size);

}  // namespace rt
}  // namespace agate

#endif  // AGATE_RUNTIME_MINIMAL_HOST_MODULE_SIGNATURE_H_
