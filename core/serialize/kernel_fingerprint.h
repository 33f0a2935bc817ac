// The kernel fingerprint: which kernels a module's plan was compiled against.
//
// Why: a microcontroller module names its kernels, and the firmware links them
// and hands the runtime a table of name -> function. Two models (or two compiles
// of one model with other schedules) may have kernels of the same names and
// argument sizes that compute different things; a module loaded with the wrong
// ones verifies and runs, giving silently wrong results. The compiler records one
// 64-bit value in the module (Module.kernel_fingerprint, format 1.2) and writes
// the same value into the kernel table it generates; the runtime compares them
// (agate_module_load_in_place_fingerprinted) and refuses a mismatch, naming both.
//
// What it covers: FNV-1a 64 over the kernel symbol prefix, then for every kernel
// its name, its argument count and sizes and its workspace bytes, then the
// kernels' code (the generated C source, the ELF object, or the host object).
// Never 0, which the format reserves for "not recorded".
#ifndef AGATE_CORE_SERIALIZE_KERNEL_FINGERPRINT_H_
#define AGATE_CORE_SERIALIZE_KERNEL_FINGERPRINT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/serialize/module_spec.h"

namespace agate {
namespace serialize {

uint64_t KernelFingerprint(const std::string& prefix, const std::vector<KernelSpec>& kernels, const std::string& code);

// "0x" + 16 lowercase hex digits, as the runtime's messages and generated tables write it.
std::string FingerprintHex(uint64_t fingerprint);

}  // namespace serialize
}  // namespace agate

#endif  // AGATE_CORE_SERIALIZE_KERNEL_FINGERPRINT_H_
