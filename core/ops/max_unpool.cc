#include "core/ops/max_unpool.h"

#include <string>
#include <utility>
#include <vector>

#include "core/ir/function.h"
#include "core/ir/substitute.h"
#include "core/graph/run_time_shape_operand.h"
#include "core/ops/composed_kernel.h"
#include "core/support/error.h"

namespace agate {
namespace ops {
namespace {

using composed::I;
using composed::Load;
using composed::Loop;
using composed::Store;
using ir::Buffer;
using ir::Expr;
using ir::Stmt;
using ir::Var;

// The unpooled shape the indices address: [N, C, (in - 1) * stride - pad_begin - pad_end + kernel...].
graph::Shape UnpooledShape(const graph::Node& node, const graph::Shape& x) {
  std::vector<int64_t> kernel = node.attrs.GetInts("kernel_shape");
  const size_t n = kernel.size();
  std::vector<int64_t> strides = node.attrs.GetInts("strides", std::vector<int64_t>(n, 1));
  std::vector<int64_t> pads = node.attrs.GetInts("pads", std::vector<int64_t>(2 * n, 0));
  AGATE_REQUIRE(x.size() == n + 2 && strides.size() == n && pads.size() == 2 * n, kInvalidArgument)
      << node.Describe() << ": kernel_shape, strides and pads do not match the input's " << x.size() - 2
      << " spatial axes";
  graph::Shape natural{x[0], x[1]};
  for (size_t i = 0; i < n; ++i) natural.push_back((x[i + 2] - 1) * strides[i] - pads[i] - pads[i + n] + kernel[i]);
  return natural;
}

}  // namespace

bool IsMaxUnpoolOp(const std::string& op) { return op == "MaxUnpool"; }

GroupKernel LowerMaxUnpoolGroup(const graph::Graph& graph, const graph::FusedGroup& group, const target::Target& target,
                                const std::string& kernel_name) {
  ComposedKernel built = BeginComposedKernel(graph, group, target, kernel_name, "a serial scatter: CPU targets only");
  const graph::Node& node = graph.nodes.at(group.nodes[0]);
  const ComposedParams& params = built.params;
  AGATE_REQUIRE(params.outputs.count(0), kInternal) << node.Describe() << ": its output is not the kernel's";
  const Buffer& x = params.inputs.at(node.inputs[0]);
  const Buffer& indices = params.inputs.at(node.inputs[1]);
  const Buffer& out = params.outputs.at(0);
  const graph::Shape& x_shape = graph.TypeOf(node.inputs[0]).shape;
  const graph::Shape& out_shape = graph.TypeOf(node.outputs[0]).shape;
  const graph::Shape natural = UnpooledShape(node, x_shape);
  AGATE_REQUIRE(out_shape.size() == natural.size(), kInvalidArgument)
      << node.Describe() << ": output " << graph::ShapeToString(out_shape) << " for the unpooled shape "
      << graph::ShapeToString(natural);
  const int64_t count = graph::NumElements(x_shape), natural_count = graph::NumElements(natural);

  // index -> its output offset: the unpooled coordinates (row-major), placed in the output's
  // row-major layout, and whether every coordinate lies inside the output.
  Var e("unpool_element"), checked("unpool_checked"), o("unpool_out");
  Expr index = Load(indices, e);
  Expr in_range = index >= I(0) && index < I(natural_count);
  Expr offset = I(0), fits = in_range;
  bool same_shape = out_shape == natural;
  int64_t stride = 1, natural_stride = 1;
  for (int d = static_cast<int>(natural.size()) - 1; d >= 0; --d) {
    Expr coordinate = ir::floormod(ir::floordiv(index, I(natural_stride)), I(natural[d]));
    if (!same_shape && natural[d] > out_shape[d]) fits = fits && coordinate < I(out_shape[d]);
    offset = offset + coordinate * I(stride);
    stride *= out_shape[d];
    natural_stride *= natural[d];
  }
  if (same_shape) offset = index;
  std::string message = node.Describe() + ": an index (input 1, read when the model runs) lies outside the unpooled "
                        "shape " + graph::ShapeToString(natural) +
                        (same_shape ? std::string() : " or the output " + graph::ShapeToString(out_shape));
  ir::DType t = graph.TypeOf(node.outputs[0]).dtype;
  Expr fits_checked = ir::Substitute(fits, ir::VarMap{{e.get(), Expr(checked)}});
  Stmt check = Loop(checked, I(count), ir::AssertStmt::make(fits_checked, message));
  // An output_shape read at run time (run_time_shape_operand.h) must be the declared shape the
  // kernel was compiled for: checked before anything is written.
  const int operand = graph::RunTimeShapeOperandIndex(node);
  if (operand >= 0) {
    const Buffer& shape = params.inputs.at(node.inputs[operand]);
    const int64_t values = graph::NumElements(graph.TypeOf(node.inputs[operand]).shape);
    Expr same = values == static_cast<int64_t>(out_shape.size()) ? (I(0) == I(0)) : (I(0) != I(0));
    for (int64_t d = 0; d < values && values == static_cast<int64_t>(out_shape.size()); ++d) {
      same = same && ir::cast(ir::DType::Int(64), Load(shape, I(d))) == I(out_shape[d]);
    }
    check = ir::Seq::make({ir::AssertStmt::make(same, node.Describe() + ": " + graph::DescribeRunTimeShapeOperand(node) +
                                                          " (read when the model runs) does not give the output shape " +
                                                          graph::ShapeToString(out_shape) +
                                                          " that the model declares and agate compiled for"),
                           check});
  }
  Stmt zero = Loop(o, I(graph::NumElements(out_shape)), Store(out, ir::make_zero(t), o));
  // The write is in bounds whatever the values: the check above failed the kernel otherwise, and
  // the guard says so to the code (an offset is provably inside the output only under it).
  Stmt scatter = Loop(e, I(count), composed::If(fits, Store(out, Load(x, e), offset)));
  return FinishComposedKernel(std::move(built), ir::Seq::make({check, zero, scatter}), 0,
                              "MaxUnpool of " + std::to_string(count) + " elements into " +
                                  graph::ShapeToString(out_shape) + ": zero fill and serial scatter in the kernel [" +
                                  node.op + "]");
}

}  // namespace ops
}  // namespace agate
