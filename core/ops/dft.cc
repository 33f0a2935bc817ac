#include "core/ops/dft.h"

#include <algorithm>
#include <cmath>

#include "core/graph/run_time_shape_operand.h"
#include "core/ops/op_context.h"
#include "core/ops/registry.h"
#include "core/ops/shape_operand_check.h"
#include "core/support/error.h"

namespace agate {
namespace ops {

using te::Expr;
using te::Tensor;
using te::Var;

namespace {

std::vector<Tensor> BuildDft(const OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  const graph::TensorType& in = ctx.input_type(0);
  const graph::TensorType& out = ctx.output_type(0);
  AGATE_REQUIRE(in.dtype.is_float() && in.dtype.bits() >= 32, kUnsupported)
      << ctx.Describe() << ": the compiled DFT takes float32 or float64, got " << in.dtype;
  int rank = in.rank();
  int64_t axis = ctx.attrs().GetInt("axis", 1);
  if (axis < 0) axis += rank - 1;
  AGATE_REQUIRE(axis > 0 && axis < rank - 1, kInvalidArgument) << ctx.Describe() << ": axis " << axis;
  bool inverse = ctx.attrs().GetInt("inverse", 0) != 0;
  int64_t length = ctx.attrs().GetInt("dft_length", in.shape[axis]);
  AGATE_REQUIRE(length > 0, kInvalidArgument) << ctx.Describe() << ": dft_length " << length;
  int64_t bins = out.shape[axis], used = std::min(length, in.shape[axis]);
  bool complex = in.shape.back() == 2;
  // Twiddles [bins, used]: exp(-+ 2 pi i k n / N), the inverse's 1 / N folded in.
  std::vector<double> cosines(bins * used), sines(bins * used);
  for (int64_t k = 0; k < bins; ++k) {
    for (int64_t n = 0; n < used; ++n) {
      double angle = (inverse ? 2 : -2) * M_PI * static_cast<double>(k * n % length) / length;
      double scale = inverse ? 1.0 / length : 1.0;
      cosines[k * used + n] = std::cos(angle) * scale;
      sines[k * used + n] = std::sin(angle) * scale;
    }
  }
  Tensor c = ctx.AddConstant(ctx.node().name + "_cos", graph::Tensor::FromDoubles(in.dtype, {bins, used}, cosines));
  Tensor s = ctx.AddConstant(ctx.node().name + "_sin", graph::Tensor::FromDoubles(in.dtype, {bins, used}, sines));
  ir::IterVar n = te::reduce_axis(ir::Range(Expr(int64_t{0}), Expr(used)), "n");
  Tensor y = te::compute(ToExprShape(out.shape), [&](const std::vector<Var>& i) {
    std::vector<Expr> at(i.begin(), i.end());
    at[axis] = n.var();
    at[rank - 1] = Expr(int64_t{0});
    Expr re = x(at);
    Expr im = ir::make_zero(in.dtype);
    if (complex) {
      at[rank - 1] = Expr(int64_t{1});
      im = x(at);
    }
    Expr cs = c(i[axis], n.var()), sn = s(i[axis], n.var());
    Expr real = re * cs - im * sn, imag = re * sn + im * cs;
    return te::sum(ir::select(i[rank - 1] == Expr(int64_t{0}), real, imag), {n});
  }, ctx.node().outputs[0], tag::kOpaque);
  return {y};
}

// STFT: out[b, f, k] = sum_n window[n] x[b, f * step + n] exp(-2 pi i k n / frame), the same twiddle
// tables, the window (a run-time input, or none) read inside the sum.
std::vector<Tensor> BuildStft(const OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  const graph::TensorType& in = ctx.input_type(0);
  const graph::TensorType& out = ctx.output_type(0);
  AGATE_REQUIRE(in.dtype.is_float() && in.dtype.bits() >= 32, kUnsupported)
      << ctx.Describe() << ": the compiled STFT takes float32 or float64, got " << in.dtype;
  // A frame_step read at run time (the last input; run_time_shape_operand.h) is checked against
  // the compiled frame count before the kernel runs and places the frames.
  const int operand = graph::RunTimeShapeOperandIndex(ctx.node());
  CheckShapeOperandAtRunTime(ctx);
  Expr step = operand >= 0 ? ir::cast(ir::DType::Index(), ctx.input(operand)(std::vector<Expr>(ctx.input_type(operand).rank(), Expr(int64_t{0}))))
                           : Expr(ctx.attrs().GetInt("frame_step"));
  bool windowed = ctx.has_input(1) && operand != 1;
  int64_t frame = windowed ? ctx.input_type(1).numel() : ctx.attrs().GetInt("frame_length");
  int64_t bins = out.shape[2];
  bool complex = in.shape[2] == 2;
  std::vector<double> cosines(bins * frame), sines(bins * frame);
  for (int64_t k = 0; k < bins; ++k) {
    for (int64_t n = 0; n < frame; ++n) {
      double angle = -2 * M_PI * static_cast<double>(k * n % frame) / frame;
      cosines[k * frame + n] = std::cos(angle);
      sines[k * frame + n] = std::sin(angle);
    }
  }
  Tensor c = ctx.AddConstant(ctx.node().name + "_cos", graph::Tensor::FromDoubles(in.dtype, {bins, frame}, cosines));
  Tensor s = ctx.AddConstant(ctx.node().name + "_sin", graph::Tensor::FromDoubles(in.dtype, {bins, frame}, sines));
  ir::IterVar n = te::reduce_axis(ir::Range(Expr(int64_t{0}), Expr(frame)), "n");
  Tensor y = te::compute(ToExprShape(out.shape), [&](const std::vector<Var>& i) {
    Expr t = i[1] * step + n.var();
    Expr w = windowed ? ir::cast(in.dtype, ctx.input(1)(std::vector<Expr>{n.var()})) : ir::make_const(in.dtype, 1.0);
    Expr re = x(i[0], t, Expr(int64_t{0})) * w;
    Expr im = complex ? x(i[0], t, Expr(int64_t{1})) * w : ir::make_zero(in.dtype);
    Expr cs = c(i[2], n.var()), sn = s(i[2], n.var());
    Expr real = re * cs - im * sn, imag = re * sn + im * cs;
    return te::sum(ir::select(i[3] == Expr(int64_t{0}), real, imag), {n});
  }, ctx.node().outputs[0], tag::kOpaque);
  return {y};
}

}  // namespace

void RegisterSpectralOps(OpTable* t) {
  t->Register("DFT", BuildDft);
  t->Register("STFT", BuildStft);
}

}  // namespace ops
}  // namespace agate
