#include "core/graph/value_selection.h"

#include <algorithm>
#include <cmath>
#include <numeric>

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

}  // namespace graph
}  // namespace agate
