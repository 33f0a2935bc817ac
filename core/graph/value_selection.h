// Which elements NonZero, Compress, Unique and NonMaxSuppression select from a tensor's values,
// shared by shape inference (constant inputs: the output's extents) and the reference kernels
// (core/graph_eval).
//
// Why shared: these operators' output shapes depend on the values, so the shape rule and the
// kernel read the same values; computing both from one function makes the shape a kernel writes
// exactly the one inference promised, as shape_rules.h does for shapes computed from shapes.
#ifndef AGATE_CORE_GRAPH_VALUE_SELECTION_H_
#define AGATE_CORE_GRAPH_VALUE_SELECTION_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/graph/graph.h"
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

// ONNX NonMaxSuppression (opsets 10 and 11). The graph IR's node, NonMaxSuppression (every input
// a constant: folded when imported) or RunTimeNonMaxSuppression: inputs boxes [B, N, 4], scores
// [B, C, N] (float32), then max_output_boxes_per_class, iou_threshold and score_threshold, each
// either a run-time value (int64 / float32, one element) or absent (""); a constant operand is the
// attribute of the same name instead. Attribute center_point_box: 0 corners [y1, x1, y2, x2] in
// either order, 1 [x_center, y_center, width, height].
extern const char* const kNmsOperands[3];  // attribute names of inputs 2, 3 and 4

// The operands as ONNX's reference reads them: a missing max_output_boxes_per_class selects no box and
// a negative one counts as 0; a missing iou_threshold is 0; without a score_threshold no box is dropped
// by score. The spec gives iou_threshold the range [0, 1]: one outside it (or NaN) is invalid.
struct NmsSettings {
  int64_t max_per_class = 0;
  float iou_threshold = 0;
  bool has_score_threshold = false;
  float score_threshold = 0;
  bool center_point_box = false;
};
// `operands[k]` is the value of run-time operand 2 + k (nullptr when absent). Throws
// kInvalidArgument naming the node for an iou_threshold outside [0, 1].
NmsSettings NmsSettingsOf(const Node& node, const std::vector<const Tensor*>& operands);

// True when iou_threshold `iou` is valid ([0, 1]; NaN is not).
inline bool NmsValidIou(float iou) { return iou >= 0.0f && iou <= 1.0f; }

// The selected [batch, class, box] triples, flattened, in ONNX's order: batch-major, then class,
// then selection order. Per batch and class, the boxes whose score passes (score > score_threshold
// when one is given) in descending score order (ties: the lower box index first; NaN scores after
// every number, an order ONNX leaves open), each kept unless a box kept before it overlaps it by
// IoU > iou_threshold (NmsSuppresses), until max_per_class are kept. boxes [B, N, 4] and scores
// [B, C, N] are float32 and checked by the caller.
std::vector<int64_t> NonMaxSuppressionOf(const Tensor& boxes, const Tensor& scores, const NmsSettings& settings);

// Whether box `a` suppresses box `b` (each four float32 coordinates): ONNX's reference
// (suppress_by_iou) step by step in float32, so that compiled kernels can reproduce it: empty
// intersections, degenerate boxes and NaNs never suppress.
bool NmsSuppresses(const float* a, const float* b, bool center_point_box, float iou_threshold);

// Whether score `a` comes before score `b` in the selection order (descending; NaN last).
inline bool NmsScoreBefore(float a, float b) { return a == a && (b != b || a > b); }

}  // namespace graph
}  // namespace agate

#endif  // AGATE_CORE_GRAPH_VALUE_SELECTION_H_
