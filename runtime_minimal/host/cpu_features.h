// The CPU features a host module's kernels need, checked against this CPU when it loads.
//
// Why: a module compiled for the build machine (`llvm`, `-mcpu=native`) may use AVX-512 or
// dotprod; on a CPU without them its first kernel dies on an illegal instruction (SIGILL), in
// the user's process, long after the load said yes. The compiler records the features
// (Module.cpu_features, LLVM names); the loader asks the CPU (cpuid and xgetbv on x86-64, so a
// feature the OS does not save the registers of counts as absent; getauxval(AT_HWCAP/AT_HWCAP2)
// on AArch64) and refuses the module naming every missing feature. A name this runtime cannot
// detect (another architecture's, or one newer than this table) is not checked: the ELF machine
// check (host_object.h) already refuses another architecture.
//
// No heap, no locks: the CPU is asked once per call (a few cpuid instructions).
#ifndef AGATE_RUNTIME_MINIMAL_HOST_CPU_FEATURES_H_
#define AGATE_RUNTIME_MINIMAL_HOST_CPU_FEATURES_H_

#include "agate/status.h"
#include "runtime_minimal/schema/module_generated.h"

namespace agate {
namespace rt {

enum class CpuFeature { kPresent, kAbsent, kUnknown /* this runtime cannot detect it here */ };

// Whether this CPU has the feature `name` (an LLVM feature name, e.g. "avx2", "neon").
CpuFeature HostCpuFeature(const char* name);

// AGATE_OK when the CPU has every detectable feature in module.cpu_features(); otherwise
// AGATE_UNSUPPORTED, with a message naming the missing features and the module's target.
agate_status_t CheckCpuFeatures(const fb::Module& module);

// Testing only (not exported from libagate_runtime.so): makes HostCpuFeature report the
// comma-separated features in `names` as absent ("avx512f,avx512bw"); nullptr or "" ends the
// pretence. Not thread-safe: call it while no module loads.
void PretendCpuLacksForTesting(const char* names);

}  // namespace rt
}  // namespace agate

#endif  // AGATE_RUNTIME_MINIMAL_HOST_CPU_FEATURES_H_
