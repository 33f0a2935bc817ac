// Which elements NonZero, Compress and Unique select from a tensor's values, shared by shape
// inference (a constant input: the output's extents) and the reference kernels (core/graph_eval).
//
// Why shared: these operators' output shapes depend on the values, so the shape rule and the
// kernel read the same values; computing both from one function makes the shape a kernel writes
// exactly the one inference promised, as shape_rules.h does for shapes computed from shapes.
#ifndef AGATE_CORE_GRAPH_VALUE_SELECTION_H_
#define AGATE_CORE_GRAPH_VALUE_SELECTION_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/graph/tensor.h"

namespace agate {
namespace graph {

// Row-major flat offsets of x's nonzero elements, ascending (NonZero; Compress's condition).
std::vector<int64_t> NonZeroOffsets(const Tensor& x);

// ONNX Unique over x's items: its elements (no axis) or its slices along `axis`. Items compare
// by value (integers as integers, unsigned as unsigned, floats as doubles with NaNs last and equal, as numpy; slices
// lexicographically). `first` lists each distinct item's first position, in output order
// (ascending values when sorted, else order of first occurrence); `inverse` maps every item to
// its output position; `counts` counts each distinct item's occurrences.
struct UniqueItems {
  int64_t items = 0;      // number of items: x's element count, or its extent on the axis
  int64_t item_size = 1;  // elements per item: 1, or the product of the other extents
  std::vector<int64_t> first;
  std::vector<int64_t> inverse;
  std::vector<int64_t> counts;
};
// axis < 0: flattened. Otherwise a normalized axis of x.
UniqueItems UniqueOf(const Tensor& x, int axis, bool sorted);

}  // namespace graph
}  // namespace agate

#endif  // AGATE_CORE_GRAPH_VALUE_SELECTION_H_
