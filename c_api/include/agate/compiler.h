/* agate compiler C API: load a model, compile it with options, write a module.
 *
 * Why a C API for the compiler too: build systems, Python (ctypes) and Java
 * (JNI) drive agate without linking C++; the contract is the same as the
 * runtime's (agate/runtime.h): opaque handles, every function returns
 * agate_status_t with a thread-local agate_last_error_message(), no C++ type,
 * exception or allocator crosses the boundary, and each function says who frees
 * what. Compiler errors (agate::Error) are caught at this boundary and become
 * their StatusCode, which equals the agate_status_t value.
 *
 * Implemented by libagate_compiler.so (c_api/compiler/compiler_c_api.cc over
 * core/compiler); options: "target", "fusion" (rule, none, all), "opt_level" (0-3),
 * "input_shape" ("name:1x3x224x224,..."), "precision" (fp32, fp16, bf16: the storage of the
 * weights kernels pack at compile time, widened to float32 as they are read). The runtime library (libagate_runtime.so)
 * does not export these functions: a deployed app links only the runtime.
 *
 * C99.
 */
#ifndef AGATE_COMPILER_H_
#define AGATE_COMPILER_H_

#include <stddef.h>
#include <stdint.h>

#include "agate/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(AGATE_COMPILER_BUILD) && defined(__GNUC__)
#define AGATE_COMPILER_API __attribute__((visibility("default")))
#else
#define AGATE_COMPILER_API
#endif

#define AGATE_COMPILER_ABI_VERSION_MAJOR 1
#define AGATE_COMPILER_ABI_VERSION_MINOR 0
#define AGATE_COMPILER_ABI_VERSION ((AGATE_COMPILER_ABI_VERSION_MAJOR << 16) | AGATE_COMPILER_ABI_VERSION_MINOR)

/* The ABI version the library implements: (major << 16) | minor; growth rules as
 * in agate/runtime.h. Never fails. */
AGATE_COMPILER_API uint32_t agate_compiler_abi_version(void);

/* The thread-local message of the last non-OK status on this thread, owned by
 * the library, valid until the next agate call on this thread. Never fails. */
AGATE_COMPILER_API const char* agate_compiler_last_error_message(void);

typedef struct agate_model agate_model_t;             /* an imported model (graph IR) */
typedef struct agate_compiled agate_compiled_t;       /* a compiled module, in memory */

/* Loads an ONNX model from a file. path is borrowed for the call only.
 * AGATE_NOT_FOUND / AGATE_IO when the file cannot be read, AGATE_CORRUPT when it
 * is not a valid model, AGATE_UNSUPPORTED naming the first operator or attribute
 * agate does not handle. *out_model is owned by the caller: agate_model_free. */
AGATE_COMPILER_API agate_status_t agate_model_load_onnx_file(const char* path, agate_model_t** out_model);

/* Same, from memory: data is borrowed for the call only (the model is copied). */
AGATE_COMPILER_API agate_status_t agate_model_load_onnx_memory(const void* data, size_t size, agate_model_t** out_model);

/* Frees a model. NULL is allowed. Compiled modules made from it stay valid. */
AGATE_COMPILER_API agate_status_t agate_model_free(agate_model_t* model);

/* Compile options: a set of key/value strings (e.g. "target" = "llvm -mcpu=skylake",
 * "opt_level" = "3", "tuning_log" = "path"; "kernel_prefix" = "kws" names every
 * kernel symbol kws_k0_conv..., so several models' kernels link into one
 * firmware). Option names are validated at
 * agate_compile time (AGATE_INVALID_ARGUMENT naming an unknown key or bad value). */
typedef struct agate_compile_options agate_compile_options_t;

/* Creates an empty option set, owned by the caller: agate_compile_options_free. */
AGATE_COMPILER_API agate_status_t agate_compile_options_create(agate_compile_options_t** out_options);

/* Sets key to value; both strings are copied. A later set of the same key wins. */
AGATE_COMPILER_API agate_status_t agate_compile_options_set(agate_compile_options_t* options, const char* key,
                                                            const char* value);

/* Frees an option set. NULL is allowed. */
AGATE_COMPILER_API agate_status_t agate_compile_options_free(agate_compile_options_t* options);

/* Compiles a model for the options' target. model and options are borrowed for
 * the call only. *out_compiled is owned by the caller: agate_compiled_free. */
AGATE_COMPILER_API agate_status_t agate_compile(const agate_model_t* model, const agate_compile_options_t* options,
                                                agate_compiled_t** out_compiled);

/* The serialized module (the bytes agate_module_load_from_memory accepts).
 * *out_data is borrowed from `compiled`: valid until agate_compiled_free. */
AGATE_COMPILER_API agate_status_t agate_compiled_bytes(const agate_compiled_t* compiled, const uint8_t** out_data,
                                                       size_t* out_size);

/* Writes the module to path atomically (a temporary file in the same directory,
 * fsync, rename): on failure (AGATE_IO naming the path and the system error) no
 * partial file is left and an existing file at path is unchanged. path is
 * borrowed for the call only. */
AGATE_COMPILER_API agate_status_t agate_compiled_write(const agate_compiled_t* compiled, const char* path);

/* Frees a compiled module. NULL is allowed. */
AGATE_COMPILER_API agate_status_t agate_compiled_free(agate_compiled_t* compiled);

#ifdef __cplusplus
}
#endif

#endif /* AGATE_COMPILER_H_ */
