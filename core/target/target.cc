#include "core/target/target.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <memory>
#include <mutex>
#include <ostream>
#include <sstream>

#include <llvm/ADT/StringMap.h>
#include <llvm/ADT/Triple.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/ARMTargetParser.h>
#include <llvm/Support/Host.h>

#include "core/support/error.h"
#include "core/target/llvm_targets.h"

namespace agate {
namespace target {
namespace {

const char* kAcceptedKinds = "llvm, c, cuda";

// The options each kind accepts, in the order ToString prints them.
const std::vector<std::string>& AcceptedKeys(TargetKind kind) {
  static const std::vector<std::string> llvm_keys = {"-mtriple",    "-mcpu",         "-mattr",   "-mfloat-abi", "-fast-math",
                                                     "-num-threads", "-vector-width", "-cache-kb"};
  static const std::vector<std::string> c_keys = {"-mcpu", "-fast-math", "-num-threads", "-vector-width", "-cache-kb"};
  static const std::vector<std::string> cuda_keys = {"-arch", "-fast-math"};
  switch (kind) {
    case TargetKind::kLLVM: return llvm_keys;
    case TargetKind::kC: return c_keys;
    case TargetKind::kCUDA: return cuda_keys;
  }
  return c_keys;
}

std::string Join(const std::vector<std::string>& items, const char* separator) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? separator : "") + items[i];
  return out;
}

// The features whose presence decides code generation choices, per arch. HasFeature
// answers for these and for everything named in -mattr.
const std::vector<std::string>& InterestingFeatures(Arch arch) {
  static const std::vector<std::string> x86 = {
      "sse",      "sse2",     "sse3",     "ssse3",    "sse4.1",     "sse4.2",     "avx",        "avx2",
      "fma",      "f16c",     "bmi",      "bmi2",     "popcnt",     "avx512f",    "avx512cd",   "avx512bw",
      "avx512dq", "avx512vl", "avx512vnni", "avx512bf16", "avx512ifma", "avx512vbmi", "avxvnni", "avx512fp16"};
  static const std::vector<std::string> aarch64 = {"neon", "fp-armv8", "fullfp16", "dotprod", "i8mm",
                                                   "bf16", "sve",      "sve2",     "crc",     "lse"};
  static const std::vector<std::string> arm = {"dsp",   "vfp2sp", "vfp4d16sp", "fp-armv8d16sp", "fp64",   "neon",
                                               "mve",   "mve.fp", "thumb2",    "mclass",        "fullfp16", "dotprod"};
  static const std::vector<std::string> none;
  switch (arch) {
    case Arch::kX86_64: return x86;
    case Arch::kAArch64: return aarch64;
    case Arch::kARM: return arm;
    default: return none;
  }
}

Arch ArchOfTriple(const llvm::Triple& triple) {
  switch (triple.getArch()) {
    case llvm::Triple::x86_64: return Arch::kX86_64;
    case llvm::Triple::aarch64: return Arch::kAArch64;
    case llvm::Triple::arm:
    case llvm::Triple::thumb: return Arch::kARM;
    case llvm::Triple::nvptx64: return Arch::kNVPTX;
    default: return Arch::kUnknown;
  }
}

// LLVM reports unknown feature names on stderr and carries on; agate turns them
// into errors itself, so the probe for an -mattr name runs with stderr pointed at
// /dev/null (process-wide, briefly: only while parsing a user's -mattr).
class SilencedStderr {
 public:
  SilencedStderr() : lock_(Mutex()) {
    saved_ = dup(2);
    int null_fd = open("/dev/null", O_WRONLY);
    if (saved_ >= 0 && null_fd >= 0) dup2(null_fd, 2);
    if (null_fd >= 0) close(null_fd);
  }
  ~SilencedStderr() {
    if (saved_ >= 0) {
      dup2(saved_, 2);
      close(saved_);
    }
  }

 private:
  static std::recursive_mutex& Mutex() {
    static std::recursive_mutex mutex;
    return mutex;
  }
  std::unique_lock<std::recursive_mutex> lock_;
  int saved_ = -1;
};

const llvm::Target& LookupLLVMTarget(const std::string& triple, const std::string& context) {
  EnsureLLVMTargetsInitialized();
  std::string message;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple, message);
  if (target == nullptr) {
    AGATE_THROW(kInvalidArgument) << context << ": LLVM has no backend for triple '" << triple << "' (" << message
                                  << "); accepted architectures: x86_64, aarch64, arm/thumb (Cortex-M/A)";
  }
  return *target;
}

std::unique_ptr<llvm::MCSubtargetInfo> CreateSubtargetInfo(const std::string& triple, const std::string& cpu,
                                                           const std::string& features) {
  // Callers pass only CPUs and features validated before (IsValidCPU,
  // IsKnownFeature), so LLVM has nothing to complain about here.
  const llvm::Target& target = LookupLLVMTarget(triple, "target");
  return std::unique_ptr<llvm::MCSubtargetInfo>(target.createMCSubtargetInfo(triple, cpu, features));
}

bool IsValidCPU(const std::string& triple, const std::string& cpu) {
  if (cpu == "generic") return true;
  auto info = CreateSubtargetInfo(triple, "", "");
  return info && info->isCPUStringValid(cpu);
}

// checkFeatures ignores an unknown name, so both "+f" and "-f" then hold; for a
// known name they cannot both hold ("+f" needs f set, "-f" needs it clear).
bool IsKnownFeature(const llvm::MCSubtargetInfo& info, const std::string& name) {
  SilencedStderr silence;
  return !(info.checkFeatures("+" + name) && info.checkFeatures("-" + name));
}

bool Implies(const llvm::MCSubtargetInfo& info, const std::string& name) { return info.checkFeatures("+" + name); }

// LLVM 14 does not know newer CPUs (e.g. AMD Zen 5) and calls them "generic";
// the x86-64 micro-architecture levels then give a CPU that at least carries the
// right instruction set, and -mattr adds the rest.
std::string X86LevelFromFeatures(const llvm::StringMap<bool>& features) {
  auto has = [&](const char* name) {
    auto it = features.find(name);
    return it != features.end() && it->second;
  };
  if (has("avx512f") && has("avx512bw") && has("avx512cd") && has("avx512dq") && has("avx512vl")) return "x86-64-v4";
  if (has("avx2") && has("fma") && has("bmi2") && has("movbe") && has("f16c")) return "x86-64-v3";
  if (has("sse4.2") && has("popcnt") && has("ssse3")) return "x86-64-v2";
  return "x86-64";
}

struct HostDescription {
  std::string triple;
  std::string cpu;
  std::vector<std::string> mattr;  // host features the CPU name does not imply (and implied ones it lacks)
  int64_t caches[3] = {0, 0, 0};   // L1D, L2, L3 bytes as the CPU reports them (0: unknown)
};

// The host's data caches, from the CPU's own description (glibc reads CPUID on
// x86 and the system's cache topology elsewhere). A level the CPU does not
// report is 0; the caller then keeps the architecture's default.
void DetectHostCaches(int64_t caches[3]) {
#if defined(_SC_LEVEL1_DCACHE_SIZE) && defined(_SC_LEVEL2_CACHE_SIZE) && defined(_SC_LEVEL3_CACHE_SIZE)
  const int names[3] = {_SC_LEVEL1_DCACHE_SIZE, _SC_LEVEL2_CACHE_SIZE, _SC_LEVEL3_CACHE_SIZE};
  for (int i = 0; i < 3; ++i) {
    long bytes = sysconf(names[i]);
    // Round to whole KiB (the printed unit); absurd values count as unknown.
    caches[i] = bytes >= 1024 && bytes <= (int64_t{1} << 40) ? bytes / 1024 * 1024 : 0;
  }
#else
  for (int i = 0; i < 3; ++i) caches[i] = 0;
#endif
}

HostDescription DetectHost() {
  HostDescription host;
  host.triple = llvm::Triple::normalize(llvm::sys::getProcessTriple());
  llvm::StringMap<bool> features;
  bool have_features = llvm::sys::getHostCPUFeatures(features);
  host.cpu = llvm::sys::getHostCPUName().str();
  if (host.cpu.empty() || host.cpu == "generic" || !IsValidCPU(host.triple, host.cpu)) {
    host.cpu = ArchOfTriple(llvm::Triple(host.triple)) == Arch::kX86_64 && have_features
                   ? X86LevelFromFeatures(features)
                   : "generic";
  }
  if (!have_features) return host;
  auto info = CreateSubtargetInfo(host.triple, host.cpu, "");
  for (const auto& entry : features) {
    std::string name = entry.first().str();
    bool implied = Implies(*info, name);
    if (entry.second && !implied) host.mattr.push_back("+" + name);
    if (!entry.second && implied) host.mattr.push_back("-" + name);
  }
  std::sort(host.mattr.begin(), host.mattr.end());
  DetectHostCaches(host.caches);
  return host;
}

const HostDescription& Host() {
  static const HostDescription host = DetectHost();
  return host;
}

int DeriveVectorWidth(const Target& t) {
  switch (t.arch()) {
    case Arch::kX86_64:
      if (t.HasFeature("avx512f")) return 512;
      if (t.HasFeature("avx")) return 256;
      return 128;
    case Arch::kAArch64: return 128;
    case Arch::kARM:
      if (t.HasFeature("mve") || t.HasFeature("neon")) return 128;
      return 32;
    case Arch::kNVPTX: return 128;
    case Arch::kUnknown: return 128;  // portable C: what any C compiler's vectorizer handles
  }
  return 128;
}

// The caches a target gets when neither -cache-kb nor the host describes them:
// typical current cores of each architecture, erring small (a block sized for a
// smaller cache loses little on a larger one; the reverse thrashes).
void DefaultCacheSizes(const Target& t, int64_t caches[3]) {
  const int64_t kib = 1024;
  int64_t l1 = 0, l2 = 0, l3 = 0;
  switch (t.arch()) {
    case Arch::kX86_64: l1 = 32 * kib, l2 = 1024 * kib, l3 = 8192 * kib; break;
    case Arch::kAArch64: l1 = 32 * kib, l2 = 512 * kib, l3 = 2048 * kib; break;
    case Arch::kARM:
      // Cortex-M and small Cortex-A: tightly coupled memory or a small L1 at most.
      if (!t.is_bare_metal()) l1 = 32 * kib, l2 = 256 * kib;
      break;
    case Arch::kNVPTX: break;  // GPU schedules block for shared memory, not these
    case Arch::kUnknown: l1 = 32 * kib, l2 = 256 * kib; break;  // portable C
  }
  caches[0] = l1, caches[1] = l2, caches[2] = l3;
}

// For `c -mcpu=X`: the triple whose LLVM backend knows X, so its features are known too.
std::string TripleForCPU(const std::string& cpu) {
  llvm::ARM::ArchKind arm_arch = llvm::ARM::parseCPUArch(cpu);
  if (arm_arch != llvm::ARM::ArchKind::INVALID) {
    std::string sub_arch = llvm::ARM::getSubArch(arm_arch).str();
    if (llvm::ARM::parseArchProfile(llvm::ARM::getArchName(arm_arch)) == llvm::ARM::ProfileKind::M) {
      return llvm::Triple::normalize("thumb" + sub_arch + "-none-eabi");
    }
    return llvm::Triple::normalize("arm" + sub_arch + "-linux-gnueabihf");
  }
  for (const char* triple : {"aarch64-unknown-linux-gnu", "x86_64-pc-linux-gnu"}) {
    if (IsValidCPU(triple, cpu)) return triple;
  }
  return "";
}

bool ParsePositiveInt(const std::string& text, int max, int* value) {
  if (text.empty() || text.size() > 9) return false;
  for (char c : text) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  *value = std::stoi(text);
  return *value >= 1 && *value <= max;
}

}  // namespace

// Builds a Target from the options of one target string; a friend of Target.
class TargetParser {
 public:
  explicit TargetParser(const std::string& text) : text_(text) {}

  Target Parse() {
    std::istringstream in(text_);
    std::string kind_name;
    in >> kind_name;
    if (kind_name == "llvm") {
      target_.kind_ = TargetKind::kLLVM;
    } else if (kind_name == "c") {
      target_.kind_ = TargetKind::kC;
    } else if (kind_name == "cuda") {
      target_.kind_ = TargetKind::kCUDA;
    } else {
      AGATE_THROW(kInvalidArgument) << "target '" << text_ << "': unknown target kind '" << kind_name
                                    << "'; accepted kinds: " << kAcceptedKinds;
    }
    std::string token;
    while (in >> token) ReadOption(token);
    switch (target_.kind_) {
      case TargetKind::kLLVM: ResolveLLVM(); break;
      case TargetKind::kC: ResolveC(); break;
      case TargetKind::kCUDA: ResolveCUDA(); break;
    }
    ResolveCommon();
    return target_;
  }

 private:
  [[noreturn]] void Fail(const std::string& message) {
    AGATE_THROW(kInvalidArgument) << "target '" << text_ << "': " << message;
    __builtin_unreachable();  // the thrower's destructor throws
  }

  void ReadOption(const std::string& token) {
    size_t eq = token.find('=');
    std::string key = token.substr(0, eq);
    const auto& accepted = AcceptedKeys(target_.kind_);
    if (std::find(accepted.begin(), accepted.end(), key) == accepted.end()) {
      Fail("unknown option '" + key + "' for kind '" + TargetKindName(target_.kind_) +
           "'; accepted options: " + Join(accepted, ", "));
    }
    if (options_.count(key)) Fail("option '" + key + "' given twice");
    bool is_flag = key == "-fast-math";
    if (is_flag && eq != std::string::npos) Fail("option '" + key + "' is a flag and takes no value");
    if (!is_flag && (eq == std::string::npos || eq + 1 == token.size())) {
      Fail("option '" + key + "' needs a value, as " + key + "=VALUE");
    }
    options_[key] = is_flag ? "" : token.substr(eq + 1);
  }

  std::string Option(const std::string& key, const std::string& fallback = "") const {
    auto it = options_.find(key);
    return it == options_.end() ? fallback : it->second;
  }
  bool HasOption(const std::string& key) const { return options_.count(key) != 0; }

  void ResolveLLVM() {
    const HostDescription& host = Host();
    std::string cpu = Option("-mcpu");
    if (HasOption("-mtriple")) {
      target_.triple_ = llvm::Triple::normalize(Option("-mtriple"));
    } else {
      target_.triple_ = host.triple;
      if (cpu.empty()) cpu = "native";  // `llvm` alone means this machine
    }
    llvm::Triple triple(target_.triple_);
    target_.arch_ = ArchOfTriple(triple);
    if (target_.arch_ == Arch::kUnknown || target_.arch_ == Arch::kNVPTX) {
      Fail("unsupported -mtriple='" + Option("-mtriple") +
           "'; accepted architectures: x86_64, aarch64, arm/thumb (e.g. x86_64-linux-gnu, aarch64-linux-gnu, "
           "thumbv7em-none-eabi, thumbv8m.main-none-eabi); for NVIDIA GPUs use the 'cuda' kind");
    }
    LookupLLVMTarget(target_.triple_, "target '" + text_ + "'");
    if (cpu == "native") {
      if (ArchOfTriple(llvm::Triple(host.triple)) != target_.arch_) {
        Fail("-mcpu=native names this " + host.triple + " machine, which cannot run -mtriple=" + target_.triple_);
      }
      target_.cpu_ = host.cpu;
      target_.mattr_ = host.mattr;
      UseHostCaches(host);
    } else {
      target_.cpu_ = cpu.empty() ? "generic" : cpu;
      if (!IsValidCPU(target_.triple_, target_.cpu_)) {
        Fail("-mcpu='" + target_.cpu_ + "' is not a CPU of " + target_.triple_ +
             " (accepted: a CPU name LLVM 14 knows for that triple, e.g. " + ExampleCPUs() + ", or native, generic)");
      }
    }
    ReadMattr();
    ReadFloatABI(triple);
    ComputeFeatures();
    ChooseFloatABIOfCPU();
  }

  // A bare-metal Arm CPU with an FPU (Cortex-M4F, M7, M33, M55) passes floats in
  // FPU registers unless -mfloat-abi says otherwise, as arm-none-eabi-gcc firmware
  // for that CPU does (-mfloat-abi=hard): objects of both then link. CPUs without
  // one (Cortex-M0, M3) keep the soft-float calling convention.
  void ChooseFloatABIOfCPU() {
    if (target_.arch_ != Arch::kARM || target_.float_abi_ != FloatABI::kDefault || !target_.is_bare_metal()) return;
    for (const char* fpu : {"vfp2sp", "vfp4d16sp", "fp-armv8d16sp", "mve.fp"}) {
      if (target_.features_.count(fpu)) {
        target_.float_abi_ = FloatABI::kHard;
        return;
      }
    }
  }

  // The host's caches, where the CPU reports them (levels it does not report keep
  // the architecture's defaults, filled in by ResolveCaches).
  void UseHostCaches(const HostDescription& host) {
    for (int i = 0; i < 3; ++i) host_caches_[i] = host.caches[i];
    from_host_ = true;
  }

  // -cache-kb=L1D,L2,L3 (KiB, 0 for a missing level), else the host's, else defaults.
  void ResolveCaches() {
    DefaultCacheSizes(target_, target_.cache_bytes_);
    if (target_.kind_ == TargetKind::kCUDA) return;
    if (HasOption("-cache-kb")) {
      std::string list = Option("-cache-kb");
      std::vector<int64_t> kib;
      size_t start = 0;
      while (start <= list.size()) {
        size_t comma = list.find(',', start);
        std::string item = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        start = comma == std::string::npos ? list.size() + 1 : comma + 1;
        int value = 0;
        if (item == "0") {
          kib.push_back(0);
        } else if (ParsePositiveInt(item, 1 << 24, &value)) {
          kib.push_back(value);
        } else {
          kib.push_back(-1);
        }
      }
      bool ok = kib.size() == 3 && std::all_of(kib.begin(), kib.end(), [](int64_t v) { return v >= 0; });
      if (!ok) {
        Fail("-cache-kb='" + list + "' is not a cache description; accepted: three sizes in KiB for L1D,L2,L3 "
             "(0 for a missing level, at most 16777216 each), e.g. -cache-kb=48,1024,32768");
      }
      for (int i = 0; i < 3; ++i) target_.cache_bytes_[i] = kib[i] * 1024;
      target_.caches_explicit_ = true;
      return;
    }
    if (!from_host_) return;
    for (int i = 0; i < 3; ++i)
      if (host_caches_[i] > 0) target_.cache_bytes_[i] = host_caches_[i];
    target_.caches_explicit_ = true;
  }

  std::string ExampleCPUs() const {
    switch (target_.arch_) {
      case Arch::kX86_64: return "x86-64-v3, skylake-avx512, znver3";
      case Arch::kAArch64: return "cortex-a53, cortex-a72, neoverse-n1, apple-m1";
      case Arch::kARM: return "cortex-m0, cortex-m4, cortex-m7, cortex-m33, cortex-m55, cortex-a7";
      default: return "generic";
    }
  }

  void ReadMattr() {
    if (!HasOption("-mattr")) return;
    auto info = CreateSubtargetInfo(target_.triple_, target_.cpu_, "");
    std::string list = Option("-mattr");
    size_t start = 0;
    while (start <= list.size()) {
      size_t comma = list.find(',', start);
      std::string item = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      start = comma == std::string::npos ? list.size() + 1 : comma + 1;
      if (item.size() < 2 || (item[0] != '+' && item[0] != '-')) {
        Fail("-mattr item '" + item + "' must be +feature or -feature (e.g. -mattr=+avx2,+fma)");
      }
      if (!IsKnownFeature(*info, item.substr(1))) {
        Fail("-mattr feature '" + item.substr(1) + "' is not a feature of " + target_.triple_ +
             " (accepted e.g.: " + Join(InterestingFeatures(target_.arch_), ", ") + ")");
      }
      // A later -mattr for the same feature wins, as in LLVM.
      auto same = [&](const std::string& f) { return f.substr(1) == item.substr(1); };
      target_.mattr_.erase(std::remove_if(target_.mattr_.begin(), target_.mattr_.end(), same), target_.mattr_.end());
      target_.mattr_.push_back(item);
    }
    std::sort(target_.mattr_.begin(), target_.mattr_.end());
  }

  void ReadFloatABI(const llvm::Triple& triple) {
    if (!HasOption("-mfloat-abi")) {
      if (triple.getEnvironment() == llvm::Triple::EABIHF || triple.getEnvironment() == llvm::Triple::GNUEABIHF) {
        target_.float_abi_ = FloatABI::kHard;
      }
      return;
    }
    std::string value = Option("-mfloat-abi");
    if (target_.arch_ != Arch::kARM) Fail("-mfloat-abi applies to 32-bit Arm triples only, not " + target_.triple_);
    if (value == "hard") {
      target_.float_abi_ = FloatABI::kHard;
    } else if (value == "soft") {
      target_.float_abi_ = FloatABI::kSoft;
    } else if (value == "softfp") {
      target_.float_abi_ = FloatABI::kSoftFP;
    } else {
      Fail("-mfloat-abi='" + value + "' is not a float ABI; accepted: hard, soft, softfp");
    }
  }

  void ComputeFeatures() {
    auto info = CreateSubtargetInfo(target_.triple_, target_.cpu_, target_.LLVMFeatureString());
    for (const auto& name : InterestingFeatures(target_.arch_)) {
      if (IsKnownFeature(*info, name) && Implies(*info, name)) target_.features_.insert(name);
    }
    for (const auto& item : target_.mattr_) {
      if (item[0] == '+') target_.features_.insert(item.substr(1));
    }
    // Soft float on Arm means the FPU is not used for arguments or arithmetic.
    if (target_.float_abi_ == FloatABI::kSoft) {
      for (const char* fp : {"vfp2sp", "vfp4d16sp", "fp-armv8d16sp", "fp64", "mve.fp", "neon"}) {
        target_.features_.erase(fp);
      }
    }
  }

  void ResolveC() {
    if (!HasOption("-mcpu")) {
      target_.arch_ = Arch::kUnknown;
      return;
    }
    std::string cpu = Option("-mcpu");
    if (cpu == "native") {
      const HostDescription& host = Host();
      target_.triple_ = host.triple;
      target_.cpu_ = host.cpu;
      target_.mattr_ = host.mattr;
      UseHostCaches(host);
    } else {
      target_.triple_ = TripleForCPU(cpu);
      if (target_.triple_.empty()) {
        Fail("-mcpu='" + cpu +
             "' is not a CPU LLVM 14 knows (accepted e.g.: native, cortex-m4, cortex-m7, cortex-m33, cortex-a53, "
             "cortex-a72, x86-64-v3, skylake-avx512)");
      }
      target_.cpu_ = cpu;
    }
    target_.arch_ = ArchOfTriple(llvm::Triple(target_.triple_));
    ComputeFeatures();
  }

  void ResolveCUDA() {
    target_.arch_ = Arch::kNVPTX;
    target_.triple_ = "nvptx64-nvidia-cuda";
    int number = 0;
    if (HasOption("-arch")) {
      std::string arch = Option("-arch");
      if (arch.compare(0, 3, "sm_") != 0 || !ParsePositiveInt(arch.substr(3), 999, &number) ||
          FindCudaArch(number) == nullptr) {
        Fail("-arch='" + arch + "' is not a CUDA architecture agate compiles for; accepted: " + CudaArchList());
      }
    } else {
      number = DefaultCudaArch();
    }
    target_.cuda_sm_ = number;
    target_.cpu_ = "sm_" + std::to_string(number);
  }

  // The local GPU's architecture, or the newest known one below it (its PTX
  // runs there), or sm_80 without a GPU.
  static int DefaultCudaArch() {
    int local = LocalCudaArch();
    int best = 0;
    for (const CudaArch& a : CudaArchs())
      if (a.sm <= local) best = a.sm;
    return best > 0 ? best : 80;
  }

  void ResolveCommon() {
    target_.fast_math_ = HasOption("-fast-math");
    if (HasOption("-num-threads") && !ParsePositiveInt(Option("-num-threads"), 1024, &target_.num_threads_)) {
      Fail("-num-threads='" + Option("-num-threads") + "' is not a thread count; accepted: 1..1024");
    }
    if (HasOption("-vector-width")) {
      int bits = 0;
      bool ok = ParsePositiveInt(Option("-vector-width"), 2048, &bits) && bits >= 8 && (bits & (bits - 1)) == 0;
      if (!ok) {
        Fail("-vector-width='" + Option("-vector-width") + "' is not a vector width; accepted: a power of two "
             "number of bits from 8 to 2048 (e.g. 128, 256, 512)");
      }
      target_.vector_width_bits_ = bits;
      target_.vector_width_explicit_ = true;
    } else {
      target_.vector_width_bits_ = DeriveVectorWidth(target_);
    }
    ResolveCaches();
  }

  std::string text_;
  Target target_;
  std::map<std::string, std::string> options_;
  int64_t host_caches_[3] = {0, 0, 0};
  bool from_host_ = false;
};

Target Target::Parse(const std::string& text) { return TargetParser(text).Parse(); }

Target Target::Host() {
  static const Target host = Parse("llvm");
  return host;
}

int Target::NativeLanes(ir::DType element) const {
  int bits = element.bits() == 1 ? 8 : element.bits();
  return std::max(1, vector_width_bits_ / std::max(1, bits));
}

int Target::vector_registers() const {
  switch (arch_) {
    case Arch::kX86_64: return HasFeature("avx512f") ? 32 : 16;
    case Arch::kAArch64: return 32;
    case Arch::kARM:
      if (HasFeature("neon")) return 16;
      if (HasFeature("mve") || HasFeature("mve.fp")) return 8;
      return 16;  // no SIMD: scalar FPU registers (16 single-precision pairs on Cortex-M4F)
    default: return 16;
  }
}

const CudaArch& Target::cuda_arch() const {
  const CudaArch* arch = kind_ == TargetKind::kCUDA ? FindCudaArch(cuda_sm_) : nullptr;
  AGATE_REQUIRE(arch != nullptr, kInvalidArgument) << "target '" << ToString() << "' is not a CUDA target";
  return *arch;
}

bool Target::is_bare_metal() const {
  if (triple_.empty() || kind_ == TargetKind::kCUDA) return false;
  llvm::Triple triple(triple_);
  return triple.getOS() == llvm::Triple::UnknownOS;  // "none" parses as UnknownOS
}

int Target::pointer_bits() const {
  if (triple_.empty() || kind_ == TargetKind::kCUDA) return 0;
  llvm::Triple triple(triple_);
  return triple.isArch64Bit() ? 64 : triple.isArch32Bit() ? 32 : triple.isArch16Bit() ? 16 : 0;
}

std::string Target::LLVMFeatureString() const { return Join(mattr_, ","); }

std::string Target::ToString() const {
  std::ostringstream out;
  out << TargetKindName(kind_);
  if (kind_ == TargetKind::kLLVM) out << " -mtriple=" << triple_;
  if (kind_ == TargetKind::kCUDA) out << " -arch=" << cpu_;
  if (kind_ != TargetKind::kCUDA && !cpu_.empty()) out << " -mcpu=" << cpu_;
  // Host features for `c -mcpu=native` are resolved at parse time but cannot be
  // spelled in a `c` string; the CPU name carries them.
  if (kind_ == TargetKind::kLLVM && !mattr_.empty()) out << " -mattr=" << LLVMFeatureString();
  switch (float_abi_) {
    case FloatABI::kDefault: break;
    case FloatABI::kSoft: out << " -mfloat-abi=soft"; break;
    case FloatABI::kSoftFP: out << " -mfloat-abi=softfp"; break;
    case FloatABI::kHard:
      if (llvm::Triple(triple_).getEnvironment() != llvm::Triple::EABIHF &&
          llvm::Triple(triple_).getEnvironment() != llvm::Triple::GNUEABIHF) {
        out << " -mfloat-abi=hard";
      }
      break;
  }
  if (fast_math_) out << " -fast-math";
  if (num_threads_ > 0) out << " -num-threads=" << num_threads_;
  if (vector_width_explicit_) out << " -vector-width=" << vector_width_bits_;
  if (caches_explicit_) {
    out << " -cache-kb=" << cache_bytes_[0] / 1024 << "," << cache_bytes_[1] / 1024 << "," << cache_bytes_[2] / 1024;
  }
  return out.str();
}

std::ostream& operator<<(std::ostream& os, const Target& target) { return os << target.ToString(); }

const char* TargetKindName(TargetKind kind) {
  switch (kind) {
    case TargetKind::kLLVM: return "llvm";
    case TargetKind::kC: return "c";
    case TargetKind::kCUDA: return "cuda";
  }
  return "?";
}

}  // namespace target
}  // namespace agate
