// Linear forms: an integer expression as sum(coefficient * atom) + constant.
//
// Why: the simplifier canonicalizes index arithmetic by decomposing it into a
// linear form, merging equal atoms (and floordiv/floormod pairs of one dividend),
// and rebuilding it in one canonical order, so that equal indices print, compare
// and vectorize alike. Internal to core/lower's analyzer.
#ifndef AGATE_CORE_LOWER_LINEAR_FORM_H_
#define AGATE_CORE_LOWER_LINEAR_FORM_H_

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/ir/equality.h"
#include "core/ir/expr.h"

namespace agate {
namespace lower {
namespace arith {

using ir::DType;
using ir::Expr;

struct Term {
  Expr atom;
  int64_t coeff;
};

struct Linear {
  DType dtype;
  std::vector<Term> terms;
  int64_t constant = 0;

  void AddTerm(const Expr& atom, int64_t coeff) {
    if (coeff == 0) return;
    for (Term& t : terms) {
      if (StructuralEqual(t.atom, atom)) {
        t.coeff += coeff;
        return;
      }
    }
    terms.push_back({atom, coeff});
  }
  void Scale(int64_t s) {
    for (Term& t : terms) t.coeff *= s;
    constant *= s;
  }
  void Append(const Linear& o, int64_t s) {
    for (const Term& t : o.terms) AddTerm(t.atom, t.coeff * s);
    constant += o.constant * s;
  }
  void DropZeros() {
    terms.erase(std::remove_if(terms.begin(), terms.end(), [](const Term& t) { return t.coeff == 0; }), terms.end());
  }
};

// Decomposes an already simplified expression into a linear form.
Linear ToLinear(const Expr& e);
// floordiv(x, c)*c*k + floormod(x, c)*k = x*k, for every such pair of terms.
void MergeDivModPairs(Linear* l);
// Rebuilds an expression: positive terms first (larger coefficients first), then the
// negative ones, then the constant.
Expr FromLinear(const Linear& l);

}  // namespace arith
}  // namespace lower
}  // namespace agate

#endif  // AGATE_CORE_LOWER_LINEAR_FORM_H_
