// Our declarations of the driver ABI (driver_api.h) against the toolkit's cuda.h:
// type sizes, constant values, every entry point's signature (parameter by
// parameter: sizes, pointer levels, integer vs floating point) and the exported
// name cuda.h maps each function to, which must be the first name the runtime
// binds (driver.cc: kDriverSymbols). Built only where a CUDA toolkit is installed
// (@cuda: third_party/cuda/cuda_configure.bzl); elsewhere Bazel skips it.
#include <cuda.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <string>
#include <type_traits>

#include "runtime_minimal/cuda/driver_api.h"

namespace agate {
namespace rt {
namespace {

// Two types the ABI passes the same way: the same size, and the same kind
// (pointer, integer or enum, floating point); pointers recursively, with any two
// struct types equivalent (opaque handles: CUctx_st and cu::Context_st).
template <typename A, typename B, typename = void>
struct Equivalent {
  static constexpr bool value =
      sizeof(A) == sizeof(B) && (std::is_integral<A>::value || std::is_enum<A>::value) ==
                                    (std::is_integral<B>::value || std::is_enum<B>::value) &&
      std::is_floating_point<A>::value == std::is_floating_point<B>::value;
};
template <typename A, typename B>
struct Equivalent<A*, B*> {
  using PA = typename std::remove_cv<A>::type;
  using PB = typename std::remove_cv<B>::type;
  // std::conditional picks a type without instantiating the other: opaque
  // (incomplete) structs never reach sizeof.
  static constexpr bool value = std::conditional<
      std::is_class<PA>::value || std::is_class<PB>::value,
      std::integral_constant<bool, std::is_class<PA>::value && std::is_class<PB>::value>,
      typename std::conditional<std::is_void<PA>::value || std::is_void<PB>::value,
                                std::integral_constant<bool, std::is_void<PA>::value && std::is_void<PB>::value>,
                                Equivalent<PA, PB>>::type>::type::value;
};
template <typename A, typename B>
struct Equivalent<A*, B, typename std::enable_if<!std::is_pointer<B>::value>::type> {
  static constexpr bool value = false;
};
template <typename A, typename B>
struct Equivalent<A, B*, typename std::enable_if<!std::is_pointer<A>::value>::type> {
  static constexpr bool value = false;
};

template <typename... A>
struct List {};
template <typename L1, typename L2>
struct AllEquivalent;
template <>
struct AllEquivalent<List<>, List<>> {
  static constexpr bool value = true;
};
template <typename A, typename... As, typename B, typename... Bs>
struct AllEquivalent<List<A, As...>, List<B, Bs...>> {
  static constexpr bool value = Equivalent<A, B>::value && AllEquivalent<List<As...>, List<Bs...>>::value;
};
template <typename... As>
struct AllEquivalent<List<As...>, List<>> {
  static constexpr bool value = sizeof...(As) == 0;
};
template <typename... Bs>
struct AllEquivalent<List<>, List<Bs...>> {
  static constexpr bool value = sizeof...(Bs) == 0;
};

template <typename F1, typename F2>
struct SameSignature {
  static constexpr bool value = false;
};
template <typename R1, typename... A1, typename R2, typename... A2>
struct SameSignature<R1 (*)(A1...), R2 (*)(A2...)> {
  static constexpr bool value = Equivalent<R1, R2>::value && AllEquivalent<List<A1...>, List<A2...>>::value;
};

#define AGATE_STRINGIZE2(x) #x
#define AGATE_STRINGIZE(x) AGATE_STRINGIZE2(x)

// member of cu::DriverApi, and the cuda.h name of its function (a macro where
// cuda.h versions it: cuMemAlloc -> cuMemAlloc_v2).
#define AGATE_DRIVER_ENTRIES(X)                             \
  X(Init, cuInit)                                           \
  X(DriverGetVersion, cuDriverGetVersion)                   \
  X(DeviceGetCount, cuDeviceGetCount)                       \
  X(DeviceGet, cuDeviceGet)                                 \
  X(DeviceGetAttribute, cuDeviceGetAttribute)               \
  X(DeviceGetName, cuDeviceGetName)                         \
  X(DeviceTotalMem, cuDeviceTotalMem)                       \
  X(DevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain)       \
  X(DevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease)     \
  X(CtxSetCurrent, cuCtxSetCurrent)                         \
  X(ModuleLoadData, cuModuleLoadData)                       \
  X(ModuleUnload, cuModuleUnload)                           \
  X(ModuleGetFunction, cuModuleGetFunction)                 \
  X(FuncGetAttribute, cuFuncGetAttribute)                   \
  X(FuncSetAttribute, cuFuncSetAttribute)                   \
  X(MemAlloc, cuMemAlloc)                                   \
  X(MemFree, cuMemFree)                                     \
  X(MemGetAddressRange, cuMemGetAddressRange)               \
  X(PointerGetAttribute, cuPointerGetAttribute)             \
  X(MemcpyHtoD, cuMemcpyHtoD)                               \
  X(MemcpyDtoH, cuMemcpyDtoH)                               \
  X(MemcpyHtoDAsync, cuMemcpyHtoDAsync)                     \
  X(MemcpyDtoHAsync, cuMemcpyDtoHAsync)                     \
  X(MemcpyDtoDAsync, cuMemcpyDtoDAsync)                     \
  X(StreamCreate, cuStreamCreate)                           \
  X(StreamDestroy, cuStreamDestroy)                         \
  X(StreamSynchronize, cuStreamSynchronize)                 \
  X(StreamBeginCapture, cuStreamBeginCapture)               \
  X(StreamEndCapture, cuStreamEndCapture)                   \
  X(GraphInstantiateWithFlags, cuGraphInstantiate)          \
  X(GraphLaunch, cuGraphLaunch)                             \
  X(GraphExecDestroy, cuGraphExecDestroy)                   \
  X(GraphDestroy, cuGraphDestroy)                           \
  X(EventCreate, cuEventCreate)                             \
  X(EventDestroy, cuEventDestroy)                           \
  X(EventRecord, cuEventRecord)                             \
  X(EventSynchronize, cuEventSynchronize)                   \
  X(EventElapsedTime, cuEventElapsedTime)                   \
  X(LaunchKernel, cuLaunchKernel)                           \
  X(GetErrorName, cuGetErrorName)                           \
  X(GetErrorString, cuGetErrorString)

#define AGATE_CHECK_SIGNATURE(member, function)                                                 \
  static_assert(SameSignature<decltype(&function), decltype(cu::DriverApi::member)>::value, \
                #member " does not match " AGATE_STRINGIZE(function) " in cuda.h");
AGATE_DRIVER_ENTRIES(AGATE_CHECK_SIGNATURE)

static_assert(sizeof(cu::DevicePtr) == sizeof(CUdeviceptr), "CUdeviceptr");
static_assert(sizeof(cu::Device) == sizeof(CUdevice), "CUdevice");
static_assert(sizeof(cu::Result) == sizeof(CUresult), "CUresult");
static_assert(Equivalent<cu::Context, CUcontext>::value && Equivalent<cu::Module, CUmodule>::value &&
                  Equivalent<cu::Function, CUfunction>::value && Equivalent<cu::Stream, CUstream>::value &&
                  Equivalent<cu::Event, CUevent>::value && Equivalent<cu::Graph, CUgraph>::value &&
                  Equivalent<cu::GraphExec, CUgraphExec>::value,
              "handles");

#define AGATE_CHECK_VALUE(ours, theirs) static_assert(static_cast<long long>(ours) == (theirs), #ours " != " #theirs);
AGATE_CHECK_VALUE(cu::kSuccess, CUDA_SUCCESS)
AGATE_CHECK_VALUE(cu::kErrorInvalidValue, CUDA_ERROR_INVALID_VALUE)
AGATE_CHECK_VALUE(cu::kErrorOutOfMemory, CUDA_ERROR_OUT_OF_MEMORY)
AGATE_CHECK_VALUE(cu::kErrorNotInitialized, CUDA_ERROR_NOT_INITIALIZED)
AGATE_CHECK_VALUE(cu::kErrorDeinitialized, CUDA_ERROR_DEINITIALIZED)
AGATE_CHECK_VALUE(cu::kErrorStubLibrary, CUDA_ERROR_STUB_LIBRARY)
AGATE_CHECK_VALUE(cu::kErrorInsufficientDriver, 35)  // CUDA_ERROR_INSUFFICIENT_DRIVER is runtime-API only (cudaError)
AGATE_CHECK_VALUE(cu::kErrorCallRequiresNewerDriver, CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER)
AGATE_CHECK_VALUE(cu::kErrorDeviceUnavailable, CUDA_ERROR_DEVICE_UNAVAILABLE)
AGATE_CHECK_VALUE(cu::kErrorNoDevice, CUDA_ERROR_NO_DEVICE)
AGATE_CHECK_VALUE(cu::kErrorInvalidDevice, CUDA_ERROR_INVALID_DEVICE)
AGATE_CHECK_VALUE(cu::kErrorDeviceNotLicensed, CUDA_ERROR_DEVICE_NOT_LICENSED)
AGATE_CHECK_VALUE(cu::kErrorInvalidImage, CUDA_ERROR_INVALID_IMAGE)
AGATE_CHECK_VALUE(cu::kErrorInvalidContext, CUDA_ERROR_INVALID_CONTEXT)
AGATE_CHECK_VALUE(cu::kErrorNoBinaryForGpu, CUDA_ERROR_NO_BINARY_FOR_GPU)
AGATE_CHECK_VALUE(cu::kErrorEccUncorrectable, CUDA_ERROR_ECC_UNCORRECTABLE)
AGATE_CHECK_VALUE(cu::kErrorInvalidPtx, CUDA_ERROR_INVALID_PTX)
AGATE_CHECK_VALUE(cu::kErrorJitCompilerNotFound, CUDA_ERROR_JIT_COMPILER_NOT_FOUND)
AGATE_CHECK_VALUE(cu::kErrorUnsupportedPtxVersion, CUDA_ERROR_UNSUPPORTED_PTX_VERSION)
AGATE_CHECK_VALUE(cu::kErrorJitCompilationDisabled, CUDA_ERROR_JIT_COMPILATION_DISABLED)
AGATE_CHECK_VALUE(cu::kErrorInvalidHandle, CUDA_ERROR_INVALID_HANDLE)
AGATE_CHECK_VALUE(cu::kErrorNotFound, CUDA_ERROR_NOT_FOUND)
AGATE_CHECK_VALUE(cu::kErrorNotReady, CUDA_ERROR_NOT_READY)
AGATE_CHECK_VALUE(cu::kErrorIllegalAddress, CUDA_ERROR_ILLEGAL_ADDRESS)
AGATE_CHECK_VALUE(cu::kErrorLaunchOutOfResources, CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES)
AGATE_CHECK_VALUE(cu::kErrorLaunchTimeout, CUDA_ERROR_LAUNCH_TIMEOUT)
AGATE_CHECK_VALUE(cu::kErrorHardwareStackError, CUDA_ERROR_HARDWARE_STACK_ERROR)
AGATE_CHECK_VALUE(cu::kErrorIllegalInstruction, CUDA_ERROR_ILLEGAL_INSTRUCTION)
AGATE_CHECK_VALUE(cu::kErrorMisalignedAddress, CUDA_ERROR_MISALIGNED_ADDRESS)
AGATE_CHECK_VALUE(cu::kErrorInvalidAddressSpace, CUDA_ERROR_INVALID_ADDRESS_SPACE)
AGATE_CHECK_VALUE(cu::kErrorInvalidPc, CUDA_ERROR_INVALID_PC)
AGATE_CHECK_VALUE(cu::kErrorLaunchFailed, CUDA_ERROR_LAUNCH_FAILED)
AGATE_CHECK_VALUE(cu::kErrorNotPermitted, CUDA_ERROR_NOT_PERMITTED)
AGATE_CHECK_VALUE(cu::kErrorNotSupported, CUDA_ERROR_NOT_SUPPORTED)
AGATE_CHECK_VALUE(cu::kErrorSystemNotReady, CUDA_ERROR_SYSTEM_NOT_READY)
AGATE_CHECK_VALUE(cu::kErrorSystemDriverMismatch, CUDA_ERROR_SYSTEM_DRIVER_MISMATCH)
AGATE_CHECK_VALUE(cu::kErrorCompatNotSupportedOnDevice, CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE)
AGATE_CHECK_VALUE(cu::kErrorStreamCaptureUnsupported, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)
AGATE_CHECK_VALUE(cu::kErrorStreamCaptureInvalidated, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED)
AGATE_CHECK_VALUE(cu::kErrorStreamCaptureImplicit, CUDA_ERROR_STREAM_CAPTURE_IMPLICIT)
AGATE_CHECK_VALUE(cu::kErrorUnknown, CUDA_ERROR_UNKNOWN)
AGATE_CHECK_VALUE(cu::kDeviceAttributeMaxThreadsPerBlock, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)
AGATE_CHECK_VALUE(cu::kDeviceAttributeMaxRegistersPerBlock, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK)
AGATE_CHECK_VALUE(cu::kDeviceAttributeComputeCapabilityMajor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
AGATE_CHECK_VALUE(cu::kDeviceAttributeComputeCapabilityMinor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
AGATE_CHECK_VALUE(cu::kDeviceAttributeMaxSharedMemoryPerBlockOptin,
                  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
AGATE_CHECK_VALUE(cu::kFuncAttributeMaxThreadsPerBlock, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)
AGATE_CHECK_VALUE(cu::kFuncAttributeSharedSizeBytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)
AGATE_CHECK_VALUE(cu::kFuncAttributeNumRegs, CU_FUNC_ATTRIBUTE_NUM_REGS)
AGATE_CHECK_VALUE(cu::kFuncAttributeMaxDynamicSharedSizeBytes, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)
AGATE_CHECK_VALUE(cu::kPointerAttributeMemoryType, CU_POINTER_ATTRIBUTE_MEMORY_TYPE)
AGATE_CHECK_VALUE(cu::kPointerAttributeDeviceOrdinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL)
AGATE_CHECK_VALUE(cu::kMemoryTypeHost, CU_MEMORYTYPE_HOST)
AGATE_CHECK_VALUE(cu::kMemoryTypeDevice, CU_MEMORYTYPE_DEVICE)
AGATE_CHECK_VALUE(cu::kMemoryTypeArray, CU_MEMORYTYPE_ARRAY)
AGATE_CHECK_VALUE(cu::kMemoryTypeUnified, CU_MEMORYTYPE_UNIFIED)
AGATE_CHECK_VALUE(cu::kStreamNonBlocking, CU_STREAM_NON_BLOCKING)
AGATE_CHECK_VALUE(cu::kEventDefault, CU_EVENT_DEFAULT)
AGATE_CHECK_VALUE(cu::kStreamCaptureModeGlobal, CU_STREAM_CAPTURE_MODE_GLOBAL)
AGATE_CHECK_VALUE(cu::kStreamCaptureModeThreadLocal, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
AGATE_CHECK_VALUE(cu::kStreamCaptureModeRelaxed, CU_STREAM_CAPTURE_MODE_RELAXED)

TEST(DriverApiConformanceTest, TheRuntimeBindsTheNameCudaHMapsEachFunctionTo) {
  struct Entry {
    size_t offset;
    const char* name;
  };
#define AGATE_ENTRY(member, function) {offsetof(cu::DriverApi, member), AGATE_STRINGIZE(function)},
  const Entry entries[] = {AGATE_DRIVER_ENTRIES(AGATE_ENTRY)};
#undef AGATE_ENTRY
  ASSERT_EQ(sizeof(entries) / sizeof(entries[0]), cu::kNumDriverSymbols);
  for (const Entry& entry : entries) {
    const cu::DriverSymbol* symbol = nullptr;
    for (size_t i = 0; i < cu::kNumDriverSymbols; ++i) {
      if (cu::kDriverSymbols[i].offset == entry.offset) symbol = &cu::kDriverSymbols[i];
    }
    ASSERT_NE(symbol, nullptr) << entry.name;
    EXPECT_STREQ(symbol->names[0], entry.name) << "cuda.h maps this function to another exported name";
  }
}

TEST(DriverApiConformanceTest, TheToolkitIsTheOneChecked) {
  EXPECT_GE(CUDA_VERSION, 11040) << "the runtime needs a CUDA 11.4 driver API or newer";
}

}  // namespace
}  // namespace rt
}  // namespace agate
