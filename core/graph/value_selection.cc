#include "core/graph/value_selection.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/support/error.h"

namespace agate {
namespace graph {
namespace {

// -1, 0 or 1 as element a of x is below, equal to or above element b.
int CompareElements(const Tensor& x, int64_t a, int64_t b) {
  const DType dtype = x.dtype();
  if (dtype.is_float()) {
    double u = x.GetDouble(a), v = x.GetDouble(b);
    if (std::isnan(u) || std::isnan(v)) return std::isnan(u) - std::isnan(v);  // NaNs last, equal (numpy)
    return u < v ? -1 : v < u ? 1 : 0;
  }
  if (dtype.is_uint()) {
    uint64_t u = static_cast<uint64_t>(x.GetInt(a)), v = static_cast<uint64_t>(x.GetInt(b));
    return u < v ? -1 : v < u ? 1 : 0;
  }
  int64_t u = x.GetInt(a), v = x.GetInt(b);
  return u < v ? -1 : v < u ? 1 : 0;
}

}  // namespace

std::vector<int64_t> NonZeroOffsets(const Tensor& x) {
  std::vector<int64_t> offsets;
  const bool is_float = x.dtype().is_float();
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (is_float ? x.GetDouble(i) != 0.0 : x.GetInt(i) != 0) offsets.push_back(i);
  }
  return offsets;
}

UniqueItems UniqueOf(const Tensor& x, int axis, bool sorted) {
  UniqueItems u;
  int64_t outer = 1, inner = 1;
  if (axis < 0) {
    u.items = x.numel();
  } else {
    for (int d = 0; d < axis; ++d) outer *= x.shape()[d];
    for (int d = axis + 1; d < x.rank(); ++d) inner *= x.shape()[d];
    u.items = x.shape()[axis];
    u.item_size = outer * inner;
  }
  // Element e (0 <= e < item_size) of item i, as a flat offset of x.
  auto offset = [&](int64_t i, int64_t e) { return axis < 0 ? i : ((e / inner) * u.items + i) * inner + e % inner; };
  auto compare = [&](int64_t a, int64_t b) {
    for (int64_t e = 0; e < u.item_size; ++e) {
      int c = CompareElements(x, offset(a, e), offset(b, e));
      if (c != 0) return c;
    }
    return 0;
  };
  // Items in ascending order, ties by position: the first of each run is a first occurrence.
  std::vector<int64_t> order(u.items);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return compare(a, b) < 0; });
  std::vector<int64_t> first_of(u.items);  // each item's first occurrence
  for (int64_t k = 0; k < u.items; ++k) {
    bool starts_run = k == 0 || compare(order[k - 1], order[k]) != 0;
    if (starts_run) u.first.push_back(order[k]);
    first_of[order[k]] = u.first.back();
  }
  if (!sorted) std::sort(u.first.begin(), u.first.end());
  std::vector<int64_t> position(u.items, 0);
  for (size_t r = 0; r < u.first.size(); ++r) position[u.first[r]] = static_cast<int64_t>(r);
  u.counts.assign(u.first.size(), 0);
  u.inverse.resize(u.items);
  for (int64_t i = 0; i < u.items; ++i) {
    u.inverse[i] = position[first_of[i]];
    ++u.counts[u.inverse[i]];
  }
  return u;
}

const char* const kNmsOperands[3] = {"max_output_boxes_per_class", "iou_threshold", "score_threshold"};

NmsSettings NmsSettingsOf(const Node& node, const std::vector<const Tensor*>& operands) {
  // Operand k's run-time value; an empty tensor counts as absent, as in ONNX's reference.
  auto run_time = [&](int k) -> const Tensor* {
    const Tensor* t = k < static_cast<int>(operands.size()) ? operands[k] : nullptr;
    return t != nullptr && t->numel() > 0 ? t : nullptr;
  };
  // A threshold (operand 1 or 2): its attribute (a constant) or its run-time value.
  auto threshold = [&](int k, float* value) {
    if (node.attrs.Has(kNmsOperands[k])) {
      *value = static_cast<float>(node.attrs.GetFloat(kNmsOperands[k]));
      return true;
    }
    if (run_time(k) == nullptr) return false;
    *value = static_cast<float>(run_time(k)->GetDouble(0));
    return true;
  };
  NmsSettings s;
  s.center_point_box = node.attrs.GetInt("center_point_box", 0) != 0;
  if (node.attrs.Has(kNmsOperands[0])) {
    s.max_per_class = std::max<int64_t>(node.attrs.GetInt(kNmsOperands[0]), 0);
  } else if (run_time(0) != nullptr) {
    s.max_per_class = std::max<int64_t>(run_time(0)->GetInt(0), 0);
  }
  threshold(1, &s.iou_threshold);
  s.has_score_threshold = threshold(2, &s.score_threshold);
  AGATE_REQUIRE(NmsValidIou(s.iou_threshold), kInvalidArgument)
      << node.Describe() << ": iou_threshold " << s.iou_threshold << " is outside [0, 1]";
  return s;
}

namespace {

// Python's min and max of two values, as ONNX's reference calls them (the first unless the
// second is strictly smaller / larger), and its max_min (the pair ordered, NaN kept in place).
float PyMin(float a, float b) { return b < a ? b : a; }
float PyMax(float a, float b) { return b > a ? b : a; }
void MinMax(float a, float b, float* lo, float* hi) {
  *lo = a >= b ? b : a;
  *hi = a >= b ? a : b;
}

// A box's extent on one axis: [lo, hi].
struct Span {
  float lo, hi;
};

// Axis 0 is x, axis 1 is y.
Span BoxSpan(const float* box, bool center_point_box, int axis) {
  Span s;
  if (center_point_box) {
    float half = box[2 + axis] / 2.0f;
    s.lo = box[axis] - half;
    s.hi = box[axis] + half;
  } else {
    int first = axis == 0 ? 1 : 0;  // [y1, x1, y2, x2]
    MinMax(box[first], box[first + 2], &s.lo, &s.hi);
  }
  return s;
}

}  // namespace

bool NmsSuppresses(const float* a, const float* b, bool center_point_box, float iou_threshold) {
  Span ax = BoxSpan(a, center_point_box, 0), bx = BoxSpan(b, center_point_box, 0);
  float x_lo = PyMax(ax.lo, bx.lo), x_hi = PyMin(ax.hi, bx.hi);
  if (x_hi <= x_lo) return false;
  Span ay = BoxSpan(a, center_point_box, 1), by = BoxSpan(b, center_point_box, 1);
  float y_lo = PyMax(ay.lo, by.lo), y_hi = PyMin(ay.hi, by.hi);
  if (y_hi <= y_lo) return false;
  float intersection = (x_hi - x_lo) * (y_hi - y_lo);
  if (intersection <= 0.0f) return false;
  float area_a = (ax.hi - ax.lo) * (ay.hi - ay.lo);
  float area_b = (bx.hi - bx.lo) * (by.hi - by.lo);
  float union_area = area_a + area_b - intersection;
  if (area_a <= 0.0f || area_b <= 0.0f || union_area <= 0.0f) return false;
  return intersection / union_area > iou_threshold;
}

std::vector<int64_t> NonMaxSuppressionOf(const Tensor& boxes, const Tensor& scores, const NmsSettings& settings) {
  const int64_t batches = boxes.shape()[0], count = boxes.shape()[1], classes = scores.shape()[1];
  std::vector<float> box(boxes.numel()), score(scores.numel());
  for (int64_t i = 0; i < boxes.numel(); ++i) box[i] = static_cast<float>(boxes.GetDouble(i));
  for (int64_t i = 0; i < scores.numel(); ++i) score[i] = static_cast<float>(scores.GetDouble(i));
  std::vector<int64_t> rows;
  for (int64_t b = 0; b < batches; ++b) {
    const float* batch_boxes = box.data() + b * count * 4;
    for (int64_t c = 0; c < classes; ++c) {
      const float* s = score.data() + (b * classes + c) * count;
      std::vector<int64_t> order;
      for (int64_t i = 0; i < count; ++i)
        if (!settings.has_score_threshold || s[i] > settings.score_threshold) order.push_back(i);
      std::stable_sort(order.begin(), order.end(), [&](int64_t i, int64_t j) { return NmsScoreBefore(s[i], s[j]); });
      std::vector<int64_t> kept;
      for (int64_t i : order) {
        if (static_cast<int64_t>(kept.size()) >= settings.max_per_class) break;
        bool suppressed = false;
        for (int64_t k : kept) {
          suppressed = NmsSuppresses(batch_boxes + i * 4, batch_boxes + k * 4, settings.center_point_box,
                                     settings.iou_threshold);
          if (suppressed) break;
        }
        if (suppressed) continue;
        kept.push_back(i);
        rows.insert(rows.end(), {b, c, i});
      }
    }
  }
  return rows;
}

}  // namespace graph
}  // namespace agate
