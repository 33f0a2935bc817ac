// Operators outside the big families: QuantizeLinear / DequantizeLinear
// (elementwise, per-tensor or per-axis parameters), CumSum (a triangular
// reduction), Compress (a compile-time index table) and ReverseSequence.
#ifndef AGATE_CORE_OPS_MISC_H_
#define AGATE_CORE_OPS_MISC_H_

namespace agate {
namespace ops {
// Registered in registry.h (RegisterMiscOps).
}  // namespace ops
}  // namespace agate

#endif  // AGATE_CORE_OPS_MISC_H_
