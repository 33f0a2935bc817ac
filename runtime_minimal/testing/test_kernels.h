/* Hand-written kernels that prove the runtime without the compiler.
 *
 * They follow agate/kernel_abi.h exactly as generated kernels do: shapes are
 * compiled in (16x16 float32 matrices, 256-element vectors), arguments arrive in
 * plan order, parallel loops go through ctx->parallel_for, scratch memory is
 * ctx->workspace. Built twice: as a shared object embedded in host modules, and
 * linked statically for the core profile's kernel table.
 */
#ifndef AGATE_RUNTIME_MINIMAL_TESTING_TEST_KERNELS_H_
#define AGATE_RUNTIME_MINIMAL_TESTING_TEST_KERNELS_H_

#include "agate/kernel_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AGATE_TEST_N 16                          /* matrix side */
#define AGATE_TEST_VEC (AGATE_TEST_N * AGATE_TEST_N) /* vector length */
#define AGATE_TEST_VEC_BYTES (AGATE_TEST_VEC * 4)

/* out = a + b, 256 float32. */
int32_t agate_test_add(void* const* args, const agate_kernel_ctx* ctx);
/* out = max(in, 0), 256 float32. */
int32_t agate_test_relu(void* const* args, const agate_kernel_ctx* ctx);
/* out[16x16] = a[16x16] * b[16x16], rows split over ctx->parallel_for. */
int32_t agate_test_matmul(void* const* args, const agate_kernel_ctx* ctx);
/* out = 2 * in through the workspace (needs AGATE_TEST_VEC_BYTES of it). */
int32_t agate_test_double_via_workspace(void* const* args, const agate_kernel_ctx* ctx);
/* Returns 7: a kernel whose run-time check failed. */
int32_t agate_test_fail(void* const* args, const agate_kernel_ctx* ctx);
/* Returns -2: its second run-time check failed (the status compiled kernels return). */
int32_t agate_test_check_failed(void* const* args, const agate_kernel_ctx* ctx);
/* Returns 0 when its one argument is 4096-byte aligned, else 5 (checks arena alignment). */
int32_t agate_test_check_page_aligned(void* const* args, const agate_kernel_ctx* ctx);
/* Does nothing with its one argument: measures the executor's per-call overhead. */
int32_t agate_test_noop(void* const* args, const agate_kernel_ctx* ctx);
/* A value-dependent output: out[0..k) = the indices (int64) of in's k non-zero elements (256
 * float32 in, 256 int64 out at most), k written to its third argument (one int64). */
int32_t agate_test_nonzero(void* const* args, const agate_kernel_ctx* ctx);
/* Writes 257 to its second argument (one int64): a value-dependent extent past its bound. */
int32_t agate_test_report_overflow(void* const* args, const agate_kernel_ctx* ctx);

#ifdef __cplusplus
}
#endif

#endif /* AGATE_RUNTIME_MINIMAL_TESTING_TEST_KERNELS_H_ */
