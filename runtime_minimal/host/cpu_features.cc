#include "runtime_minimal/host/cpu_features.h"

#include <string.h>

#if defined(__x86_64__)
#include <cpuid.h>
#elif defined(__aarch64__)
#include <sys/auxv.h>
#endif

#include "runtime_minimal/core/message.h"

namespace agate {
namespace rt {
namespace {

// The testing pretence: features reported absent, comma-separated ("" = none).
char g_pretend_absent[512] = "";

// True when `name` is one of the comma-separated words in `list`.
bool InList(const char* list, const char* name) {
  const size_t n = strlen(name);
  for (const char* p = list; *p != '\0';) {
    const char* end = strchr(p, ',');
    const size_t len = end != nullptr ? static_cast<size_t>(end - p) : strlen(p);
    if (len == n && strncmp(p, name, n) == 0) return true;
    if (end == nullptr) break;
    p = end + 1;
  }
  return false;
}

#if defined(__x86_64__)
// Registers of cpuid leaf/subleaf (zeros where the leaf does not exist).
struct CpuidRegs {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
};

CpuidRegs Cpuid(unsigned leaf, unsigned subleaf) {
  CpuidRegs r;
  if (__get_cpuid_max(leaf & 0x80000000u, nullptr) < leaf) return r;
  __cpuid_count(leaf, subleaf, r.eax, r.ebx, r.ecx, r.edx);
  return r;
}

// The register state the OS saves on a context switch (XCR0), or 0 without OSXSAVE.
unsigned long long Xcr0() {
  if ((Cpuid(1, 0).ecx & (1u << 27)) == 0) return 0;
  unsigned eax = 0, edx = 0;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<unsigned long long>(edx) << 32) | eax;
}

enum Reg { kEax, kEbx, kEcx, kEdx };
// What the OS must save for the feature to be usable: nothing, the AVX (YMM) state or AVX-512's.
enum State { kNone, kAvxState, kAvx512State };

struct FeatureBit {
  const char* name;  // LLVM's name
  unsigned leaf, subleaf;
  Reg reg;
  unsigned bit;
  State state;
};

constexpr FeatureBit kFeatures[] = {
    {"sse", 1, 0, kEdx, 25, kNone},          {"sse2", 1, 0, kEdx, 26, kNone},
    {"sse3", 1, 0, kEcx, 0, kNone},          {"pclmul", 1, 0, kEcx, 1, kNone},
    {"ssse3", 1, 0, kEcx, 9, kNone},         {"fma", 1, 0, kEcx, 12, kAvxState},
    {"cx16", 1, 0, kEcx, 13, kNone},         {"sse4.1", 1, 0, kEcx, 19, kNone},
    {"sse4.2", 1, 0, kEcx, 20, kNone},       {"movbe", 1, 0, kEcx, 22, kNone},
    {"popcnt", 1, 0, kEcx, 23, kNone},       {"aes", 1, 0, kEcx, 25, kNone},
    {"xsave", 1, 0, kEcx, 26, kNone},        {"avx", 1, 0, kEcx, 28, kAvxState},
    {"f16c", 1, 0, kEcx, 29, kAvxState},     {"rdrnd", 1, 0, kEcx, 30, kNone},
    {"bmi", 7, 0, kEbx, 3, kNone},           {"avx2", 7, 0, kEbx, 5, kAvxState},
    {"bmi2", 7, 0, kEbx, 8, kNone},          {"avx512f", 7, 0, kEbx, 16, kAvx512State},
    {"avx512dq", 7, 0, kEbx, 17, kAvx512State}, {"adx", 7, 0, kEbx, 19, kNone},
    {"avx512ifma", 7, 0, kEbx, 21, kAvx512State}, {"avx512cd", 7, 0, kEbx, 28, kAvx512State},
    {"sha", 7, 0, kEbx, 29, kNone},          {"avx512bw", 7, 0, kEbx, 30, kAvx512State},
    {"avx512vl", 7, 0, kEbx, 31, kAvx512State}, {"avx512vbmi", 7, 0, kEcx, 1, kAvx512State},
    {"avx512vbmi2", 7, 0, kEcx, 6, kAvx512State}, {"gfni", 7, 0, kEcx, 8, kNone},
    {"vaes", 7, 0, kEcx, 9, kAvxState},      {"vpclmulqdq", 7, 0, kEcx, 10, kAvxState},
    {"avx512vnni", 7, 0, kEcx, 11, kAvx512State}, {"avx512bitalg", 7, 0, kEcx, 12, kAvx512State},
    {"avx512vpopcntdq", 7, 0, kEcx, 14, kAvx512State}, {"avx512fp16", 7, 0, kEdx, 23, kAvx512State},
    {"avxvnni", 7, 1, kEax, 4, kAvxState},   {"avx512bf16", 7, 1, kEax, 5, kAvx512State},
    {"lzcnt", 0x80000001u, 0, kEcx, 5, kNone}, {"sse4a", 0x80000001u, 0, kEcx, 6, kNone},
    {"fma4", 0x80000001u, 0, kEcx, 16, kAvxState},
};

bool StateSaved(State state) {
  const unsigned long long xcr0 = state == kNone ? 0 : Xcr0();
  switch (state) {
    case kNone: return true;
    case kAvxState: return (xcr0 & 0x6) == 0x6;     // XMM and YMM
    case kAvx512State: return (xcr0 & 0xe6) == 0xe6;  // and opmask, ZMM0-15 upper halves, ZMM16-31
  }
  return false;
}

CpuFeature DetectFeature(const char* name) {
  for (const FeatureBit& f : kFeatures) {
    if (strcmp(f.name, name) != 0) continue;
    const CpuidRegs r = Cpuid(f.leaf, f.subleaf);
    const unsigned value = f.reg == kEax ? r.eax : f.reg == kEbx ? r.ebx : f.reg == kEcx ? r.ecx : r.edx;
    return (value >> f.bit & 1u) != 0 && StateSaved(f.state) ? CpuFeature::kPresent : CpuFeature::kAbsent;
  }
  return CpuFeature::kUnknown;
}

#elif defined(__aarch64__)
struct HwcapBit {
  const char* name;  // LLVM's name
  unsigned long type;  // AT_HWCAP or AT_HWCAP2
  unsigned bit;        // bit numbers from the kernel's arch/arm64 uapi hwcap.h
};

constexpr HwcapBit kFeatures[] = {
    {"fp-armv8", AT_HWCAP, 0}, {"neon", AT_HWCAP, 1},     {"aes", AT_HWCAP, 3},
    {"sha2", AT_HWCAP, 6},     {"crc", AT_HWCAP, 7},      {"lse", AT_HWCAP, 8},
    {"fullfp16", AT_HWCAP, 9}, {"rdm", AT_HWCAP, 12},     {"rcpc", AT_HWCAP, 15},
    {"dotprod", AT_HWCAP, 20}, {"sve", AT_HWCAP, 22},     {"sve2", AT_HWCAP2, 1},
    {"i8mm", AT_HWCAP2, 13},   {"bf16", AT_HWCAP2, 14},
};

CpuFeature DetectFeature(const char* name) {
  for (const HwcapBit& f : kFeatures) {
    if (strcmp(f.name, name) != 0) continue;
    return (getauxval(f.type) >> f.bit & 1ul) != 0 ? CpuFeature::kPresent : CpuFeature::kAbsent;
  }
  return CpuFeature::kUnknown;
}

#else
CpuFeature DetectFeature(const char*) { return CpuFeature::kUnknown; }
#endif

}  // namespace

CpuFeature HostCpuFeature(const char* name) {
  const CpuFeature detected = DetectFeature(name);
  if (detected == CpuFeature::kPresent && InList(g_pretend_absent, name)) return CpuFeature::kAbsent;
  return detected;
}

// Calls `visit` with each space-separated name of `list` (NUL-terminated copies; a name longer
// than any feature this runtime detects is passed truncated, which no detector matches).
template <typename Visit>
void ForEachFeature(const char* list, Visit visit) {
  char name[48];
  while (*list != '\0') {
    while (*list == ' ') ++list;
    size_t n = 0;
    while (*list != '\0' && *list != ' ') {
      if (n + 1 < sizeof(name)) name[n++] = *list;
      ++list;
    }
    name[n] = '\0';
    if (n > 0) visit(static_cast<const char*>(name));
  }
}

agate_status_t CheckCpuFeatures(const fb::Module& module) {
  const flatbuffers::String* features = module.cpu_features();
  if (features == nullptr) return AGATE_OK;
  int missing = 0;
  ForEachFeature(features->c_str(), [&](const char* name) {
    if (HostCpuFeature(name) == CpuFeature::kAbsent) ++missing;
  });
  if (missing == 0) return AGATE_OK;
  Message message = Fail(AGATE_UNSUPPORTED);
  message << "the module's kernels use CPU feature" << (missing > 1 ? "s " : " ");
  int listed = 0;
  ForEachFeature(features->c_str(), [&](const char* name) {
    if (HostCpuFeature(name) == CpuFeature::kAbsent) message << (listed++ == 0 ? "" : ", ") << name;
  });
  message << " that this CPU lacks (module target '" << module.target()->c_str()
          << "'): compile it for this CPU, or for a portable target such as --target "
#if defined(__aarch64__)
          << "\"llvm -mtriple=aarch64-linux-gnu -mcpu=generic\" (any arm64)";
#else
          << "\"llvm -mcpu=x86-64-v3\" (AVX2 machines) or \"llvm -mcpu=x86-64-v2\"";
#endif
  return message;
}

void PretendCpuLacksForTesting(const char* names) {
  if (names == nullptr) names = "";
  strncpy(g_pretend_absent, names, sizeof(g_pretend_absent) - 1);
  g_pretend_absent[sizeof(g_pretend_absent) - 1] = '\0';
}

}  // namespace rt
}  // namespace agate
