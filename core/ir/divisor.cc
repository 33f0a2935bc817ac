#include "core/ir/divisor.h"

#include <numeric>

namespace agate {
namespace ir {

int64_t KnownDivisor(const Expr& e) {
  constexpr int64_t kCap = int64_t{1} << 30;
  switch (e.kind()) {
    case ExprKind::kIntImm: {
      int64_t v = e.as<IntImm>()->value;
      if (v == 0) return kCap;
      v = v < 0 ? -v : v;
      return v > kCap ? kCap : v;
    }
    case ExprKind::kAdd: return std::gcd(KnownDivisor(e.as<Add>()->a), KnownDivisor(e.as<Add>()->b));
    case ExprKind::kSub: return std::gcd(KnownDivisor(e.as<Sub>()->a), KnownDivisor(e.as<Sub>()->b));
    case ExprKind::kMul: {
      int64_t p = KnownDivisor(e.as<Mul>()->a) * KnownDivisor(e.as<Mul>()->b);
      return p > kCap || p <= 0 ? kCap : p;
    }
    case ExprKind::kCast: {
      const Cast* c = e.as<Cast>();
      return c->value.dtype().is_integer() && c->dtype.bits() >= c->value.dtype().bits() ? KnownDivisor(c->value) : 1;
    }
    default: return 1;
  }
}

}  // namespace ir
}  // namespace agate
