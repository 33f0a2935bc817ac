// Target: the one description of "what machine the generated code runs on".
//
// Why one type: the schedule layer needs the SIMD width and thread count, the
// lowering passes need to know whether the target is a microcontroller, the LLVM
// backend needs the triple, CPU and features, the C backend needs the CPU to pick
// a cross compiler, and the module format records the target it was built for.
// All of them read the same Target, parsed once from a TVM-style string:
//
//   llvm                                   the host: its triple, CPU and features
//   llvm -mcpu=native                      the same, spelled out
//   llvm -mtriple=aarch64-linux-gnu -mattr=+neon
//   llvm -mtriple=thumbv7em-none-eabi -mcpu=cortex-m4 -mfloat-abi=hard
//   llvm -mtriple=thumbv8m.main-none-eabi -mcpu=cortex-m33
//   c                                      portable C99
//   c -mcpu=cortex-m4                      C99 tuned for (and cross compiled to) a CPU
//   cuda -arch=sm_80                       an NVIDIA GPU (sm_70, sm_75, sm_80, sm_86, sm_89, sm_90)
//   cuda                                   the local GPU's architecture when a driver and GPU are
//                                          present (the newest known one not above it), else sm_80
//
// Options shared by kinds: -fast-math, -num-threads=N, -vector-width=N (bits;
// derived from the CPU's features when absent), and for CPUs -cache-kb=L1D,L2,L3
// (data cache sizes in KiB that GEMM-class schedules block for; 0: no such
// level). Parsing resolves everything that depends on the machine the compiler
// runs on (`native`, the host triple, the host's caches), so the printed form
// (ToString) names a concrete machine and parses back to an equal Target on any
// other machine.
#ifndef AGATE_CORE_TARGET_TARGET_H_
#define AGATE_CORE_TARGET_TARGET_H_

#include <set>
#include <string>
#include <vector>

#include "core/ir/dtype.h"
#include "core/target/cuda_arch.h"

namespace agate {
namespace target {

// Which code generator produces code for the target.
enum class TargetKind { kLLVM, kC, kCUDA };

// The instruction set family; decides intrinsics, vector width and calling details.
enum class Arch { kX86_64, kAArch64, kARM /* 32-bit Arm and Thumb: Cortex-A32 and Cortex-M */, kNVPTX, kUnknown };

enum class FloatABI { kDefault, kSoft, kSoftFP, kHard };

class Target {
 public:
  // Parses a target string. Throws agate::Error(kInvalidArgument) naming the bad
  // kind, key or value and listing what is accepted.
  static Target Parse(const std::string& text);
  // The machine the compiler runs on: Parse("llvm").
  static Target Host();

  TargetKind kind() const { return kind_; }
  Arch arch() const { return arch_; }
  // Normalized LLVM triple ("x86_64-pc-linux-gnu", "thumbv7em-unknown-none-eabi").
  // For `c` without -mcpu: empty (any C99 compiler); for `c -mcpu=X`: the triple
  // X belongs to; for cuda: "nvptx64-nvidia-cuda".
  const std::string& triple() const { return triple_; }
  // LLVM CPU name ("x86-64-v4", "cortex-m4", "generic"); "sm_80" for cuda.
  const std::string& cpu() const { return cpu_; }
  // Features added on top of the CPU's own, as written for -mattr ("+avx512vnni").
  const std::vector<std::string>& mattr() const { return mattr_; }
  // How floats cross calls. Bare-metal Arm targets default to the CPU's: hard
  // when it has an FPU (Cortex-M4F, M7, M33, M55), soft otherwise (M0, M3);
  // -mfloat-abi=soft|softfp|hard overrides it.
  FloatABI float_abi() const { return float_abi_; }
  bool fast_math() const { return fast_math_; }
  // Threads the generated code may split parallel loops into; 0 = as many as the runtime offers.
  int num_threads() const { return num_threads_; }
  // Native SIMD register width in bits (512 with AVX-512, 256 with AVX2, 128 with
  // NEON, 32 on Cortex-M where the DSP extension packs 8- and 16-bit lanes).
  int vector_width_bits() const { return vector_width_bits_; }
  // Lanes of `element` that fill one native vector register (at least 1).
  int NativeLanes(ir::DType element) const;
  // Architectural SIMD registers a kernel's register tile may occupy: 32 with
  // AVX-512 and on AArch64, 16 with AVX/SSE and 32-bit NEON, 8 with Arm MVE;
  // 16 for portable C (the compiler's vectorizer decides).
  int vector_registers() const;

  // Data caches the schedules size their blocks from, in bytes (0: no such level):
  // the L1 data cache and the L2 of one core, and the last-level cache. The host's
  // come from the CPU (`llvm`, `-mcpu=native`), -cache-kb=L1D,L2,L3 sets them, and
  // otherwise they are documented defaults per architecture (DefaultCacheSizes in
  // target.cc: x86-64 32 KiB / 1 MiB / 8 MiB, AArch64 32 KiB / 512 KiB / 2 MiB,
  // portable C 32 KiB / 256 KiB / 0, microcontrollers and GPUs none).
  int64_t l1d_cache_bytes() const { return cache_bytes_[0]; }
  int64_t l2_cache_bytes() const { return cache_bytes_[1]; }
  int64_t l3_cache_bytes() const { return cache_bytes_[2]; }

  // True when the CPU (with mattr) has the LLVM feature, e.g. "avx2", "fma",
  // "avx512f", "neon", "dsp", "mve.fp". Includes features implied by the CPU name.
  bool HasFeature(const std::string& feature) const { return features_.count(feature) != 0; }
  // All features the CPU has, implied or explicit (LLVM names without '+').
  const std::set<std::string>& features() const { return features_; }

  // The GPU architecture of a cuda target (cuda_arch_.sm is e.g. 80); kInvalidArgument otherwise.
  const CudaArch& cuda_arch() const;

  // No operating system: no threads, no dynamic loader, no libc beyond newlib.
  bool is_bare_metal() const;
  // Bits of a data pointer on the CPU (64 on x86-64 and AArch64, 32 on 32-bit
  // Arm and Cortex-M); 0 where unknown (portable C without -mcpu) and for GPUs.
  int pointer_bits() const;
  // The comma-joined -mattr list, as LLVM's TargetMachine wants it.
  std::string LLVMFeatureString() const;

  // The canonical text; Parse(ToString()) == *this.
  std::string ToString() const;
  bool operator==(const Target& other) const { return ToString() == other.ToString(); }
  bool operator!=(const Target& other) const { return !(*this == other); }

 private:
  Target() = default;

  TargetKind kind_ = TargetKind::kLLVM;
  Arch arch_ = Arch::kUnknown;
  std::string triple_;
  std::string cpu_;
  std::vector<std::string> mattr_;
  FloatABI float_abi_ = FloatABI::kDefault;
  bool fast_math_ = false;
  int num_threads_ = 0;
  int vector_width_bits_ = 0;
  bool vector_width_explicit_ = false;
  int64_t cache_bytes_[3] = {0, 0, 0};
  bool caches_explicit_ = false;  // from -cache-kb or the host: printed by ToString
  std::set<std::string> features_;
  int cuda_sm_ = 0;

  friend class TargetParser;
};

std::ostream& operator<<(std::ostream& os, const Target& target);
const char* TargetKindName(TargetKind kind);

}  // namespace target
}  // namespace agate

#endif  // AGATE_CORE_TARGET_TARGET_H_
