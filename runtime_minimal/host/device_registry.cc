#include "runtime_minimal/host/device_registry.h"

#include <atomic>

namespace agate {
namespace rt {
namespace {
std::atomic<const DeviceBackend*> g_cuda_backend{nullptr};
}  // namespace

const DeviceBackend* CudaBackend() { return g_cuda_backend.load(std::memory_order_acquire); }

void RegisterCudaBackend(const DeviceBackend* backend) { g_cuda_backend.store(backend, std::memory_order_release); }

}  // namespace rt
}  // namespace agate
