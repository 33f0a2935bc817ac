// Losses: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (ONNX opset 12+),
// with optional class weights, ignore_index and reduction none | sum | mean.
//
// Each target picks one class score per (n, d...) position, an indirect read
// like Gather; the reductions are ordinary sum reductions. A compiled kernel
// cannot report bad data, so a target outside [0, C) that is not ignore_index
// reads a clamped class (never out of bounds) and yields NaN at its position
// (reduction none) or in the reduced loss; the reference interpreter reports
// such targets as kOutOfRange.
#ifndef AGATE_CORE_OPS_LOSS_H_
#define AGATE_CORE_OPS_LOSS_H_

namespace agate {
namespace ops {
// Registered in registry.h (RegisterLossOps).
}  // namespace ops
}  // namespace agate

#endif  // AGATE_CORE_OPS_LOSS_H_
