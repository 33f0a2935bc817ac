// Matrix products: Gemm (dense layers), MatMul with numpy batch broadcasting
// (batch_matmul), 1-D operands.
//
// Why a register-tiled template: a dense layer is a GEMM; its speed comes from
// keeping an (m_block x n_block) tile of C in registers while streaming A and B
// through it, one broadcast of A and n_block/lanes vector loads of B per k.
// Constant right-hand sides stored transposed (Gemm transB=1, PyTorch Linear)
// are transposed once at compile time so the vector loads are contiguous. The
// epilogue (alpha/beta/C, bias, GELU...) is applied to the tile before it is
// written.
#ifndef AGATE_CORE_OPS_DENSE_H_
#define AGATE_CORE_OPS_DENSE_H_

#include "core/te/tensor.h"

namespace agate {
namespace ops {

// C[..., i, j] = sum_k A[..., i, k] * B[..., k, j] with numpy broadcasting of the batch axes
// (both operands at least 2-D).
te::Tensor BatchMatmul(const te::Tensor& a, const te::Tensor& b, const std::string& name);

}  // namespace ops
}  // namespace agate

#endif  // AGATE_CORE_OPS_DENSE_H_
