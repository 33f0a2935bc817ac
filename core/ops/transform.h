// Data-movement (injective) operators: Reshape, Flatten, Squeeze, Unsqueeze,
// Transpose, Concat, Split, Slice, Gather, GatherElements, GatherND, Tile, Pad,
// DepthToSpace, SpaceToDepth, Resize, Trilu, EyeLike, OneHot.
//
// Why index arithmetic only: each output element reads one input element (or
// a few, for Resize), so each operator is an index map; LowerGroup inlines the
// map into the consumer and no intermediate is ever materialized. Resize
// precomputes its per-axis source indices and weights at compile time (small
// constant tables), so the kernel does no coordinate math.
#ifndef AGATE_CORE_OPS_TRANSFORM_H_
#define AGATE_CORE_OPS_TRANSFORM_H_

#include <vector>

#include "core/graph/tensor.h"
#include "core/te/tensor.h"

namespace agate {
namespace ops {

// Row-major flat offset of `index` in `shape`, and its inverse.
te::Expr Ravel(const std::vector<te::Expr>& index, const graph::Shape& shape);
std::vector<te::Expr> Unravel(te::Expr flat, const graph::Shape& shape);

// x viewed with another shape of the same element count.
te::Tensor Reshape(const te::Tensor& x, const graph::Shape& shape, const std::string& name);
te::Tensor Transpose(const te::Tensor& x, const std::vector<int64_t>& perm, const std::string& name);
// The indices (int64) of the k first elements along `axis` in sorted order (largest first, or
// smallest), ties by lower index; x's shape with k on the axis. TopK, and RunTimeTopK with k = n.
te::Tensor TopKIndices(const te::Tensor& x, int axis, bool largest, int64_t k, const std::string& name);

}  // namespace ops
}  // namespace agate

#endif  // AGATE_CORE_OPS_TRANSFORM_H_
