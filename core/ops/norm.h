// Normalizations: BatchNormalization (inference: a per-channel affine map,
// fused like any broadcast op; training: batch statistics over N and the spatial
// axes, with the running mean/variance outputs), InstanceNormalization, LayerNormalization (with
// its optional Mean / InvStdDev outputs), MeanVarianceNormalization and LRN.
//
// Why statistics as separate reduction stages: mean and variance are
// reductions over the normalized axes, the result is an elementwise map that
// reads them; the schedule computes both statistics at the output's row loop
// when the normalized axes are innermost (layer norm over the hidden size,
// instance norm over H*W), so each row is read from cache by the later passes.
#ifndef AGATE_CORE_OPS_NORM_H_
#define AGATE_CORE_OPS_NORM_H_

namespace agate {
namespace ops {
// Registered in registry.h (RegisterNormOps); no other public entry points.
}  // namespace ops
}  // namespace agate

#endif  // AGATE_CORE_OPS_NORM_H_
