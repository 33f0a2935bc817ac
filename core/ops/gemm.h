// The GEMM template: dense (Gemm), MatMul and batched MatMul with more than one
// row per product, as tensor expressions plus one schedule.
//
// Why a template of its own: a product with M > 1 rows is compute-bound, and
// reaching the FMA peak takes the classic structure (Goto/BLIS) expressed in
// agate's TE and schedule primitives, with every size from gemm_plan.h:
//
//   Bp[b.., p, k, c]  = B[b.., k, p*nr + c] (0 past N)     packed column panels:
//                       at compile time for a constant B, else by each parallel
//                       task for its own column block, into a buffer on its
//                       stack just before use (cache-resident; at the root, in
//                       the workspace, when that block would be too large).
//                       Transposed operands (Gemm transB, a Transpose fused
//                       into the product) are read through the packing, never
//                       copied by a kernel of their own.
//   C'[.., i, j]      = sum_k A[.., min(i, M-1), k] * Bp[.., j/nr, k, j%nr]
//                       over rows and columns padded to whole register tiles, so
//                       the tile's loads, FMAs and accumulators never need a guard.
//   out[.., i, j]     = epilogue(C'[.., i, j]) for i < M, j < N: the only stage
//                       with guards (a row branch, lane-masked stores).
//
// The output is cut into (batch, column block[, row block]) tasks that form one
// parallel loop; inside, row blocks, column panels, then register tiles of
// rows; C' is computed per register tile (mr x nr accumulators in registers
// over all of K, then the epilogue's single store) or, when K is sliced for the
// cache, per row block in a local buffer that the epilogue then reads. When B is shared by
// every batch (a [.., M, K] x [K, N] product), the batch folds into the rows.
// Products with one row per batch stay on the matrix-vector schedule
// (dense.cc), which is bound by reading B.
#ifndef AGATE_CORE_OPS_GEMM_H_
#define AGATE_CORE_OPS_GEMM_H_

#include <string>

#include "core/graph/tensor.h"
#include "core/ops/op_context.h"
#include "core/te/tensor.h"

namespace agate {
namespace ops {

struct GemmOperands {
  te::Tensor a;  // [a_batch..., M, K]; may be a view (a transpose) that is inlined into the reads
  te::Tensor b;  // [b_batch..., K, N]; may be a view, read once by the packing
  // B's value when it is a compile-time constant of rank 2 (then packed now; `b`
  // is not read), stored [N, K] when b_constant_transposed (Gemm transB).
  const graph::Tensor* b_constant = nullptr;
  bool b_constant_transposed = false;
};

// Rows of one product after folding the batch into the rows where B has no
// batch: the GEMM template applies when this is above 1.
int64_t GemmRows(const graph::Shape& a_shape, const graph::Shape& b_shape);

// Builds out[batch..., M, N] = A x B (numpy batch broadcasting) with the GEMM
// template, named `name`, and sets it as the node's schedule.
te::Tensor BuildGemm(const OpContext& ctx, const GemmOperands& operands, const std::string& name);

}  // namespace ops
}  // namespace agate

#endif  // AGATE_CORE_OPS_GEMM_H_
