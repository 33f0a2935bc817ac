#include "core/ops/window.h"

#include "core/ops/op_context.h"
#include "core/support/error.h"

namespace agate {
namespace ops {

using te::Expr;

int64_t LayoutBlock(const graph::Node& node) { return graph::InputLayoutBlock(node); }

Expr PaddedRead(const te::Tensor& x, const std::vector<Expr>& index, size_t first_spatial,
                const std::vector<int64_t>& in, Expr pad_value) {
  std::vector<Expr> clamped = index;
  Expr valid;
  for (size_t d = 0; d < in.size(); ++d) {
    Expr i = index[first_spatial + d];
    int64_t lo = 0;
    bool const_index = ir::is_const_int(i, &lo);
    if (const_index && lo >= 0 && lo < in[d]) continue;
    Expr ok = i >= Expr(int64_t{0}) && i < Expr(in[d]);
    valid = valid.defined() ? (valid && ok) : ok;
    clamped[first_spatial + d] = ir::min(ir::max(i, Expr(int64_t{0})), Expr(in[d] - 1));
  }
  Expr v = x(clamped);
  return valid.defined() ? ir::select(valid, v, pad_value) : v;
}

te::Tensor PadSpatial(const te::Tensor& x, size_t first_spatial, const std::vector<int64_t>& pad_begin,
                      const std::vector<int64_t>& pad_end, Expr pad_value, const std::string& name) {
  bool any = false;
  for (size_t d = 0; d < pad_begin.size(); ++d) any |= pad_begin[d] != 0 || pad_end[d] != 0;
  if (!any) return x;
  graph::Shape shape = StaticShape(x);
  std::vector<int64_t> in(shape.begin() + first_spatial, shape.begin() + first_spatial + pad_begin.size());
  graph::Shape padded = shape;
  for (size_t d = 0; d < pad_begin.size(); ++d) padded[first_spatial + d] += pad_begin[d] + pad_end[d];
  return te::compute(
      ToExprShape(padded),
      [&](const std::vector<te::Var>& i) {
        std::vector<Expr> idx(i.begin(), i.end());
        for (size_t d = 0; d < pad_begin.size(); ++d) idx[first_spatial + d] = idx[first_spatial + d] - pad_begin[d];
        return PaddedRead(x, idx, first_spatial, in, pad_value);
      },
      name, tag::kPad);
}

}  // namespace ops
}  // namespace agate
