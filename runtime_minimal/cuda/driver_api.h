// The part of the CUDA driver API the cuda profile uses, declared here instead
// of including the toolkit's <cuda.h>.
//
// Why our own declarations: the driver ABI is stable (NVIDIA never changes an
// exported entry point's signature: a changed one gets a new versioned name, such
// as cuMemAlloc_v2), and the runtime opens libcuda.so.1 with dlopen and binds
// every entry point by name. It needs the declarations only, so declaring the
// few types, constants and signatures it uses removes the build's dependency on
// the CUDA toolkit: the runtime and every binding build on plain Debian. The
// declarations are checked against the toolkit's cuda.h, whenever a toolkit is
// installed, by driver_api_conformance_test (sizes, signatures, constant values
// and the versioned symbol names cuda.h maps each function to).
//
// Everything lives in agate::rt::cu, so a translation unit may include both this
// header and cuda.h (the conformance test does).
#ifndef AGATE_RUNTIME_MINIMAL_CUDA_DRIVER_API_H_
#define AGATE_RUNTIME_MINIMAL_CUDA_DRIVER_API_H_

#include <stddef.h>
#include <stdint.h>

namespace agate {
namespace rt {
namespace cu {

// CUresult. Only the values the runtime names or maps are listed.
using Result = int;
enum : Result {
  kSuccess = 0,
  kErrorInvalidValue = 1,
  kErrorOutOfMemory = 2,
  kErrorNotInitialized = 3,
  kErrorDeinitialized = 4,
  kErrorStubLibrary = 34,
  kErrorInsufficientDriver = 35,
  kErrorCallRequiresNewerDriver = 36,
  kErrorDeviceUnavailable = 46,
  kErrorNoDevice = 100,
  kErrorInvalidDevice = 101,
  kErrorDeviceNotLicensed = 102,
  kErrorInvalidImage = 200,
  kErrorInvalidContext = 201,
  kErrorNoBinaryForGpu = 209,
  kErrorEccUncorrectable = 214,
  kErrorInvalidPtx = 218,
  kErrorJitCompilerNotFound = 221,
  kErrorUnsupportedPtxVersion = 222,
  kErrorJitCompilationDisabled = 223,
  kErrorInvalidHandle = 400,
  kErrorNotFound = 500,
  kErrorNotReady = 600,
  kErrorIllegalAddress = 700,
  kErrorLaunchOutOfResources = 701,
  kErrorLaunchTimeout = 702,
  kErrorHardwareStackError = 714,
  kErrorIllegalInstruction = 715,
  kErrorMisalignedAddress = 716,
  kErrorInvalidAddressSpace = 717,
  kErrorInvalidPc = 718,
  kErrorLaunchFailed = 719,
  kErrorNotPermitted = 800,
  kErrorNotSupported = 801,
  kErrorSystemNotReady = 802,
  kErrorSystemDriverMismatch = 803,
  kErrorCompatNotSupportedOnDevice = 804,
  kErrorStreamCaptureUnsupported = 900,
  kErrorStreamCaptureInvalidated = 901,
  kErrorStreamCaptureImplicit = 906,
  kErrorUnknown = 999,
};

using Device = int;                    // CUdevice
using DevicePtr = unsigned long long;  // CUdeviceptr (64-bit)
struct Context_st;
struct Module_st;
struct Function_st;
struct Stream_st;
struct Event_st;
struct Graph_st;
struct GraphExec_st;
using Context = Context_st*;      // CUcontext
using Module = Module_st*;        // CUmodule
using Function = Function_st*;    // CUfunction
using Stream = Stream_st*;        // CUstream
using Event = Event_st*;          // CUevent
using Graph = Graph_st*;          // CUgraph
using GraphExec = GraphExec_st*;  // CUgraphExec

// CUdevice_attribute values.
using DeviceAttribute = int;
enum : DeviceAttribute {
  kDeviceAttributeMaxThreadsPerBlock = 1,
  kDeviceAttributeMaxRegistersPerBlock = 12,
  kDeviceAttributeComputeCapabilityMajor = 75,
  kDeviceAttributeComputeCapabilityMinor = 76,
  kDeviceAttributeMaxSharedMemoryPerBlockOptin = 97,
};

// CUfunction_attribute values.
using FunctionAttribute = int;
enum : FunctionAttribute {
  kFuncAttributeMaxThreadsPerBlock = 0,  // what the kernel's register use allows
  kFuncAttributeSharedSizeBytes = 1,     // static shared memory
  kFuncAttributeNumRegs = 4,
  kFuncAttributeMaxDynamicSharedSizeBytes = 8,
};

// CUpointer_attribute values.
using PointerAttribute = int;
enum : PointerAttribute {
  kPointerAttributeMemoryType = 2,       // CUmemorytype (unsigned int)
  kPointerAttributeDeviceOrdinal = 9,    // int
};

// CUmemorytype values.
enum : unsigned int {
  kMemoryTypeHost = 1,
  kMemoryTypeDevice = 2,
  kMemoryTypeArray = 3,
  kMemoryTypeUnified = 4,
};

enum : unsigned int { kStreamNonBlocking = 1 };  // CU_STREAM_NON_BLOCKING
enum : unsigned int { kEventDefault = 0 };       // CU_EVENT_DEFAULT

// CUstreamCaptureMode values.
using StreamCaptureMode = int;
enum : StreamCaptureMode {
  kStreamCaptureModeGlobal = 0,
  kStreamCaptureModeThreadLocal = 1,
  kStreamCaptureModeRelaxed = 2,
};

// The entry points, one function type each (CUDAAPI is empty on Linux).
using InitFn = Result (*)(unsigned int flags);
using DriverGetVersionFn = Result (*)(int* version);
using DeviceGetCountFn = Result (*)(int* count);
using DeviceGetFn = Result (*)(Device* device, int ordinal);
using DeviceGetAttributeFn = Result (*)(int* value, DeviceAttribute attribute, Device device);
using DeviceGetNameFn = Result (*)(char* name, int length, Device device);
using DeviceTotalMemFn = Result (*)(size_t* bytes, Device device);
using DevicePrimaryCtxRetainFn = Result (*)(Context* context, Device device);
using DevicePrimaryCtxReleaseFn = Result (*)(Device device);
using CtxSetCurrentFn = Result (*)(Context context);
using ModuleLoadDataFn = Result (*)(Module* module, const void* image);
using ModuleUnloadFn = Result (*)(Module module);
using ModuleGetFunctionFn = Result (*)(Function* function, Module module, const char* name);
using FuncGetAttributeFn = Result (*)(int* value, FunctionAttribute attribute, Function function);
using FuncSetAttributeFn = Result (*)(Function function, FunctionAttribute attribute, int value);
using MemAllocFn = Result (*)(DevicePtr* pointer, size_t bytes);
using MemFreeFn = Result (*)(DevicePtr pointer);
using MemGetAddressRangeFn = Result (*)(DevicePtr* base, size_t* bytes, DevicePtr pointer);
using PointerGetAttributeFn = Result (*)(void* data, PointerAttribute attribute, DevicePtr pointer);
using MemcpyHtoDFn = Result (*)(DevicePtr dst, const void* src, size_t bytes);
using MemcpyDtoHFn = Result (*)(void* dst, DevicePtr src, size_t bytes);
using MemcpyHtoDAsyncFn = Result (*)(DevicePtr dst, const void* src, size_t bytes, Stream stream);
using MemcpyDtoHAsyncFn = Result (*)(void* dst, DevicePtr src, size_t bytes, Stream stream);
using MemcpyDtoDAsyncFn = Result (*)(DevicePtr dst, DevicePtr src, size_t bytes, Stream stream);
using StreamCreateFn = Result (*)(Stream* stream, unsigned int flags);
using StreamDestroyFn = Result (*)(Stream stream);
using StreamSynchronizeFn = Result (*)(Stream stream);
using StreamBeginCaptureFn = Result (*)(Stream stream, StreamCaptureMode mode);
using StreamEndCaptureFn = Result (*)(Stream stream, Graph* graph);
using GraphInstantiateWithFlagsFn = Result (*)(GraphExec* exec, Graph graph, unsigned long long flags);
using GraphLaunchFn = Result (*)(GraphExec exec, Stream stream);
using GraphExecDestroyFn = Result (*)(GraphExec exec);
using GraphDestroyFn = Result (*)(Graph graph);
using EventCreateFn = Result (*)(Event* event, unsigned int flags);
using EventDestroyFn = Result (*)(Event event);
using EventRecordFn = Result (*)(Event event, Stream stream);
using EventSynchronizeFn = Result (*)(Event event);
using EventElapsedTimeFn = Result (*)(float* milliseconds, Event start, Event end);
using LaunchKernelFn = Result (*)(Function function, unsigned int grid_x, unsigned int grid_y, unsigned int grid_z,
                                  unsigned int block_x, unsigned int block_y, unsigned int block_z,
                                  unsigned int shared_memory_bytes, Stream stream, void** params, void** extra);
using GetErrorNameFn = Result (*)(Result error, const char** name);
using GetErrorStringFn = Result (*)(Result error, const char** text);

// The bound driver. Each entry is found by the first of its names that the
// library exports (kDriverSymbols in driver.cc: the versioned name cuda.h maps
// the function to today, then older names older drivers export).
struct DriverApi {
  InitFn Init;
  DriverGetVersionFn DriverGetVersion;
  DeviceGetCountFn DeviceGetCount;
  DeviceGetFn DeviceGet;
  DeviceGetAttributeFn DeviceGetAttribute;
  DeviceGetNameFn DeviceGetName;
  DeviceTotalMemFn DeviceTotalMem;
  DevicePrimaryCtxRetainFn DevicePrimaryCtxRetain;
  DevicePrimaryCtxReleaseFn DevicePrimaryCtxRelease;
  CtxSetCurrentFn CtxSetCurrent;
  ModuleLoadDataFn ModuleLoadData;
  ModuleUnloadFn ModuleUnload;
  ModuleGetFunctionFn ModuleGetFunction;
  FuncGetAttributeFn FuncGetAttribute;
  FuncSetAttributeFn FuncSetAttribute;
  MemAllocFn MemAlloc;
  MemFreeFn MemFree;
  MemGetAddressRangeFn MemGetAddressRange;
  PointerGetAttributeFn PointerGetAttribute;
  MemcpyHtoDFn MemcpyHtoD;
  MemcpyDtoHFn MemcpyDtoH;
  MemcpyHtoDAsyncFn MemcpyHtoDAsync;
  MemcpyDtoHAsyncFn MemcpyDtoHAsync;
  MemcpyDtoDAsyncFn MemcpyDtoDAsync;
  StreamCreateFn StreamCreate;
  StreamDestroyFn StreamDestroy;
  StreamSynchronizeFn StreamSynchronize;
  StreamBeginCaptureFn StreamBeginCapture;
  StreamEndCaptureFn StreamEndCapture;
  GraphInstantiateWithFlagsFn GraphInstantiateWithFlags;
  GraphLaunchFn GraphLaunch;
  GraphExecDestroyFn GraphExecDestroy;
  GraphDestroyFn GraphDestroy;
  EventCreateFn EventCreate;
  EventDestroyFn EventDestroy;
  EventRecordFn EventRecord;
  EventSynchronizeFn EventSynchronize;
  EventElapsedTimeFn EventElapsedTime;
  LaunchKernelFn LaunchKernel;
  GetErrorNameFn GetErrorName;
  GetErrorStringFn GetErrorString;
};

// One DriverApi member: where it is and the names it may be exported under
// (most recent first, NULL-terminated).
struct DriverSymbol {
  size_t offset;  // offsetof(DriverApi, member)
  const char* names[3];
};

// Every member of DriverApi, in declaration order.
extern const DriverSymbol kDriverSymbols[];
extern const size_t kNumDriverSymbols;

}  // namespace cu
}  // namespace rt
}  // namespace agate

#endif  // AGATE_RUNTIME_MINIMAL_CUDA_DRIVER_API_H_
