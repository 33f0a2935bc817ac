// Operators along one axis of a sequence: CumSum (a triangular reduction), Compress (a
// compile-time index table) and ReverseSequence.
#ifndef AGATE_CORE_OPS_SEQUENCE_H_
#define AGATE_CORE_OPS_SEQUENCE_H_

namespace agate {
namespace ops {
// Registered in registry.h (RegisterSequenceOps).
}  // namespace ops
}  // namespace agate

#endif  // AGATE_CORE_OPS_SEQUENCE_H_
