#include "runtime_minimal/testing/test_kernels.h"

#if defined(__GNUC__)
#define AGATE_TEST_EXPORT __attribute__((visibility("default")))
#else
#define AGATE_TEST_EXPORT
#endif

AGATE_TEST_EXPORT int32_t agate_test_add(void* const* args, const agate_kernel_ctx* ctx) {
  const float* a = (const float*)args[0];
  const float* b = (const float*)args[1];
  float* out = (float*)args[2];
  int i;
  (void)ctx;
  for (i = 0; i < AGATE_TEST_VEC; ++i) out[i] = a[i] + b[i];
  return 0;
}

AGATE_TEST_EXPORT int32_t agate_test_relu(void* const* args, const agate_kernel_ctx* ctx) {
  const float* in = (const float*)args[0];
  float* out = (float*)args[1];
  int i;
  (void)ctx;
  for (i = 0; i < AGATE_TEST_VEC; ++i) out[i] = in[i] > 0.0f ? in[i] : 0.0f;
  return 0;
}

typedef struct {
  const float* a;
  const float* b;
  float* out;
} matmul_frame;

static int32_t matmul_rows(int32_t task, int32_t num_tasks, void* closure) {
  const matmul_frame* f = (const matmul_frame*)closure;
  const int32_t rows_per_task = (AGATE_TEST_N + num_tasks - 1) / num_tasks;
  int32_t row_end = (task + 1) * rows_per_task;
  int32_t i, j, k;
  if (row_end > AGATE_TEST_N) row_end = AGATE_TEST_N;
  for (i = task * rows_per_task; i < row_end; ++i) {
    for (j = 0; j < AGATE_TEST_N; ++j) {
      float sum = 0.0f;
      for (k = 0; k < AGATE_TEST_N; ++k) sum += f->a[i * AGATE_TEST_N + k] * f->b[k * AGATE_TEST_N + j];
      f->out[i * AGATE_TEST_N + j] = sum;
    }
  }
  return 0;
}

AGATE_TEST_EXPORT int32_t agate_test_matmul(void* const* args, const agate_kernel_ctx* ctx) {
  matmul_frame frame;
  frame.a = (const float*)args[0];
  frame.b = (const float*)args[1];
  frame.out = (float*)args[2];
  return ctx->parallel_for(ctx->pool, matmul_rows, &frame, AGATE_TEST_N / 4);
}

AGATE_TEST_EXPORT int32_t agate_test_double_via_workspace(void* const* args, const agate_kernel_ctx* ctx) {
  const float* in = (const float*)args[0];
  float* out = (float*)args[1];
  float* scratch = (float*)ctx->workspace;
  int i;
  if (scratch == 0 || ctx->workspace_bytes < AGATE_TEST_VEC_BYTES) return 3;
  for (i = 0; i < AGATE_TEST_VEC; ++i) scratch[i] = in[i] * 2.0f;
  for (i = 0; i < AGATE_TEST_VEC; ++i) out[i] = scratch[i];
  return 0;
}

AGATE_TEST_EXPORT int32_t agate_test_fail(void* const* args, const agate_kernel_ctx* ctx) {
  (void)args;
  (void)ctx;
  return 7;
}

AGATE_TEST_EXPORT int32_t agate_test_check_failed(void* const* args, const agate_kernel_ctx* ctx) {
  (void)args;
  (void)ctx;
  return -2;
}

AGATE_TEST_EXPORT int32_t agate_test_noop(void* const* args, const agate_kernel_ctx* ctx) {
  (void)args;
  (void)ctx;
  return 0;
}

AGATE_TEST_EXPORT int32_t agate_test_check_page_aligned(void* const* args, const agate_kernel_ctx* ctx) {
  (void)ctx;
  return ((uintptr_t)args[0] % 4096u) == 0 ? 0 : 5;
}

AGATE_TEST_EXPORT int32_t agate_test_nonzero(void* const* args, const agate_kernel_ctx* ctx) {
  const float* in = (const float*)args[0];
  int64_t* out = (int64_t*)args[1];
  int64_t* extent = (int64_t*)args[2];
  int64_t count = 0;
  int i;
  (void)ctx;
  for (i = 0; i < AGATE_TEST_VEC; ++i) {
    if (in[i] != 0.0f) out[count++] = i;
  }
  extent[0] = count;
  return 0;
}

AGATE_TEST_EXPORT int32_t agate_test_report_overflow(void* const* args, const agate_kernel_ctx* ctx) {
  (void)ctx;
  ((int64_t*)args[1])[0] = AGATE_TEST_VEC + 1;
  return 0;
}
