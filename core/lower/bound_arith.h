// Saturating int64 interval arithmetic: the constant bounds the analyzer computes.
//
// Why a header of its own: the bound evaluator (const_bound.cc) and the simplifier
// (simplify.cc) both reason about [min, max] intervals whose ends may be infinite
// (ConstIntBound::kNegInf/kPosInf); the arithmetic saturates at those ends instead of
// overflowing, in one place. Internal to core/lower's analyzer.
#ifndef AGATE_CORE_LOWER_BOUND_ARITH_H_
#define AGATE_CORE_LOWER_BOUND_ARITH_H_

#include <algorithm>
#include <cstdint>

#include "core/ir/dtype.h"
#include "core/lower/analyzer.h"

namespace agate {
namespace lower {
namespace arith {

using Bound = ConstIntBound;
using ir::DType;
constexpr int64_t kNegInf = Bound::kNegInf;
constexpr int64_t kPosInf = Bound::kPosInf;

inline int64_t Clamp128(__int128 v) {
  if (v <= static_cast<__int128>(kNegInf)) return kNegInf;
  if (v >= static_cast<__int128>(kPosInf)) return kPosInf;
  return static_cast<int64_t>(v);
}

inline int64_t SatAdd(int64_t a, int64_t b) {
  if (a == kNegInf || b == kNegInf) return kNegInf;
  if (a == kPosInf || b == kPosInf) return kPosInf;
  return Clamp128(static_cast<__int128>(a) + b);
}

inline int64_t SatMul(int64_t a, int64_t b) {
  if (a == 0 || b == 0) return 0;
  return Clamp128(static_cast<__int128>(a) * b);
}

inline int64_t FloorDivInt(int64_t x, int64_t y) {
  if (x == kNegInf || x == kPosInf) return (x == kNegInf) == (y > 0) ? kNegInf : kPosInf;
  int64_t q = x / y;
  if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
  return q;
}

inline int64_t FloorModInt(int64_t x, int64_t y) { return x - FloorDivInt(x, y) * y; }

inline Bound TypeBound(DType t) {
  Bound b;
  if (t.is_bool()) return {0, 1};
  if (t.is_int() && t.bits() < 64) return {-(int64_t{1} << (t.bits() - 1)), (int64_t{1} << (t.bits() - 1)) - 1};
  if (t.is_uint() && t.bits() < 64) return {0, (int64_t{1} << t.bits()) - 1};
  if (t.is_uint()) return {0, kPosInf};
  return b;
}

inline Bound Intersect(Bound a, Bound b) { return {std::max(a.min, b.min), std::min(a.max, b.max)}; }
inline Bound Union(Bound a, Bound b) { return {std::min(a.min, b.min), std::max(a.max, b.max)}; }

inline Bound MulBound(Bound a, Bound b) {
  int64_t c[4] = {SatMul(a.min, b.min), SatMul(a.min, b.max), SatMul(a.max, b.min), SatMul(a.max, b.max)};
  return {*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
}


}  // namespace arith
}  // namespace lower
}  // namespace agate

#endif  // AGATE_CORE_LOWER_BOUND_ARITH_H_
