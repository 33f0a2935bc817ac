/* A fake CUDA driver: a shared library (libagate_fake_cuda.so) exporting the
 * driver entry points the cuda profile binds (runtime_minimal/cuda/driver.cc),
 * so the cuda profile is tested on machines without a GPU. The runtime opens it
 * instead of libcuda.so.1 when the environment variable AGATE_CUDA_DRIVER names
 * it (test-only; see runtime_minimal/cuda/driver.h).
 *
 * What it models (memcpy-level semantics):
 *   - devices with a compute capability, a memory size and the opt-in shared
 *     memory of that architecture; primary contexts, current per thread;
 *   - device memory as host memory (a CUdeviceptr is a host address), so tests
 *     read and write it directly; copies check that they stay inside one live
 *     allocation (else CUDA_ERROR_INVALID_VALUE); allocations beyond the
 *     device's memory fail with CUDA_ERROR_OUT_OF_MEMORY;
 *   - images: PTX text (.version, .target sm_XX, .entry names and parameter
 *     counts) and real cubins (ELF, EM_CUDA: the arch from e_flags, entries from
 *     the symbol table, parameter counts from .nv.info.<entry>), loaded by the
 *     driver's rules: a cubin on its own major at its minor or newer
 *     (CUDA_ERROR_NO_BINARY_FOR_GPU otherwise), PTX on its arch or newer
 *     (CUDA_ERROR_INVALID_PTX otherwise) and only up to the configured PTX ISA
 *     version (CUDA_ERROR_UNSUPPORTED_PTX_VERSION), anything else
 *     CUDA_ERROR_INVALID_IMAGE;
 *   - kernel attributes: 32 registers and no static shared memory per thread
 *     unless the PTX says otherwise in a comment line
 *     "// agate-fake-cuda: <entry> regs=<n> static_shared=<bytes>"; a launch with
 *     more threads than the registers allow fails with
 *     CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, one with more shared memory than
 *     48 KiB (or what cuFuncSetAttribute opted in to) with CUDA_ERROR_INVALID_VALUE;
 *   - streams, stream capture into graphs (thread-local mode: a synchronous
 *     copy, allocation or synchronization on the capturing thread invalidates
 *     the capture), graph instantiation and replay, events on a simulated clock;
 *   - kernel "execution": every pointer parameter must point into a live
 *     allocation of the launching device, else CUDA_ERROR_ILLEGAL_ADDRESS
 *     (sticky, reported by the next synchronization); then the test's kernel
 *     hook, if any, runs with the parameters.
 * It does NOT execute kernels: without a hook a launch computes nothing (the
 * test kernels' host twins are one such hook). Each execution advances the
 * simulated clock by 1000 ns + 10 ns per block.
 *
 * Configuration, before the runtime first opens the driver: agate_fake_cuda_configure
 * or the environment variable AGATE_FAKE_CUDA_DEVICES (same syntax); default one
 * sm_80 device with 16 GiB. Failure injection and statistics at any time.
 * Thread-safe (one lock); hooks run under it and must not call the driver. */
#ifndef AGATE_RUNTIME_MINIMAL_CUDA_TESTING_FAKE_CUDA_H_
#define AGATE_RUNTIME_MINIMAL_CUDA_TESTING_FAKE_CUDA_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The devices, e.g. "80:16G,90:80G,75:512M" (compute capability major*10+minor,
 * memory with K/M/G suffix), or "none" for a driver without GPUs. Optional
 * ";init=<CUresult>" makes cuInit fail with that result; ";ptx_isa=<major*10+minor>"
 * sets the newest PTX ISA the fake JIT accepts (default 90). Returns 0, or -1
 * for a malformed spec or when called after cuInit. */
int agate_fake_cuda_configure(const char* spec);

/* Makes the `after`+1-th call (0: the next) of entry point `name` (its exported
 * name, e.g. "cuMemAlloc_v2") return `result` without doing anything. One
 * pending injection per name; result 0 removes it. */
void agate_fake_cuda_fail_call(const char* name, int after, int result);

/* Clears the statistics, every injection, the kernel hook and a sticky error;
 * also re-enables stream capture. Allocations and loaded modules stay. */
void agate_fake_cuda_reset(void);

/* 0: cuStreamBeginCapture returns CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED. */
void agate_fake_cuda_set_capture_supported(int supported);

typedef struct agate_fake_cuda_stats {
  uint64_t allocations;         /* cuMemAlloc calls that succeeded */
  uint64_t frees;
  uint64_t live_allocations;    /* allocated and not freed (counted since process start) */
  uint64_t live_bytes;
  uint64_t htod_copies;         /* host to device, synchronous and async */
  uint64_t htod_bytes;
  uint64_t dtoh_copies;
  uint64_t dtod_copies;
  uint64_t module_loads;        /* cuModuleLoadData calls that succeeded */
  uint64_t live_modules;        /* counted since process start */
  uint64_t kernel_launches;     /* cuLaunchKernel calls that succeeded (direct or captured) */
  uint64_t kernel_executions;   /* kernels run: direct launches plus kernels of replayed graphs */
  uint64_t captures;            /* completed stream captures */
  uint64_t graph_instantiations;
  uint64_t graph_launches;
  uint64_t live_graph_execs;    /* counted since process start */
  uint64_t func_set_attribute_calls;
  uint64_t events_recorded;
  int32_t last_image_cubin;     /* the last image loaded: 1 cubin, 0 PTX, -1 none yet */
  int32_t last_image_arch;      /* its arch (major*10+minor) */
} agate_fake_cuda_stats;

void agate_fake_cuda_get_stats(agate_fake_cuda_stats* out);

/* The dynamic shared memory bytes cuFuncSetAttribute opted kernel `entry` (of the
 * last module that has it) in to; 0 if never set; -1 if no loaded module has it. */
int agate_fake_cuda_dynamic_shared_limit(const char* entry);

/* Called for every kernel execution with the kernel's parameters (device
 * addresses); returns 0, or a CUresult to fault with (sticky). */
typedef int (*agate_fake_cuda_kernel_fn)(const char* entry, const uint64_t* params, int num_params, void* user);
void agate_fake_cuda_set_kernel_hook(agate_fake_cuda_kernel_fn hook, void* user);

/* Allocates / frees device memory on `device` as a caller's framework would
 * (for device-pointer inputs); 0 on failure. Fake device memory starts zeroed. */
uint64_t agate_fake_cuda_alloc(int device, uint64_t bytes);
void agate_fake_cuda_free(uint64_t address);

/* A kernel hook with the host twins of the cuda profile's test kernels
 * (runtime_minimal/cuda/testing/images/test_kernels.cu: agate_cuda_add,
 * agate_cuda_twice_via_workspace, agate_cuda_copy_via_shared, float32[256]);
 * CUDA_ERROR_LAUNCH_FAILED for any other kernel. Installed at cuInit when the
 * environment variable AGATE_FAKE_CUDA_TEST_KERNELS is 1, so tests outside C++
 * (the command line's, the bindings') see the test modules compute. */
int agate_fake_cuda_run_test_kernel(const char* entry, const uint64_t* params, int num_params, void* user);

#ifdef __cplusplus
}
#endif

#endif /* AGATE_RUNTIME_MINIMAL_CUDA_TESTING_FAKE_CUDA_H_ */
