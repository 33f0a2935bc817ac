// Attention (ONNX opset 23, the 4-D form): one flash-attention-style kernel.
//
// Why: softmax(Q K^T * scale + mask) V computed as written materializes the
// [B, H, Sq, Skv] scores, reads them back for the max, again for the sum and the
// exponentials, and again for the product with V. Here a block of queries (Qt
// rows of one head) meets the keys one tile (T keys) at a time: the tile's
// scores, their max and exponentials live in L1, and the block's output
// accumulates with an online softmax, a commutative reduction over key tiles of
// (running max m, running sum l, accumulator acc):
//   m' = max(m, m_t),  l' = l e^(m - m') + l_t e^(m_t - m'),  acc' = acc e^(m - m') + (P_t V_t) e^(m_t - m')
// with m_t, l_t, P_t = exp(S_t - m_t) the tile's max, sum and probabilities.
// The full score matrix is never written; every stage is a tensor expression
// (TE -> schedule -> lower like every kernel), the key tiles a reduction axis
// that the tile's stages are computed at.
//
// Stages (logical shapes; the schedule realizes only the tiles):
//   Kt [B, Hk, D, Skp]   K transposed and zero-padded to Skp (a multiple of T), once per kernel call
//   Vp [B, Hk, Skp, Dv]  V zero-padded, once per kernel call
//   Qs [B, H, Sq, D]     Q * scale, per query block
//   S  [B, H, Sq, Skp]   Qs Kt (register-tiled: query rows x key vectors), per (query block, key tile)
//   Mt [B, H, Sq, NB]    the tile's row max (of the masked scores), at least the lowest finite value
//   P  [B, H, Sq, Skp]   exp(masked S - Mt)
//   Lt, PV               the tile's row sums and P V
//   (m, l, acc) [B, H, Sq, Dv]  the online softmax over key tiles; Y = acc / l
// Masks: padding keys, causal (key > query) and a bool mask give -inf scores, a
// float mask is added. A row whose keys are all masked out is NaN, as in the
// reference (0 / 0).
#ifndef AGATE_CORE_OPS_ATTENTION_H_
#define AGATE_CORE_OPS_ATTENTION_H_

namespace agate {
namespace ops {
// Registered in registry.h (RegisterAttentionOps); no other public entry points.
}  // namespace ops
}  // namespace agate

#endif  // AGATE_CORE_OPS_ATTENTION_H_
