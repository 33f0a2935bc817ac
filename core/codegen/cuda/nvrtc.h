// Nvrtc: NVIDIA's runtime compiler for CUDA C, opened with dlopen.
//
// Why dlopen with our own declarations instead of linking libnvrtc: the
// compiler must build and run on machines without the CUDA toolkit (every CPU
// target works there); only `--target cuda` needs NVRTC, and it then fails with
// kUnavailable naming the library it looked for and where. The part of
// NVRTC's C API agate uses is small and stable since CUDA 11.2 (the first with
// nvrtcGetCUBIN), so it is declared here rather than taken from nvrtc.h.
//
// Where it looks: $AGATE_NVRTC_LIBRARY when set, else libnvrtc.so.13, .12,
// .11.2 and libnvrtc.so on the loader's path, else the same names under
// /usr/local/cuda/lib64. The library stays loaded for the process's lifetime.
#ifndef AGATE_CORE_CODEGEN_CUDA_NVRTC_H_
#define AGATE_CORE_CODEGEN_CUDA_NVRTC_H_

#include <cstdint>
#include <string>
#include <vector>

namespace agate {
namespace codegen {

struct NvrtcResult {
  std::vector<uint8_t> cubin;  // for exactly sm_<arch>
  std::string ptx;             // .target sm_<arch>: JIT-compiled by the driver for that arch and newer
  std::string log;             // the compiler's messages, with ptxas's resource report
};

// Compiles one translation unit for `arch` (compute capability major*10+minor).
// Throws kUnavailable when NVRTC cannot be opened, kUnsupported when this NVRTC
// cannot compile for `arch` (naming the archs it can), kInternal with the log
// when the source does not compile (generated code is a bug then).
NvrtcResult CompileCuda(const std::string& source, int arch, bool fast_math, const std::string& program_name);

// "NVRTC 13.0 (/usr/local/cuda/lib64/libnvrtc.so.13)"; throws kUnavailable as above.
std::string NvrtcDescription();

// The architectures this NVRTC compiles for (e.g. 75, 80, 86, 89, 90, ...).
std::vector<int> NvrtcSupportedArchs();

// True when NVRTC can be opened (tests skip, saying so, when not).
bool NvrtcAvailable();

}  // namespace codegen
}  // namespace agate

#endif  // AGATE_CORE_CODEGEN_CUDA_NVRTC_H_
