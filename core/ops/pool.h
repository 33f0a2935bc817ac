// Pooling: MaxPool (with its optional Indices output), AveragePool, LpPool (any
// number of spatial axes, strides, dilations, asymmetric padding, ceil_mode),
// GlobalAveragePool/GlobalMaxPool, in NCHW and in the channel-blocked NCHW<c>c
// layout the layout pass produces (MaxPool with Indices: NCHW only).
//
// Why one compute for both layouts: pooling never mixes channels, so the
// blocked layout only adds a trailing channel-lane axis; the same window
// expression works on the physical index with the spatial axes replaced.
#ifndef AGATE_CORE_OPS_POOL_H_
#define AGATE_CORE_OPS_POOL_H_

#include "core/graph/shape_rules.h"
#include "core/te/tensor.h"

namespace agate {
namespace ops {

enum class PoolType { kMax, kAverage, kLp };

// x: [N, C, spatial...] or [N, C/b, H, W, b]; spatial axes start at 2.
te::Tensor Pool(const te::Tensor& x, const graph::WindowGeometry& g, PoolType type, bool count_include_pad, int p,
                const std::string& name);
// MaxPool's two outputs {values, indices}: indices (int64) are each maximum's offset in x,
// flattened row-major over (N, C, spatial...), or with the spatial part column-major when
// `column_major` (ONNX storage_order=1). Padding never wins; ties go to the first element in
// window order. x: [N, C, spatial...] (NCHW only).
struct MaxPoolOutputs {
  te::Tensor values, indices;
  te::Tensor argmax;  // the (index, value) window reduction both read: the schedule's anchor
};
MaxPoolOutputs MaxPoolWithIndices(const te::Tensor& x, const graph::WindowGeometry& g, bool column_major,
                                  const std::string& values_name, const std::string& indices_name);
te::Tensor GlobalPool(const te::Tensor& x, size_t spatial_axes, bool is_max, const std::string& name);

}  // namespace ops
}  // namespace agate

#endif  // AGATE_CORE_OPS_POOL_H_
