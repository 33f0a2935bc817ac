// BuildCuda: lowered GPU functions to a CUDA module image: source, cubin, PTX
// and what ptxas decided per kernel.
//
// Why one step: the compiler driver needs, per module, the one cubin for the
// target architecture (loaded first) and its PTX (JIT-compiled by newer GPUs),
// and per kernel its launch geometry, registers and shared memory (for the
// module, `agate inspect` and the launch checks). One NVRTC compile of one
// translation unit gives all of it (nvrtc.h), and the driver loads it as one
// CUmodule instead of one per kernel.
#ifndef AGATE_CORE_CODEGEN_CUDA_BUILD_CUDA_H_
#define AGATE_CORE_CODEGEN_CUDA_BUILD_CUDA_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/codegen/cuda/codegen_cuda.h"
#include "core/ir/function.h"
#include "core/target/target.h"

namespace agate {
namespace codegen {

struct CudaKernelBinary {
  CudaKernelSource source;          // name, launch geometry, parameters
  int registers = 0;                // per thread, from the cubin
  int64_t static_shared_bytes = 0;  // per block, besides the launch's dynamic shared memory
  int64_t local_bytes = 0;          // per thread (register spills, local arrays)
};

struct CudaBuild {
  std::string source;               // the CUDA C that was compiled (--dump-ir writes it)
  int arch = 0;                     // 80 for sm_80
  std::vector<uint8_t> cubin;       // runs on exactly sm_<arch>
  std::string ptx;                  // JIT-compiled by the driver for sm_<arch> and newer
  std::string log;                  // NVRTC and ptxas messages
  std::vector<CudaKernelBinary> kernels;  // every launch of every function, in order
};

// Generates and compiles; `name` names the program in messages. Throws what
// GenerateCuda and CompileCuda throw, and kResourceExhausted when ptxas's
// registers or the shared memory of a kernel leave no block room on an SM.
CudaBuild BuildCuda(const std::vector<ir::LoweredFunc>& funcs, const target::Target& target, const std::string& name);

}  // namespace codegen
}  // namespace agate

#endif  // AGATE_CORE_CODEGEN_CUDA_BUILD_CUDA_H_
