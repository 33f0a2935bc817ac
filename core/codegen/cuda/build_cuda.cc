#include "core/codegen/cuda/build_cuda.h"

#include <algorithm>
#include <map>

#include "core/codegen/cuda/cubin_info.h"
#include "core/codegen/cuda/nvrtc.h"
#include "core/support/error.h"
#include "core/target/cuda_arch.h"

namespace agate {
namespace codegen {

CudaBuild BuildCuda(const std::vector<ir::LoweredFunc>& funcs, const target::Target& target, const std::string& name) {
  CudaSource source = GenerateCuda(funcs, target);
  const target::CudaArch& arch = target.cuda_arch();
  CudaBuild build;
  build.source = source.code;
  build.arch = arch.sm;
  NvrtcResult compiled = CompileCuda(source.code, arch.sm, target.fast_math(), name);
  build.cubin = std::move(compiled.cubin);
  build.ptx = std::move(compiled.ptx);
  build.log = std::move(compiled.log);
  std::map<std::string, CubinKernelInfo> info;
  for (const CubinKernelInfo& k : ReadCubinInfo(build.cubin)) info[k.name] = k;
  for (const CudaKernelSource& k : source.kernels) {
    auto it = info.find(k.name);
    AGATE_REQUIRE(it != info.end(), kInternal) << "kernel " << k.name << " is missing from the cubin NVRTC built";
    CudaKernelBinary binary;
    binary.source = k;
    binary.registers = it->second.registers;
    binary.static_shared_bytes = it->second.static_shared_bytes;
    if (it->second.shared_includes_reserved) {
      binary.static_shared_bytes = std::max<int64_t>(0, binary.static_shared_bytes - arch.reserved_shared_bytes_per_block);
    }
    binary.local_bytes = it->second.local_bytes;
    int64_t shared = k.launch.shared_bytes + binary.static_shared_bytes;
    AGATE_REQUIRE(shared <= arch.max_shared_bytes_per_block, kResourceExhausted)
        << "kernel " << k.name << " needs " << shared << " bytes of shared memory per block, more than the "
        << arch.max_shared_bytes_per_block << " of " << arch.name();
    target::Occupancy occupancy =
        target::TheoreticalOccupancy(arch, k.launch.threads_per_block(), binary.registers, shared);
    AGATE_REQUIRE(occupancy.blocks_per_sm > 0, kResourceExhausted)
        << "kernel " << k.name << " (" << k.launch.threads_per_block() << " threads, " << binary.registers
        << " registers per thread, " << shared << " bytes of shared memory) does not fit one block on an "
        << arch.name() << " SM (" << occupancy.limited_by << ")";
    build.kernels.push_back(binary);
  }
  return build;
}

}  // namespace codegen
}  // namespace agate
