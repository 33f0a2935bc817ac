#include "core/target/cuda_arch.h"

#include <dlfcn.h>

#include <algorithm>

namespace agate {
namespace target {

const std::vector<CudaArch>& CudaArchs() {
  //                                sm  example  thr/blk thr/SM blk/SM regs/SM reg/thr unit  smem/SM  smem/blk  reserved unit warp
  static const std::vector<CudaArch> archs = {
      {70, "V100", 1024, 2048, 32, 65536, 255, 256, 98304, 98304, 0, 256, 32},
      {75, "T4", 1024, 1024, 16, 65536, 255, 256, 65536, 65536, 0, 256, 32},
      {80, "A100", 1024, 2048, 32, 65536, 255, 256, 167936, 166912, 1024, 128, 32},
      {86, "RTX 3090, A10", 1024, 1536, 16, 65536, 255, 256, 102400, 101376, 1024, 128, 32},
      {89, "L4, RTX 4090", 1024, 1536, 24, 65536, 255, 256, 102400, 101376, 1024, 128, 32},
      {90, "H100, H200", 1024, 2048, 32, 65536, 255, 256, 233472, 232448, 1024, 128, 32},
  };
  return archs;
}

const CudaArch* FindCudaArch(int sm) {
  for (const CudaArch& a : CudaArchs())
    if (a.sm == sm) return &a;
  return nullptr;
}

std::string CudaArchList() {
  std::string out;
  for (const CudaArch& a : CudaArchs()) out += (out.empty() ? "" : ", ") + a.name();
  return out;
}

Occupancy TheoreticalOccupancy(const CudaArch& arch, int64_t threads_per_block, int registers_per_thread,
                               int64_t shared_bytes_per_block) {
  Occupancy o;
  if (threads_per_block <= 0 || threads_per_block > arch.max_threads_per_block) return o;
  int64_t warps = (threads_per_block + arch.warp_size - 1) / arch.warp_size;
  auto consider = [&](int64_t blocks, const char* why) {
    if (o.limited_by.empty() || blocks < o.blocks_per_sm) {
      o.blocks_per_sm = static_cast<int>(std::max<int64_t>(blocks, 0));
      o.limited_by = why;
    }
  };
  consider(arch.max_warps_per_sm() / warps, "threads");
  consider(arch.max_blocks_per_sm, "blocks");
  if (registers_per_thread > 0) {
    int64_t unit = arch.register_allocation_unit;
    int64_t per_warp = (int64_t{registers_per_thread} * arch.warp_size + unit - 1) / unit * unit;
    consider(arch.registers_per_sm / per_warp / warps, "registers");
  }
  if (shared_bytes_per_block > 0) {
    int64_t unit = arch.shared_allocation_unit;
    int64_t per_block = (shared_bytes_per_block + arch.reserved_shared_bytes_per_block + unit - 1) / unit * unit;
    consider(arch.shared_bytes_per_sm / per_block, "shared memory");
  }
  o.warps_per_sm = static_cast<int>(o.blocks_per_sm * warps);
  o.fraction = static_cast<double>(o.warps_per_sm) / arch.max_warps_per_sm();
  return o;
}

namespace {

// The four driver calls the question needs, declared from the driver API's
// documentation (CUresult and CUdevice are ints).
int AskDriver() {
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (driver == nullptr) return 0;
  using Init = int (*)(unsigned);
  using DeviceGetCount = int (*)(int*);
  using DeviceGet = int (*)(int*, int);
  using DeviceGetAttribute = int (*)(int*, int, int);
  auto init = reinterpret_cast<Init>(dlsym(driver, "cuInit"));
  auto count = reinterpret_cast<DeviceGetCount>(dlsym(driver, "cuDeviceGetCount"));
  auto get = reinterpret_cast<DeviceGet>(dlsym(driver, "cuDeviceGet"));
  auto attribute = reinterpret_cast<DeviceGetAttribute>(dlsym(driver, "cuDeviceGetAttribute"));
  int devices = 0, device = 0, major = 0, minor = 0;
  constexpr int kComputeCapabilityMajor = 75, kComputeCapabilityMinor = 76;
  bool ok = init && count && get && attribute && init(0) == 0 && count(&devices) == 0 && devices > 0 &&
            get(&device, 0) == 0 && attribute(&major, kComputeCapabilityMajor, device) == 0 &&
            attribute(&minor, kComputeCapabilityMinor, device) == 0;
  // The driver stays loaded: unloading it after cuInit is not supported.
  return ok ? major * 10 + minor : 0;
}

}  // namespace

int LocalCudaArch() {
  static const int arch = AskDriver();
  return arch;
}

}  // namespace target
}  // namespace agate
