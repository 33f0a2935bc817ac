// ReadCubinInfo: what ptxas decided for each kernel of a cubin, read from the
// cubin itself.
//
// Why: occupancy (how many blocks an SM runs at once) depends on a kernel's
// registers per thread and shared memory, which only ptxas knows. `agate
// inspect` reports them and the compiler checks launches against them, without
// running cuobjdump and without parsing ptxas's human-readable log. A cubin is
// an ELF file whose `.nv.info` section holds a list of attributes per kernel;
// each entry is a format byte, an attribute byte and either a 16-bit value
// (formats 1-3) or a 16-bit size and that many bytes (format 4). agate reads:
//   0x2f EIATTR_REGCOUNT    (format 4: u32 symbol index, u32 registers per thread)
//   0x11 EIATTR_FRAME_SIZE  (format 4: u32 symbol index, u32 bytes of local memory per thread)
// and the size of the section `.nv.shared.<kernel>` (static shared memory).
// sm_90 cubins also hold a section `.nv.shared.reserved.0` and fold the
// driver's per-block reservation into the section of every kernel that uses
// shared memory (ptxas reports 256 bytes of smem where the section has 1280):
// `shared_includes_reserved` says so, and the caller subtracts the
// architecture's reservation (core/target/cuda_arch.h).
// Kernels are the sections `.text.<kernel>`. Anything malformed is kCorrupt.
#ifndef AGATE_CORE_CODEGEN_CUDA_CUBIN_INFO_H_
#define AGATE_CORE_CODEGEN_CUDA_CUBIN_INFO_H_

#include <cstdint>
#include <string>
#include <vector>

namespace agate {
namespace codegen {

struct CubinKernelInfo {
  std::string name;
  int registers = 0;                // per thread
  int64_t static_shared_bytes = 0;  // per block, besides the dynamic shared memory of a launch
  int64_t local_bytes = 0;          // per thread stack frame (spills and local arrays)
  bool shared_includes_reserved = false;  // static_shared_bytes counts the driver's reservation
};

std::vector<CubinKernelInfo> ReadCubinInfo(const std::vector<uint8_t>& cubin);

}  // namespace codegen
}  // namespace agate

#endif  // AGATE_CORE_CODEGEN_CUDA_CUBIN_INFO_H_
