// Matrix products: Gemm (dense layers), MatMul with numpy batch broadcasting
// (batch_matmul), 1-D operands.
//
// Two templates. Products with more than one row (after folding a batch that B
// does not have into the rows) are GEMMs: packed panels, cache blocks, register
// tiles, parallel blocks (gemm.h). Products with one row per batch (batch-1 FC
// layers, 1-D operands) are matrix-vector products bound by reading B: an
// (m_block x n_block) tile of C in registers while B streams through it, a
// constant B (stored transposed or not: Gemm transB, PyTorch Linear) packed
// once at compile time into column panels so the vector loads are contiguous.
// Either way the epilogue (alpha/beta/C, bias, GELU...) is applied to the tile
// before it is written.
#ifndef AGATE_CORE_OPS_DENSE_H_
#define AGATE_CORE_OPS_DENSE_H_

#include "core/te/tensor.h"

namespace agate {
namespace ops {

// C[..., i, j] = sum_k A[..., i, k] * B[..., k, j] with numpy broadcasting of the batch axes
// (both operands at least 2-D).
te::Tensor BatchMatmul(const te::Tensor& a, const te::Tensor& b, const std::string& name);

struct ScheduleRequest;
// The register-tiled template of matrix products (batch or not): an
// (m_block x n_block) accumulator tile over k, the epilogue applied to the tile.
// `lanes` 0: the target's lanes for the output's dtype (integer products pass
// the accumulator's). `padded_core`: the product over whole column tiles when the
// anchor is its view without the padding (then the tile accumulates it unguarded).
std::string ScheduleMatVec(const ScheduleRequest& request, int lanes = 0, const te::Tensor& padded_core = te::Tensor());

}  // namespace ops
}  // namespace agate

#endif  // AGATE_CORE_OPS_DENSE_H_
