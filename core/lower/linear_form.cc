#include "core/lower/linear_form.h"

#include <cstdlib>

namespace agate {
namespace lower {
namespace arith {

using namespace ir;  // NOLINT: this file is all IR arithmetic

namespace {

// Adds scale * e to out, splitting sums, differences and products by constants.
void Decompose(const Expr& e, int64_t scale, Linear* out) {
  if (const IntImm* i = e.as<IntImm>()) {
    out->constant += i->value * scale;
  } else if (const Add* a = e.as<Add>()) {
    Decompose(a->a, scale, out);
    Decompose(a->b, scale, out);
  } else if (const Sub* s = e.as<Sub>()) {
    Decompose(s->a, scale, out);
    Decompose(s->b, -scale, out);
  } else if (const Mul* m = e.as<Mul>()) {
    int64_t c;
    if (is_const_int(m->b, &c)) {
      Decompose(m->a, scale * c, out);
    } else if (is_const_int(m->a, &c)) {
      Decompose(m->b, scale * c, out);
    } else {
      out->AddTerm(e, scale);
    }
  } else {
    out->AddTerm(e, scale);
  }
}

}  // namespace

Linear ToLinear(const Expr& e) {
  Linear l;
  l.dtype = e.dtype();
  Decompose(e, 1, &l);
  l.DropZeros();
  return l;
}

void MergeDivModPairs(Linear* l) {
  bool merged = true;
  while (merged) {
    merged = false;
    for (size_t i = 0; i < l->terms.size() && !merged; ++i) {
      const FloorMod* mod = l->terms[i].atom.as<FloorMod>();
      int64_t c;
      if (!mod || !is_const_int(mod->b, &c)) continue;
      int64_t k = l->terms[i].coeff;
      for (size_t j = 0; j < l->terms.size(); ++j) {
        const FloorDiv* div = l->terms[j].atom.as<FloorDiv>();
        int64_t c2;
        if (!div || !is_const_int(div->b, &c2) || c2 != c || l->terms[j].coeff != k * c) continue;
        if (!StructuralEqual(div->a, mod->a)) continue;
        Expr x = mod->a;
        l->terms[i].coeff = 0;
        l->terms[j].coeff = 0;
        Linear inner = ToLinear(x);
        l->Append(inner, k);
        l->DropZeros();
        merged = true;
        break;
      }
    }
  }
}

Expr FromLinear(const Linear& l) {
  std::vector<Term> terms = l.terms;
  std::stable_sort(terms.begin(), terms.end(),
                   [](const Term& a, const Term& b) { return std::llabs(a.coeff) > std::llabs(b.coeff); });
  DType t = l.dtype;
  auto term_expr = [&](const Term& term, int64_t mag) -> Expr {
    return mag == 1 ? term.atom : Mul::make(term.atom, IntImm::make(t, mag));
  };
  Expr sum;
  for (const Term& term : terms) {
    if (term.coeff <= 0) continue;
    Expr e = term_expr(term, term.coeff);
    sum = sum.defined() ? Add::make(sum, e) : e;
  }
  for (const Term& term : terms) {
    if (term.coeff >= 0) continue;
    if (!sum.defined()) {
      if (l.constant != 0) {
        sum = IntImm::make(t, l.constant);
        sum = Sub::make(sum, term_expr(term, -term.coeff));
        continue;
      }
      sum = Mul::make(term.atom, IntImm::make(t, term.coeff));
      continue;
    }
    sum = Sub::make(sum, term_expr(term, -term.coeff));
  }
  if (!sum.defined()) return IntImm::make(t, l.constant);
  bool constant_used = !terms.empty() && std::all_of(terms.begin(), terms.end(), [](const Term& x) { return x.coeff < 0; }) && l.constant != 0;
  if (!constant_used && l.constant > 0) sum = Add::make(sum, IntImm::make(t, l.constant));
  if (!constant_used && l.constant < 0) sum = Sub::make(sum, IntImm::make(t, -l.constant));
  return sum;
}

}  // namespace arith
}  // namespace lower
}  // namespace agate
