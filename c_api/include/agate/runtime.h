/* agate runtime C API: load a compiled module, inspect it, run it.
 *
 * Why a C API: applications in any language (C, C++, Python via ctypes, Java via
 * JNI) and any toolchain must be able to run an agate module, and a module
 * outlives the compiler that built it. So nothing C++ crosses this boundary:
 * handles are opaque, every function returns agate_status_t, tensors are DLPack
 * DLTensors, and memory is freed only by the function named next to it.
 *
 * Errors. Every function returns AGATE_OK or a status (agate/status.h). After a
 * non-OK status, agate_last_error_message() says what went wrong, naming the
 * tensor, kernel, call or byte offset at fault. The message is thread-local.
 *
 * Threads. A module is immutable after loading: any number of threads may use
 * one module and create executors from it at the same time. An executor is used
 * by one thread at a time; different executors run in parallel freely.
 *
 * Profiles. The runtime comes in three profiles; each function says which ones
 * have it:
 *   [core]  parse, verify and run with caller-provided memory and a static kernel
 *           table; no heap, no files, no threads: what a microcontroller links.
 *   [host]  core + loading from files (mmap), CPU kernels from the object embedded
 *           in the module, a thread pool and a default allocator.
 *   [cuda]  host + CUDA modules through the CUDA driver API, opened at run time,
 *           so the same binary runs (and says AGATE_UNAVAILABLE) without a GPU.
 *           It needs no CUDA toolkit to build.
 * libagate_runtime.so is the cuda profile. A runtime built without the cuda
 * profile refuses CUDA modules with AGATE_UNAVAILABLE ("this runtime was built
 * without the cuda profile").
 *
 * CUDA modules. A CUDA module is loaded onto one GPU (agate_module_options.
 * device_id, default 0): its kernels and constants are uploaded once, at load.
 * Each executor owns its device memory (arena, workspace, outputs) and a stream;
 * its first run records the whole plan as a CUDA graph, later runs replay it
 * (and record it again after an input or output is bound to other device
 * memory). Inputs may be host memory (kDLCPU, kDLCUDAHost: copied in at each
 * run) or memory of the module's GPU (kDLCUDA, kDLCUDAManaged: used in place,
 * no copy; it must be 16-byte aligned and complete when agate_executor_run is
 * called). Outputs stay on the GPU (agate_executor_get_output gives a kDLCUDA
 * view) until copied out, or are written straight into the caller's device
 * memory (agate_executor_set_output). agate_executor_run returns when the
 * outputs are complete. Without a driver or GPU, loading a CUDA module fails
 * with AGATE_UNAVAILABLE naming what is missing; driver errors become statuses
 * whose message names the driver call and the kernel. Test-only: the
 * environment variable AGATE_CUDA_DRIVER names another driver library to open
 * instead of libcuda.so.1 (the test suite's fake driver).
 *
 * ABI stability. agate_runtime_abi_version() returns the version the library
 * implements; compare it with AGATE_RUNTIME_ABI_VERSION from the header you
 * compiled against. Rules for growing the API without breaking old binaries:
 *   - an exported function never changes its signature or meaning and is never
 *     removed within ABI major 1;
 *   - new functions are appended in a new symbol-version node of the version
 *     script (c_api/runtime.lds: AGATE_RUNTIME_1.1 inheriting AGATE_RUNTIME_1.0),
 *     with AGATE_RUNTIME_ABI_VERSION_MINOR bumped, so an old library refuses a new
 *     binary at load time instead of failing at the first call;
 *   - structs the caller fills (agate_executor_options) start with struct_size and
 *     only grow at the end; the library reads only the fields the caller's size
 *     covers. Structs the library fills (agate_tensor_info) are never resized
 *     within a major version.
 * Only agate_* symbols are exported (c_api/runtime.lds); the list is checked
 * against c_api/runtime_symbols.txt by a test.
 *
 * C99, includes only <stddef.h>, <stdint.h>, agate/status.h, agate/kernel_abi.h
 * and dlpack/dlpack.h.
 */
#ifndef AGATE_RUNTIME_H_
#define AGATE_RUNTIME_H_

#include <stddef.h>
#include <stdint.h>

#include "agate/kernel_abi.h"
#include "agate/status.h"
#include "dlpack/dlpack.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(AGATE_RUNTIME_BUILD) && defined(__GNUC__)
#define AGATE_API __attribute__((visibility("default")))
#else
#define AGATE_API
#endif

#define AGATE_RUNTIME_ABI_VERSION_MAJOR 1
#define AGATE_RUNTIME_ABI_VERSION_MINOR 5
#define AGATE_RUNTIME_ABI_VERSION ((AGATE_RUNTIME_ABI_VERSION_MAJOR << 16) | AGATE_RUNTIME_ABI_VERSION_MINOR)

/* ------------------------------------------------------------------------- */
/* Library                                                                    */

/* [core] The ABI version this library implements: (major << 16) | minor. A caller
 * built against header version H may use the library when the majors are equal
 * and the library's minor >= H's minor. Never fails. */
AGATE_API uint32_t agate_runtime_abi_version(void);

/* [core] A short static name of a status ("corrupt"); "unknown status" for values
 * this library does not know. The string is static: never free it. Never fails. */
AGATE_API const char* agate_status_name(agate_status_t status);

/* [core] The message of the last non-OK status returned on this thread. The
 * string is owned by the runtime and stays valid until the next agate call on
 * this thread; copy it to keep it. A successful call does not clear it.
 * (The core profile built for a single-threaded target, AGATE_RT_SINGLE_THREADED,
 * keeps one message for the whole program.) Never fails. */
AGATE_API const char* agate_last_error_message(void);

/* ------------------------------------------------------------------------- */
/* Static kernel tables                                                       */

/* Kernels linked into the program, looked up by name when a module is loaded.
 * Microcontroller modules (target kind "micro") resolve every kernel here; host
 * modules may also use them. The runtime borrows the table and the names for as
 * long as any module loaded with it lives. */
typedef struct agate_kernel_entry {
  const char* name;  /* the kernel's name in the module */
  agate_kernel_fn fn;
} agate_kernel_entry;

typedef struct agate_kernel_table {
  const agate_kernel_entry* entries;
  uint32_t count;
} agate_kernel_table;

/* ------------------------------------------------------------------------- */
/* Modules                                                                    */

typedef struct agate_module agate_module_t;

/* A module is code. A host module embeds a shared object that the loader
 * dlopen's: loading the module runs that object's constructors, before any
 * kernel is called and whatever the plan says. Load modules only from sources
 * you would run a program from. The format's FNV-1a checksums catch accidental
 * corruption (integrity), not a deliberate change: anyone can recompute them
 * (no authenticity). For authenticity, sign modules (agate compile --sign-key,
 * an Ed25519 signature appended to the file: runtime_minimal/host/
 * module_signature.h gives the format) and load them with
 * agate_module_load_from_{file,memory}_signed and the public key: unsigned
 * modules and modules whose signature does not verify are then refused before
 * anything of them is mapped as code. The other loaders accept signed modules
 * and ignore the signature.
 *
 * Every load verifies the module before anything can run: the FlatBuffers
 * verifier, then the semantic checks (format version, target, every offset in
 * the arena, every kernel present, shapes consistent). A module that fails is
 * refused with AGATE_CORRUPT, AGATE_VERSION_MISMATCH, AGATE_OUT_OF_RANGE or
 * AGATE_NOT_FOUND and a message; nothing is allocated then. */

/* [core] The bytes of caller memory agate_module_load_in_place needs for this
 * module. Verifies the module. *out_bytes is written only on AGATE_OK. */
AGATE_API agate_status_t agate_module_in_place_bytes(const void* data, size_t size, size_t* out_bytes);

/* [core] Loads a module without copying and without a heap.
 * data/size: the module bytes, borrowed (typically in flash or a mapped file):
 *   they must stay valid and unchanged until agate_module_free, and must be
 *   aligned to the module's largest constant alignment (constants are used in
 *   place), else AGATE_INVALID_ARGUMENT.
 * kernels: the static kernel table every kernel of the module is looked up in
 *   (the embedded host object is not used in place), borrowed for the module's
 *   lifetime; AGATE_NOT_FOUND names the first kernel it lacks.
 * memory/memory_bytes: caller memory of at least agate_module_in_place_bytes,
 *   8-byte aligned, borrowed until agate_module_free (AGATE_RESOURCE_EXHAUSTED
 *   naming the bytes needed if it is too small).
 * *out_module: the module handle, written only on AGATE_OK; free it with
 *   agate_module_free (which releases nothing the caller gave). */
AGATE_API agate_status_t agate_module_load_in_place(const void* data, size_t size, const agate_kernel_table* kernels,
                                                    void* memory, size_t memory_bytes, agate_module_t** out_module);

/* [core] (ABI 1.4) Like agate_module_load_in_place, for a kernel table generated
 * together with its module (agate compile --package writes both, and the table's
 * `agate_<prefix>_kernel_fingerprint`): kernel_fingerprint must equal the
 * fingerprint the module records (FNV-1a 64 of its kernels' prefix, names,
 * argument sizes, workspace and code), else AGATE_INVALID_ARGUMENT naming both
 * values, so kernels of another model, or of another compile of this one, are
 * refused rather than run. A module without a fingerprint (format < 1.2) is
 * refused with AGATE_VERSION_MISMATCH; kernel_fingerprint 0 with
 * AGATE_INVALID_ARGUMENT. agate_module_load_in_place does not compare
 * fingerprints (hand-written tables have none). */
AGATE_API agate_status_t agate_module_load_in_place_fingerprinted(const void* data, size_t size,
                                                                  const agate_kernel_table* kernels,
                                                                  uint64_t kernel_fingerprint, void* memory,
                                                                  size_t memory_bytes, agate_module_t** out_module);

/* [host] Loads a module from memory. The bytes are copied (into memory aligned
 * for the constants), so the caller may free data as soon as this returns.
 * kernels: optional static kernel table (NULL: none), borrowed for the module's
 * lifetime. *out_module is owned by the caller: free it with agate_module_free. */
AGATE_API agate_status_t agate_module_load_from_memory(const void* data, size_t size, const agate_kernel_table* kernels,
                                                       agate_module_t** out_module);

/* [host] Loads a module from a file by mapping it read-only (zero-copy: constants
 * are used in place). path is borrowed for the call only; kernels as above.
 * AGATE_NOT_FOUND / AGATE_IO when the file cannot be opened or mapped.
 * *out_module is owned by the caller: free it with agate_module_free. */
AGATE_API agate_status_t agate_module_load_from_file(const char* path, const agate_kernel_table* kernels,
                                                     agate_module_t** out_module);

/* [core] Frees a module: unmaps its file, unloads its kernels, frees what the
 * runtime allocated. Every executor created from it must have been freed first.
 * NULL is allowed and does nothing. */
AGATE_API agate_status_t agate_module_free(agate_module_t* module);

/* [core] The target string the module was compiled for (e.g. "llvm -mcpu=skylake").
 * *out_target is borrowed from the module: valid until agate_module_free. */
AGATE_API agate_status_t agate_module_target(const agate_module_t* module, const char** out_target);

/* [core] The number of model inputs / outputs. */
AGATE_API agate_status_t agate_module_num_inputs(const agate_module_t* module, uint32_t* out_count);
AGATE_API agate_status_t agate_module_num_outputs(const agate_module_t* module, uint32_t* out_count);

/* A model input or output. name and shape are borrowed from the module: valid
 * until agate_module_free. Tensors are dense and row-major. For a module with
 * dynamic shapes (ABI 1.5, module format 2.0), shape holds each dynamic
 * dimension's upper bound and bytes the size at the upper bounds (what an
 * output buffer must hold); agate_module_input_dim / agate_module_output_dim
 * say which dimensions are dynamic. */
typedef struct agate_tensor_info {
  const char* name;
  DLDataType dtype;
  int32_t ndim;
  const int64_t* shape; /* ndim entries */
  uint64_t bytes;       /* the tensor's size in bytes */
} agate_tensor_info;

/* [core] Describes input / output `index` (AGATE_OUT_OF_RANGE past the count). */
AGATE_API agate_status_t agate_module_input_info(const agate_module_t* module, uint32_t index, agate_tensor_info* out_info);
AGATE_API agate_status_t agate_module_output_info(const agate_module_t* module, uint32_t index,
                                                  agate_tensor_info* out_info);

/* (ABI 1.5) What a dimension of an input or output is at run time. */
#define AGATE_DIM_STATIC 0          /* exactly max (== min) */
#define AGATE_DIM_SYMBOLIC 1        /* any extent in [min, max], given by the inputs; named `symbol` */
#define AGATE_DIM_VALUE_DEPENDENT 2 /* known after a run (0 <= extent <= max): agate_executor_output_shape */

typedef struct agate_dim_info {
  int64_t min;
  int64_t max;
  const char* symbol; /* AGATE_DIM_SYMBOLIC: the symbol's name ("N"), borrowed from the module; else NULL */
  int32_t kind;       /* AGATE_DIM_* */
} agate_dim_info;

/* [core] (ABI 1.5) Describes axis `axis` of input / output `index`
 * (AGATE_OUT_OF_RANGE past the count or the tensor's ndim). Every dimension of
 * a static module is AGATE_DIM_STATIC. A symbol appears on axis 0 of format
 * 2.x modules (batch-style: the module was compiled for a few extents of it, and
 * a run splits the actual extent into chunks of those), or on any axes of
 * format 3.x modules (padded, e.g. a sequence length: a run of extent n runs the
 * smallest compiled extent >= n once on inputs the runtime pads with zeros, and
 * returns the outputs at n); every axis that names it takes one extent. */
AGATE_API agate_status_t agate_module_input_dim(const agate_module_t* module, uint32_t index, int32_t axis,
                                                agate_dim_info* out_info);
AGATE_API agate_status_t agate_module_output_dim(const agate_module_t* module, uint32_t index, int32_t axis,
                                                 agate_dim_info* out_info);

/* [core] The index of the input / output called `name` (AGATE_NOT_FOUND if none).
 * name is borrowed for the call only. */
AGATE_API agate_status_t agate_module_find_input(const agate_module_t* module, const char* name, uint32_t* out_index);
AGATE_API agate_status_t agate_module_find_output(const agate_module_t* module, const char* name, uint32_t* out_index);

/* ------------------------------------------------------------------------- */
/* Executors                                                                  */

/* An executor holds the memory of one run: the arena the plan addresses, the
 * kernels' workspace and the output tensors. It borrows its module, which must
 * outlive it. */
typedef struct agate_executor agate_executor_t;

/* [core] The bytes of caller memory agate_executor_create_in_place needs. */
AGATE_API agate_status_t agate_executor_in_place_bytes(const agate_module_t* module, size_t* out_bytes);

/* [core] Creates an executor inside caller memory (no heap): memory must be at
 * least agate_executor_in_place_bytes bytes, 64-byte aligned, and is borrowed
 * until agate_executor_free. Kernels' parallel loops run on the calling thread.
 * *out_executor is written only on AGATE_OK. */
AGATE_API agate_status_t agate_executor_create_in_place(const agate_module_t* module, void* memory, size_t memory_bytes,
                                                        agate_executor_t** out_executor);

/* Options of agate_executor_create. Set struct_size = sizeof(agate_executor_options);
 * fields past the caller's struct_size read as zero. */
typedef struct agate_executor_options {
  uint32_t struct_size;
  /* 0: kernels' parallel loops use the runtime's shared thread pool
   * (agate_runtime_set_num_threads); 1: they run on the calling thread. */
  int32_t num_threads;
} agate_executor_options;

/* [host] Creates an executor whose memory the runtime allocates. options may be
 * NULL (defaults). *out_executor is owned by the caller: free with agate_executor_free. */
AGATE_API agate_status_t agate_executor_create(const agate_module_t* module, const agate_executor_options* options,
                                               agate_executor_t** out_executor);

/* [core] Binds input `index` to the caller's tensor, without copying (CUDA
 * modules copy a host tensor to the device at run time). The DLTensor struct is
 * read during this call only; tensor->data is borrowed: keep it valid and
 * unchanged until the agate_executor_run that reads it has returned, or bind
 * another tensor. The tensor must match the module's input exactly: dtype,
 * ndim, shape, compact row-major strides (or NULL), data aligned to the element
 * size (data may be NULL only for a zero-element tensor, which nothing reads),
 * device kDLCPU (CUDA modules: kDLCPU or kDLCUDAHost, or kDLCUDA or
 * kDLCUDAManaged memory of the module's GPU, 16-byte aligned).
 * AGATE_INVALID_ARGUMENT names the input and what differs; the previous binding
 * then stays. A symbolic dimension (ABI 1.5) takes any extent in its [min, max]
 * (outside: AGATE_INVALID_ARGUMENT naming the input, the axis, the symbol and
 * its bounds); every other dimension must match exactly. */
AGATE_API agate_status_t agate_executor_set_input(agate_executor_t* executor, uint32_t index, const DLTensor* tensor);

/* [core] Runs the plan once. Every input must have been bound. A kernel that
 * returns non-zero stops the run with AGATE_INTERNAL naming the kernel and call.
 * Dynamic shapes (ABI 1.5): every input carrying a symbol must have the same
 * extent on it (else AGATE_INVALID_ARGUMENT naming both inputs, the axis and the
 * extents); an output bound with agate_executor_set_output must have that
 * extent too. A value-dependent extent the plan reports beyond its output's
 * upper bound is AGATE_INTERNAL naming the output and axis (the run-time shapes
 * of the previous run then stay). */
AGATE_API agate_status_t agate_executor_run(agate_executor_t* executor);

/* [core] Describes output `index` as a DLTensor view of executor memory (device
 * kDLCPU; kDLCUDA for CUDA modules). out->data and out->shape are borrowed: data
 * until the next agate_executor_run or agate_executor_free, shape until
 * agate_module_free. out->strides is NULL (compact). A zero-element output
 * has no storage: its out->data may be NULL. The caller owns the
 * DLTensor struct itself. Modules with dynamic shapes (ABI 1.5): out->shape is
 * the run-time shape of the last run (the upper bounds before the first run),
 * in executor-owned storage valid until the next agate_executor_run or
 * agate_executor_free; the data is compact at that shape. */
AGATE_API agate_status_t agate_executor_get_output(agate_executor_t* executor, uint32_t index, DLTensor* out);

/* [core] Copies output `index` into the caller's tensor (which must match like
 * an input; kDLCPU memory; CUDA modules also copy into kDLCUDAHost memory or
 * memory of the module's GPU). dst->data is borrowed for the call only. Modules
 * with dynamic shapes: dst must have the output's run-time shape of the last
 * run (agate_executor_output_shape). */
AGATE_API agate_status_t agate_executor_copy_output(agate_executor_t* executor, uint32_t index, const DLTensor* dst);

/* [core] (ABI 1.5) Writes output `index`'s run-time shape after the last run
 * (its upper bounds before the first run; for static modules its shape) to
 * dims[0 .. ndim) and ndim to *out_ndim. AGATE_OUT_OF_RANGE, with *out_ndim
 * still written, when capacity < ndim. The caller owns dims. */
AGATE_API agate_status_t agate_executor_output_shape(agate_executor_t* executor, uint32_t index, int64_t* dims,
                                                     int32_t capacity, int32_t* out_ndim);

/* [core] The arena bytes this executor holds for intermediate tensors (equals
 * the module's plan). */
AGATE_API agate_status_t agate_executor_arena_bytes(const agate_executor_t* executor, uint64_t* out_bytes);

/* [core] Frees an executor and what the runtime allocated for it (nothing, for
 * one created in place). NULL is allowed and does nothing. */
AGATE_API agate_status_t agate_executor_free(agate_executor_t* executor);

/* ------------------------------------------------------------------------- */
/* Profiling [host] (ABI 1.1)                                                 */

/* The number of kernel calls one agate_executor_run makes (the plan's length). */
AGATE_API agate_status_t agate_module_num_calls(const agate_module_t* module, uint32_t* out_count);

/* The kernel plan call `index` runs. *out_name is borrowed from the module
 * (valid until agate_module_free); kernels of a fused group are named after it.
 * AGATE_OUT_OF_RANGE when index >= agate_module_num_calls. */
AGATE_API agate_status_t agate_module_call_kernel_name(const agate_module_t* module, uint32_t index,
                                                       const char** out_name);

/* Runs the plan once, like agate_executor_run, and writes each call's time in
 * nanoseconds to out_call_ns[0 .. count). `count` must equal
 * agate_module_num_calls; the caller owns the array. CPU modules: each call's
 * wall time (monotonic clock, parallel loops included); two clock reads per
 * call, so the sum is a little above an unprofiled run. CUDA modules (ABI 1.2):
 * each kernel's device time between CUDA events recorded around it (resolution
 * about 0.5 us), launched one by one rather than as a graph, so the sum is
 * above a graph replay's time at small batch sizes. Modules with dynamic shapes
 * (plan variants) are not profiled: AGATE_UNSUPPORTED. */
AGATE_API agate_status_t agate_executor_run_profiled(agate_executor_t* executor, uint64_t* out_call_ns,
                                                     uint32_t count);

/* ------------------------------------------------------------------------- */
/* Devices [host] (ABI 1.2)                                                   */

/* Options of the *_with_options loaders. Set struct_size =
 * sizeof(agate_module_options); fields past the caller's struct_size read as zero. */
typedef struct agate_module_options {
  uint32_t struct_size;
  /* CUDA modules: the ordinal of the GPU to load onto (0: the first, in the
   * driver's order, which CUDA_VISIBLE_DEVICES controls); AGATE_OUT_OF_RANGE
   * naming the GPU count when there is no such GPU. Executors of the module run
   * there. CPU modules run on the host and take only 0 (else
   * AGATE_INVALID_ARGUMENT). */
  int32_t device_id;
} agate_module_options;

/* Like agate_module_load_from_file / agate_module_load_from_memory, with
 * options (NULL: the defaults, which is what those functions use). */
AGATE_API agate_status_t agate_module_load_from_file_with_options(const char* path, const agate_kernel_table* kernels,
                                                                  const agate_module_options* options,
                                                                  agate_module_t** out_module);
AGATE_API agate_status_t agate_module_load_from_memory_with_options(const void* data, size_t size,
                                                                    const agate_kernel_table* kernels,
                                                                    const agate_module_options* options,
                                                                    agate_module_t** out_module);

/* [host] (ABI 1.3) Like the *_with_options loaders, for signed modules only:
 * public_key is a 32-byte Ed25519 public key (libsodium's crypto_sign format;
 * agate keygen writes one), borrowed for the call. A module without a signature
 * is refused with AGATE_INVALID_ARGUMENT, one whose signature does not verify
 * with this key (changed after signing, or signed with another key) with
 * AGATE_CORRUPT, before its kernels are opened. From a file, the bytes are read
 * (not mapped), so the verified bytes are the bytes used. New functions rather
 * than an options field, so that a binary that asks for verification cannot
 * run on an older library that would silently skip it. */
AGATE_API agate_status_t agate_module_load_from_file_signed(const char* path, const agate_kernel_table* kernels,
                                                            const agate_module_options* options,
                                                            const uint8_t* public_key, agate_module_t** out_module);
AGATE_API agate_status_t agate_module_load_from_memory_signed(const void* data, size_t size,
                                                              const agate_kernel_table* kernels,
                                                              const agate_module_options* options,
                                                              const uint8_t* public_key, agate_module_t** out_module);

/* Where the module's kernels run: {kDLCPU, 0} or {kDLCUDA, ordinal}. */
AGATE_API agate_status_t agate_module_device(const agate_module_t* module, DLDevice* out_device);

/* How many devices of DLPack type `device_type` this runtime can run modules on:
 * 1 for kDLCPU; the GPUs the CUDA driver sees for kDLCUDA (AGATE_UNAVAILABLE,
 * with the reason, without a driver or GPU, or in a runtime built without the
 * cuda profile); AGATE_UNSUPPORTED for other types. */
AGATE_API agate_status_t agate_runtime_device_count(int32_t device_type, int32_t* out_count);

/* Binds output `index` to the caller's memory, so runs write it there directly
 * (no copy); tensor NULL binds the executor's own buffer again. The tensor must
 * match the output like an input (agate_executor_set_input) and be memory the
 * kernels can write: for CPU modules kDLCPU memory aligned to 64 bytes; for CUDA
 * modules kDLCUDA or kDLCUDAManaged memory of the module's GPU, 16-byte aligned.
 * tensor->data is borrowed until another tensor is bound or the executor is
 * freed; agate_executor_get_output then describes it. AGATE_INVALID_ARGUMENT
 * names what differs; the previous binding then stays. Dynamic shapes (ABI
 * 1.5): an output whose axes carry a symbol takes any extent in its bounds there
 * (a run then checks it equals the inputs'); a value-dependent output takes a
 * buffer of its upper bounds. */
AGATE_API agate_status_t agate_executor_set_output(agate_executor_t* executor, uint32_t index, const DLTensor* tensor);

/* ------------------------------------------------------------------------- */
/* Threads [host]                                                             */

/* Sets the size of the shared thread pool that runs kernels' parallel loops
 * (the calling thread counts as one). 0 restores the default: the environment
 * variable AGATE_NUM_THREADS when set, else the number of physical cores.
 * Takes effect for the next parallel loop; AGATE_INVALID_ARGUMENT for n < 0. */
AGATE_API agate_status_t agate_runtime_set_num_threads(int32_t num_threads);

/* The shared pool's current size. */
AGATE_API agate_status_t agate_runtime_num_threads(int32_t* out_num_threads);

/* ------------------------------------------------------------------------- */
/* Kernel loading [host] (ABI 1.4)                                            */

/* Where host modules' kernels are loaded from. By default a module's embedded
 * shared object is copied into an anonymous in-memory file (memfd_create, else
 * an unlinked file in $TMPDIR or /tmp) and opened through /proc/self/fd. Android
 * before API 30 has no memfd_create, has no /tmp, and its linker namespaces may
 * refuse /proc/self/fd paths: there, pass a private directory the app may load
 * code from (Context.getCodeCacheDir()). With `dir` set, each loaded module
 * writes its object to a new file "agate-kernels-XXXXXX" there (mode 0500 once
 * written), opens it by that path, and deletes it when the module is freed;
 * files a killed process left behind are not reused and may be deleted at any
 * time. NULL or "" restores the default. Applies to modules loaded afterwards;
 * AGATE_INVALID_ARGUMENT for a path of 4000 bytes or more, AGATE_NOT_FOUND when
 * `dir` is not a directory. */
AGATE_API agate_status_t agate_runtime_set_kernel_dir(const char* dir);

#ifdef __cplusplus
}
#endif

#endif /* AGATE_RUNTIME_H_ */
