/* C helpers of the Go binding (agate_go.c): calls whose arguments Go cannot
 * build itself without breaking cgo's pointer rules. */
#ifndef AGATE_BINDINGS_GO_AGATE_GO_H_
#define AGATE_BINDINGS_GO_AGATE_GO_H_

#include <stddef.h>
#include <stdint.h>

#include "agate/runtime.h"

/* Binds `data` (C memory the executor owns) as input `index`. The DLTensor is
 * built here, so no Go pointer is stored in memory passed to C: `shape` is a Go
 * pointer passed directly and read during the call only. */
agate_status_t agate_go_set_input(agate_executor_t* e, uint32_t index, void* data, uint8_t code, uint8_t bits,
                                  uint16_t lanes, int32_t ndim, int64_t* shape);

/* 64-byte-aligned memory (aligned for every element type); free() it. NULL on failure. */
void* agate_go_alloc(size_t size);

/* agate_executor_create with agate_executor_options filled in C (struct_size). */
agate_status_t agate_go_create_executor(const agate_module_t* m, int32_t num_threads, agate_executor_t** out);

/* agate_module_load_from_{file,memory}_with_options with the options filled in C. */
agate_status_t agate_go_load_file(const char* path, int32_t device_id, agate_module_t** out);
agate_status_t agate_go_load_memory(const void* data, size_t size, int32_t device_id, agate_module_t** out);

/* Binds device memory at `address` (of CUDA device `device_id`) as input or
 * output `index` (output: agate_executor_set_output). `shape` as above. */
agate_status_t agate_go_bind_device(agate_executor_t* e, int output, uint32_t index, uint64_t address,
                                    int32_t device_id, uint8_t code, uint8_t bits, uint16_t lanes, int32_t ndim,
                                    int64_t* shape);

/* Copies output `index` into host memory `data` (a Go pointer, written during
 * the call only). `shape` as above. */
agate_status_t agate_go_copy_output(agate_executor_t* e, uint32_t index, void* data, uint8_t code, uint8_t bits,
                                    uint16_t lanes, int32_t ndim, int64_t* shape);

#endif /* AGATE_BINDINGS_GO_AGATE_GO_H_ */
