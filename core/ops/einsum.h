// Einsum: one tensor-expression contraction for any equation ParseEinsum
// accepts. Output labels are the output's axes; every other label is a
// reduction axis; a label repeated within one operand reads its diagonal, and
// an axis of extent 1 broadcasts. The product of the operands is summed over
// the reduction axes (no reduction: just the product, e.g. a transpose or an
// outer product). Not schedule-tuned: the opaque anchor's default schedule.
#ifndef AGATE_CORE_OPS_EINSUM_H_
#define AGATE_CORE_OPS_EINSUM_H_

namespace agate {
namespace ops {
// Registered in registry.h (RegisterEinsumOps).
}  // namespace ops
}  // namespace agate

#endif  // AGATE_CORE_OPS_EINSUM_H_
