/* The calling convention between generated kernels and the runtime.
 *
 * Every kernel agate generates, for every target (LLVM host, AArch64, Cortex-M,
 * the portable C backend; CUDA kernels are launched differently, see the CUDA
 * backend), is a C function of type agate_kernel_fn. The runtime calls kernels in
 * the order of the module's execution plan. This header is part of the ABI that
 * compiled modules depend on: change it only by appending fields to
 * agate_kernel_ctx and bumping AGATE_KERNEL_ABI_VERSION.
 *
 * Freestanding C99: no libc types beyond <stdint.h>, usable on microcontrollers.
 */
#ifndef AGATE_KERNEL_ABI_H_
#define AGATE_KERNEL_ABI_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define AGATE_KERNEL_ABI_VERSION 1

/* One task of a parallel loop: runs iterations [task_id * chunk, ...) chosen by the
 * generated code. Returns 0 on success. `closure` is the kernel's own frame. */
typedef int32_t (*agate_parallel_task_fn)(int32_t task_id, int32_t num_tasks, void* closure);

/* What the runtime lends a kernel for one call. The kernel borrows everything here
 * for the duration of the call only. */
typedef struct agate_kernel_ctx {
  uint32_t abi_version; /* AGATE_KERNEL_ABI_VERSION of the runtime */
  /* Runs task(0..num_tasks-1, num_tasks, closure), possibly in parallel, and returns
   * after all tasks finished: 0, or the first non-zero status a task returned.
   * Never NULL: a runtime without threads runs the tasks in order. */
  int32_t (*parallel_for)(void* pool, agate_parallel_task_fn task, void* closure, int32_t num_tasks);
  void* pool;          /* the runtime's thread pool, passed back to parallel_for */
  int32_t num_threads; /* how many tasks run at once; generated code may split work by it */
  /* Scratch memory the compiler asked for (the kernel's declared workspace bytes),
   * 64-byte aligned, or NULL when it asked for none. Large kernel-local buffers
   * (packing, cache_write) live here so no kernel needs a heap. */
  void* workspace;
  uint64_t workspace_bytes;
} agate_kernel_ctx;

/* A kernel: args[i] is the base address of the i-th buffer argument (inputs,
 * outputs and constants in the order the module's plan lists them), shapes and
 * strides are compiled in. Returns 0 on success, non-zero on a failed run-time
 * check (the runtime reports it with the kernel's name). */
typedef int32_t (*agate_kernel_fn)(void* const* args, const agate_kernel_ctx* ctx);

#ifdef __cplusplus
}
#endif

#endif /* AGATE_KERNEL_ABI_H_ */
