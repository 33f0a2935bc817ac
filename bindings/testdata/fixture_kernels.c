#include "bindings/testdata/fixture_kernels.h"

#if defined(__GNUC__)
#define AGATE_FX_EXPORT __attribute__((visibility("default")))
#else
#define AGATE_FX_EXPORT
#endif

AGATE_FX_EXPORT int32_t agate_fx_add(void* const* args, const agate_kernel_ctx* ctx) {
  const float* a = (const float*)args[0];
  const float* b = (const float*)args[1];
  float* out = (float*)args[2];
  int i;
  (void)ctx;
  for (i = 0; i < AGATE_FX_ADD_COUNT; ++i) out[i] = a[i] + b[i];
  return 0;
}

AGATE_FX_EXPORT int32_t agate_fx_relu(void* const* args, const agate_kernel_ctx* ctx) {
  const float* in = (const float*)args[0];
  float* out = (float*)args[1];
  int i;
  (void)ctx;
  for (i = 0; i < AGATE_FX_ADD_COUNT; ++i) out[i] = in[i] > 0.0f ? in[i] : 0.0f;
  return 0;
}

typedef struct {
  const float* x;
  const float* w;
  const float* bias;
  float* logits;
  int32_t* classes;
} dense_frame;

/* One row: logits = x_row * W + bias, then the index of the first maximum. */
static int32_t dense_row(int32_t row, int32_t num_tasks, void* closure) {
  const dense_frame* f = (const dense_frame*)closure;
  int32_t j, k, best = 0;
  (void)num_tasks;
  for (j = 0; j < AGATE_FX_CLASSES; ++j) {
    float sum = f->bias[j];
    for (k = 0; k < AGATE_FX_FEATURES; ++k) sum += f->x[row * AGATE_FX_FEATURES + k] * f->w[k * AGATE_FX_CLASSES + j];
    f->logits[row * AGATE_FX_CLASSES + j] = sum;
  }
  for (j = 1; j < AGATE_FX_CLASSES; ++j) {
    if (f->logits[row * AGATE_FX_CLASSES + j] > f->logits[row * AGATE_FX_CLASSES + best]) best = j;
  }
  f->classes[row] = best;
  return 0;
}

AGATE_FX_EXPORT int32_t agate_fx_dense_argmax(void* const* args, const agate_kernel_ctx* ctx) {
  dense_frame frame;
  frame.x = (const float*)args[0];
  frame.w = (const float*)args[1];
  frame.bias = (const float*)args[2];
  frame.logits = (float*)args[3];
  frame.classes = (int32_t*)args[4];
  return ctx->parallel_for(ctx->pool, dense_row, &frame, AGATE_FX_BATCH);
}
