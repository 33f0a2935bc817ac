/* Hand-written kernels for the language bindings' test modules.
 *
 * Why hand-written: the bindings are tested before (and independently of) the
 * compiler, so their modules are built from C functions that follow
 * agate/kernel_abi.h exactly as generated kernels do (arguments in plan order,
 * shapes compiled in, parallel loops through ctx->parallel_for). They are
 * compiled into a shared object that the fixture modules embed, which is how a
 * compiled host module carries its kernels.
 *
 * The numbers every binding's tests recompute:
 *   add_relu:   y[2x3] = max(a + b, 0)
 *   classifier: logits[4x3] = x[4x8] * W[8x3] + bias[3],
 *               classes[4] (int32) = argmax of each logits row (first maximum)
 *               W[k][j] = ((3k + 5j) mod 7 - 3) / 4,  bias[j] = (j - 1) / 2
 */
#ifndef AGATE_BINDINGS_TESTDATA_FIXTURE_KERNELS_H_
#define AGATE_BINDINGS_TESTDATA_FIXTURE_KERNELS_H_

#include "agate/kernel_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AGATE_FX_ADD_ROWS 2
#define AGATE_FX_ADD_COLS 3
#define AGATE_FX_ADD_COUNT (AGATE_FX_ADD_ROWS * AGATE_FX_ADD_COLS)

#define AGATE_FX_BATCH 4    /* classifier rows */
#define AGATE_FX_FEATURES 8 /* classifier input width */
#define AGATE_FX_CLASSES 3  /* classifier output width */

/* out = a + b (6 float32). */
int32_t agate_fx_add(void* const* args, const agate_kernel_ctx* ctx);
/* out = max(in, 0) (6 float32). */
int32_t agate_fx_relu(void* const* args, const agate_kernel_ctx* ctx);
/* args: x, W, bias, logits, classes; one parallel task per row. */
int32_t agate_fx_dense_argmax(void* const* args, const agate_kernel_ctx* ctx);

#ifdef __cplusplus
}
#endif

#endif /* AGATE_BINDINGS_TESTDATA_FIXTURE_KERNELS_H_ */
