// Linear quantization: QuantizeLinear / DequantizeLinear (elementwise, per-tensor or per-axis
// parameters).
#ifndef AGATE_CORE_OPS_QUANTIZE_H_
#define AGATE_CORE_OPS_QUANTIZE_H_

namespace agate {
namespace ops {
// Registered in registry.h (RegisterQuantizeOps).
}  // namespace ops
}  // namespace agate

#endif  // AGATE_CORE_OPS_QUANTIZE_H_
